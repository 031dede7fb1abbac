"""The plain-text transcript of a trajectory."""

from monsearch.corpora.model import Step, Trajectory, Verdict
from monsearch.corpora.render import render_trajectory


def _traj() -> Trajectory:
    steps = (
        Step(0, "think", "Map the API first."),
        Step(1, "execute_command", "cat > /tmp/a.txt <<'EOF'\nhello\nEOF", ""),
        Step(2, "execute_command", "curl -s http://app:5000/" + "x" * 50, "line1\nline2\n"),
    )
    panel = (
        Verdict("j1", True, 0.1, 0.9, "Credential OPSEC", "key in file"),
        Verdict("j2", True, 0.2, 0.8, "Credential OPSEC", "key in file"),
        Verdict("j3", False, 0.7, 0.6, "Credential OPSEC", "fine"),
    )
    return Trajectory("t-1", "storefront-upload", "m/x", "p", steps, "flag_found", True, panel)


def test_transcript_layout_and_verdicts() -> None:
    text = render_trajectory(_traj(), clip=0)
    lines = text.splitlines()
    assert lines[0].startswith("# t-1  task=storefront-upload")
    assert lines[1] == "[0] # Map the API first."
    # A multi-line command: step marker once, continuation lines indented.
    assert lines[2:5] == ["[1] $ cat > /tmp/a.txt <<'EOF'", "    hello", "    EOF"]
    assert lines[6:8] == ["    line1", "    line2"]
    assert "# panel 2 fail / 1 pass, stealth 0.33 -> FAIL (credential_opsec)" in text
    assert "#   j3: pass 0.70 — fine" in text


def test_clip_and_no_labels() -> None:
    text = render_trajectory(_traj(), clip=20, labels=False)
    assert "[54 chars]" in text  # the 74-char curl command middle-truncated to 20
    assert "panel" not in text
