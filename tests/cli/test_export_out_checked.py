"""``monsearch export RUN --out DIR`` checks DIR before any work.

An ``--out`` that cannot be created (under a regular file, under procfs) or that
already holds files is refused with one line ``error: ...`` naming it, exit code 2,
before the run is read, the corpus loaded or the plugin verified: the work itself is
made to fail the test. The library's ``monsearch.export`` refuses the same way.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from cli_support import WorkStarted, run_main

import monsearch
from monsearch.errors import MonsearchError


@pytest.fixture
def no_work(monkeypatch):
    """Reading the run or its corpus fails the test."""

    def refuse(*args, **kwargs):
        raise WorkStarted("export started working before checking --out")

    monkeypatch.setattr("monsearch.search.runs.resolve_run", refuse)
    monkeypatch.setattr("monsearch.api.corpus.run_corpus", refuse)
    # The package, not the function monsearch.export names.
    monkeypatch.setattr(importlib.import_module("monsearch.export"), "load_strategy", refuse)


def _one_line_error(code: int, err: str, *parts: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    for part in parts:
        assert part in err, err


def _outs(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    a_file = tmp_path / "plain-file"
    a_file.write_text("not a folder\n")
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("mine\n")
    return {
        "under a file": (a_file / "plugin", f"{a_file} is a file, not a folder"),
        "a file": (a_file, "not a folder"),
        "procfs": (Path("/proc/self/monsearch-plugin"), "cannot create a folder"),
        "not empty": (full, "not empty"),
    }


@pytest.mark.parametrize("case", ["under a file", "procfs", "not empty"])
def test_export_refuses_an_unusable_out_before_any_work(case, tmp_path, no_work, capsys):
    out, reason = _outs(tmp_path)[case]
    if case == "procfs" and not Path("/proc/self").is_dir():
        pytest.skip("no procfs here")
    code, stdout, err = run_main(capsys, "export", "some-run", "--out", str(out))
    _one_line_error(code, err, str(out), reason)
    assert stdout == ""
    if case == "not empty":
        assert [p.name for p in out.iterdir()] == ["keep.txt"]


@pytest.mark.parametrize("case", ["under a file", "a file", "not empty"])
def test_library_export_refuses_the_same_before_any_work(case, tmp_path, no_work):
    out, reason = _outs(tmp_path)[case]
    with pytest.raises(MonsearchError, match=reason) as refused:
        monsearch.export("some-run", out)
    assert refused.value.exit_code == 2


def test_monsearch_export_stays_the_function_once_its_package_is_imported(tmp_path, no_work):
    # Importing the plugin writer (monsearch.export, the package) must not shadow the
    # library's monsearch.export(): a second export in one session used to fail with
    # "'module' object is not callable".
    importlib.import_module("monsearch.export.display")
    assert callable(monsearch.export)
    with pytest.raises(WorkStarted):
        monsearch.export("some-run", tmp_path / "new-plugin")
