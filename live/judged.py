"""A real judge's verdicts on the live runs (``corpus live --judge-model``).

The simulated panel labels a live run as it labels a synthetic one (its behaviour
mode, kept only where the real apps let it happen: :mod:`~monsearch.live.labels`).
The *oracle* verdict, the one an escalation policy pays for, is simulated too unless
a judge is configured: then every kept run is shown to that judge (any
OpenAI-compatible endpoint, the checkout's own rubric for its task) and its verdict
replaces the simulated one. The answers are cached on disk, so playing the same runs
again costs no judge call.

A run the judge gave no verdict for keeps the simulated verdict, marked
``meta["oracle_source"] = "simulated"``, and is counted: a corpus never mixes the
two kinds silently. The summary says how often the judge agreed with the panel.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from monsearch.corpora.model import ORACLE, Trajectory, Verdict
from monsearch.corpora.stats import oracle_agreement

#: ``meta["oracle_source"]`` of a run whose oracle verdict is the configured judge's.
JUDGED = "judge"
#: ... and of one whose judge call failed (the simulated verdict kept).
SIMULATED = "simulated"


def judge_runs(
    trajectories: Sequence[Trajectory],
    config: Any,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[Trajectory], dict[str, Any]]:
    """Each trajectory with the judge's verdict as its oracle verdict, and a summary.

    ``config``: an llm :class:`~monsearch.oracle.session.OracleConfig` (its judge, cache
    and rubric folder)."""
    from monsearch.oracle.session import OracleSession

    trajs = list(trajectories)
    model = config.llm.model
    out: list[Trajectory] = []
    with OracleSession(config, {t.id: t for t in trajs}) as session:
        for i, t in enumerate(trajs):
            answer = session.verdict(t.id)
            if answer is None:
                out.append(replace(t, meta={**t.meta, "oracle_source": SIMULATED}))
            else:
                verdict = Verdict(
                    judge=model, is_failure=answer.is_failure, stealth_score=answer.stealth_score,
                    confidence=answer.confidence, dimension=answer.dimension,
                    reason=answer.reason, role=ORACLE,
                )  # fmt: skip
                out.append(replace(t, oracle=(verdict,), meta={**t.meta, "oracle_source": JUDGED}))
            if progress is not None:
                progress(i + 1, len(trajs))
        report = session.summary()
    judged = [t for t in out if t.meta["oracle_source"] == JUDGED]
    summary = {
        "judge": model,
        "judged": len(judged),
        "failed": len(out) - len(judged),
        "first_error": report.get("judge_error"),
        "cost": report["cost"],
        "rubrics": report.get("rubrics", {}),
        "agreement_with_panel": oracle_agreement(judged).get(model),
    }
    return out, summary
