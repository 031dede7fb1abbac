"""One document model for every human-readable report, rendered to Markdown and to HTML.

A report (the sealed test's ``report.md`` and ``report.html``, the run report of
``monsearch report``, the exported plugin's README) is a sequence of blocks: headings,
paragraphs, banners, lists, tables, images, drawings, code, cards, legends, collapsible
details and side-by-side columns. Its writer builds the blocks; :func:`to_markdown`
(CommonMark with GitHub's tables) and :func:`to_html` (one self-contained page: inline
CSS, images as data URIs, no script, nothing fetched) render them, so the reports share
one look and one set of escaping rules.

Trust. Every text a block holds (heading, paragraph, cell, caption, card, label, code)
is literal text, whatever its origin: a run folder or a report may come from someone
else. In HTML it is escaped where it lands, text or attribute; in Markdown it is
backslash-escaped wherever CommonMark or GitHub would read markup, and ``<``, ``>`` and
``&`` are written as entities (:func:`md_text`): a renderer that allows raw HTML but
takes no backslash before ``<`` as an escape (Python-Markdown, which mkdocs uses) would
otherwise open an element there. Code goes in a code span or fence longer than any run
of backticks inside it, and no text can start a block of its own. The one exception
is :class:`Markup`: HTML or SVG that our own code produced (with :func:`element`, which
escapes every attribute and text it is given, or from a highlighter that escapes its
input). Only two slots take it, :attr:`Drawing.svg` and :attr:`CodeBlock.highlighted`,
and they refuse anything else; everywhere else a Markup is text like any other and is
escaped.

Inline content is a text, or a sequence of texts, :class:`Code` and :class:`Strong`
pieces; :func:`inline` builds one from a template of our own (`` `code` ``,
``**strong**``, ``{field}``) whose fields are filled with text after the template's
markup is read, so a value can never become markup.
"""

from __future__ import annotations

import base64
import html
import re
import string
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

# --------------------------------------------------------------------------- trusted markup


class Markup(str):
    """HTML or SVG our own code produced and vouches for (see the module doc).

    A plain ``str`` subclass, so it prints and searches like text; joining or slicing
    one gives a plain ``str``, which the trusted slots refuse: trust is never inherited
    by accident. Build with :func:`element` and :meth:`concat`.
    """

    __slots__ = ()

    @classmethod
    def concat(cls, parts: Iterable[Markup]) -> Markup:
        """``parts`` joined; each must already be Markup."""
        parts = list(parts)
        for p in parts:
            if not isinstance(p, Markup):
                raise TypeError(f"Markup.concat takes Markup only, not {type(p).__name__}")
        return cls("".join(parts))


_NAME = re.compile(r"[A-Za-z][A-Za-z0-9:_-]*\Z")
# What a drawing of ours never needs: scripts, embedded documents, event handlers, links
# and references to other resources (a page loads nothing).
_NO_TAGS = frozenset({"script", "foreignobject", "iframe", "object", "embed", "a", "image",
                      "use", "style", "link"})
_NO_ATTRS = re.compile(r"on|(?:xlink:)?href\Z|src\Z|style\Z", re.I)


def element(tag: str, attrs: dict[str, Any] | None = None, *children: Any) -> Markup:
    """``<tag attrs>children</tag>`` (``<tag attrs/>`` without children) as Markup.

    Attribute values and children are escaped unless they are Markup; ``None`` values
    leave their attribute out. Tag and attribute names are ours, and checked: no
    scripts, handlers, links or styles (a drawing styles itself with attributes).
    """
    for name in (tag, *(attrs or {})):
        if not _NAME.match(name):
            raise ValueError(f"not a tag or attribute name: {name!r}")
    if tag.lower() in _NO_TAGS or any(_NO_ATTRS.match(k) for k in attrs or {}):
        raise ValueError(f"element() makes no scripts, handlers, links or styles: {tag!r}")
    rendered = "".join(
        f' {k}="{html.escape(str(v), quote=True)}"' for k, v in (attrs or {}).items()
        if v is not None
    )
    if not children:
        return Markup(f"<{tag}{rendered}/>")
    inner = "".join(c if isinstance(c, Markup) else html.escape(str(c), quote=True)
                    for c in children)
    return Markup(f"<{tag}{rendered}>{inner}</{tag}>")


# --------------------------------------------------------------------------- inline content


@dataclass(frozen=True)
class Code:
    """Inline code: literal text in a code span (Markdown) or ``<code>`` (HTML)."""

    text: str


@dataclass(frozen=True)
class Strong:
    """Strongly emphasised text."""

    text: str


Piece = str | Code | Strong
Inline = Piece | Sequence[Piece]

_SPAN = re.compile(r"`([^`]*)`|\*\*(.+?)\*\*")
_FORMATTER = string.Formatter()


def inline(template: str, /, **values: Any) -> tuple[Piece, ...]:
    """Inline content from a ``template`` of our own: `` `code` `` and ``**strong**``
    spans, ``{name}`` / ``{name:spec}`` fields (``{{`` and ``}}`` for braces), runs of
    white space folded to one space. Fields are filled with text after the spans are
    read: a value is never markup."""
    template = re.sub(r"\s+", " ", template)
    pieces: list[Piece] = []
    pos = 0
    for m in _SPAN.finditer(template):
        if m.start() > pos:
            pieces.append(_FORMATTER.vformat(template[pos:m.start()], (), values))
        if m.group(1) is not None:
            pieces.append(Code(_FORMATTER.vformat(m.group(1), (), values)))
        else:
            pieces.append(Strong(_FORMATTER.vformat(m.group(2), (), values)))
        pos = m.end()
    if pos < len(template):
        pieces.append(_FORMATTER.vformat(template[pos:], (), values))
    return tuple(p for p in pieces if not (isinstance(p, str) and not p))


def _pieces(content: Inline | None) -> tuple[Piece, ...]:
    if content is None:
        return ()
    if isinstance(content, str | Code | Strong):
        return (content,)
    return tuple(p if isinstance(p, Code | Strong) else str(p) for p in content)


def _plain(content: Inline | None) -> str:
    """The content's text, markup left out (for alt texts and titles)."""
    return "".join(p if isinstance(p, str) else p.text for p in _pieces(content))


# --------------------------------------------------------------------------- blocks


@dataclass(frozen=True)
class Heading:
    level: int  # 1 to 6
    text: Inline


@dataclass(frozen=True)
class Paragraph:
    text: Inline
    note: bool = False  # a side remark: small and grey in HTML


@dataclass(frozen=True)
class Banner:
    """A warning that must not be missed (a re-opened sealed test)."""

    text: Inline


@dataclass(frozen=True)
class BulletList:
    items: Sequence[Inline]


#: Row classes a table may use (ours, never data): the CSS knows these and no others.
ROW_CLASSES = frozenset({"selected"})


@dataclass(frozen=True)
class Table:
    """A table of inline cells. Columns from ``numeric_from`` on hold figures (right-
    aligned; ``None``: no such column); ``row_classes`` come from :data:`ROW_CLASSES`."""

    headers: Sequence[Inline]
    rows: Sequence[Sequence[Inline]]
    numeric_from: int | None = 1
    row_classes: Sequence[str | None] | None = None


@dataclass(frozen=True)
class Image:
    """A raster image: ``src`` is a file name inside the report's folder (linked from the
    Markdown, inlined into the HTML) or the image's bytes (inlined into both)."""

    src: str | bytes
    caption: Inline | None = None
    alt: str | None = None  # default: the caption's text
    mime: str = "image/png"


@dataclass(frozen=True)
class Drawing:
    """An SVG drawing our own code made (see the module doc on trust)."""

    svg: Markup
    caption: Inline | None = None
    alt: str | None = None


@dataclass(frozen=True)
class CodeBlock:
    """Preformatted code. ``highlighted``: the same code as trusted HTML from a
    highlighter (HTML only; the Markdown fence carries ``language`` instead)."""

    code: str
    language: str | None = None
    numbered: bool = False
    highlighted: Markup | None = None


@dataclass(frozen=True)
class Card:
    key: str
    value: str
    detail: str = ""


@dataclass(frozen=True)
class Cards:
    """Key figures at a glance: a grid of cards (HTML), a list (Markdown)."""

    items: Sequence[Card]


@dataclass(frozen=True)
class Swatch:
    colour: str  # "#rgb" or "#rrggbb"
    hollow: bool = False  # an outline only


@dataclass(frozen=True)
class LegendEntry:
    label: str
    swatches: Sequence[Swatch]


@dataclass(frozen=True)
class Legend:
    """The key of a drawing: colour swatches and what they mean."""

    entries: Sequence[LegendEntry]


@dataclass(frozen=True)
class Details:
    """Blocks behind a summary line, folded until opened (HTML)."""

    summary: Inline
    blocks: Sequence[Block]


@dataclass(frozen=True)
class Columns:
    """Groups of blocks side by side (HTML); one after the other in Markdown."""

    columns: Sequence[Sequence[Block]]


Block = (Heading | Paragraph | Banner | BulletList | Table | Image | Drawing | CodeBlock
         | Cards | Legend | Details | Columns)

_LISTS = (BulletList, Cards, Legend)
_COLOUR = re.compile(r"#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})\Z")
_MIMES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_LANGUAGE = re.compile(r"[A-Za-z0-9_+-]*\Z")


def _check_level(level: int) -> int:
    if not (isinstance(level, int) and 1 <= level <= 6):
        raise ValueError(f"heading level must be 1 to 6, not {level!r}")
    return level


def _check_trusted(value: Any, slot: str) -> Markup:
    if not isinstance(value, Markup):
        raise TypeError(f"{slot} takes Markup (trusted, made by our own code), "
                        f"not {type(value).__name__}")
    return value


def _check_mime(mime: str) -> None:
    if mime not in _MIMES:
        raise ValueError(f"not an image type this renderer embeds: {mime!r}")


def _check_file_name(src: str) -> str:
    if not src or Path(src).name != src or src in (".", ".."):
        raise ValueError(f"an image file is named inside the report's folder: {src!r}")
    return src


def _image_bytes(image: Image, folder: Path | None) -> bytes:
    _check_mime(image.mime)
    if isinstance(image.src, bytes):
        return image.src
    _check_file_name(image.src)
    if folder is None:
        raise ValueError(f"image {image.src!r}: a file image needs the report's folder")
    return (folder / image.src).read_bytes()


def _data_uri(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


# --------------------------------------------------------------------------- Markdown


# Markup anywhere in a line: HTML tags and autolinks, entities, code, emphasis, the end
# of link and image texts, table cells, strikethrough, headings' closing runs. A "["
# opens nothing without an unescaped "]" after it (links, images, references and
# footnotes all need one), so outside an image's own brackets it is left as it is. An
# underscore between two letters or digits can neither open nor close emphasis, so
# names like credential_opsec stay readable.
_MD_INLINE = re.compile(r"[\\`*\]<>&|~#]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
# Markup at the start of a line: list items, thematic breaks, setext underlines, ordered
# list items ("12." or "12)"); block quotes and headings are escaped inline already.
_MD_LINE_START = re.compile(r"[-+=]|\d{1,9}(?=[.)])")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


#: What raw HTML and entities begin with, written as entities: every Markdown renderer
#: decodes these, while a backslash before "<" escapes it in CommonMark only.
_MD_ENTITIES = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}


def _md_escape(m: re.Match[str]) -> str:
    c = m.group(0)
    return _MD_ENTITIES.get(c) or "\\" + c


def md_text(text: Any, *, line_start: bool = False) -> str:
    """``text`` as literal Markdown on one line (line breaks become spaces);
    ``line_start``: it begins a line, where a leading ``-``, ``+``, ``=`` or ``1.``
    would start a block."""
    s = " ".join(_LINE_BREAK.split(str(text)))
    s = _MD_INLINE.sub(_md_escape, s)
    return _md_line_start(s) if line_start else s


def _md_line_start(line: str) -> str:
    line = line.lstrip(" \t")  # four leading blanks would make a code block
    m = _MD_LINE_START.match(line)
    if m and m.group(0)[0].isdigit():
        return line[: m.end()] + "\\" + line[m.end():]
    return "\\" + line if m else line


def md_code(text: str, *, in_table: bool = False) -> str:
    """``text`` as one code span: fenced by more backticks than any run inside it."""
    s = " ".join(_LINE_BREAK.split(str(text)))
    if not s:
        return ""
    fence = "`" * (max((len(r) for r in re.findall(r"`+", s)), default=0) + 1)
    if s[0] == "`" or s[-1] == "`" or (s[0] == s[-1] == " " and s.strip(" ")):
        s = f" {s} "  # one space each side is stripped again by the reader
    if in_table:
        s = s.replace("|", "\\|")  # GitHub splits cells before it reads code spans
    return fence + s + fence


def _md_strong(text: str) -> str:
    s = md_text(text).strip(" ")
    return f"**{s}**" if s else ""


def _md_pieces(content: Inline | None) -> list[Piece]:
    """The pieces with empty spans left out and neighbouring spans of one kind made one:
    two code spans side by side would read as one run of backticks."""
    out: list[Piece] = []
    for p in _pieces(content):
        if isinstance(p, Code | Strong) and not p.text:
            continue
        if out and type(p) is type(out[-1]) and isinstance(p, Code | Strong):
            out[-1] = type(p)(out[-1].text + p.text)
        else:
            out.append(p)
    return out


def _md_inline(content: Inline | None, *, in_table: bool = False,
               strong_as_text: bool = False) -> list[tuple[str, bool]]:
    """The content as (Markdown, may break at its spaces) parts; ``strong_as_text``:
    inside a strong span already."""
    parts = []
    for p in _md_pieces(content):
        if isinstance(p, Code):
            parts.append((md_code(p.text, in_table=in_table), False))
        elif isinstance(p, Strong):
            parts.append((md_text(p.text) if strong_as_text else _md_strong(p.text), True))
        else:
            parts.append((md_text(p), True))
    return parts


def _md_line(content: Inline | None, *, in_table: bool = False) -> str:
    return "".join(s for s, _ in _md_inline(content, in_table=in_table)).strip(" ")


def _md_flow(content: Inline | None, width: int | None, first: str = "", rest: str = "",
             *, strong: bool = False) -> str:
    """A paragraph's content: wrapped at spaces outside code spans to ``width`` (if
    given), each line made safe to start a line, prefixed with ``first`` / ``rest``."""
    parts = _md_inline(content, strong_as_text=strong)
    text, spaces = "", []
    for s, breakable in parts:
        if breakable:
            spaces += [len(text) + i for i, ch in enumerate(s) if ch == " "]
        text += s
    # Never break before what would need escaping at a line's start ("1.", "-"): the
    # escape would be right, but the raw text reads worse.
    breaks = [b for b in spaces if not _MD_LINE_START.match(text, b + 1)]
    lines: list[str] = []
    start, prev = 0, None
    if width:
        for b in [*breaks, len(text)]:
            if b - start > width and prev is not None and prev > start:
                lines.append(text[start:prev])
                start = prev + 1
            prev = b
    lines.append(text[start:])
    lines = [_md_line_start(line).rstrip(" ") for line in lines]
    lines = [line for line in lines if line]
    if not lines:
        return ""
    if strong:
        lines[0] = "**" + lines[0]
        lines[-1] += "**"
    return "\n".join([first + lines[0], *(rest + line for line in lines[1:])])


def _md_fence(code: str, language: str | None) -> str:
    if language is not None and not _LANGUAGE.match(language):
        raise ValueError(f"not a code language name: {language!r}")
    longest = max((len(r) for r in re.findall(r"^ {0,3}(`{3,})", code, re.M)), default=0)
    fence = "`" * max(3, longest + 1)
    body = code if code.endswith("\n") or not code else code + "\n"
    return f"{fence}{language or ''}\n{body}{fence}"


def _md_table(t: Table) -> str:
    n = len(t.headers)
    num = n if t.numeric_from is None else t.numeric_from
    lines = ["| " + " | ".join(_md_line(h, in_table=True) for h in t.headers) + " |",
             "|" + "|".join("---:" if j >= num else "---" for j in range(n)) + "|"]
    classes = _row_classes(t)
    for row, cls in zip(t.rows, classes, strict=True):
        cells = [_md_line(c, in_table=True) for c in row]
        if cls == "selected":  # no row colours in Markdown: the row is strong instead
            cells = [f"**{c}**" if c else c for c in cells]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _md_image(data_or_link: str, caption: Inline | None, alt: str | None,
              width: int | None) -> str:
    shown = alt if alt is not None else _plain(caption)
    # Inside our own brackets a "[" would pair with our "]" and open a link of its own.
    out = f"![{md_text(shown).replace('[', chr(92) + '[')}]({data_or_link})"
    if alt is not None and caption is not None:
        out += "\n\n" + _md_flow(caption, width)
    return out


def _md_blocks(blocks: Iterable[Block], width: int | None) -> list[str]:
    """Each block's Markdown (empty ones left out). Two lists in a row would read as one:
    every other one takes ``*`` for its items instead of ``-``."""
    out: list[str] = []
    previous = None
    for b in _flat(blocks):
        marker = "*" if previous == "-" else "-"
        text = _md_block(b, width, marker)
        if text:
            out.append(text)
            previous = marker if isinstance(b, _LISTS) else None
    return out


def _flat(blocks: Iterable[Block]) -> Iterable[Block]:
    """Details and columns unfolded: Markdown shows their blocks one after the other."""
    for b in blocks:
        if isinstance(b, Details):
            yield from _flat([Paragraph(Strong(_plain(b.summary))), *b.blocks])
        elif isinstance(b, Columns):
            yield from _flat([c for col in b.columns for c in col])
        else:
            yield b


def _md_list(items: Iterable[Inline], width: int | None, marker: str) -> str:
    return "\n".join(_md_flow(item, width and width - 2, marker + " ", "  ") or marker
                     for item in items)


def _md_block(b: Block, width: int | None, marker: str = "-") -> str:
    if isinstance(b, Heading):
        return "#" * _check_level(b.level) + " " + _md_line(b.text)
    if isinstance(b, Paragraph):
        return _md_flow(b.text, width)
    if isinstance(b, Banner):
        return _md_flow(b.text, width, "> ", "> ", strong=True)
    if isinstance(b, BulletList):
        return _md_list(b.items, width, marker)
    if isinstance(b, Table):
        return _md_table(b)
    if isinstance(b, Image):
        _check_mime(b.mime)
        link = (_data_uri(b.mime, b.src) if isinstance(b.src, bytes)
                else quote(_check_file_name(b.src)))
        return _md_image(link, b.caption, b.alt, width)
    if isinstance(b, Drawing):
        svg = _check_trusted(b.svg, "Drawing.svg")
        # An <img> needs the namespace an inline <svg> can do without.
        if " xmlns=" not in svg.split(">", 1)[0]:
            svg = svg.replace("<svg", '<svg xmlns="http://www.w3.org/2000/svg"', 1)
        return _md_image(_data_uri("image/svg+xml", svg.encode("utf-8")), b.caption, b.alt,
                         width)
    if isinstance(b, CodeBlock):
        if b.highlighted is not None:
            _check_trusted(b.highlighted, "CodeBlock.highlighted")
        return _md_fence(b.code, b.language)
    if isinstance(b, Cards):
        return _md_list([inline("**{k}**: {v}", k=c.key, v=c.value)
                         + ((f" ({c.detail})",) if c.detail else ()) for c in b.items],
                        width, marker)
    if isinstance(b, Legend):
        for e in b.entries:
            _check_swatches(e.swatches)
        return _md_list([e.label for e in b.entries], width, marker)
    if isinstance(b, Details | Columns):
        return "\n\n".join(_md_blocks([b], width))
    raise TypeError(f"not a document block: {type(b).__name__}")


def to_markdown(blocks: Iterable[Block], *, width: int | None = None) -> str:
    """The blocks as Markdown (CommonMark with GitHub's tables); ``width``: wrap
    paragraphs and list items at spaces to that many columns (code spans, headings,
    tables and code are never broken)."""
    return "\n\n".join(_md_blocks(blocks, width)) + "\n"


# --------------------------------------------------------------------------- HTML


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _html_inline(content: Inline | None) -> str:
    out = []
    for p in _pieces(content):
        if isinstance(p, Code):
            out.append(f"<code>{_e(p.text)}</code>")
        elif isinstance(p, Strong):
            out.append(f"<strong>{_e(p.text)}</strong>")
        else:
            out.append(_e(p))
    return "".join(out)


def _row_classes(t: Table) -> list[str | None]:
    classes = list(t.row_classes) if t.row_classes is not None else [None] * len(t.rows)
    if len(classes) != len(t.rows):
        raise ValueError("a table needs one row class (or None) a row")
    unknown = {c for c in classes if c is not None} - ROW_CLASSES
    if unknown:
        raise ValueError(f"unknown row classes: {sorted(unknown)}")
    return classes


def _html_table(t: Table) -> str:
    num = len(t.headers) if t.numeric_from is None else t.numeric_from

    def cell(tag: str, j: int, content: Inline) -> str:
        cls = ' class="n"' if j >= num else ""
        return f"<{tag}{cls}>{_html_inline(content)}</{tag}>"

    head = "".join(cell("th", j, h) for j, h in enumerate(t.headers))
    rows = []
    for row, cls in zip(t.rows, _row_classes(t), strict=True):
        attr = f' class="{cls}"' if cls else ""
        rows.append(f"<tr{attr}>" + "".join(cell("td", j, c) for j, c in enumerate(row))
                    + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _html_figure(inner: str, caption: Inline | None, cls: str | None = None) -> str:
    attr = f' class="{cls}"' if cls else ""
    cap = f"<figcaption>{_html_inline(caption)}</figcaption>" if caption is not None else ""
    return f"<figure{attr}>{inner}{cap}</figure>"


def _html_code(b: CodeBlock) -> str:
    if b.highlighted is not None:
        return f'<div class="code">{_check_trusted(b.highlighted, "CodeBlock.highlighted")}</div>'
    if not b.numbered:
        return f"<pre>{_e(b.code)}</pre>"
    lines = b.code.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    digits = len(str(len(lines)))
    # Numbers inline, each in its own line of the one <pre>: they cannot drift from it.
    body = "\n".join(f'<span class="ln">{i:>{digits}}</span>{_e(line)}'
                     for i, line in enumerate(lines, 1))
    return f"<pre>{body}\n</pre>"


def _check_swatches(swatches: Sequence[Swatch]) -> None:
    for s in swatches:
        if not _COLOUR.match(s.colour):
            raise ValueError(f"not a colour: {s.colour!r}")


def _html_legend(b: Legend) -> str:
    entries = []
    for e in b.entries:
        _check_swatches(e.swatches)
        marks = "".join(
            f'<span class="swatch{" hollow" if s.hollow else ""}" '
            f'style="{"border-color" if s.hollow else "background"}:{s.colour}"></span>'
            for s in e.swatches
        )
        entries.append(f'<span class="entry">{marks} {_e(e.label)}</span>')
    return f'<p class="legend note">{"".join(entries)}</p>'


def _html_block(b: Block, folder: Path | None) -> str:
    if isinstance(b, Heading):
        n = _check_level(b.level)
        return f"<h{n}>{_html_inline(b.text)}</h{n}>"
    if isinstance(b, Paragraph):
        tag = '<p class="note">' if b.note else "<p>"
        return f"{tag}{_html_inline(b.text)}</p>"
    if isinstance(b, Banner):
        return f'<div class="banner">{_html_inline(b.text)}</div>'
    if isinstance(b, BulletList):
        return "<ul>" + "".join(f"<li>{_html_inline(i)}</li>" for i in b.items) + "</ul>"
    if isinstance(b, Table):
        return _html_table(b)
    if isinstance(b, Image):
        data = _image_bytes(b, folder)
        alt = b.alt if b.alt is not None else _plain(b.caption)
        return _html_figure(f'<img alt="{_e(alt)}" src="{_data_uri(b.mime, data)}">', b.caption)
    if isinstance(b, Drawing):
        return _html_figure(_check_trusted(b.svg, "Drawing.svg"), b.caption, "drawing")
    if isinstance(b, CodeBlock):
        return _html_code(b)
    if isinstance(b, Cards):
        return '<div class="cards">' + "".join(
            f'<div class="card"><div class="k">{_e(c.key)}</div><div class="v">{_e(c.value)}'
            f'</div><div class="d">{_e(c.detail)}</div></div>'
            for c in b.items
        ) + "</div>"
    if isinstance(b, Legend):
        return _html_legend(b)
    if isinstance(b, Details):
        inner = "".join(_html_block(c, folder) for c in b.blocks)
        return f"<details><summary>{_html_inline(b.summary)}</summary>{inner}</details>"
    if isinstance(b, Columns):
        return '<div class="columns">' + "".join(
            "<div>" + "".join(_html_block(c, folder) for c in col) + "</div>"
            for col in b.columns
        ) + "</div>"
    raise TypeError(f"not a document block: {type(b).__name__}")


_CSS = """
body{font:14px/1.45 -apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;
color:#222;background:#fafafa;margin:0}
main{max-width:{width}px;margin:0 auto;padding:24px 28px 60px}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:17px;margin:34px 0 10px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3,h4,h5,h6{font-size:14px;margin:18px 0 6px}
.note{color:#666;font-size:12.5px;margin:4px 0 8px}
.banner{background:#fde8e8;border:2px solid #c0392b;color:#7b1d13;padding:.7em 1em;
font-weight:600;margin:1em 0}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(200px,1fr));gap:10px;
margin-top:12px}
.card{background:#fff;border:1px solid #e3e3e3;border-radius:6px;padding:10px 12px}
.card .k{color:#777;font-size:12px;text-transform:uppercase;letter-spacing:.04em}
.card .v{font-size:18px;font-weight:600;margin-top:2px}
.card .d{color:#666;font-size:12px;margin-top:2px;word-break:break-all}
table{border-collapse:collapse;background:#fff;margin:6px 0 10px;font-size:13px}
th,td{border:1px solid #e3e3e3;padding:3px 9px;text-align:left;vertical-align:top}
th{background:#f1f1f1;font-weight:600;white-space:nowrap}
.n{text-align:right;font-variant-numeric:tabular-nums}
tbody tr:nth-child(even) td{background:#fbfbfb}
tr.selected td{background:#e8f5e9}
code,pre{font:12.5px/1.4 "SFMono-Regular",Menlo,Consolas,monospace}
pre{background:#fff;border:1px solid #e3e3e3;border-radius:4px;padding:10px;
overflow-x:auto;margin:6px 0}
pre .ln{color:#999;padding-right:10px;user-select:none}
.code{background:#fff;border:1px solid #e3e3e3;border-radius:4px;padding:8px 10px;
overflow-x:auto;margin:6px 0}
.code pre{border:0;padding:0;margin:0;background:transparent;overflow:visible}
figure{background:#fff;border:1px solid #e3e3e3;border-radius:6px;padding:8px;
margin:10px 0}
figure img{max-width:100%;height:auto;display:block}
figure.drawing{overflow-x:auto}
figcaption{color:#666;font-size:12.5px;margin-top:6px}
.columns{display:grid;grid-auto-flow:column;grid-auto-columns:1fr;gap:18px}
details summary{cursor:pointer;color:#2c7fb8;margin:6px 0}
.legend .entry{display:inline-block;margin-right:16px}
.swatch{display:inline-block;width:10px;height:10px;border-radius:50%;
vertical-align:-1px}
.swatch.hollow{border:1px solid;box-sizing:border-box}
"""


def to_html(blocks: Iterable[Block], *, title: str, folder: Path | None = None,
            width: int = 1180) -> str:
    """The blocks as one self-contained page: inline CSS, every image a data URI
    (file images read from ``folder``), no script, nothing fetched; ``width``: the
    page's maximum width in CSS pixels."""
    body = "\n".join(_html_block(b, folder) for b in blocks)
    css = _CSS.replace("{width}", str(int(width)))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{css}</style></head>\n<body><main>\n"
        f"{body}\n</main></body></html>\n"
    )
