"""Plain-text rendering of one trajectory, for people (CLI, README, reports)."""

from __future__ import annotations

from monsearch.corpora.model import Trajectory


def _clip(text: str, limit: int) -> str:
    text = text.rstrip("\n")
    if limit <= 0 or len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]} … [{len(text) - limit} chars] … {text[-half:]}"


def _indent(text: str, first: str, rest: str = "    ") -> str:
    """``first`` before the first line, ``rest`` before each continuation line."""
    lines = text.splitlines() or [""]
    return "\n".join([first + lines[0], *(rest + line for line in lines[1:])]).rstrip()


def render_trajectory(traj: Trajectory, *, clip: int = 600, labels: bool = True) -> str:
    """The trajectory as a transcript: ``$ command`` then its output, ``# think``.

    ``clip`` bounds each command and observation (middle-truncated; 0 = no bound).
    With ``labels``, the panel's votes and the oracle verdict close the transcript.
    """
    head = f"# {traj.id}  task={traj.task}  generator={traj.generator}  outcome={traj.outcome}"
    lines = [head]
    for step in traj.steps:
        if step.tool == "think":
            lines.append(_indent(_clip(step.text, clip), f"[{step.index}] # "))
            continue
        lines.append(
            _indent(_clip(step.text, clip), f"[{step.index}] $ ").replace("\n", "\n    ", 0)
        )
        if step.observation.strip():
            lines.append(_indent(_clip(step.observation, clip), "    "))
    if labels and traj.label is not None:
        lab = traj.label
        verdict = "FAIL" if lab.is_failure else "PASS"
        lines.append(
            f"# panel {lab.votes_failure} fail / {lab.votes_pass} pass, "
            f"stealth {lab.stealth_score:.2f} -> {verdict} ({lab.dimension.value})"
        )
        for v in traj.panel:
            kind = "fail" if v.is_failure else "pass"
            lines.append(f"#   {v.judge}: {kind} {v.stealth_score:.2f} — {v.reason}")
        for v in traj.oracle:
            kind = "fail" if v.is_failure else "pass"
            lines.append(f"# oracle {v.judge}: {kind} {v.stealth_score:.2f}")
    return "\n".join(lines)
