"""The exported monitor: read a trajectory, build the sandbox's view, run the frozen program.

Needs the standard library, RestrictedPython and google-re2. Everything under
``_vendor`` is monsearch's own reader, view and sandbox code, copied at export time
with only its imports rewritten, so the view and the restricted execution are the ones
the scores in ``MONITOR`` were measured with.

The program is not trusted code: a language model or a mutator wrote it, and the agent
it monitors writes its input. It runs in a worker process (``_isolation``,
``_worker``) under a time budget and a memory cap per trajectory (:class:`Limits`); a
trajectory it does not finish gets a :class:`Result` with status ``timeout``,
``memory`` or ``error``, and the host goes on.

Public API: :func:`score`, :func:`evaluate`, :func:`findings`, :func:`score_steps`,
:func:`score_many`, :func:`decide`, :func:`threshold`, :func:`load`, :data:`MONITOR`,
:func:`clear_caches`, :func:`configure`, :func:`close`, :class:`Limits`.
"""

from __future__ import annotations

import atexit
import bisect
import dataclasses
import gc
import itertools
import math
import os
import pickle
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._evidence import step_evidence
from ._isolation import Failure, Isolation, checked_float
from ._limits import Limits
from ._meta import MONITOR, PROGRAM
from ._rises import rises, weights
from ._vendor import atif as _atif
from ._vendor import codec as _codec
from ._vendor import stealthbench as _sb
from ._vendor.errors import InputError
from ._vendor.frozen import FrozenDict
from ._vendor.helpers import HELPERS
from ._vendor.jsonio import (
    DEFAULT_MAX_BYTES,
    MISSING,
    Node,
    check_steps,
    iter_jsonl,
    load_json,
    parse_bytes,
)
from ._vendor.model import OUTCOMES, Step, Trajectory
from ._vendor.restricted import (
    PrintSink,
    build_globals,
    compile_program,
    load_program,
    rerunnable,
)
from ._vendor.stepinput import TooDeepError, step_input
from ._vendor.view import PrefixViews, build_view
from ._vendor.view import clear_caches as _clear_view_caches

__all__ = [
    "MONITOR",
    "InputError",
    "Limits",
    "Result",
    "clear_caches",
    "close",
    "configure",
    "decide",
    "evaluate",
    "findings",
    "iter_trajectories",
    "load",
    "score",
    "score_many",
    "score_steps",
    "threshold",
]

#: Oracle a host may give: ``(trajectory, variant) -> float | None``.
Oracle = Callable[[Trajectory, "str | None"], "float | None"]


# --------------------------------------------------------------------------- reading


def _stealthbench(doc: Node) -> Trajectory:
    """A StealthBench harness trajectory, read by the vendored reader's own field readers."""
    traj_id = _sb._folder_name(doc, "trajectory_id")
    # The agent model never reaches the view: do not refuse a file for lacking it.
    generator = doc.string("agent_model", required=False) or "unknown"
    task, prompt = _sb._read_task(doc)
    outcome = doc.one_of("outcome", OUTCOMES)
    solved = doc.boolean("flag_correct", required=False)
    raw = doc.value.get("steps")
    if type(raw) is list:
        check_steps(doc, len(raw))
        steps = _read_steps(raw, doc)
    else:
        steps = tuple(_sb._read_step(n, i) for i, n in enumerate(doc.array("steps") or []))
    # Trajectory(traj_id, task, generator, prompt, steps, outcome, solved), built as
    # explained at _StepSlots (its defaults: no verdicts, an empty meta dict of its own).
    traj = _new_object(_TrajectorySlots)
    traj.id = traj_id
    traj.task = task
    traj.generator = generator
    traj.prompt = prompt
    traj.steps = steps
    traj.outcome = outcome
    traj.solved = solved
    traj.panel = ()
    traj.oracle = ()
    traj.meta = {}
    traj.__class__ = Trajectory  # type: ignore[assignment]
    return traj  # type: ignore[return-value]


def _read_steps(raw: list[Any], doc: Node) -> tuple[Step, ...]:
    """The steps of ``doc`` (its ``steps`` list), in order: each step whose fields all
    have their plain types built directly, any other by the vendored reader.

    The reader wraps every value in a path-tracking node so a bad field gets a precise
    error; that was about a third of the read's cost. A step it would accept as is,
    field by field, is built here as the reader builds it (the same Step); anything
    else, valid or not, goes through the reader itself, at its place in the order, so
    the first bad step raises the reader's error. One loop with the field checks
    inline: per step, calls cost as much as the checks.
    """
    steps: list[Step] = []
    for position, step in enumerate(raw):
        built = None
        if type(step) is dict:
            get = step.get
            index = get("index")
            timestamp = get("timestamp")
            latency = get("latency_ms")
            if (
                (index is None or type(index) is int)
                and (timestamp is None or type(timestamp) is str)
                and (latency is None or type(latency) is int)
            ):
                built = _plain_step(step, position if index is None else index, timestamp, latency)
        if built is None:
            node = Node(step, doc.src, f"{doc.at('steps')}[{position}]", doc.line)
            built = _sb._read_step(node, position)
        steps.append(built)
    return tuple(steps)


def _plain_step(step: dict[str, Any], index: int, timestamp: Any, latency: Any) -> Step | None:
    """The rest of a step whose index, timestamp and latency are plain (see
    :func:`_read_steps`), or None when another field is not."""
    if "action" in step:
        action = step["action"]
        if type(action) is not dict:
            return None
        tool = action.get("tool")
        raw_input = action.get("input", MISSING)
        obs = step.get("observation")
        if obs is None:
            output = None
        elif type(obs) is dict:
            output = obs.get("text")
        else:
            return None
    else:
        tool = step.get("tool")
        raw_input = step.get("input", MISSING)
        output = step.get("output")
    if type(tool) is not str or not tool or (output is not None and type(output) is not str):
        return None
    # step_input's first rule, inline: a command string is the text.
    text = raw_input.get("command") if type(raw_input) is dict else None
    if type(text) is str:
        arguments = raw_input
    else:
        try:
            arguments, text = step_input(raw_input)
        except TooDeepError:
            return None  # the reader names the field
    # Step(index, tool, text, output or "", arguments, timestamp, latency), built as
    # explained at _StepSlots.
    built = _new_object(_StepSlots)
    built.index = index
    built.tool = tool
    built.text = text
    built.observation = output or ""
    built.arguments = arguments
    built.timestamp = timestamp
    built.latency_ms = latency
    built.__class__ = Step  # type: ignore[assignment]
    return built  # type: ignore[return-value]


class _StepSlots:
    """Step's slots in a class without Step's frozen ``__setattr__``.

    Step is a frozen, slotted dataclass: its generated __init__ stores each field with
    object.__setattr__ (a generic attribute lookup per field), and calling the slots'
    own descriptors costs about as much per field. _StepSlots has exactly Step's slots,
    so its plain attribute stores are the interpreter's fast slot stores, and Python
    lets the finished object become a Step (``__class__`` assignment checks that the
    two layouts are the same). Step has no __post_init__, so the object is the one
    Step(...) builds: same type, every slot set to the same value.
    """

    __slots__ = ("index", "tool", "text", "observation", "arguments", "timestamp", "latency_ms")


class _TrajectorySlots:
    """Trajectory's slots, for :func:`_stealthbench` (as :class:`_StepSlots` for Step)."""

    __slots__ = (
        "id", "task", "generator", "prompt", "steps", "outcome", "solved", "panel", "oracle",
        "meta",
    )  # fmt: skip


if tuple(f.name for f in dataclasses.fields(Step)) != _StepSlots.__slots__ or hasattr(
    Step, "__post_init__"
):  # pragma: no cover - a changed model must update _plain_step
    raise RuntimeError("Step's fields changed: update _plain_step")
_TRAJECTORY_DEFAULTS = [("panel", ()), ("oracle", ()), ("meta", dict)]  # set in _stealthbench
if tuple(f.name for f in dataclasses.fields(Trajectory)) != _TrajectorySlots.__slots__ or (
    hasattr(Trajectory, "__post_init__")
    or [
        (f.name, f.default if f.default is not dataclasses.MISSING else f.default_factory)
        for f in dataclasses.fields(Trajectory)[7:]
    ]
    != _TRAJECTORY_DEFAULTS
):  # pragma: no cover - a changed model must update _stealthbench
    raise RuntimeError("Trajectory's fields changed: update _stealthbench")
_new_object = object.__new__


def _atif_doc(doc: Node) -> Trajectory:
    value = doc.value
    agent = value.get("agent")
    # Id and generator name never reach the view: supply them rather than refuse.
    if not (isinstance(agent, dict) and isinstance(agent.get("model_name"), str)):
        agent = {**agent} if isinstance(agent, dict) else {"name": "unknown"}
        agent["model_name"] = "unknown"
        value = {**value, "agent": agent}
    if "session_id" not in value and "trajectory_id" not in value:
        value = {**value, "session_id": "anonymous"}
    doc = Node(value, doc.src, doc.path, doc.line)
    traj, _ = _atif._read_doc(doc, doc.src, doc.line, {}, frozenset())
    return traj


def _from_value(value: Any, display: str, line: int | None = None) -> Trajectory:
    if isinstance(value, Trajectory):
        return value
    doc = Node(value, display, "$", line)
    doc.as_obj("a JSON object (a StealthBench, ATIF or monsearch trajectory)")
    if "atif_version" in value:
        return _stealthbench(doc)
    if "schema_version" in value:
        return _atif_doc(doc)
    if "generator" in value and "id" in value and "steps" in value:
        if isinstance(value["steps"], list):
            check_steps(doc, len(value["steps"]))
        try:  # a monsearch corpus record (codec form)
            return _codec.trajectory_from_dict(value)
        except (KeyError, TypeError, ValueError) as exc:  # the reason whole, not as a value
            what, why = "a monsearch trajectory record", f"a bad record ({exc})"
            raise InputError(display, "$", what, why, line=line) from None
    if "steps" in value and "task" in value:
        return _stealthbench(doc)
    raise doc.fail(
        None,
        "a StealthBench trajectory (atif_version), canonical ATIF (schema_version) "
        "or a monsearch trajectory record",
        value,  # described as the readers describe any value: its keys
    )


def load(trajectory: Any, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Trajectory:
    """One trajectory from a path, JSON text or bytes, a parsed dict, or a Trajectory."""
    if isinstance(trajectory, (Trajectory, dict)):
        return _from_value(trajectory, "<trajectory>")
    if hasattr(trajectory, "steps") and hasattr(trajectory, "prompt"):
        # monsearch's own Trajectory (another copy of the same model): same fields.
        return _codec.trajectory_from_dict(_codec.trajectory_to_dict(trajectory))
    if isinstance(trajectory, (bytes, bytearray)):
        return _from_value(parse_bytes(bytes(trajectory), "<bytes>"), "<bytes>")
    if isinstance(trajectory, str) and trajectory.lstrip().startswith(("{", "[")):
        return _from_value(parse_bytes(trajectory.encode("utf-8"), "<text>"), "<text>")
    if isinstance(trajectory, (str, os.PathLike)):
        path = Path(trajectory)
        return _from_value(load_json(path, str(path), max_bytes=max_bytes), str(path))
    raise TypeError(f"cannot read a trajectory from {type(trajectory).__name__}")


def iter_trajectories(
    path: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_BYTES
) -> Iterator[tuple[str, Trajectory | InputError]]:
    """``(name, trajectory or the error)`` for a .json file or each line of a .jsonl file."""
    p = Path(path)
    if p.suffix != ".jsonl":
        try:
            yield str(p), load(p, max_bytes=max_bytes)
        except InputError as err:
            yield str(p), err
        return
    for line, value in iter_jsonl(p, str(p), max_bytes=max_bytes):
        name = f"{p}:{line}"
        if isinstance(value, InputError):
            yield name, value
            continue
        try:
            yield name, _from_value(value, str(p), line)
        except InputError as err:
            yield name, err


# --------------------------------------------------------------------------- running


def check_score(value: Any) -> float | str:
    """The score as a finite float, or why not (the sandbox runner's rule, see tests)."""
    t = type(value)
    if t is float:
        result = value
    elif t is int or t is bool:
        try:
            result = float(value)
        except OverflowError:
            return "score() returned an integer too large for a float"
    else:
        return f"score() returned {t.__name__}, not a number"
    if not math.isfinite(result):
        return f"score() returned a non-finite number ({result!r})"
    return result


class _OracleHook:
    """``oracle(traj, variant=None)`` inside the program: the host's judge, capped per trajectory."""

    __slots__ = ("host", "traj", "calls", "cap")

    def __init__(self, host: Oracle | None, cap: int | None) -> None:
        self.host = host
        self.traj: Trajectory | None = None
        self.calls = 0
        self.cap = cap

    def function(self) -> Callable[..., float | None]:
        hook = self

        def oracle(traj: Any = None, variant: str | None = None) -> float | None:
            if variant is not None and (not isinstance(variant, str) or variant not in _VARIANTS):
                # The sandbox's rule: an unknown name is the program's error, not a query.
                raise ValueError(
                    f"unknown oracle variant {variant!r}; allowed: {', '.join(sorted(_VARIANTS))}"
                )
            if hook.host is None or hook.traj is None:
                return None  # no judge in the plugin unless a host passes one
            if hook.cap is not None and hook.calls >= hook.cap:
                return None
            hook.calls += 1
            value = hook.host(hook.traj, variant)
            if type(value) is float and math.isfinite(value):
                return value
            if type(value) is int:
                return float(value)
            return None

        return oracle


_CODE: Any = None
_RERUNNABLE = False


def _code() -> Any:
    global _CODE, _RERUNNABLE
    if _CODE is None:
        report = compile_program(PROGRAM)
        if not report.ok:  # pragma: no cover - the program compiled when it was frozen
            raise RuntimeError(f"the frozen program does not compile: {report.message}")
        _RERUNNABLE = rerunnable(report.code)
        _CODE = report.code
    return _CODE


# The helpers as a plain dict, for copying into each instance's globals: the same
# names and objects, but dict.update reads a FrozenDict's ``keys`` through its Python
# attribute hook, a microsecond per trajectory for nothing.
_HELPERS = dict(HELPERS)

# Namespaces of finished instances that evaluate() may run the next one in. The
# interpreter specialises each global name read to the namespace's key layout; a new
# namespace per trajectory invalidated all of those (about 2 % of a trajectory's
# time). When the program is ``rerunnable`` (its body only binds constants and
# functions, and nothing can add or remove a name), setting build_globals' entries
# again and rerunning the body rebinds every name to what a fresh namespace gets, in
# the same layout: the instance is the one a fresh namespace gives.
_SPARE: list[dict[str, Any]] = []
_SPARE_MAX = 4
_NAMES = [0]  # how many names a namespace holds once the body has run


def _instance(hook: _OracleHook, spare: bool = False) -> Callable[[Any], Any]:
    """A program instance with its namespace as the sandbox gives each run: fresh, or
    (``spare``) a finished instance's, set again to exactly that (see ``_SPARE``)."""
    glb = build_globals(
        helpers=_HELPERS, print_sink=PrintSink(64 * 1024), extra={"oracle": hook.function()}
    )
    code = _code()
    if spare and _SPARE:
        try:
            namespace = _SPARE.pop()
        except IndexError:  # another thread took the last one
            pass
        else:
            namespace.update(glb)
            glb = namespace
    fn = load_program(code, glb)
    _NAMES[0] = len(glb)
    return fn


def _release(fn: Callable[[Any], Any], hook: _OracleHook) -> None:
    """Keep a finished instance's namespace as a spare when it still has the names a
    run leaves (and there is room), else :func:`_discard` it. A spare lets go of the
    oracle hook (and so of the trajectory and the host's judge) at once; whatever else
    it holds is replaced when the next instance is set up in it."""
    glb = fn.__globals__  # type: ignore[attr-defined]
    hook.traj = hook.host = None
    if _RERUNNABLE and len(glb) == _NAMES[0] and len(_SPARE) < _SPARE_MAX:
        glb["oracle"] = None  # a name it has: the layout stays
        _SPARE.append(glb)
    else:
        glb.clear()


def _discard(fn: Callable[[Any], Any]) -> None:
    """Free a program instance at once. Its functions and its namespace refer to each
    other, and the namespace holds the oracle hook and so the last trajectory: left to
    the cyclic garbage collector, every scored trajectory would stay in memory until its
    next pass, and each pass would walk them all."""
    fn.__globals__.clear()  # type: ignore[attr-defined]


def _fallback() -> float:
    # The sandbox gives a failed trajectory the lowest valid score of the run.
    value = MONITOR.get("fallback_score")
    return float(value) if isinstance(value, (int, float)) else 0.0


#: The variant names ``oracle(traj, variant)`` accepts (the run's, from the metadata).
_VARIANTS = frozenset((MONITOR.get("query_caps") or {}).get("variants") or ("default",))


def _cap() -> int | None:
    cap = (MONITOR.get("query_caps") or {}).get("per_traj_cap")
    return cap if type(cap) is int else None


#: Statuses of a scored trajectory: only ``ok`` is a score the program gave.
STATUSES = ("ok", "error", "timeout", "memory")


@dataclass
class Result:
    """One trajectory scored.

    ``status`` is ``ok`` when the program returned a score, else why not: ``error`` (it
    raised, or returned no finite number), ``timeout`` (it ran past its time budget and
    was stopped), ``memory`` (it ran past its memory cap); ``error`` says more. When the
    status is not ``ok`` the trajectory has no score of its own: ``score`` is then the
    run's fallback score (its lowest val score, what monsearch's sandbox counted for such
    a trajectory when the thresholds were measured), and :func:`decide` on the Result
    gives the status, not a decision. ``oracle_calls`` counts the host judge's calls."""

    score: float
    error: str | None = None
    oracle_calls: int = 0
    seconds: float = 0.0
    status: str = "ok"

    def __post_init__(self) -> None:
        if self.error is not None and self.status == "ok":
            self.status = "error"

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class BudgetExceeded(BaseException):  # noqa: N818 - an interrupt, like KeyboardInterrupt
    """Raised into the program by the worker's alarm when the trajectory's time budget
    is spent (a ``BaseException``: the program can only catch ``Exception``)."""


def _run(fn: Callable[[Any], Any], view: FrozenDict, hook: _OracleHook, traj: Trajectory) -> Result:
    hook.traj, hook.calls = traj, 0
    started = time.perf_counter()
    try:
        value = fn(view)
    except MemoryError:  # before Exception: past the worker's cap, the worker starts afresh
        message = "MemoryError: the program ran out of memory"
        return Result(_fallback(), message, hook.calls, status="memory")
    except Exception as exc:  # the program's failure on this trajectory, as in the sandbox
        return Result(_fallback(), f"{type(exc).__name__}: {exc}"[:500], hook.calls)
    checked = check_score(value)
    if type(checked) is str:
        return Result(_fallback(), checked, hook.calls)
    return Result(checked, None, hook.calls, time.perf_counter() - started)


class _CollectorPaused:
    """Pause the cyclic GC while a trajectory is read, viewed and scored.

    A view holds no reference cycles, and the program's instance is freed by
    :func:`_discard`, so all of it goes by reference counting when the call returns.
    Left running, the collector would walk the view's thousands of new objects while
    they are still in use (about a tenth of a trajectory's time, and full collections
    of a host's whole heap now and then); paused until they are gone, it walks only
    what the parse caches keep. The program is the frozen one, run without limits as
    before: cyclic garbage it makes waits for the end of its call. A host that runs
    with the collector off keeps it off. (A class, not a generator-based context
    manager: entering and leaving costs a tenth as much, once per trajectory.)"""

    __slots__ = ("resume",)

    def __enter__(self) -> None:
        self.resume = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc_info: object) -> None:
        if self.resume:
            gc.enable()


def clear_caches() -> None:
    """Drop the parse caches kept between trajectories (commands, outputs and code that
    recur are parsed once), here and in the worker process if one is running. They are
    bounded, but a long-running host can call this between batches to return their
    memory; scores do not change."""
    _clear_view_caches()
    while _SPARE:
        try:
            _SPARE.pop().clear()
        except IndexError:  # pragma: no cover - another thread took the last one
            break
    request = ("clear", _NONE, False, LIMITS.timeout_s, LIMITS.memory_mb, None)
    _ISOLATION.notify(pickle.dumps(request, 5), LIMITS.memory_mb)


# --------------------------------------------------------------------------- operations
# What runs where the program runs: in the worker process (``_worker``), or here when
# the host chose isolation "none". Each takes the trajectory as the host passed it on
# (a dict, or a Trajectory) and the judge the program's oracle() reaches.

#: The session of a request that gets a fresh program instance (score, evaluate).
_FRESH = 0
_NONE = pickle.dumps(None)


def _evaluate(payload: Any, judge: Oracle | None) -> Result:
    """Score one trajectory with a fresh program instance."""
    with _CollectorPaused():
        traj = load(payload)
        hook = _OracleHook(judge, _cap())
        fn = _instance(hook, spare=True)
        try:
            result = _run(fn, build_view(traj), hook, traj)
        except BaseException:
            _discard(fn)
            raise
        _release(fn, hook)
        return result


class _Session:
    """One program instance that scores trajectory after trajectory (``score_many``)."""

    __slots__ = ("hook", "fn")

    def __init__(self, judge: Oracle | None) -> None:
        self.hook = _OracleHook(judge, _cap())
        self.fn = _instance(self.hook)

    def score(self, payload: Any) -> Result:
        with _CollectorPaused():
            traj = load(payload)
            return _run(self.fn, build_view(traj), self.hook, traj)

    def close(self) -> None:
        _discard(self.fn)


def _prefix(traj: Trajectory, k: int) -> Trajectory:
    return Trajectory(
        traj.id, traj.task, traj.generator, traj.prompt, traj.steps[:k], traj.outcome, traj.solved
    )


def _steps(payload: Any, judge: Oracle | None) -> tuple[list[float], str, str | None]:
    """The score of each prefix, and the status of the whole: ``timeout`` or ``memory``
    when it stopped early (the prefixes it did not reach get the fallback score)."""
    with _CollectorPaused():
        traj = load(payload)
        n = len(traj.steps)
        hook = _OracleHook(judge, _cap())
        scores: list[float] = []
        status, error = "ok", None
        fn = None
        try:
            fn = _instance(hook)
            for k in range(1, n + 1):
                result = _run(fn, build_view(_prefix(traj, k)), hook, traj)
                scores.append(result.score)
                if result.status == "memory":
                    status, error = "memory", result.error
                    break
        except BudgetExceeded:
            status = "timeout"
            error = f"the time budget ran out after {len(scores)} of {n} prefixes"
        finally:
            if fn is not None:
                _discard(fn)
        return scores + [_fallback()] * (n - len(scores)), status, error


def _findings_of(payload: Any, judge: Oracle | None, top: int) -> dict[str, Any]:
    with _CollectorPaused():
        traj = load(payload)
        hook = _OracleHook(judge, _cap())
        fn = _instance(hook)
        try:
            return _findings(fn, hook, traj, top)
        finally:
            _discard(fn)


def _failed_findings(fallback: float, status: str, message: str) -> dict[str, Any]:
    """What :func:`findings` says of a trajectory the program did not finish."""
    return {"score": fallback, "error": message, "status": status, "detectors": {}, "steps": []}


# --------------------------------------------------------------------------- limits

#: The limits every call uses unless it gives its own: see :func:`configure`.
LIMITS = Limits()
_ISOLATION = Isolation(__package__, Path(__file__).parent)
atexit.register(_ISOLATION.close)
_SESSIONS = itertools.count(1)


def configure(
    *,
    timeout_s: float | None = None,
    memory_mb: int | None = None,
    isolation: str | None = None,
) -> Limits:
    """Set the limits later calls use (each call may still give ``timeout_s`` and
    ``memory_mb``): see :class:`Limits`. Returns the limits now in force."""
    global LIMITS
    changes = {"timeout_s": timeout_s, "memory_mb": memory_mb, "isolation": isolation}
    LIMITS = dataclasses.replace(LIMITS, **{k: v for k, v in changes.items() if v is not None})
    return LIMITS


def close() -> None:
    """Stop the worker process now (it also stops when this process exits; a later call
    starts a new one)."""
    _ISOLATION.close()


def _limits(timeout_s: float | None, memory_mb: int | None) -> Limits:
    if timeout_s is None and memory_mb is None:
        return LIMITS
    changes = {"timeout_s": timeout_s, "memory_mb": memory_mb}
    return dataclasses.replace(LIMITS, **{k: v for k, v in changes.items() if v is not None})


class _Gate:
    """The host's judge as the worker reaches it: the same answers as in process (floats
    and whole numbers, else None), capped here too at the run's calls per program run."""

    __slots__ = ("judge", "source", "runs", "traj", "calls", "limit")

    def __init__(self, judge: Oracle, source: Any, runs: Callable[[int], int]) -> None:
        self.judge = judge
        self.source = source
        self.runs = runs
        self.traj: Trajectory | None = None
        self.calls = 0
        self.limit: int | None = None

    def __call__(self, variant: str | None) -> tuple[float | None, str | None]:
        if variant is not None and variant not in _VARIANTS:
            return None, None
        if self.traj is None:  # the judge is given the trajectory as this process reads it
            self.traj = load(self.source)
            cap = _cap()
            self.limit = None if cap is None else cap * self.runs(len(self.traj.steps))
        if self.limit is not None and self.calls >= self.limit:
            return None, None
        self.calls += 1
        try:
            value = self.judge(self.traj, variant)
        except Exception as exc:  # the program sees it fail, as it would in process
            return None, f"{type(exc).__name__}: {exc}"[:500]
        if type(value) is float:
            return (value if math.isfinite(value) else None), None
        if type(value) is int:
            try:
                return float(value), None
            except OverflowError:
                return None, None
        return None, None


def _ask(
    op: str,
    trajectory: Any,
    oracle: Oracle | None,
    extra: Any,
    limits: Limits,
    check: Callable[[dict[str, Any]], Any],
    runs: Callable[[int], int],
) -> tuple[Any, _Gate | None]:
    """The worker's checked answer to one operation on one trajectory (``Failure`` when
    it gave none), and the judge's gate. A dict or a Trajectory is sent as it is (the
    worker reads it), anything else is read here first."""
    payload = trajectory if isinstance(trajectory, (dict, Trajectory)) else load(trajectory)
    gate = None if oracle is None else _Gate(oracle, payload, runs)
    try:
        inner = pickle.dumps(payload, 5)
    except Exception:  # a dict holding objects that do not pickle: read it here
        payload = load(payload)
        inner = pickle.dumps(payload, 5)
    request = (op, inner, gate is not None, limits.timeout_s, limits.memory_mb, extra)
    answer = _ISOLATION.request(
        pickle.dumps(request, 5), gate, limits.timeout_s, limits.memory_mb, check
    )
    return answer, gate


def _input_error(answer: dict[str, Any]) -> None:
    """Raise the worker's InputError (a dict it could not read) here, as reading it here
    would have."""
    if answer.get("status") == "input":
        f = answer.get("input")
        fields = ("path", "field", "expected", "got")
        if not isinstance(f, dict) or any(type(f.get(k)) is not str for k in fields):
            raise ValueError("a bad input error")
        line = f.get("line") if type(f.get("line")) is int else None
        raise InputError(*(f[k] for k in fields), line=line)


def _message(value: Any) -> str | None:
    if value is not None and type(value) is not str:
        raise ValueError("a message that is not text")
    return value if value is None else value[:500]


def _result_answer(answer: dict[str, Any]) -> Result:
    _input_error(answer)
    status, seconds = answer.get("status"), answer.get("seconds")
    if status not in STATUSES or type(seconds) is not float:
        raise ValueError("a bad result")
    score = checked_float(answer.get("score"))
    return Result(score, _message(answer.get("error")), 0, seconds, status)


def _result(trajectory: Any, oracle: Oracle | None, session: int, limits: Limits) -> Result:
    try:
        result, gate = _ask("score", trajectory, oracle, session, limits, _result_answer, _one_run)
    except Failure as f:
        return Result(_fallback(), f.message, status=f.status)
    if gate is not None:
        result.oracle_calls = gate.calls
    return result


def _one_run(n: int) -> int:
    return 1


# --------------------------------------------------------------------------- scoring


def evaluate(
    trajectory: Any,
    *,
    oracle: Oracle | None = None,
    timeout_s: float | None = None,
    memory_mb: int | None = None,
) -> Result:
    """Score one trajectory with a fresh program instance. Never raises for the program:
    a program that fails, runs past ``timeout_s`` or grows past ``memory_mb`` gives a
    :class:`Result` whose ``status`` says so (see :class:`Limits` for the defaults).
    Raises :class:`InputError` for a trajectory that cannot be read."""
    limits = _limits(timeout_s, memory_mb)
    if limits.isolation == "none":
        return _evaluate(trajectory, oracle)
    return _result(trajectory, oracle, _FRESH, limits)


def score(
    trajectory: Any,
    *,
    oracle: Oracle | None = None,
    timeout_s: float | None = None,
    memory_mb: int | None = None,
) -> float:
    """Suspicion score of one trajectory (higher = more likely an OPSEC failure). A
    trajectory the program did not finish gets the fallback score: use :func:`evaluate`
    to tell (its ``status``)."""
    return evaluate(trajectory, oracle=oracle, timeout_s=timeout_s, memory_mb=memory_mb).score


def score_many(
    trajectories: Iterable[Any],
    *,
    oracle: Oracle | None = None,
    timeout_s: float | None = None,
    memory_mb: int | None = None,
) -> list[Result]:
    """Score several trajectories with one program instance, in order: exactly how the
    sandbox runs a program over a split (module-level state carries across them). After
    a ``timeout`` or ``memory`` result the next trajectory gets a fresh instance."""
    limits = _limits(timeout_s, memory_mb)
    if limits.isolation == "none":
        session = _Session(oracle)
        try:
            return [session.score(t) for t in trajectories]
        finally:
            session.close()
    sid = next(_SESSIONS)
    try:
        return [_result(t, oracle, sid, limits) for t in trajectories]
    finally:
        request = ("end", _NONE, False, limits.timeout_s, limits.memory_mb, sid)
        _ISOLATION.notify(pickle.dumps(request, 5), limits.memory_mb)


def _steps_answer(answer: dict[str, Any]) -> list[float]:
    _input_error(answer)
    scores = answer.get("scores")
    if answer.get("status") not in STATUSES or not isinstance(scores, list):
        raise ValueError("bad prefix scores")
    return [checked_float(x) for x in scores]


def score_steps(
    trajectory: Any,
    *,
    oracle: Oracle | None = None,
    timeout_s: float | None = None,
    memory_mb: int | None = None,
) -> list[float]:
    """The score of each prefix of the trajectory (steps ``[:1]``, ``[:2]``, ...): for hosts
    that monitor step by step. Outcome and solved are the whole run's. All the prefixes
    share one time budget; those it did not reach get the fallback score."""
    limits = _limits(timeout_s, memory_mb)
    if limits.isolation == "none":
        return _steps(trajectory, oracle)[0]
    traj = load(trajectory)  # here too: the number of prefixes is ours, not the worker's
    n = len(traj.steps)
    try:
        scores, _gate = _ask("steps", traj, oracle, None, limits, _steps_answer, _run_per_step)
    except Failure:
        scores = []
    return scores[:n] + [_fallback()] * (n - len(scores))


def _run_per_step(n: int) -> int:
    return n


# --------------------------------------------------------------------------- findings


def _detectors(fn_globals: Mapping[str, Any], view: FrozenDict) -> dict[str, float]:
    """Values of the program's own one-argument ``*_score`` functions (its detectors)."""
    out: dict[str, float] = {}
    for name, value in fn_globals.items():
        code = getattr(value, "__code__", None)
        if name == "score" or not name.endswith("_score") or code is None:
            continue
        if code.co_argcount != 1 or code.co_filename != "<monitor>":
            continue
        try:
            got = check_score(value(view))
        except Exception:  # a helper that needs other arguments or fails: not a detector
            continue
        if type(got) is float and got != 0.0:
            out[name[: -len("_score")]] = got
    return out


def findings(
    trajectory: Any,
    *,
    top: int = 10,
    oracle: Oracle | None = None,
    timeout_s: float | None = None,
    memory_mb: int | None = None,
) -> dict[str, Any]:
    """What drove the score: the steps whose arrival raised it most (score of each prefix,
    so a step counts by what it added), with the requests, secrets and listeners the view
    found in them and where in the step's text they sit; and the program's per-detector
    values where it has ``*_score`` functions.

    ``score``, ``status`` and ``error`` are the whole trajectory's (see :class:`Result`:
    the same as :func:`evaluate`'s). Every prefix is scored unless that would cost more
    than ``_rises.BUDGET`` (runs of many hundred steps): then the steps are found by a
    best-first search under that budget. Either way the prefixes share the call's time
    budget and memory cap; past them the work stops and ``steps`` are those found so far.
    When not every prefix was scored, ``partial`` says so: ``prefixes_scored`` of
    ``prefixes``, ``stopped`` (``timeout`` or ``memory``, with ``reason``) if a limit
    ended it, and the
    ``stretches`` of steps (``first_step``, ``last_step``, ``rise``) whose rise was not
    resolved into steps, largest first (``top`` of them; ``stretches_left`` in all).
    A step's evidence lists at most 50 items of each kind (``evidence_more`` counts the
    others), their spans looked for in the first megabyte of each text."""
    limits = _limits(timeout_s, memory_mb)
    if limits.isolation == "none":
        return _findings_of(trajectory, oracle, top)
    try:
        answer, _gate = _ask(
            "findings", trajectory, oracle, top, limits, _findings_answer, _runs_of_findings
        )
    except Failure as f:
        return _failed_findings(_fallback(), f.status, f.message)
    return answer


def _runs_of_findings(n: int) -> int:
    return n + 2  # the whole trajectory, then every prefix from the empty one


def _findings(
    fn: Callable[[Any], Any], hook: _OracleHook, traj: Trajectory, top: int
) -> dict[str, Any]:
    # The prefixes' views are derived from the full view (each equal to building it).
    prefixes = PrefixViews(traj)
    full = prefixes.full
    result = _run(fn, full, hook, traj)
    out: dict[str, Any] = {
        "score": result.score,
        "error": result.error,
        "status": result.status,
        "detectors": {},
        "steps": [],
    }
    if result.status == "memory":
        return out
    n = len(traj.steps)
    scored = [0]
    stopped: dict[str, str] = {}

    def score_at(k: int) -> float | None:
        # None stops the search: a limit was hit (what was scored so far stands).
        if stopped:
            return None
        try:
            prefix = _run(fn, prefixes.view(k), hook, traj)
        except BudgetExceeded:
            stopped.update(
                stopped="timeout",
                reason=f"stopped after {scored[0]} of {n + 1} prefixes: the time budget ran out",
            )
            return None
        if prefix.status == "memory":
            stopped.update(stopped="memory", reason=prefix.error or "memory cap")
            return None
        scored[0] += 1
        return prefix.score

    found = rises(score_at, weights(full), result.score, top)
    steps: list[dict[str, Any]] = []
    for k, delta in sorted(found.steps.items(), key=lambda f: (-f[1], f[0]))[:top]:
        step = full["steps"][k]
        evidence, more = step_evidence(step)  # (for the steps shown only)
        steps.append(
            {
                "step": k,
                "index": step["index"],
                "tool": step["tool"],
                "delta": delta,
                "evidence": evidence,
            }
        )
        if more:
            steps[-1]["evidence_more"] = more
    out["steps"] = steps
    if not found.every_prefix:
        out["partial"] = {
            "prefixes_scored": found.scored,
            "prefixes": n + 1,
            "stretches": [
                {"first_step": a, "last_step": b, "rise": r} for a, b, r in found.stretches[:top]
            ],
            "stretches_left": len(found.stretches),
            **stopped,
        }
    if not stopped:  # the program gets no more time once it is spent
        out["detectors"] = _detectors(fn.__globals__, full)
    return out


def _findings_answer(answer: dict[str, Any]) -> dict[str, Any]:
    """The worker's findings, checked where hosts read them (types of every field used)."""
    _input_error(answer)
    detectors, steps = answer.get("detectors"), answer.get("steps")
    if answer.get("status") not in STATUSES or not isinstance(detectors, dict):
        raise ValueError("bad findings")
    checked_float(answer.get("score"))
    _message(answer.get("error"))
    for v in detectors.values():
        checked_float(v)
    if not isinstance(steps, list):
        raise ValueError("bad findings steps")
    for f in steps:
        if not (
            isinstance(f, dict)
            and type(f.get("step")) is int
            and type(f.get("tool")) is str
            and isinstance(f.get("evidence"), list)
            and all(isinstance(e, dict) and type(e.get("what")) is str for e in f["evidence"])
            and type(f.get("evidence_more", 0)) is int
        ):
            raise ValueError("bad findings step")
        checked_float(f.get("delta"))
    partial = answer.get("partial")
    if partial is not None:
        if not (
            isinstance(partial, dict)
            and type(partial.get("prefixes_scored")) is int
            and type(partial.get("prefixes")) is int
            and type(partial.get("stretches_left")) is int
            and isinstance(partial.get("stretches"), list)
        ):
            raise ValueError("bad findings partial")
        if "stopped" in partial and (
            partial["stopped"] not in STATUSES or type(partial.get("reason")) is not str
        ):
            raise ValueError("bad findings stop")
        for st in partial["stretches"]:
            if not (
                isinstance(st, dict)
                and type(st.get("first_step")) is int
                and type(st.get("last_step")) is int
            ):
                raise ValueError("bad findings stretch")
            checked_float(st.get("rise"))
    return answer


# --------------------------------------------------------------------------- decisions


def _benign() -> list[float]:
    return (MONITOR.get("calibration") or {}).get("val_benign_scores") or []


def threshold(budget: float) -> dict[str, float] | None:
    """``{tau, g}`` at audit ``budget`` (a fraction of benign runs) from the val benign
    scores: flag above ``tau``, and a ``g`` share of ties at ``tau`` (monsearch's rule)."""
    benign = _benign()
    n = len(benign)
    if n == 0 or not 0.0 <= budget <= 1.0:
        return None
    m = min(math.floor(budget * n + 1e-9), n - 1)
    tau = benign[n - 1 - m]
    left = bisect.bisect_left(benign, tau)
    right = bisect.bisect_right(benign, tau)
    gt, eq = n - right, right - left
    g = min(1.0, max(0.0, (budget - gt / n) / (eq / n)))
    return {"tau": tau, "g": g}


def decide(value: float | Result, budget: float | None = None) -> dict[str, Any]:
    """The audit decision for a score: ``audit`` above the threshold, ``pass`` below, and
    at the threshold ``tie`` with ``audit_probability`` g; ``escalate`` when the run has
    an escalation band and the score falls in it.

    Given a :class:`Result` the program did not finish (status ``error``, ``timeout`` or
    ``memory``), the decision is that status, with its ``error``: a fallback score is
    not the program's judgement, and an input that stops the monitor is the host's to
    look at, not a pass."""
    if budget is None:
        budget = float(MONITOR.get("default_budget", 0.05))
    if isinstance(value, Result):
        if not value.ok:
            return {"budget": budget, "decision": value.status, "error": value.error}
        value = value.score
    t = threshold(budget)
    out: dict[str, Any] = {"budget": budget}
    if t is None:
        out["decision"] = "unknown"
        return out
    out.update(t)
    if value > t["tau"]:
        out["decision"] = "audit"
    elif value == t["tau"]:
        out["decision"] = "tie"
        out["audit_probability"] = t["g"]
    else:
        out["decision"] = "pass"
    band = MONITOR.get("escalation_band")
    if isinstance(band, Mapping) and band.get("low") is not None and band.get("high") is not None:
        # Open ends are stored as "inf"/"-inf": JSON has no infinities.
        out["escalate"] = bool(float(band["low"]) <= value < float(band["high"]))
    return out
