"""Which label failure rates a synthetic corpus is generated for: ``--rates``.

The paper's rates tie the label to the context: nearly every solved
callback-listener run is a failure, Nemotron fails a quarter as often as Kimi.
A monitor evolved on them can score "which task, which outcome" instead of
OPSEC behaviour, and the next agent model's rates will differ. A
:class:`Rates` says what share of runs the judge panel labels a failure:

- ``paper`` (the default): the StealthBench per-model and per-task rates
  (:mod:`~monsearch.synth.calibration`; the corpus is exactly what it
  always was);
- ``task``: every task at the overall failure shares, per-model rates kept
  (what ``--balance task`` built, unchanged);
- ``flat[:SHARE]``: every task × outcome cell, for every generator, at the
  same share (default one third);
- a TOML or JSON file of per task × outcome shares (format below).

Outcomes are a trajectory's own: ``flag_found`` (solved), ``no_flag`` (stopped
without the flag) and ``step_limit`` (ran out of turns without it). The
generator writes no ``error`` runs (they are not valid, so never labelled).

A rates file (TOML; JSON has the same structure)::

    [rates]
    default = 0.3                                          # every cell not set below
    "callback-listener" = { solved = 0.5, unsolved = 0.4 }
    "adtech-admin" = 0.45                                  # all three outcomes
    "graphql-batch-otp" = { flag_found = 0.6, no_flag = 0.2, step_limit = 0.45 }

Each value is a share in (0, 1), or a table of them keyed by outcome:
``flag_found`` (or its alias ``solved``), ``no_flag``, ``step_limit``, and
``unsolved`` for both of the last two (a specific key wins). ``default`` takes
the same forms; a cell a task does not set comes from it. Task names are the
14 StealthBench tasks; anything else is refused with the file and key named.

A rates file may also set the benign habit mix (``--benign-mix``; see
:mod:`monsearch.corpora.benign_mix`), as its text or as a table of level shares::

    benign_mix = "quiet"                       # before [rates]; or:
    [benign_mix]
    preset = "paper"                           # optional; then LEVEL = SHARE
    patient = 0.7
    probing = 0.2
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from monsearch.corpora.benign_mix import BenignMixError, parse_benign_mix_data
from monsearch.errors import MonsearchError

#: The outcomes a synthetic run can have, and the order of a task's target triple.
OUTCOMES: tuple[str, ...] = ("flag_found", "no_flag", "step_limit")
#: ``flag_found`` of the outcomes is a solve; the other two are not.
SOLVED_OUTCOME = "flag_found"
#: Rates of the persona-margin calibration (``calibration.BALANCES``): no targets of their own.
CALIBRATED = ("paper", "task")
PRESETS = (*CALIBRATED, "flat")
DEFAULT_RATES = "paper"
#: ``flat`` without a share: a third of runs labelled failures in every cell, about the
#: paper's overall share (37 %) without its dependence on task, outcome and model.
FLAT_SHARE = 1.0 / 3.0
FILE_SUFFIXES = (".toml", ".json")

# Keys of a task's (or the default's) table, and the outcomes each one sets.
_KEYS: dict[str, tuple[str, ...]] = {
    "flag_found": ("flag_found",),
    "solved": ("flag_found",),
    "no_flag": ("no_flag",),
    "step_limit": ("step_limit",),
    "unsolved": ("no_flag", "step_limit"),
}


class RatesError(MonsearchError):
    """A ``--rates`` value or rates file that cannot be used (exit 2)."""


Triple = tuple[float, float, float]  # shares for OUTCOMES, in order


@dataclass(frozen=True)
class Rates:
    """Label failure rates a corpus is generated for (see the module docstring).

    ``targets`` (``flat`` and files only) holds, per task, the panel-label failure
    share of each of :data:`OUTCOMES`, the same for every generator; ``origins``
    says where each was set (``FILE: rates.TASK.KEY``), for error messages.
    """

    kind: str  # "paper" | "task" | "flat" | "file"
    share: float | None = None  # flat
    targets: tuple[tuple[str, Triple], ...] = ()
    source: str = ""  # file: as given
    origins: tuple[tuple[str, tuple[str, str, str]], ...] = ()
    #: The file's ``benign_mix`` (its canonical ``--benign-mix`` text), if it sets one.
    benign_mix: str | None = None

    @property
    def calibrated(self) -> bool:
        """Drawn from the persona-margin calibration (``paper``, ``task``), no targets."""
        return self.kind in CALIBRATED

    @property
    def spec(self) -> str:
        """The ``--rates`` value that gives these rates (a file by its name)."""
        if self.kind == "flat":
            return "flat" if self.share == FLAT_SHARE else f"flat:{self.share:g}"
        if self.kind == "file":
            return Path(self.source).name
        return self.kind

    def target_table(self) -> dict[str, dict[str, float]]:
        return {t: dict(zip(OUTCOMES, v, strict=True)) for t, v in self.targets}

    def target(self, task: str, outcome: str) -> float:
        return dict(self.targets)[task][OUTCOMES.index(outcome)]

    def origin(self, task: str, outcome: str) -> str:
        return dict(self.origins)[task][OUTCOMES.index(outcome)]

    @property
    def digest(self) -> str:
        """sha256 of the targets (not of the file's text): same rates, same digest."""
        text = json.dumps(self.target_table(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()

    @property
    def name_suffix(self) -> str:
        """What the default corpus name gets (``synth-s0-n15000`` + this)."""
        if self.kind == "paper":
            return ""
        if self.kind == "file":
            # The file's name and a digest of its targets: the same name, the same rates.
            stem = re.sub(r"[^a-z0-9]+", "-", Path(self.source).stem.lower()).strip("-")
            return f"-{stem or 'rates'}-{self.digest[:8]}"
        return f"-{self.spec.replace(':', '')}"

    def describe(self) -> str:
        """One line for people (``corpus show``, ``corpus synth``)."""
        return describe(
            {
                "kind": self.kind,
                "spec": self.spec,
                "share": self.share,
                "file": Path(self.source).name,
                "targets": self.target_table(),
            }
        )

    def record(
        self,
        expected: Mapping[str, Mapping[str, float]],
        overall: Mapping[str, float],
    ) -> dict[str, Any]:
        """The manifest's record of these rates.

        ``targets``: per task and outcome, the panel-label failure share the corpus
        was drawn for (for ``paper`` and ``task``, what the calibration gives over
        the mix of generators, whose own rates differ: ``per_generator`` is false);
        ``overall``: per outcome over all tasks, in expectation over that mix
        (:func:`~monsearch.synth.rated.expected_label_shares` gives both).
        """
        out: dict[str, Any] = {"kind": self.kind, "spec": self.spec}
        if self.kind == "flat":
            out["share"] = self.share
        if self.kind == "file":
            out["file"] = Path(self.source).name
            out["targets_sha256"] = self.digest
        out["per_generator"] = not self.calibrated
        table = expected if self.calibrated else self.target_table()
        out["targets"] = {
            t: {o: round(float(v), 6) for o, v in row.items()} for t, row in table.items()
        }
        out["overall"] = {o: round(float(v), 6) for o, v in overall.items()}
        return out


def describe(record: Mapping[str, Any]) -> str:
    """One line saying what a manifest's rates record means."""
    kind = record.get("kind")
    if kind == "paper":
        return "paper: StealthBench's per-model and per-task failure rates"
    if kind == "task":
        return "task: every task at the overall failure shares, per-model rates kept"
    if kind == "flat":
        share = record.get("share")
        pct = f"{100 * share:.1f} %" if isinstance(share, int | float) else "?"
        return f"flat: {pct} of runs labelled failures in every task x outcome, every generator"
    if kind == "file":
        targets = record.get("targets") or {}
        values = [v for row in targets.values() for v in row.values()]
        span = f", {100 * min(values):.1f}-{100 * max(values):.1f} %" if values else ""
        return (
            f"{record.get('file', '?')}: chosen per task x outcome{span}, every generator "
            "(corpus stats shows them)"
        )
    return str(record.get("spec", "?"))


def preset(name: str) -> Rates:
    """``paper``, ``task`` or ``flat`` (at :data:`FLAT_SHARE`)."""
    if name == "flat":
        return flat(FLAT_SHARE, "--rates flat")
    if name not in CALIBRATED:
        raise RatesError(f"unknown rates preset {name!r} (known: {', '.join(PRESETS)})")
    return Rates(name)


def _tasks() -> list[str]:
    from monsearch.synth.scenario import REGISTRY

    return sorted(REGISTRY)


def flat(share: float, origin: str | None = None) -> Rates:
    """Every task × outcome at ``share`` (a number in (0, 1))."""
    origin = origin or f"--rates flat:{share:g}"
    _check_share(share, origin)
    tasks = _tasks()
    return Rates(
        "flat",
        share=float(share),
        targets=tuple((t, (share, share, share)) for t in tasks),
        origins=tuple((t, (origin, origin, origin)) for t in tasks),
    )


def _check_share(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RatesError(f"{where}: expected a share in (0, 1), got {value!r}")
    if not math.isfinite(value) or not 0.0 < value < 1.0:
        raise RatesError(f"{where}: {value!r} is not a share in (0, 1)")
    return float(value)


def parse_rates(spec: str | Rates) -> Rates:
    """A ``--rates`` value: ``paper``, ``task``, ``flat``, ``flat:SHARE`` or a file path.

    Presets win over a file of the same name (write ``./flat`` for the file).
    """
    if isinstance(spec, Rates):
        return spec
    text = spec.strip()
    if text in PRESETS:
        return preset(text)
    if text.startswith("flat:"):
        raw = text[len("flat:") :].strip()
        try:
            share = float(raw)
        except ValueError:
            raise RatesError(
                f"--rates {text}: SHARE must be a number in (0, 1), e.g. flat:0.25"
            ) from None
        return flat(share, f"--rates {text}")
    path = Path(text)
    if not path.is_file() and path.suffix.lower() not in FILE_SUFFIXES:
        raise RatesError(
            f"--rates {text!r}: not paper, task, flat or flat:SHARE, and no such rates file"
        )
    return load_rates_file(path)


def load_rates_file(path: str | Path) -> Rates:
    """Read and check a rates file (TOML, or JSON when it ends in ``.json``)."""
    p = Path(path)
    src = str(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RatesError(f"{src}: no such rates file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RatesError(f"{src}: cannot read the rates file: {exc}") from None
    if p.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise RatesError(f"{src}: not valid JSON: {exc}") from None
    else:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise RatesError(f"{src}: not valid TOML: {exc}") from None
    return parse_rates_data(data, src)


def _table(value: Any, where: str) -> dict[str, tuple[float, str]]:
    """Outcome -> (share, the field that set it) from a share or a table keyed by outcome."""
    if not isinstance(value, dict):
        share = _check_share(value, where)
        return dict.fromkeys(OUTCOMES, (share, where))
    if "error" in value:
        raise RatesError(
            f"{where}.error: the synthetic generator writes no error runs (they are not "
            "valid runs and have no label)"
        )
    unknown = [k for k in value if k not in _KEYS]
    if unknown:
        raise RatesError(
            f"{where}.{unknown[0]}: unknown outcome (known: {', '.join(_KEYS)}; "
            "unsolved sets no_flag and step_limit)"
        )
    if "solved" in value and "flag_found" in value:
        raise RatesError(f"{where}: solved and flag_found are the same outcome; give one")
    out: dict[str, tuple[float, str]] = {}
    # "unsolved" first, so that no_flag or step_limit given beside it win.
    for key in sorted(value, key=lambda k: k != "unsolved"):
        field = f"{where}.{key}"
        share = _check_share(value[key], field)
        for outcome in _KEYS[key]:
            out[outcome] = (share, field)
    return out


def parse_rates_data(data: Any, src: str) -> Rates:
    """A :class:`Rates` from a rates file's parsed content (``src`` names it in errors)."""
    if not isinstance(data, dict):
        raise RatesError(f"{src}: expected a table with a [rates] section")
    unknown = sorted(k for k in data if k not in ("rates", "benign_mix"))
    if unknown:
        raise RatesError(
            f"{src}: {unknown[0]}: unknown key (only [rates] and benign_mix are read)"
        )
    mix = None
    if "benign_mix" in data:
        try:
            mix = parse_benign_mix_data(data["benign_mix"], f"{src}: benign_mix").spec
        except BenignMixError as exc:
            raise RatesError(str(exc)) from None
    table = data.get("rates")
    if not isinstance(table, dict):
        raise RatesError(f"{src}: rates: expected a [rates] table of shares")
    tasks = _tasks()
    for key in table:
        if key != "default" and key not in tasks:
            near = difflib.get_close_matches(key, tasks, n=1)
            hint = f"did you mean {near[0]!r}? " if near else ""
            raise RatesError(
                f"{src}: rates.{key}: unknown task ({hint}known: default, {', '.join(tasks)})"
            )
    default = _table(table["default"], f"{src}: rates.default") if "default" in table else {}
    targets: list[tuple[str, Triple]] = []
    origins: list[tuple[str, tuple[str, str, str]]] = []
    for task in tasks:
        own = _table(table[task], f"{src}: rates.{task}") if task in table else {}
        cells = []
        for outcome in OUTCOMES:
            cell = own.get(outcome) or default.get(outcome)
            if cell is None:
                raise RatesError(
                    f"{src}: rates.{task}.{outcome}: no share given, and no rates.default "
                    "for it to fall back on"
                )
            cells.append(cell)
        targets.append((task, (cells[0][0], cells[1][0], cells[2][0])))
        origins.append((task, (cells[0][1], cells[1][1], cells[2][1])))
    return Rates(
        "file", targets=tuple(targets), source=src, origins=tuple(origins), benign_mix=mix
    )
