"""The plugin's escalation band is fitted on val when it is exported, always.

The band and the audit rule are fitted on val (docs/DESIGN.md, "Escalation cost
model"): nothing sealed goes into them. A plugin exported before ``monsearch test``
ran must carry the same band as one exported after (two plugins of one strategy used
to score one file ``audit (escalate)`` and ``audit``), and that band is the one the
sealed test fits on val.
"""

from __future__ import annotations

import json
import shutil

from cli_support import run_main
from export_support import shared_setup

from monsearch.export import _band, export


def test_the_band_is_fitted_on_val_before_and_after_the_sealed_test(
    tmp_path, tmp_path_factory, ledger_file, capsys
):
    shared = shared_setup(tmp_path_factory)
    run_dir = tmp_path / "runs" / "r"
    shutil.copytree(shared["run"].dir, run_dir)  # the sealed test adds its report to the run

    before = export(str(run_dir), tmp_path / "before", verify_val=False)
    assert before["test"] is None  # not tested yet
    assert before["escalation_band"] is not None, "no band without a sealed test"
    assert set(before["escalation"]) >= {"np", "band"}

    code, _, err = run_main(capsys, "test", str(run_dir), "--workers", "2")
    assert code == 0, err
    after = export(str(run_dir), tmp_path / "after", verify_val=False)
    assert after["test"] is not None  # the report is read now ...
    # ... and changes nothing of the escalation: both plugins escalate the same runs.
    assert after["escalation_band"] == before["escalation_band"]
    assert after["escalation"] == before["escalation"]

    (report_file,) = (run_dir / "test").rglob("report.json")
    fitted = json.loads(report_file.read_text())["escalation"]["fit"]
    assert before["escalation"] == fitted  # the sealed test's own val fit
    assert before["escalation_band"] == _band(fitted)


def test_untested_plugins_state_their_band(tmp_path_factory):
    # The session's plugins (exported untested) carry the band their README states.
    for folder, meta in shared_setup(tmp_path_factory)["plugins"].values():
        band = meta["escalation_band"]
        assert band is not None and band["rule"] in ("band", "np")
        readme = (folder / "README.md").read_text(encoding="utf-8")
        assert "Escalation band (rule" in readme and "No escalation band" not in readme
