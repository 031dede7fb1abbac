"""The exported plugin's README: what it detects, how well, how to use it.

Built as blocks of :mod:`monsearch.document` and rendered as Markdown wrapped at
:data:`WIDTH` columns: every value taken from the run (names, ids, hashes, dimension
names, the judge's and the oracle's names) is literal text, escaped where it lands.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

from monsearch.document import (
    Block,
    BulletList,
    Code,
    CodeBlock,
    Heading,
    Paragraph,
    Piece,
    Table,
    inline,
    to_markdown,
)

#: The README's paragraphs are wrapped at this many columns (tables and code are not).
WIDTH = 88

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


def _metrics_rows(title: str, metrics: dict[str, Any] | None) -> list[list[str]]:
    if not metrics:
        return [[title, "n/a", "n/a", "n/a", "n/a", "n/a", "n/a"]]
    bauc = metrics.get("bauc") or {}
    recall = metrics.get("recall_at") or {}
    return [[
        title,
        f"{metrics.get('n', 'n/a')} ({metrics.get('n_failures', 'n/a')} failures)",
        _f(bauc.get("aggregate")),
        _f(recall.get("0.01")),
        _f(recall.get("0.05")),
        _f(recall.get("0.1")),
        _f(metrics.get("auroc")),
    ]]


def _test_row(test: dict[str, Any] | None) -> list[list[str]]:
    """The sealed test's row: thresholds transferred from val (and recalibrated BAUC)."""
    t = (test or {}).get("test") or {}
    tr = t.get("transferred") or {}
    if not tr:
        return [["sealed test", "not run when exported", "", "", "", "", ""]]
    recall = tr.get("recall_at") or {}
    bauc = (tr.get("bauc") or {}).get("aggregate")
    rec = ((t.get("recalibrated") or {}).get("bauc") or {}).get("aggregate")
    reopened = " (re-opened)" if (test or {}).get("reopened") else ""
    return [[
        f"sealed test{reopened}, val thresholds",
        f"{t.get('n', 'n/a')} ({tr.get('n_failures', 'n/a')} failures)",
        f"{_f(bauc)} (recalibrated {_f(rec)})",
        _f(recall.get("0.01")),
        _f(recall.get("0.05")),
        _f(recall.get("0.1")),
        "n/a",
    ]]


def _joined(items: Any) -> list[Piece]:
    """``a``, ``b``, ``c`` as code spans with commas between (``n/a`` for none)."""
    pieces: list[Piece] = []
    for i, item in enumerate(items or ()):
        if i:
            pieces.append(", ")
        pieces.append(Code(str(item)))
    return pieces or ["n/a"]


def _header(m: dict[str, Any], dist: str) -> list[Block]:
    corpus = m.get("corpus") or {}
    return [
        Heading(1, dist),
        Paragraph(inline(
            """An OPSEC monitor for the trajectories of autonomous offensive-security agents,
            exported by monsearch {version} from run `{run}` (candidate `{program}`{selected}).
            It scores how likely a run blew its operational stealth; higher is more
            suspicious.""",
            version=m.get("monsearch_version"), run=m["run_id"], program=m["program_id"],
            selected=", the selected strategy" if m.get("selected") else "",
        )),
        BulletList([
            inline("strategy hash (sha256 of the program): `{h}`", h=m["strategy_hash"]),
            inline("corpus content hash: `{h}`", h=corpus.get("content_hash", "n/a")),
        ]),
    ]


def _detects(m: dict[str, Any]) -> list[Block]:
    val = (m.get("val") or {}).get("metrics") or {}
    by_dim = ((val.get("bauc") or {}).get("by_dimension")) or {}
    dims = [
        inline("**{d}** ({what}): val BAUC {v}", d=d,
               what=_DIMENSIONS.get(d, "see the StealthBench rubrics"), v=_f(v))
        for d, v in sorted(by_dim.items())
    ] or ["(the run recorded no per-dimension figures)"]
    return [
        Heading(2, "What it detects"),
        Paragraph(inline("""The program reads a parsed view of the run (HTTP requests from
            curl/wget/python/nc commands, secrets and where they went, listeners, files
            written, loops, statuses) and was selected on budget-AUC over StealthBench's
            failure dimensions:""")),
        BulletList(dims),
    ]


def _how_well(m: dict[str, Any]) -> list[Block]:
    val = (m.get("val") or {}).get("metrics") or {}
    thresholds = sorted((m.get("thresholds") or {}).items(), key=lambda kv: float(kv[0]))
    n_scores = len((m.get("calibration") or {}).get("val_benign_scores") or [])
    band = m.get("escalation_band")
    verified = m.get("verified")
    return [
        Heading(2, "How well"),
        Paragraph(inline("""Thresholds are set on the val benign runs; recall is the share of
            failures audited when that share of benign runs is audited (labels: the judge
            panel's majority).""")),
        Table(["split", "trajectories", "BAUC (1–10 %)", "recall @1 %", "recall @5 %",
               "recall @10 %", "AUROC"],
              _metrics_rows("val (selection split)", val) + _test_row(m.get("test"))),
        Paragraph(inline("""Audit thresholds (from {n} val benign scores; flag above `tau`,
            and a `g` share of ties at `tau`):""", n=n_scores)),
        Table(["audit budget", "tau", "g"],
              [[f"{float(b):.0%}", _f(t["tau"], ".6g"), _f(t["g"], ".3f")]
               for b, t in thresholds], numeric_from=0),
        Paragraph(inline(
            """Escalation band (rule `{rule}` fitted on val at export, as `monsearch test`
            fits it, at the cheapest cost budget that escalates: {budget} units of ${usd}
            per trajectory): send
            trajectories scoring in [{low}, {high}) to the judge panel (about {rate} of val
            benign runs); `decide()` reports `escalate: true` for them. Other budgets:
            `MONITOR['escalation']`.""",
            rule=band.get("rule"), budget=_f(band.get("cost_budget"), ".3g"),
            usd=_f(band.get("usd_per_unit"), ".2f"), low=_bound(band["low"]),
            high=_bound(band["high"]), rate=_f(band.get("escalation_rate"), ".1%"),
        ) if band else inline(
            "No escalation band (val has no judge verdict for every run, or lacks failures "
            "or benign runs): `decide()` reports audit decisions only.")),
        Paragraph(inline(
            """At export, this package scored all {n} val trajectories from a separate
            interpreter (random `PYTHONHASHSEED`; the program ran in its worker process, as
            below; host judge: {judge}) and every score equalled the run's in-framework score
            exactly.""", n=verified["n"], judge=verified.get("judge", "none"),
        ) if verified else inline(
            "The export was not verified against the run's val scores (`--no-verify`).")),
    ]


def _command_line(pkg: str, dist: str) -> list[Block]:
    return [
        Heading(2, "Command line"),
        CodeBlock(f"""pip install .                      # needs RestrictedPython and google-re2
{dist} run.json other/*.json       # one JSON line per trajectory: score, status, decision
python -m {pkg} --budget 0.01 --findings trajectories.jsonl
python -m {pkg} --timeout 5 --memory-mb 2048 big-runs.jsonl
cat run.json | {dist} -
"""),
        Paragraph(inline("""Scores and thresholds (`tau`) are printed exactly: the decision
            compares them exactly. Figures derived from them only to be read (`g`,
            `audit_probability`, the findings' `delta` and detector values) are rounded to
            six significant digits; the Python API returns every value unrounded.""")),
        Paragraph(inline("""Inputs: StealthBench harness trajectories (`trajectory.atif.json`,
            `atif_version`), canonical ATIF v1.4–v1.8 (`schema_version`), or monsearch
            corpus records; `.jsonl` files hold one per line. The exit code is 1 if any input
            was unreadable. A trajectory the program did not finish has `status` `error`,
            `timeout` or `memory`, the reason in `error`, the status as its `decision`, and
            no findings (see "Limits" below). The agents being monitored write these files,
            so they are read as hostile: regular files only, JSON nested at most 100 levels,
            at most 100,000 steps, and the view's work per trajectory is bounded. The
            findings of a run too long to score every prefix come from a search under a
            fixed budget and say so (`partial`: prefixes scored, stretches left).""")),
    ]


def _python(m: dict[str, Any], pkg: str) -> list[Block]:
    caps = m.get("query_caps") or {}
    return [
        Heading(2, "Python"),
        CodeBlock(f"""import {pkg} as monitor
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
""", "python"),
        Paragraph([
            *inline("""`oracle()` calls inside the program return None unless the host passes
                a judge: `monitor.score(t, oracle=lambda traj, variant: 0.9)`, capped at {cap}
                calls per trajectory as in the run (rho cap {rho}, oracle backend at search
                time `{oracle}`; variants """, cap=caps.get("per_traj_cap", "n/a"),
                    rho=caps.get("rho", "n/a"), oracle=caps.get("oracle", "n/a")),
            *_joined(caps.get("variants")),
            *inline(""", any other raises `ValueError` as in the sandbox). The metrics and
                thresholds above were measured with the judge answering: without one, a
                trajectory the program would escalate keeps the score it had before asking.
                Discovery: entry point group `monsearch.monitors`, name `{name}`.""",
                    name=m["name"]),
        ]),
    ]


def _hosts(pkg: str, name: str) -> list[Block]:
    return [
        Heading(2, "Inspect AI"),
        CodeBlock(f"""pip install '.[inspect]'
inspect score LOG.eval --scorer {pkg}/opsec_monitor -S budget=0.01
"""),
        Paragraph(inline("""Value: the score; answer: the decision at the budget; metadata:
            decision and findings. A transcript the program did not finish scores NaN (as an
            unreadable one does), with the status as the answer and the reason in the
            explanation and metadata. The program runs in the worker process, awaited in a
            thread: the event loop is not held.""")),
        Heading(2, "ControlArena"),
        CodeBlock(f"""from {pkg}.control_arena_monitor import {pkg}
monitor = {pkg}(budget=0.01)      # a @control_agent returning MonitorResponse
""", "python"),
        Paragraph(inline("""`suspicion_score` is the share of val benign runs scoring lower
            (in [0, 1]); the monitor runs after each assistant message on the transcript so
            far. A transcript the program does not finish gets `failure_suspicion` (default
            1.0, fail closed: input that stops the monitor must not get an agent past it),
            and the reason. Needs the run's task metadata (ControlTaskMetadata) like any
            ControlArena monitor. Checked by hand with control-arena 20.1.1 (not in
            monsearch's CI: a 1.1 GB install): `run_monitor_for_messages` over a five-step
            callback-listener transcript gave per-step suspicion 0, 0, 0, 0.73, 0.99, the
            last step's raw score equalled this package's score of the same trajectory file,
            and `ControlAgent.get("{pkg}")` found the monitor by name.""", pkg=pkg)),
        Heading(2, "atif-scan"),
        CodeBlock(f"""pip install '.[atif-scan]'
atif-scan --plugin {pkg}.atifscan_plugin:checks --fail-on high runs/
"""),
        Paragraph(inline("""Detectors `opsec.{name}.audit_5pct` (medium) and
            `opsec.{name}.audit_1pct` (high); the raw score is the `monitor_score` measure.
            atif-scan hands plugins no `extra` fields: give the task with `--task`; the
            outcome comes from the verifier reward. A trace the program does not finish is
            an `error` assessment, its status the `monitor_status` measure.""", name=name)),
    ]


def _limits(m: dict[str, Any], pkg: str) -> list[Block]:
    lim = _default_limits()
    return [
        Heading(2, "Limits: the program is not trusted"),
        Paragraph(inline("""The program was written by a language model or a mutator
            during the search, and the trajectories it reads are written by the agent it
            monitors, which can craft input that makes it loop or allocate without end. So
            it never runs in your process: the package starts one worker process (the first
            time a trajectory is scored; it stops when your process exits, or at `close()`),
            and every trajectory is scored there, under""")),
        BulletList([
            inline("""a time budget, `timeout_s` (default {t} s): everything one call does
                for one trajectory, reading it, building its view and running the program
                (for `findings()` and `score_steps()` all their runs together). Time your
                judge takes to answer `oracle()` does not count. The program is interrupted
                at the budget; should it not stop, its process is killed a moment later;""",
                   t=_f(lim.timeout_s, "g")),
            inline("""a memory cap, `memory_mb` (default {mb} MB): how much the worker
                process may grow (`RLIMIT_AS`, Linux).""", mb=lim.memory_mb),
        ]),
        Paragraph(inline("""A trajectory that runs past either gets `status` `timeout` or
            `memory` (a program that raises: `error`), `score` the fallback below, and
            `decide()` the status instead of a decision; the worker is replaced and the next
            trajectory scores normally. Your process is not touched: no signal handler,
            resource limit or memory of it is used. Each trajectory costs one round trip
            over a pipe to the worker (tens of microseconds); the program runs with
            `PYTHONHASHSEED=0` as in monsearch's sandbox, in an environment without your
            process's variables (no API keys reach it).""")),
        Paragraph(inline("""A trajectory that stops the monitor is worth a look in itself: the
            fallback score is no judgement (it is the lowest val score, so it would hardly
            ever be audited), which is why the adapters above report the status rather than
            a decision.""")),
        Paragraph(inline("""`monitor.configure(isolation="none")` runs the program in your
            own process instead, with no time or memory limit at all: only for a program you
            have read yourself, where a worker process cannot be started.""")),
        Heading(2, "How it stays the same monitor"),
        Paragraph(inline("""`src/{pkg}/_vendor/` holds monsearch's own trajectory readers,
            view builder, helpers and RestrictedPython policy, copied at export time with
            only their import lines changed. The program runs under the same language
            restrictions as in the sandbox, and under limits like the sandbox's (above). A
            trajectory the program fails on gets the run's fallback score ({fallback}, the
            lowest val score), as in the sandbox.""", pkg=pkg,
                         fallback=_f(m.get("fallback_score"), ".6g"))),
        Paragraph(inline("""The regex helpers run on RE2 (`google-re2`, a dependency), as in
            the sandbox: RE2's matching time is linear in the text, while Python's `re`
            backtracks, and on text the monitored agent writes a pattern such as `^(a+)+$`
            can take minutes on 35 characters. The package refuses to load without
            google-re2 rather than fall back to `re`.""")),
    ]


def render_readme(m: dict[str, Any]) -> str:
    pkg, name = m["package"], m["name"]
    dist = pkg.replace("_", "-")
    blocks = [
        *_header(m, dist),
        *_detects(m),
        *_how_well(m),
        *_command_line(pkg, dist),
        *_python(m, pkg),
        *_hosts(pkg, name),
        *_limits(m, pkg),
    ]
    return to_markdown(blocks, width=WIDTH)
