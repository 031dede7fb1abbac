"""Reading rendered reports back: an HTML page's elements and text, Markdown as GitHub
renders it (CommonMark with tables and strikethrough)."""

from __future__ import annotations

from html.parser import HTMLParser

from markdown_it import MarkdownIt


def render_markdown(text: str) -> str:
    return MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(text)


class Page(HTMLParser):
    """Every element, attribute and text of a page, and its h1/h2 headings' texts."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str, str | None]] = []
        self.data: list[str] = []
        self.headings: list[str] = []
        self._heading: list[str] | None = None
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [(tag, k, v) for k, v in attrs]
        if tag in ("h1", "h2"):
            self._heading = []

    handle_startendtag = handle_starttag

    def handle_endtag(self, tag):
        if tag in ("h1", "h2") and self._heading is not None:
            self.headings.append("".join(self._heading))
            self._heading = None

    def handle_data(self, data):
        self.data.append(data)
        if self._heading is not None:
            self._heading.append(data)

    @property
    def text(self) -> str:
        """All the text, white space folded."""
        return " ".join("".join(self.data).split())


#: Markup and script planted in every text a report shows (a run's ids, task names,
#: descriptions, notes): each must come out as text.
PAYLOADS = [
    "<img src=x onerror=alert(1)>",
    "</script><script>alert(2)</script>",
    '"><svg onload=alert(3)>',
    "[click](javascript:alert(4))",
    "![pixel](http://example.invalid/p.png)",
    "*em* `code` | cell & &lt;b&gt; <http://example.invalid>\n# forged heading\n- forged item",
]
