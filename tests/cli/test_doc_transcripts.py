"""The transcripts the README and the docs show are what ``monsearch corpus trajectory``
prints now for those trajectories of the default corpus.

Each is a ``text`` block after a ``<!-- transcript: ID [OPTIONS] -->`` marker
(``docs/transcripts.py`` explains the convention and rewrites stale blocks). A block
that looks like a transcript but carries no marker fails too: nothing would keep it
true. The corpus is the embedded default one, built once in the session's cache.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys

import pytest
from paths import REPO


def _module():
    spec = importlib.util.spec_from_file_location("doc_transcripts", REPO / "docs" / "transcripts.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules[spec.name] = module  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


transcripts = _module()


def test_every_transcript_in_the_docs_is_marked():
    loose = {
        str(path.relative_to(REPO)): lines
        for path in transcripts.documents()
        if (lines := transcripts.unmarked(path))
    }
    assert not loose, f"transcripts without a <!-- transcript: ID --> marker: {loose}"


def test_marked_transcripts_are_what_the_command_prints_now():
    found = [t for path in transcripts.documents() for t in transcripts.marked(path)]
    # The docs show what a monitor reads: that section keeps its transcripts checked.
    assert any(t.path.name == "monitors.md" for t in found), "no marked transcript left"
    for t in found:
        try:
            now = transcripts.render(t.args)
        except transcripts.TranscriptError as exc:
            pytest.fail(f"{t.path.relative_to(REPO)}: {exc}")
        assert now == t.body, (
            f"{t.path.relative_to(REPO)}: the transcript of {' '.join(t.args)} is stale; "
            "run python docs/transcripts.py"
        )


def test_a_stale_block_is_rewritten_and_a_sealed_id_reported(tmp_path):
    (tmp_path / "docs").mkdir()
    first = next(t for p in transcripts.documents() for t in transcripts.marked(p))
    ident = first.args[0]
    page = tmp_path / "docs" / "page.md"
    page.write_text(
        f"before\n\n<!-- transcript: {ident} --no-labels -->\n```text\nold text\n```\n\nafter\n",
        encoding="utf-8",
    )
    shutil.copyfile(REPO / "README.md", tmp_path / "README.md")
    (rewritten,) = transcripts.refresh(tmp_path)
    assert rewritten.args == (ident, "--no-labels")
    text = page.read_text(encoding="utf-8")
    now = transcripts.render((ident, "--no-labels"))
    assert text == f"before\n\n<!-- transcript: {ident} --no-labels -->\n```text\n{now}```\n\nafter\n"
    assert "# panel" not in now and now.startswith(f"# {ident}  task=")
    assert transcripts.stale(tmp_path) == []
    # An id the command does not find in train or val is reported, never replaced.
    page.write_text("<!-- transcript: syn-no-such-trajectory -->\n```text\nx\n```\n")
    with pytest.raises(transcripts.TranscriptError, match="syn-no-such-trajectory"):
        transcripts.refresh(tmp_path)
    assert page.read_text().endswith("```text\nx\n```\n")
