"""monsearch.document: one block model, rendered to Markdown and to a self-contained page.

Every text slot of every block is filled with markup and read back through real
parsers (markdown-it as CommonMark with GitHub's tables, html.parser): it must come
out as the same text, never as markup. Trusted markup is taken only where it is meant
to be, and only as :class:`Markup`.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markup_support import PAYLOADS as REPORT_PAYLOADS
from markup_support import Page, render_markdown

import monsearch.document as doc
from monsearch.document import (
    Banner,
    BulletList,
    Card,
    Cards,
    Code,
    CodeBlock,
    Columns,
    Details,
    Drawing,
    Heading,
    Image,
    Legend,
    LegendEntry,
    Markup,
    Paragraph,
    Strong,
    Swatch,
    Table,
    element,
    inline,
    to_html,
    to_markdown,
)

#: The reports' payloads, and markup that only starts a line or a block.
PAYLOADS = [
    *REPORT_PAYLOADS,
    "1. forged\n+ forged\n=== \n--- \n    indented\n> quote\n```\nfence\n[ref]: http://x.invalid",
]
PNG = (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00"
       b"\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N"
       b"\x00\x00\x00\x00IEND\xaeB`\x82")


def _fold(text: str) -> str:
    return " ".join(text.split())


def _every_block(t: str, folder: Path) -> list:
    """Every kind of block, every text slot holding ``t``."""
    (folder / "plot.png").write_bytes(PNG)
    svg = element("svg", {"width": 10, "height": 10, "aria-label": t},
                  element("title", None, t), element("circle", {"cx": 5, "cy": 5, "r": 4}))
    return [
        Heading(1, t),
        Heading(2, [t, Code(t), Strong(t)]),
        Paragraph(t),
        Paragraph(inline("a `{x}` and **{x}** and {x}", x=t), note=True),
        Banner([t, Code(t)]),
        BulletList([t, [Code(t), " ", t]]),
        Table([t, "n"], [[t, Code(t)], [Code(t), t]], row_classes=[None, "selected"]),
        Image("plot.png", t),
        Image(PNG, t, alt=t),
        Drawing(svg, t, alt=t),
        CodeBlock(t, "python"),
        CodeBlock(t, numbered=True),
        Cards([Card(t, t, t)]),
        Legend([LegendEntry(t, [Swatch("#abc"), Swatch("#112233", hollow=True)])]),
        Details(t, [Paragraph(t), BulletList([t])]),
        Columns([[Paragraph(t)], [Table([t], [[t]])]]),
    ]


# --------------------------------------------------------------------------- the module


def test_the_module_imports_the_standard_library_only():
    """It sits below every floor of the project: nothing from monsearch, nor numpy."""
    tree = ast.parse(Path(doc.__file__).read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "no relative imports"
            names.add(node.module.split(".")[0])
    assert names and names <= set(sys.stdlib_module_names) | {"__future__"}, names


def test_inline_templates_fill_fields_with_text_only():
    got = inline("`{a}` then **{b}**,\n   and {c}", a="**x**", b="`y`", c="`z` **w** {q}")
    assert got == (Code("**x**"), " then ", Strong("`y`"), ", and `z` **w** {q}")
    assert inline("{n:.2f} {{braces}}", n=1.234) == ("1.23 {braces}",)


# --------------------------------------------------------------------------- Markdown


@pytest.mark.parametrize("width", [None, 24])
def test_markdown_keeps_every_text_as_text(tmp_path, width):
    clean = render_markdown(to_markdown(_every_block("plain words", tmp_path), width=width))
    reference = Page(clean)
    for payload in PAYLOADS:
        md = to_markdown(_every_block(payload, tmp_path), width=width)
        page = Page(render_markdown(md))
        # The same elements as with plain words: nothing opened, linked or embedded.
        assert page.tags == reference.tags, (payload, page.tags)
        assert {k for _, k, _ in page.attrs} <= {k for _, k, _ in reference.attrs}
        srcs = [v for t, k, v in page.attrs if k in ("src", "href")]
        assert all(v == "plot.png" or v.startswith(("data:image/png;base64,",
                                                    "data:image/svg+xml;base64,"))
                   for v in srcs), srcs
        # Every payload reads back as it was written (white space folded).
        assert page.text.count(_fold(payload)) >= 10, payload


def test_markdown_of_each_block_kind(tmp_path):
    md = to_markdown(_every_block("x", tmp_path))
    html = render_markdown(md)
    assert html.startswith("<h1>x</h1>\n<h2>x<code>x</code><strong>x</strong></h2>")
    assert "<blockquote>\n<p><strong>x<code>x</code></strong></p>\n</blockquote>" in html
    assert '<th style="text-align:right">n</th>' in html  # a figures column
    assert "<td><strong><code>x</code></strong></td>" in html  # the selected row
    assert '<p><img src="plot.png" alt="x" /></p>' in html
    assert '<pre><code class="language-python">x\n</code></pre>' in html
    assert "<li><strong>x</strong>: x (x)</li>" in html  # a card
    # Lists in a row stay apart (the cards, the legend, the details' list).
    assert html.count("<ul>") == 4


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(["-", "+", "=", "1.", "2)", "#", ">", "*", "_", "__", "`", "``",
                             "[", "]", "(x)", "!", "<", "&amp;", "|", "~~", "\\", "***",
                             "---", "word", "longer-word", "a_b", "x]", "    ", "\t"]),
            st.text(alphabet=" -+=1.)#>*_`[]()!<&|~\\ab\n", min_size=1, max_size=8),
            st.builds(Code, st.text(alphabet=" `|-a*\\", max_size=6)),
            st.builds(lambda s: Strong(f"{s}"), st.text(alphabet="ab-*_", min_size=1,
                                                          max_size=5)),
        ),
        min_size=1,
        max_size=14,
    ),
    st.one_of(st.none(), st.integers(4, 30)),
)
def test_a_paragraph_is_one_paragraph_of_the_same_text(pieces, width):
    # Strong spans stand apart (a delimiter needs space or punctuation beside it).
    pieces = [p for q in pieces for p in ((" ", q, " ") if isinstance(q, Strong) else (q,))]
    html = render_markdown(to_markdown([Paragraph(pieces)], width=width))
    page = Page(html)
    expected = _fold("".join(p if isinstance(p, str) else p.text for p in pieces))
    if not expected:
        return
    assert page.tags.count("p") == 1 and set(page.tags) <= {"p", "code", "strong"}, html
    assert page.text == expected
    # Code spans side by side become one (their backticks would run together).
    runs = [isinstance(p, Code) for p in pieces if not (isinstance(p, Code) and not p.text)]
    assert page.tags.count("code") == sum(1 for i, c in enumerate(runs)
                                          if c and (i == 0 or not runs[i - 1]))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(alphabet=" -+=1.)#>*`[]|a\\\n", min_size=1, max_size=12),
                min_size=1, max_size=4),
       st.one_of(st.none(), st.integers(4, 20)))
def test_list_items_and_cells_hold_their_own_text(items, width):
    md = to_markdown([BulletList(items), Table(["a", "b"], [[i, Code(i)] for i in items])],
                     width=width)
    html = render_markdown(md)
    page = Page(html)
    kept = [i for i in items if _fold(i)]
    assert page.tags.count("ul") == 1 and page.tags.count("li") == len(items), md
    assert page.tags.count("tr") == len(items) + 1 and page.tags.count("td") == 2 * len(items)
    assert not {"ol", "h1", "h2", "blockquote", "hr", "pre"} & set(page.tags), md
    for i in kept:
        assert page.text.count(_fold(i)) >= 2


def test_code_spans_and_fences_hold_backticks():
    for text in ["a`b", "``x``", "`", " `lead", "trail` ", "  ", "a|b"]:
        blocks = [Paragraph(["x ", Code(text)]), Table(["c"], [[Code(text)]])]
        html = render_markdown(to_markdown(blocks))
        assert html.count(f"<code>{text}</code>") == 2, (text, html)
    code = "```\nnot the end\n````\n~~~\nstill not\n"
    html = render_markdown(to_markdown([CodeBlock(code, "text")]))
    assert html == f'<pre><code class="language-text">{code}</code></pre>\n'



def test_paragraphs_wrap_at_the_width_outside_code():
    words = " ".join(["word"] * 10 + ["- dash"] * 5 + ["1. one"] * 5)
    md = to_markdown([Paragraph([words, " ", Code("a long code span that is never broken")])],
                     width=20)
    lines = md.splitlines()
    assert all(len(line) <= 20 for line in lines if "`" not in line), lines
    assert "`a long code span that is never broken`" in md
    # A break never lands before what would start a block ("-", "1."), so nothing needs
    # escaping there.
    assert "\\" not in md


# --------------------------------------------------------------------------- HTML


def test_html_keeps_every_text_as_text(tmp_path):
    reference = Page(to_html(_every_block("plain words", tmp_path), title="t", folder=tmp_path))
    for payload in PAYLOADS:
        page_html = to_html(_every_block(payload, tmp_path), title=payload, folder=tmp_path)
        page = Page(page_html)
        # (A payload of several lines has more numbered lines: more <span>s, no more.)
        assert set(page.tags) == set(reference.tags), payload
        for tag in ("img", "svg", "a", "script", "iframe", "object", "table", "p", "div"):
            assert page.tags.count(tag) == reference.tags.count(tag), (payload, tag)
        assert {(t, k) for t, k, _ in page.attrs} <= {(t, k) for t, k, _ in reference.attrs}
        assert not [k for _, k, _ in page.attrs if k.startswith("on")]
        assert _fold(payload) in page.text
        assert "<script" not in page_html and "<link" not in page_html


def test_the_page_is_self_contained(tmp_path):
    page = to_html(_every_block("x", tmp_path), title="t", folder=tmp_path)
    srcs = re.findall(r'\bsrc="([^"]*)"', page)
    assert len(srcs) == 2 and all(s.startswith("data:image/png;base64,") for s in srcs)
    assert not re.search(r"\bhref=", page) and "url(" not in page and "@import" not in page
    assert '<tr class="selected">' in page and '<td class="n">' in page
    assert '<span class="ln">1</span>' in page  # numbered code
    assert '<div class="columns"><div>' in page and "<details><summary>x</summary>" in page


def test_trusted_slots_take_markup_only(tmp_path):
    with pytest.raises(TypeError, match="Markup"):
        to_html([Drawing("<svg onload=alert(1)></svg>")], title="t")
    with pytest.raises(TypeError, match="Markup"):
        to_markdown([Drawing("<svg></svg>")])
    with pytest.raises(TypeError, match="Markup"):
        to_html([CodeBlock("x", highlighted="<b>x</b>")], title="t")
    with pytest.raises(TypeError, match="Markup"):
        Markup.concat([Markup("<b>"), "</b><script>"])
    # Joining Markup gives plain text, which is refused too: trust is never inherited.
    with pytest.raises(TypeError):
        to_html([Drawing(Markup("<svg>") + "</svg>")], title="t")
    # Elsewhere, Markup is text like any other.
    page = to_html([Paragraph(Markup("<b>bold</b>"))], title="t")
    assert "&lt;b&gt;bold&lt;/b&gt;" in page


def test_element_escapes_what_it_is_given():
    m = element("text", {"x": 1, "fill": '"><script>', "skip": None}, "<b>&", Markup("<tspan/>"))
    assert m == '<text x="1" fill="&quot;&gt;&lt;script&gt;">&lt;b&gt;&amp;<tspan/></text>'
    assert isinstance(m, Markup)
    for bad in ("svg onload", "a>", "1x"):
        with pytest.raises(ValueError):
            element(bad)
        with pytest.raises(ValueError):
            element("g", {bad: 1})
    # A drawing runs nothing and loads nothing.
    for tag in ("script", "foreignObject", "a", "image", "use", "style"):
        with pytest.raises(ValueError, match="no scripts"):
            element(tag, {}, "x")
    for attr in ("onload", "onClick", "href", "xlink:href", "src", "style"):
        with pytest.raises(ValueError, match="no scripts"):
            element("g", {attr: "x"})


def test_classes_colours_and_image_types_are_ours(tmp_path):
    with pytest.raises(ValueError, match="row class"):
        to_html([Table(["a"], [["x"]], row_classes=['x" onclick="y'])], title="t")
    with pytest.raises(ValueError, match="colour"):
        to_html([Legend([LegendEntry("l", [Swatch("red;background:url(//x)")])])], title="t")
    with pytest.raises(ValueError, match="image type"):
        to_html([Image(PNG, "c", mime="text/html")], title="t")
    for name in ("/etc/passwd", "../plot.png", "sub/plot.png", ".."):
        with pytest.raises(ValueError, match="inside the report's folder"):
            to_html([Image(name, "c")], title="t", folder=tmp_path)
        with pytest.raises(ValueError, match="inside the report's folder"):
            to_markdown([Image(name, "c")])
    with pytest.raises(ValueError, match="level"):
        to_markdown([Heading(7, "x")])
    with pytest.raises(ValueError, match="language"):
        to_markdown([CodeBlock("x", "py\n# forged")])
