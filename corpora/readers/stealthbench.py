"""Reader for the StealthBench harness output tree.

Layout (``<root>`` is the harness's ``results/`` folder)::

    <root>/trajectories/<model-slug>/<task>/<id>/trajectory.atif.json
                                              .../judge-status.json, metadata.json
    <root>/verdicts/<judge-slug>/<task>/<id>/verdict.json
    <root>/panel-verdicts/<task>/<id>/panel-verdict.json

``src`` may be ``<root>``, its ``trajectories/`` folder, or one trajectory file
(labelled only if the verdict files sit where the harness puts them).

The trajectory file is StealthBench's own dialect (``"atif_version": "1.7"``),
not canonical ATIF. Steps come nested (``{index, timestamp, action: {type,
tool, input}, observation: {text}, latency_ms}``) or flat (``{index, tool,
input, output}``), as the harness's judge formatter accepts both.

Which verdicts form the label panel:

* with a ``panel-verdict.json``: its embedded ``verdicts[]`` in their order
  (the harness's panel order, which decides ties); per-judge files of those
  judges must agree with them, and the stored aggregate must match ours;
* without one: the per-judge files, ordered by verdict timestamp (the harness
  runs judges one after another in panel order), unless ``judge-status.json``
  says the panel did not complete (the harness then writes no panel verdict and
  the run counts as unlabelled, as upstream), or the count is even (no
  majority).

Judges named in ``oracle_judges`` (model name or folder slug) go to
``Trajectory.oracle`` instead of the panel; per-judge files of judges that are
neither in the panel nor oracles are listed in ``meta["unused_judges"]``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from monsearch.corpora.errors import InputError
from monsearch.corpora.model import OUTCOMES, Step, Trajectory, Verdict, aggregate_panel
from monsearch.corpora.readers.jsonio import (
    DEFAULT_MAX_BYTES,
    MISSING,
    Node,
    check_steps,
    load_json,
)
from monsearch.corpora.readers.report import FileProgress, ImportReport, ReportBuilder
from monsearch.corpora.readers.stepinput import read_step_input
from monsearch.corpora.readers.tree import tree_files
from monsearch.corpora.readers.verdicts import (
    is_oracle,
    legacy_votes,
    read_verdict,
    split_roles,
)

SOURCE_FORMAT = "stealthbench"
TRAJECTORY_FILE = "trajectory.atif.json"
VERDICT_FILE = "verdict.json"
PANEL_FILE = "panel-verdict.json"
STATUS_FILE = "judge-status.json"
METADATA_FILE = "metadata.json"

_KNOWN_TOP = frozenset(
    {
        "_canary",
        "atif_version",
        "trajectory_id",
        "agent_model",
        "task",
        "step_count_total",
        "step_window",
        "steps",
        "source",
        "outcome",
        "flag_correct",
        "extra",
    }
)
_KNOWN_EXTRA = frozenset(
    {"stealthbench", "total_tokens", "flag_hash_expected", "guardrail_rejections"}
)
#: Stored panel scores are rounded; our mean must agree to this tolerance.
_SCORE_TOLERANCE = 1e-3


@dataclasses.dataclass(frozen=True, slots=True)
class _Layout:
    files: list[Path]
    root: Path | None  # holds verdicts/ and panel-verdicts/, if labels can exist
    base: Path  # meta["source_path"] is relative to this
    #: Links in the tree, left unread (corpora/readers/tree.py).
    links: tuple[InputError, ...] = ()


def read_stealthbench(
    src: Path,
    *,
    strict: bool = False,
    oracle_judges: frozenset[str] | set[str] = frozenset(),
    max_bytes: int = DEFAULT_MAX_BYTES,
    progress: FileProgress | None = None,
) -> ImportReport:
    """Read a StealthBench results tree (or one trajectory file) into trajectories."""
    src = Path(src)
    layout = _locate(src)
    builder = ReportBuilder(strict=strict, progress=progress)
    judge_dirs = _judge_dirs(layout.root)
    oracles = frozenset(oracle_judges)
    # (task, id) of every run, from folder names too, so a run skipped as broken
    # does not make its verdicts look orphaned.
    keys: set[tuple[str, str]] = set()
    for link in layout.links:
        builder.skip(link)  # (--strict: refused before any file is read)
        keys.add((Path(link.path).parent.parent.name, Path(link.path).parent.name))
    for path in layout.files:
        keys.add((path.parent.parent.name, path.parent.name))
        display = str(path)
        try:
            traj, warnings = _read_run(path, display, layout, judge_dirs, oracles, max_bytes)
        except InputError as err:
            builder.skip(err)
            continue
        finally:
            builder.file_done(len(layout.files))
        keys.add((traj.task, traj.id))
        for w in warnings:
            builder.warn(w)
        builder.add(traj, where=display, id_field="trajectory_id")
    if layout.root is not None and src.is_dir():
        _warn_orphans(builder, layout.root, judge_dirs, keys)
    return builder.report


# -- finding the files -------------------------------------------------------


def _locate(src: Path) -> _Layout:
    if src.is_file():
        # <root>/trajectories/<model>/<task>/<id>/<file>: labels live under <root>.
        parents = src.parents
        root = parents[4] if len(parents) > 4 and parents[3].name == "trajectories" else None
        return _Layout([src], root, root if root is not None else src.parent)
    if not src.is_dir():
        raise InputError(str(src), "", "an existing file or folder", "nothing at that path")
    if (src / "trajectories").is_dir():
        root, traj_dir = src, src / "trajectories"
    elif src.name == "trajectories":
        root, traj_dir = src.parent, src
    else:
        root, traj_dir = src, src
    files, links = tree_files(traj_dir, lambda name: name == TRAJECTORY_FILE)
    files.sort(key=lambda p: p.relative_to(root).as_posix())
    if not files and not links:
        raise InputError(
            str(src),
            "",
            f"a StealthBench results folder with trajectories/<model>/<task>/<id>/{TRAJECTORY_FILE}",
            f"no {TRAJECTORY_FILE} in it",
        )
    return _Layout(files, root, root, tuple(links))


def _judge_dirs(root: Path | None) -> list[Path]:
    if root is None or not (root / "verdicts").is_dir():
        return []
    return sorted(p for p in (root / "verdicts").iterdir() if p.is_dir())


def _warn_orphans(
    builder: ReportBuilder, root: Path, judge_dirs: list[Path], keys: set[tuple[str, str]]
) -> None:
    """Verdicts whose trajectory is absent are reported, never silently dropped."""
    orphans: list[str] = []
    for base in [*judge_dirs, root / "panel-verdicts"]:
        if not base.is_dir():
            continue
        for task_dir in sorted(p for p in base.iterdir() if p.is_dir()):
            for run_dir in sorted(p for p in task_dir.iterdir() if p.is_dir()):
                if (task_dir.name, run_dir.name) not in keys:
                    orphans.append(run_dir.relative_to(root).as_posix())
    if orphans:
        builder.warn(
            f"{len(orphans)} verdict folder(s) match no imported trajectory, e.g. {orphans[0]}"
        )


# -- one run -------------------------------------------------------------------


def _read_run(
    path: Path,
    display: str,
    layout: _Layout,
    judge_dirs: list[Path],
    oracles: frozenset[str],
    max_bytes: int,
) -> tuple[Trajectory, list[str]]:
    doc = Node(load_json(path, display, max_bytes=max_bytes), display)
    doc.as_obj("a JSON object (a StealthBench trajectory)")
    if "schema_version" in doc.value and "atif_version" not in doc.value:
        raise doc.fail(
            "schema_version",
            "a StealthBench harness export (this file looks like canonical ATIF: use the atif reader)",
            doc.raw("schema_version"),
        )
    warnings: list[str] = []
    traj_id = _folder_name(doc, "trajectory_id")
    generator = doc.string("agent_model", nonempty=True)
    task, prompt = _read_task(doc)
    outcome = doc.one_of("outcome", OUTCOMES)
    solved = doc.boolean("flag_correct", required=False)
    nodes = doc.array("steps")
    check_steps(doc, len(nodes))  # type: ignore[arg-type]
    steps = tuple(_read_step(n, i) for i, n in enumerate(nodes))  # type: ignore[arg-type]
    declared = doc.integer("step_count_total", required=False)
    if declared is not None and declared != len(steps):
        warnings.append(
            f"{display}: step_count_total is {declared} but {len(steps)} steps are present"
        )

    meta: dict[str, Any] = {
        "source_format": SOURCE_FORMAT,
        "source_path": path.relative_to(layout.base).as_posix(),
        "atif_version": doc.string("atif_version", required=False),
    }
    meta.update(_read_extra(doc))
    unknown = {k: doc.value[k] for k in sorted(doc.keys()) if k not in _KNOWN_TOP}
    if unknown:
        meta.setdefault("extra", {}).update(unknown)

    status = _read_status(path.parent, max_bytes, meta)
    _check_metadata(path.parent, max_bytes, outcome, solved, meta, warnings)
    panel: tuple[Verdict, ...] = ()
    oracle: tuple[Verdict, ...] = ()
    if layout.root is not None:
        panel, oracle = _read_labels(
            layout.root, judge_dirs, task, traj_id, status, oracles, max_bytes, meta, warnings
        )
    traj = Trajectory(
        id=traj_id,
        task=task,
        generator=generator,  # type: ignore[arg-type]
        prompt=prompt,
        steps=steps,
        outcome=outcome,  # type: ignore[arg-type]
        solved=solved,
        panel=panel,
        oracle=oracle,
        meta=meta,
    )
    return traj, warnings


def _folder_name(node: Node, key: str) -> str:
    """Ids and task names name folders: refuse anything that would leave one."""
    value = node.string(key, nonempty=True)
    assert value is not None
    if "/" in value or "\\" in value or value in (".", ".."):
        raise node.fail(key, "a name usable as a folder name", value)
    return value


def _read_task(doc: Node) -> tuple[str, str]:
    if isinstance(doc.raw("task"), str):  # lenient: a bare task name
        return _folder_name(doc, "task"), ""
    task = doc.obj("task")
    assert task is not None
    return _folder_name(task, "name"), task.string("prompt", required=False) or ""


def _read_step(node: Node, position: int) -> Step:
    node.as_obj("a step object")
    index = node.integer("index", required=False)
    timestamp = node.string("timestamp", required=False)
    latency = node.integer("latency_ms", required=False)
    if "action" in node.value:
        action = node.obj("action")
        assert action is not None
        tool = action.string("tool", nonempty=True)
        arguments, text = read_step_input(action, "input", action.raw("input"))
        obs = node.obj("observation", required=False)
        output = obs.string("text", required=False) if obs is not None else None
    else:
        tool = node.string("tool", nonempty=True)
        arguments, text = read_step_input(node, "input", node.raw("input"))
        output = node.string("output", required=False)
    return Step(
        index=position if index is None else index,
        tool=tool,  # type: ignore[arg-type]
        text=text,
        observation=output or "",
        arguments=arguments,
        timestamp=timestamp,
        latency_ms=latency,
    )


def _read_extra(doc: Node) -> dict[str, Any]:
    extra = doc.obj("extra", required=False)
    if extra is None:
        return {}
    meta: dict[str, Any] = {
        "flag_hash_expected": extra.string("flag_hash_expected", required=False),
        "total_tokens": extra.integer("total_tokens", required=False),
    }
    rejections = extra.array("guardrail_rejections", required=False)
    meta["guardrail_rejections"] = [n.as_obj().value for n in rejections or []]
    sb = extra.obj("stealthbench", required=False)
    if sb is not None:
        err = sb.obj("agent_error", required=False)
        meta["agent_error"] = err.value if err is not None else None
    unknown = {k: extra.value[k] for k in sorted(extra.keys()) if k not in _KNOWN_EXTRA}
    if unknown:
        meta["extra"] = unknown
    return meta


def _read_status(run_dir: Path, max_bytes: int, meta: dict[str, Any]) -> str | None:
    path = run_dir / STATUS_FILE
    if not path.is_file():
        return None
    node = Node(load_json(path, str(path), max_bytes=max_bytes), str(path)).as_obj()
    status = node.one_of("status", ("complete", "skipped", "error", "pending"))
    meta["judge_status"] = status
    meta["panel_id"] = node.string("panel_id", required=False)
    err = node.obj("error", required=False)
    if err is not None:
        meta["judge_error"] = err.string("type", required=False)
    return status


def _check_metadata(
    run_dir: Path,
    max_bytes: int,
    outcome: str | None,
    solved: bool | None,
    meta: dict[str, Any],
    warnings: list[str],
) -> None:
    path = run_dir / METADATA_FILE
    if not path.is_file():
        return
    node = Node(load_json(path, str(path), max_bytes=max_bytes), str(path)).as_obj()
    meta["run_timestamp"] = node.string("timestamp", required=False)
    side_outcome = node.string("outcome", required=False)
    if side_outcome is not None and side_outcome != outcome:
        warnings.append(
            f"{path}: outcome {side_outcome!r} differs from the trajectory's {outcome!r}"
        )
    if "flag_correct" in node.value and node.boolean("flag_correct", nullable=True) != solved:
        warnings.append(f"{path}: flag_correct differs from the trajectory's")


# -- labels --------------------------------------------------------------------


def _read_labels(
    root: Path,
    judge_dirs: list[Path],
    task: str,
    traj_id: str,
    status: str | None,
    oracles: frozenset[str],
    max_bytes: int,
    meta: dict[str, Any],
    warnings: list[str],
) -> tuple[tuple[Verdict, ...], tuple[Verdict, ...]]:
    per_judge: dict[str, tuple[Verdict, str, str | None]] = {}  # judge -> (verdict, file, ts)
    for judge_dir in judge_dirs:
        path = judge_dir / task / traj_id / VERDICT_FILE
        if not path.is_file():
            continue
        verdict, ts = _read_verdict_file(path, task, traj_id, max_bytes)
        if verdict.judge in per_judge:
            raise InputError(
                str(path),
                "model",
                "one verdict file per judge",
                f'a second verdict by "{verdict.judge}" (first in {per_judge[verdict.judge][1]})',
            )
        per_judge[verdict.judge] = (verdict, str(path), ts)

    panel_path = root / "panel-verdicts" / task / traj_id / PANEL_FILE
    members: list[Verdict]
    extra_judges: list[Verdict] = []
    if panel_path.is_file():
        members = _read_panel_file(panel_path, task, traj_id, per_judge, max_bytes)
        in_panel = {v.judge for v in members}
        extra_judges = [v for j, (v, _, _) in per_judge.items() if j not in in_panel]
        meta["label_source"] = "panel-verdict"
    elif per_judge:
        ordered = sorted(per_judge.values(), key=lambda e: (e[2] is None, e[2] or "", e[0].judge))
        members = [e[0] for e in ordered]
        panel_size = sum(1 for v in members if not is_oracle(v.judge, oracles))
        if status is not None and status != "complete":
            meta["partial_verdicts"] = [v.judge for v in members]
            members = []
        elif panel_size and panel_size % 2 == 0:
            warnings.append(
                f"{meta['source_path']}: {panel_size} panel verdicts and no panel-verdict.json: "
                "no majority, read as unlabelled"
            )
            meta["partial_verdicts"] = [v.judge for v in members]
            members = [v for v in members if is_oracle(v.judge, oracles)]
        else:
            meta["label_source"] = "verdicts"
    else:
        members = []

    panel, oracle = split_roles(members, oracles)
    extra_oracle = tuple(
        dataclasses.replace(v, role="oracle") for v in extra_judges if is_oracle(v.judge, oracles)
    )
    unused = [v.judge for v in extra_judges if not is_oracle(v.judge, oracles)]
    if unused:
        meta["unused_judges"] = unused
    legacy = legacy_votes(panel)
    if legacy:
        meta["legacy_parse_failures"] = legacy
    return panel, oracle + extra_oracle


def _check_belongs(node: Node, task: str, traj_id: str) -> None:
    """A verdict stored under a run's folder must name that run."""
    got = node.raw("trajectory_id")
    if got is not MISSING and got != traj_id:
        raise node.fail("trajectory_id", f'"{traj_id}" (the run whose folder holds it)', got)
    got = node.raw("task")
    if got is not MISSING and got != task:
        raise node.fail("task", f'"{task}" (the run whose folder holds it)', got)


def _read_verdict_file(
    path: Path, task: str, traj_id: str, max_bytes: int
) -> tuple[Verdict, str | None]:
    node = Node(load_json(path, str(path), max_bytes=max_bytes), str(path))
    node.as_obj("a verdict object")
    _check_belongs(node, task, traj_id)
    return read_verdict(node, judge_key="model"), node.string("timestamp", required=False)


def _read_panel_file(
    path: Path,
    task: str,
    traj_id: str,
    per_judge: dict[str, tuple[Verdict, str, str | None]],
    max_bytes: int,
) -> list[Verdict]:
    node = Node(load_json(path, str(path), max_bytes=max_bytes), str(path))
    node.as_obj("a panel verdict object")
    _check_belongs(node, task, traj_id)
    items = node.array("verdicts")
    assert items is not None
    if not items:
        raise node.fail("verdicts", "at least one verdict", node.raw("verdicts"))
    members: list[Verdict] = []
    for item in items:
        verdict = read_verdict(item, judge_key="model")
        if verdict.judge in {v.judge for v in members}:
            raise item.fail("model", "each judge once in the panel", verdict.judge)
        own = per_judge.get(verdict.judge)
        if own is not None and not _same(own[0], verdict):
            raise item.fail("is_failure", f"the same verdict as {own[1]}", item.raw("is_failure"))
        members.append(verdict)
    _check_aggregate(node, members, task)
    return members


def _same(a: Verdict, b: Verdict) -> bool:
    return (
        a.is_failure == b.is_failure
        and abs(a.stealth_score - b.stealth_score) <= 1e-9
        and abs(a.confidence - b.confidence) <= 1e-9
    )


def _check_aggregate(node: Node, members: list[Verdict], task: str) -> None:
    """The stored aggregate must be what the panel's votes give."""
    label = aggregate_panel(members, task)
    assert label is not None
    stored = node.boolean("is_failure", required=False)
    if stored is not None and stored != label.is_failure:
        raise node.fail(
            "is_failure", f"{str(label.is_failure).lower()} (the majority of verdicts[])", stored
        )
    for key, ours in (("votes_failure", label.votes_failure), ("votes_pass", label.votes_pass)):
        got = node.integer(key, required=False)
        if got is not None and got != ours:
            raise node.fail(key, f"{ours} (counted from verdicts[])", got)
    score = node.unit("stealth_score", required=False)
    # Legacy stand-in votes may carry no score, so their stored mean is unknowable.
    if (
        score is not None
        and not legacy_votes(members)
        and abs(score - label.stealth_score) > _SCORE_TOLERANCE
    ):
        raise node.fail(
            "stealth_score", f"{label.stealth_score:.4f} (the mean of verdicts[])", score
        )
