"""A report's Markdown stays text under renderers that allow raw HTML but read escapes
differently from CommonMark (issue 33, class 5: a task named ``<img src=x
onerror=alert(1)>`` became an element when the sealed test's report.md was shown by such
a renderer).

``\\<`` is an escape in CommonMark, not in Python-Markdown (what mkdocs renders with):
there ``\\<img ...>`` is a backslash and then raw HTML. ``<``, ``>`` and ``&`` are
written as entities, which every renderer decodes to the characters and none reads as
markup.
"""

from __future__ import annotations

import pytest
from markup_support import PAYLOADS, Page, render_markdown

from monsearch.document import BulletList, Heading, Image, Paragraph, Table, md_text, to_markdown

#: The reference shape: the same blocks with a harmless text.
_SAFE = "plain"


def _blocks(text: str) -> list:
    return [
        Heading(1, f"Sealed test of run {text}"),
        Heading(2, f"{text} (xgen)"),
        Paragraph(f"4 labelled runs; generators: {text}, other."),
        Table(["task", "runs"], [[text, "3"], ["t2", "4"]]),
        BulletList([text]),
        Image("plot.png", text),
    ]


def _python_markdown(text: str) -> str:
    markdown = pytest.importorskip("markdown")
    return markdown.markdown(text, extensions=["tables"])


@pytest.mark.parametrize("payload", PAYLOADS)
def test_no_payload_opens_raw_html_in_any_renderer(payload):
    md = to_markdown(_blocks(payload))
    # Renderer-independent: nothing of ours is raw HTML, so no "<" is left to open any.
    assert "<" not in md
    for render in (render_markdown, _python_markdown):
        page = Page(render(md))
        reference = Page(render(to_markdown(_blocks(_SAFE))))
        assert set(page.tags) <= set(reference.tags), (render.__name__, page.tags)
        assert page.tags.count("img") == reference.tags.count("img")
        assert not [k for _, k, _ in page.attrs if k.lower().startswith("on")]
        assert not [v for _, k, v in page.attrs if k == "href"]


def test_entities_read_back_as_the_characters():
    text = "a <b> & c &amp; d"
    for render in (render_markdown, _python_markdown):
        assert Page(render(to_markdown([Paragraph(text)]))).text == text
    assert md_text("<img src=x onerror=alert(1)>") == "&lt;img src=x onerror=alert(1)&gt;"
