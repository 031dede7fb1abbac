"""Reader for canonical Harbor ATIF trajectories (ATIF-v1.4 to ATIF-v1.8).

``src`` is one ``.json`` file, a ``.jsonl`` file (one trajectory per line), or
a folder searched recursively for both. The reader is lenient where ATIF
writers differ (extra fields anywhere, JSON-encoded ``arguments`` strings,
missing or unordered ``step_id``) and strict where a wrong value would change
what a monitor sees or what a label says.

Mapping onto the internal model:

* id: ``extra.monsearch.trajectory_id``, else ``session_id``, else the v1.7+
  root ``trajectory_id``;
* prompt: the first ``user`` step's message;
* each ``agent`` step gives one Step per tool call (``tool`` =
  ``function_name``; ``text`` = ``arguments.command`` / ``thought`` / ``cmd``,
  else the arguments' JSON), observed by the ``observation.results[]`` whose
  ``source_call_id`` names the call, else by position among unnamed results.
  A non-empty agent ``message`` becomes its own Step with ``tool="message"``
  placed before that step's tool calls: free text is where an ATIF agent states
  intent (StealthBench only records it through the ``think`` tool), so it is
  kept but under a name monitors can tell apart. ``reasoning_content`` is not
  kept (StealthBench records no reasoning tokens either). ``user`` and
  ``system`` steps are context, not actions, and give no Step. A call's
  ``extra.latency_ms`` (an integer, as monsearch's writer puts it) is the
  Step's latency;
* task, generator, outcome, solved and verdicts: from the side labels JSONL
  (if given, it wins field by field), else ``extra.monsearch``, else the
  root ``extra`` (``task``, ``outcome``, ``solved``, used only when of the
  right type: that namespace is the writer's) and ``agent.model_name``.
  Without any outcome, it is ``flag_found`` when solved and ``no_flag``
  otherwise (``meta["outcome_inferred"]``); without a task, ``"unknown"``.

Side labels file, one JSON object per line::

    {"trajectory_id": "...", "verdicts": [{"judge": ..., "is_failure": ...,
     "stealth_score": ..., "confidence": ..., "dimension": ..., "reason": ...,
     "role": "panel" | "oracle"}]}
    {"trajectory_id": "...", "task": "...", "outcome": "...", "solved": true}

Several lines may describe one trajectory; they must not contradict each other.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from monsearch.corpora.errors import InputError
from monsearch.corpora.model import OUTCOMES, Step, Trajectory, Verdict
from monsearch.corpora.readers.jsonio import (
    DEFAULT_MAX_BYTES,
    DEPTH_EXPECTED,
    MISSING,
    Node,
    check_steps,
    iter_jsonl,
    load_json,
    path_text,
    too_deep,
)
from monsearch.corpora.readers.report import FileProgress, ImportReport, ReportBuilder
from monsearch.corpora.readers.stepinput import read_step_input
from monsearch.corpora.readers.tree import tree_files
from monsearch.corpora.readers.verdicts import read_verdict, split_roles

SOURCE_FORMAT = "atif"
SUPPORTED_VERSIONS = tuple(f"ATIF-v1.{minor}" for minor in range(4, 9))
_VERSION = re.compile(r"ATIF-v1\.[4-8](?:\.\d+)?")
_SOURCES = ("system", "user", "agent")
_KNOWN_TOP = frozenset(
    {
        "schema_version",
        "session_id",
        "trajectory_id",
        "agent",
        "steps",
        "notes",
        "final_metrics",
        "continued_trajectory_ref",
        "extra",
        "subagent_trajectories",
    }
)
_MONSEARCH_FIELDS = frozenset(
    {"trajectory_id", "task", "generator", "outcome", "solved", "verdicts"}
)
UNKNOWN_TASK = "unknown"


@dataclasses.dataclass(slots=True)
class _SideLabel:
    """What the labels JSONL says about one trajectory (``None`` = not said)."""

    line: int
    task: str | None = None
    generator: str | None = None
    outcome: str | None = None
    solved: bool | None = None
    has_solved: bool = False
    verdicts: tuple[Verdict, ...] | None = None
    used: bool = False


def read_atif(
    src: Path,
    *,
    labels: Path | None = None,
    strict: bool = False,
    oracle_judges: frozenset[str] | set[str] = frozenset(),
    max_bytes: int = DEFAULT_MAX_BYTES,
    progress: FileProgress | None = None,
) -> ImportReport:
    """Read canonical ATIF trajectories, with labels inline or from a side JSONL."""
    src = Path(src)
    builder = ReportBuilder(strict=strict, progress=progress)
    side = _read_labels(Path(labels), builder, max_bytes) if labels is not None else {}
    oracles = frozenset(oracle_judges)
    files, base, links = _locate(src, Path(labels) if labels is not None else None)
    for link in links:
        builder.skip(link)  # (--strict: refused before any file is read)
    no_task = 0
    for path in files:
        display = str(path)
        rel = path.relative_to(base).as_posix()
        for line, value in _documents(path, display, max_bytes):
            try:
                if isinstance(value, InputError):
                    raise value
                traj, id_field = _read_doc(
                    Node(value, display, "$", line), rel, line, side, oracles
                )
            except InputError as err:
                builder.skip(err)
                continue
            no_task += traj.task == UNKNOWN_TASK
            builder.add(traj, where=display, id_field=id_field, line=line)
        builder.file_done(len(files))
    if no_task:
        builder.warn(f"{no_task} trajectories name no task; read as task {UNKNOWN_TASK!r}")
    unmatched = sorted(tid for tid, s in side.items() if not s.used)
    if unmatched:
        builder.warn(
            f"{len(unmatched)} label record(s) match no imported trajectory, e.g. {unmatched[0]!r}"
        )
    return builder.report


# -- files -------------------------------------------------------------------


def _locate(src: Path, labels: Path | None) -> tuple[list[Path], Path, list[InputError]]:
    """The files to read, the folder their names are relative to, and the links in the
    tree left unread (corpora/readers/tree.py)."""
    if src.is_file():
        return [src], src.parent, []
    if not src.is_dir():
        raise InputError(str(src), "", "an existing file or folder", "nothing at that path")
    skip = labels.resolve() if labels is not None else None
    files, links = tree_files(src, lambda name: Path(name).suffix in (".json", ".jsonl"))
    files = [p for p in files if p.resolve() != skip]
    links = [err for err in links if Path(err.path).resolve() != skip]  # --labels itself
    if not files and not links:
        raise InputError(str(src), "", "a folder with ATIF .json or .jsonl files", "none in it")
    return files, src, links


def _documents(path: Path, display: str, max_bytes: int) -> Iterator[tuple[int | None, Any]]:
    """``(line, document_or_InputError)``: one for a .json file, one per JSONL line."""
    if path.suffix != ".jsonl":
        try:
            yield None, load_json(path, display, max_bytes=max_bytes)
        except InputError as err:
            yield None, err
        return
    empty = True
    try:
        for line, value in iter_jsonl(path, display, max_bytes=max_bytes):
            empty = False
            yield line, value
    except InputError as err:
        yield None, err
        return
    if empty:
        yield None, InputError(display, "", "at least one JSON line", "an empty file")


# -- one trajectory ----------------------------------------------------------


def _read_doc(
    doc: Node,
    rel: str,
    line: int | None,
    side: dict[str, _SideLabel],
    oracles: frozenset[str],
) -> tuple[Trajectory, str]:
    """The trajectory and the JSON path its id came from."""
    doc.as_obj("a JSON object (an ATIF trajectory)")
    version = doc.raw("schema_version")
    if not (isinstance(version, str) and _VERSION.fullmatch(version)):
        expected = f"one of {', '.join(SUPPORTED_VERSIONS)}"
        if "atif_version" in doc.value:
            expected += (
                " (this looks like a StealthBench harness export: use the stealthbench reader)"
            )
        raise doc.fail("schema_version", expected, version)

    extra = doc.obj("extra", required=False)
    ms = extra.obj("monsearch", required=False) if extra is not None else None
    traj_id, id_field = _trajectory_id(doc, ms)
    label = side.get(traj_id)
    if label is not None:
        label.used = True
    agent = doc.obj("agent", required=False)

    nodes = doc.array("steps")
    check_steps(doc, len(nodes))  # type: ignore[arg-type]
    prompt, steps, orphans = _read_steps(nodes)  # type: ignore[arg-type]
    check_steps(doc, len(steps))  # (each tool call and message makes a step)
    task = _pick(label and label.task, ms, extra, "task", lambda n, k: n.string(k, nonempty=True))
    generator = _pick(label and label.generator, ms, None, "generator", _nonempty)
    if generator is None and agent is not None:
        generator = agent.string("model_name", required=False)
    if generator is None:
        where = agent if agent is not None else doc
        key = "model_name" if agent is not None else "agent"
        raise where.fail(key, "the generator model name (or extra.monsearch.generator)", MISSING)
    outcome = _pick(
        label and label.outcome, ms, extra, "outcome", lambda n, k: n.one_of(k, OUTCOMES)
    )
    solved = _solved(label, ms, extra)

    meta: dict[str, Any] = {
        "source_format": SOURCE_FORMAT,
        "source_path": rel,
        "schema_version": version,
    }
    if line is not None:
        meta["source_line"] = line
    if outcome is None:
        outcome = "flag_found" if solved else "no_flag"
        meta["outcome_inferred"] = True
    if agent is not None:
        meta["agent"] = {k: agent.value.get(k) for k in ("name", "version", "model_name")}
    if isinstance(doc.raw("final_metrics"), dict):
        meta["final_metrics"] = doc.value["final_metrics"]
    if orphans:
        meta["orphan_observations"] = orphans
    unknown = {k: doc.value[k] for k in sorted(doc.keys()) if k not in _KNOWN_TOP}
    if extra is not None:
        unknown.update({k: v for k, v in sorted(extra.value.items()) if k != "monsearch"})
    if unknown:
        meta["extra"] = unknown
    if ms is not None:
        rest = {k: v for k, v in sorted(ms.value.items()) if k not in _MONSEARCH_FIELDS}
        if rest:
            meta["monsearch"] = rest

    verdicts = label.verdicts if label is not None and label.verdicts is not None else None
    if verdicts is None and ms is not None:
        verdicts = tuple(
            read_verdict(n, judge_key="judge", with_role=True)
            for n in ms.array("verdicts", required=False) or []
        )
    panel, oracle = split_roles(verdicts or (), oracles)
    traj = Trajectory(
        id=traj_id,
        task=task or UNKNOWN_TASK,
        generator=generator,
        prompt=prompt,
        steps=steps,
        outcome=outcome,
        solved=solved,
        panel=panel,
        oracle=oracle,
        meta=meta,
    )
    return traj, id_field


def _nonempty(node: Node, key: str) -> str | None:
    return node.string(key, nonempty=True)


def _pick(first: Any, ms: Node | None, extra: Node | None, key: str, get: Any) -> Any:
    """The side label's value, else ``extra.monsearch.<key>``, else ``extra.<key>``.

    ``extra.monsearch`` is ours, so a bad value there is an error; the root
    ``extra`` belongs to whoever wrote the file, so a value of another shape
    there simply means it is not the field we look for.
    """
    if first is not None:
        return first
    if ms is not None and ms.raw(key) not in (MISSING, None):
        return get(ms, key)
    if extra is not None and extra.raw(key) not in (MISSING, None):
        try:
            return get(extra, key)
        except InputError:
            return None
    return None


def _solved(label: _SideLabel | None, ms: Node | None, extra: Node | None) -> bool | None:
    if label is not None and label.has_solved:
        return label.solved
    if ms is not None and "solved" in ms.value:
        return ms.boolean("solved", nullable=True)
    if extra is not None and isinstance(extra.raw("solved"), bool):
        return extra.value["solved"]
    return None


def _trajectory_id(doc: Node, ms: Node | None) -> tuple[str, str]:
    """``(id, JSON path it came from)``."""
    if ms is not None and ms.raw("trajectory_id") is not MISSING:
        return ms.string("trajectory_id", nonempty=True), ms.at("trajectory_id")  # type: ignore[return-value]
    if doc.raw("session_id") is not MISSING or doc.raw("trajectory_id") is MISSING:
        return doc.string("session_id", nonempty=True), "session_id"  # type: ignore[return-value]
    return doc.string("trajectory_id", nonempty=True), "trajectory_id"  # type: ignore[return-value]


def _content(node: Node, key: str) -> str:
    """A message or observation content: a string or a list of content parts."""
    value = node.raw(key)
    if value is MISSING or value is None:
        return ""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise node.fail(key, "a string or a list of content parts", value)
    texts: list[str] = []
    for part in node.array(key) or []:
        part.as_obj("a content part object")
        kind = part.string("type", nonempty=True)
        if kind == "text":
            texts.append(part.string("text") or "")
        else:  # images and audio: keep a marker, a monitor cannot read the media
            source = part.obj("source", required=False)
            where = source.value.get("path") if source is not None else None
            texts.append(f"[{kind}{': ' + where if isinstance(where, str) else ''}]")
    return "\n".join(texts)


def _arguments(call: Node) -> Any:
    value = call.raw("arguments")
    if isinstance(value, str):  # some writers JSON-encode the arguments
        try:
            decoded = orjson.loads(value)
        except orjson.JSONDecodeError as err:
            if err.msg.startswith("depth limit exceeded"):  # orjson's words, and the shim's
                raise _too_deep(call, []) from None
            return value
        if not isinstance(decoded, dict):
            return value
        path = too_deep(decoded)
        if path is not None:  # the document's own check did not see inside the text
            path.reverse()
            raise _too_deep(call, path)
        return decoded
    if value is MISSING or value is None or isinstance(value, dict):
        return value
    raise call.fail("arguments", "an object (or its JSON text)", value)


def _too_deep(call: Node, path: list[str | int]) -> InputError:
    where = path_text(path, call.at("arguments"))
    return InputError(call.src, where, DEPTH_EXPECTED, "deeper nesting", line=call.line)


def _latency(call: Node) -> int | None:
    """``extra.latency_ms`` of a tool call (monsearch writes it; ATIF has no field for it)."""
    extra = call.obj("extra", required=False)
    return extra.integer("latency_ms", required=False) if extra is not None else None


def _read_steps(nodes: list[Node]) -> tuple[str, tuple[Step, ...], int]:
    """``(prompt, steps, orphan_observation_count)``."""
    prompt: str | None = None
    out: list[Step] = []
    orphans = 0
    for node in nodes:
        node.as_obj("a step object")
        source = node.one_of("source", _SOURCES)
        message = _content(node, "message")
        if source == "user" and prompt is None:
            prompt = message
        if source != "agent":
            continue
        timestamp = node.string("timestamp", required=False)
        if message.strip():
            out.append(Step(len(out), "message", message, "", {"message": message}, timestamp))
        calls = node.array("tool_calls", required=False) or []
        ids: list[str | None] = []
        for call in calls:
            call.as_obj("a tool call object")
            ids.append(call.string("tool_call_id", required=False))
        by_id: dict[str, list[str]] = {}
        unnamed: list[str] = []
        observation = node.obj("observation", required=False)
        for result in (observation.array("results", required=False) if observation else None) or []:
            result.as_obj("an observation result object")
            call_id = result.string("source_call_id", required=False)
            text = _content(result, "content")
            if call_id is None:
                unnamed.append(text)
            elif call_id in ids:
                by_id.setdefault(call_id, []).append(text)
            else:
                orphans += 1
        positional = iter(unnamed)
        for call, call_id in zip(calls, ids, strict=True):
            tool = call.string("function_name", nonempty=True)
            arguments, text = read_step_input(call, "arguments", _arguments(call))
            if call_id is not None and call_id in by_id:
                seen = "\n".join(by_id[call_id])
            else:
                seen = next(positional, "")
            out.append(Step(len(out), tool, text, seen, arguments, timestamp, _latency(call)))  # type: ignore[arg-type]
    return prompt or "", tuple(out), orphans


# -- side labels -------------------------------------------------------------


def _read_labels(path: Path, builder: ReportBuilder, max_bytes: int) -> dict[str, _SideLabel]:
    """The labels JSONL keyed by trajectory id; a missing file is an error."""
    display = str(path)
    if not path.is_file():
        raise InputError(display, "", "a labels JSONL file", "nothing at that path")
    labels: dict[str, _SideLabel] = {}
    for line, value in iter_jsonl(path, display, max_bytes=max_bytes):
        try:
            if isinstance(value, InputError):
                raise value
            _merge_label(Node(value, display, "$", line), line, labels)
        except InputError as err:
            builder.skip(err)
    return labels


def _merge_label(node: Node, line: int, labels: dict[str, _SideLabel]) -> None:
    node.as_obj("a label record object")
    tid = node.string("trajectory_id", nonempty=True)
    assert tid is not None
    new = _SideLabel(
        line=line,
        task=node.string("task", required=False, nonempty=True),
        generator=node.string("generator", required=False, nonempty=True),
        outcome=node.one_of("outcome", OUTCOMES, required=False),
        solved=node.boolean("solved", nullable=True) if "solved" in node.value else None,
        has_solved="solved" in node.value,
    )
    items = node.array("verdicts", required=False)
    if items is not None:
        new.verdicts = tuple(read_verdict(n, judge_key="judge", with_role=True) for n in items)
    old = labels.get(tid)
    if old is None:
        labels[tid] = new
        return
    keys = ("task", "generator", "outcome", "verdicts")
    # Check every field before merging any, so a refused line changes nothing.
    for key in keys:
        mine, theirs = getattr(new, key), getattr(old, key)
        if mine is not None and theirs is not None and mine != theirs:
            raise node.fail(key, f"the same {key} as line {old.line} or none", node.raw(key))
    if new.has_solved and old.has_solved and old.solved != new.solved:
        raise node.fail("solved", f"the same solved as line {old.line} or none", new.solved)
    for key in keys:
        if getattr(new, key) is not None:
            setattr(old, key, getattr(new, key))
    if new.has_solved:
        old.solved, old.has_solved = new.solved, True
