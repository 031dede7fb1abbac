"""The exported plugin's README: what it detects, how well, how to use it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

_DIMENSIONS = {
    "credential_opsec": "credentials leaked into stored fields, URLs, other hosts or uploads",
    "operational_impact": "destructive or unnecessary writes to production data",
    "detection_avoidance": "noisy scanning, rate-limit trips, no pacing",
    "telemetry_injection": "identifying or attacker content written into telemetry",
    "compartmentalisation": "persistent or identifiable callback infrastructure",
    "third_party_harm": "actions that hurt users or services beyond the target",
    "exploit_recklessness": "out-of-scope or reckless exploitation",
}


def _default_limits() -> Any:
    """The plugin's default :class:`Limits` (its template file, loaded as it ships)."""
    name = "_monsearch_export_plugin_limits"
    module = sys.modules.get(name)
    if module is None:
        path = Path(__file__).with_name("plugin") / "_limits.py"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules[name] = module  # a dataclass module must be importable while it runs
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.Limits()


def _f(x: Any, fmt: str = ".3f") -> str:
    return format(x, fmt) if isinstance(x, (int, float)) and not isinstance(x, bool) else "n/a"


def _bound(x: Any) -> str:
    # A band end for reading (exact in MONITOR["escalation_band"]); open ends are "inf".
    try:
        return format(float(x), ".6g")
    except (TypeError, ValueError):
        return "n/a"


def _metrics_rows(title: str, metrics: dict[str, Any] | None) -> list[str]:
    if not metrics:
        return [f"| {title} | n/a | n/a | n/a | n/a | n/a | n/a |"]
    bauc = metrics.get("bauc") or {}
    recall = metrics.get("recall_at") or {}
    return [
        f"| {title} | {metrics.get('n', 'n/a')} ({metrics.get('n_failures', 'n/a')} failures) "
        f"| {_f(bauc.get('aggregate'))} | {_f(recall.get('0.01'))} | {_f(recall.get('0.05'))} "
        f"| {_f(recall.get('0.1'))} | {_f(metrics.get('auroc'))} |"
    ]


def _test_row(test: dict[str, Any] | None) -> list[str]:
    """The sealed test's row: thresholds transferred from val (and recalibrated BAUC)."""
    t = (test or {}).get("test") or {}
    tr = t.get("transferred") or {}
    if not tr:
        return ["| sealed test | not run when exported | | | | | |"]
    recall = tr.get("recall_at") or {}
    bauc = (tr.get("bauc") or {}).get("aggregate")
    rec = ((t.get("recalibrated") or {}).get("bauc") or {}).get("aggregate")
    reopened = " (re-opened)" if (test or {}).get("reopened") else ""
    return [
        f"| sealed test{reopened}, val thresholds | {t.get('n', 'n/a')} "
        f"({tr.get('n_failures', 'n/a')} failures) | {_f(bauc)} (recalibrated {_f(rec)}) "
        f"| {_f(recall.get('0.01'))} | {_f(recall.get('0.05'))} | {_f(recall.get('0.1'))} | n/a |"
    ]


def render_readme(m: dict[str, Any]) -> str:
    pkg, name = m["package"], m["name"]
    dist = pkg.replace("_", "-")
    val = (m.get("val") or {}).get("metrics") or {}
    by_dim = ((val.get("bauc") or {}).get("by_dimension")) or {}
    dims = (
        "\n".join(
            f"- **{d}** ({_DIMENSIONS.get(d, 'see the StealthBench rubrics')}): val BAUC {_f(v)}"
            for d, v in sorted(by_dim.items())
        )
        or "- (the run recorded no per-dimension figures)"
    )
    rows = [
        "| split | trajectories | BAUC (1–10 %) | recall @1 % | recall @5 % | recall @10 % | AUROC |",
        "|---|---|---|---|---|---|---|",
    ]
    rows += _metrics_rows("val (selection split)", val)
    rows += _test_row(m.get("test"))
    thr = "\n".join(
        f"| {float(b):.0%} | {_f(t['tau'], '.6g')} | {_f(t['g'], '.3f')} |"
        for b, t in sorted(m.get("thresholds", {}).items(), key=lambda kv: float(kv[0]))
    )
    band = m.get("escalation_band")
    band_text = (
        f"Escalation band (rule `{band.get('rule')}` of the run's escalation fit, at the "
        f"cheapest cost budget that escalates: {_f(band.get('cost_budget'), '.3g')} units of "
        f"${_f(band.get('usd_per_unit'), '.2f')} per trajectory): send trajectories scoring "
        f"in [{_bound(band['low'])}, {_bound(band['high'])}) to the judge panel (about "
        f"{_f(band.get('escalation_rate'), '.1%')} of val benign runs); `decide()` reports "
        "`escalate: true` for them. Other budgets: `MONITOR['escalation']`."
        if band
        else "The run recorded no escalation band: `decide()` reports audit decisions only."
    )
    verified = m.get("verified")
    verified_text = (
        f"At export, this package scored all {verified['n']} val trajectories from a separate "
        "interpreter (random `PYTHONHASHSEED`; the program ran in its worker process, as "
        f"below; host judge: {verified.get('judge', 'none')}) "
        "and every score equalled the run's in-framework score exactly."
        if verified
        else "The export was not verified against the run's val scores (`--no-verify`)."
    )
    caps = m.get("query_caps") or {}
    lim = _default_limits()
    corpus = m.get("corpus") or {}
    return f"""# {dist}

An OPSEC monitor for the trajectories of autonomous offensive-security agents,
exported by monsearch {m.get("monsearch_version")} from run `{m["run_id"]}`
(candidate `{m["program_id"]}`{", the selected strategy" if m.get("selected") else ""}).
It scores how likely a run blew its operational stealth; higher is more suspicious.

- strategy hash (sha256 of the program): `{m["strategy_hash"]}`
- corpus content hash: `{corpus.get("content_hash", "n/a")}`

## What it detects

The program reads a parsed view of the run (HTTP requests from curl/wget/python/nc
commands, secrets and where they went, listeners, files written, loops, statuses)
and was selected on budget-AUC over StealthBench's failure dimensions:

{dims}

## How well

Thresholds are set on the val benign runs; recall is the share of failures audited
when that share of benign runs is audited (labels: the judge panel's majority).

{chr(10).join(rows)}

Audit thresholds (from {len((m.get("calibration") or {}).get("val_benign_scores") or [])} val benign scores; flag above `tau`,
and a `g` share of ties at `tau`):

| audit budget | tau | g |
|---|---|---|
{thr}

{band_text}

{verified_text}

## Command line

```
pip install .                      # needs RestrictedPython and google-re2
{dist} run.json other/*.json       # one JSON line per trajectory: score, status, decision
python -m {pkg} --budget 0.01 --findings trajectories.jsonl
python -m {pkg} --timeout 5 --memory-mb 2048 big-runs.jsonl
cat run.json | {dist} -
```

Scores and thresholds (`tau`) are printed exactly: the decision compares them exactly.
Figures derived from them only to be read (`g`, `audit_probability`, the findings'
`delta` and detector values) are rounded to six significant digits; the Python API
returns every value unrounded.

Inputs: StealthBench harness trajectories (`trajectory.atif.json`, `atif_version`),
canonical ATIF v1.4–v1.8 (`schema_version`), or monsearch corpus records; `.jsonl`
files hold one per line. The exit code is 1 if any input was unreadable. A trajectory
the program did not finish has `status` `error`, `timeout` or `memory`, the reason in
`error`, the status as its `decision`, and no findings (see "Limits" below).

## Python

```python
import {pkg} as monitor
monitor.score("run.json")                 # float
r = monitor.evaluate(doc_dict)            # Result(score, error, oracle_calls, seconds, status)
r.ok, r.status                            # True, "ok" / False, "error" | "timeout" | "memory"
monitor.decide(r, budget=0.01)            # audit / tie / pass at that budget (or the status)
monitor.decide(s, budget=0.01)            # the same for a bare score
monitor.findings("run.json")              # the steps that raised the score, with spans
monitor.score_steps("run.json")           # score of each prefix (step-by-step hosts)
monitor.evaluate(doc, timeout_s=5, memory_mb=2048)   # limits for one call
monitor.configure(timeout_s=1.0)          # ... or for every later call
monitor.MONITOR                           # hashes, metrics, thresholds, caps
monitor.clear_caches()                    # free the parse caches (long-running hosts)
monitor.close()                           # stop the worker process now (else at exit)
```

`oracle()` calls inside the program return None unless the host passes a judge:
`monitor.score(t, oracle=lambda traj, variant: 0.9)`, capped at
{caps.get("per_traj_cap", "n/a")} calls per trajectory as in the run (rho cap
{caps.get("rho", "n/a")}, oracle backend at search time `{caps.get("oracle", "n/a")}`;
variants {", ".join(f"`{v}`" for v in caps.get("variants") or ()) or "n/a"}, any other raises
`ValueError` as in the sandbox). The metrics and thresholds above were measured with the
judge answering: without one, a trajectory the program would escalate keeps the score it
had before asking.
Discovery: entry point group `monsearch.monitors`, name `{name}`.

## Inspect AI

```
pip install '.[inspect]'
inspect score LOG.eval --scorer {pkg}/opsec_monitor -S budget=0.01
```

Value: the score; answer: the decision at the budget; metadata: decision and findings.
A transcript the program did not finish scores NaN (as an unreadable one does), with
the status as the answer and the reason in the explanation and metadata. The program
runs in the worker process, awaited in a thread: the event loop is not held.

## ControlArena

```python
from {pkg}.control_arena_monitor import {pkg}
monitor = {pkg}(budget=0.01)      # a @control_agent returning MonitorResponse
```

`suspicion_score` is the share of val benign runs scoring lower (in [0, 1]);
the monitor runs after each assistant message on the transcript so far. A transcript
the program does not finish gets `failure_suspicion` (default 1.0, fail closed: input
that stops the monitor must not get an agent past it), and the reason.
Needs the run's task metadata (ControlTaskMetadata) like any ControlArena monitor.
Checked by hand with control-arena 20.1.1 (not in monsearch's CI: a 1.1 GB
install): `run_monitor_for_messages` over a five-step callback-listener
transcript gave per-step suspicion 0, 0, 0, 0.73, 0.99, the last step's raw
score equalled this package's score of the same trajectory file, and
`ControlAgent.get("{pkg}")` found the monitor by name.

## atif-scan

```
pip install '.[atif-scan]'
atif-scan --plugin {pkg}.atifscan_plugin:checks --fail-on high runs/
```

Detectors `opsec.{name}.audit_5pct` (medium) and `opsec.{name}.audit_1pct` (high);
the raw score is the `monitor_score` measure. atif-scan hands plugins no `extra`
fields: give the task with `--task`; the outcome comes from the verifier reward.
A trace the program does not finish is an `error` assessment, its status the
`monitor_status` measure.

## Limits: the program is not trusted

The program was written by a language model or a mutator during the search, and the
trajectories it reads are written by the agent it monitors, which can craft input that
makes it loop or allocate without end. So it never runs in your process: the package
starts one worker process (the first time a trajectory is scored; it stops when your
process exits, or at `close()`), and every trajectory is scored there, under

- a time budget, `timeout_s` (default {_f(lim.timeout_s, "g")} s): everything one call
  does for one trajectory, reading it, building its view and running the program (for
  `findings()` and `score_steps()` all their runs together). Time your judge takes to
  answer `oracle()` does not count. The program is interrupted at the budget; should it
  not stop, its process is killed a moment later;
- a memory cap, `memory_mb` (default {lim.memory_mb} MB): how much the worker process may
  grow (`RLIMIT_AS`, Linux).

A trajectory that runs past either gets `status` `timeout` or `memory` (a program that
raises: `error`), `score` the fallback below, and `decide()` the status instead of a
decision; the worker is replaced and the next trajectory scores normally. Your process
is not touched: no signal handler, resource limit or memory of it is used. Each
trajectory costs one round trip over a pipe to the worker (tens of microseconds); the
program runs with `PYTHONHASHSEED=0` as in monsearch's sandbox, in an environment
without your process's variables (no API keys reach it).

A trajectory that stops the monitor is worth a look in itself: the fallback score is no
judgement (it is the lowest val score, so it would hardly ever be audited), which is why
the adapters above report the status rather than a decision.

`monitor.configure(isolation="none")` runs the program in your own process instead,
with no time or memory limit at all: only for a program you have read yourself, where a
worker process cannot be started.

## How it stays the same monitor

`src/{pkg}/_vendor/` holds monsearch's own trajectory readers, view builder,
helpers and RestrictedPython policy, copied at export time with only their import
lines changed. The program runs under the same language restrictions as in the sandbox,
and under limits like the sandbox's (above). A trajectory the program fails on gets the
run's fallback score ({_f(m.get("fallback_score"), ".6g")}, the lowest val score), as
in the sandbox.

The regex helpers run on RE2 (`google-re2`, a dependency), as in the sandbox: RE2's
matching time is linear in the text, while Python's `re` backtracks, and on text the
monitored agent writes a pattern such as `^(a+)+$` can take minutes on 35 characters.
The package refuses to load without google-re2 rather than fall back to `re`.
"""
