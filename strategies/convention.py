"""The readable program layout the offline proposer edits.

A program in the convention is, in this order::

    \"\"\"Docstring.\"\"\"

    PARAMS = {"w_secrets": 2.0, "bias": 0.0, ...}   # a dict literal of numbers

    WRITE_METHODS = ("POST", "PUT")                  # optional constants

    def helper(x): ...                               # optional helper functions

    def detect_secrets(traj):                        # detectors: detect_<name>(traj) -> float
        ...

    def score(traj):                                 # the combiner, generated
        ...

``PARAMS`` holds one weight ``w_<name>`` per detector, ``bias``, any thresholds the
detectors read, ``w_max`` for the ``sum_max`` combiner and, with an oracle band,
``band_lo``/``band_hi``/``w_oracle``. ``score`` is not free text: it is what
:func:`render_score` generates from the detector names, the combiner kind and
whether the oracle band is on, so :func:`parse_program` recognises it by comparing
syntax trees and refuses any program whose ``score`` was edited by hand (such a
program is still a valid monitor; the proposers then only perturb its constants).

Combiner kinds (``v_d`` = a detector's value, ``w_d`` its weight):

- ``sum``: ``bias + sum(w_d * v_d)``;
- ``max``: ``bias + max(w_d * v_d)`` (one strong signal decides);
- ``sum_max``: ``bias + sum(w_d * v_d) + w_max * max(w_d * v_d)``;
- ``soft_or``: ``bias + sum(tanh(w_d * v_d))``: each detector saturates, so many
  weak hits of one detector cannot outweigh one strong hit of another.

The oracle band: when the base score ``s`` is in ``[band_lo, band_hi)``, ``score``
asks ``oracle(traj)`` once and adds ``w_oracle * (answer - 0.5)``. Benign runs in
the band cost oracle calls (mean calls per benign run is capped, ``rho``), so the
band must stay narrow.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field, replace

COMBINERS = ("sum", "max", "sum_max", "soft_or")
DETECTOR_PREFIX = "detect_"
BAND_PARAMS = ("band_lo", "band_hi", "w_oracle")
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class Detector:
    """One ``detect_<name>(traj)`` function: ``name`` without the prefix, its source."""

    name: str
    source: str

    @property
    def function(self) -> str:
        return DETECTOR_PREFIX + self.name

    @property
    def weight(self) -> str:
        return "w_" + self.name


@dataclass(frozen=True)
class Program:
    """A program in the convention. ``params`` keeps its order (tuples of name, value)."""

    docstring: str
    params: tuple[tuple[str, float], ...]
    detectors: tuple[Detector, ...]
    combiner: str = "sum"
    oracle_band: bool = False
    #: Other top-level statements kept verbatim (constants), in order.
    constants: tuple[str, ...] = ()
    #: Helper functions (neither a detector nor ``score``), source kept verbatim.
    helpers: tuple[str, ...] = ()
    extra: dict[str, str] = field(default_factory=dict, compare=False)

    def param(self, name: str, default: float | None = None) -> float | None:
        for k, v in self.params:
            if k == name:
                return v
        return default

    def with_params(self, updates: dict[str, float]) -> Program:
        """Existing params updated in place, new ones appended (in sorted order)."""
        known = {k for k, _ in self.params}
        out = [(k, float(updates.get(k, v))) for k, v in self.params]
        out += [(k, float(updates[k])) for k in sorted(updates) if k not in known]
        return replace(self, params=tuple(out))

    def without_params(self, names: set[str] | frozenset[str]) -> Program:
        return replace(self, params=tuple((k, v) for k, v in self.params if k not in names))

    def detector(self, name: str) -> Detector | None:
        for d in self.detectors:
            if d.name == name:
                return d
        return None


# --------------------------------------------------------------------------- render


def format_number(value: float) -> str:
    """A short literal: integers without a fraction, others with 4 significant digits."""
    v = float(value)
    if v == int(v) and abs(v) < 1e9:
        return f"{int(v)}.0"
    text = f"{v:.4g}"
    if "e" in text or "." not in text:
        text = repr(round(v, 6))
    return text


def render_params(params: tuple[tuple[str, float], ...]) -> str:
    lines = ["PARAMS = {"]
    lines += [f'    "{k}": {format_number(v)},' for k, v in params]
    lines.append("}")
    return "\n".join(lines)


def render_score(names: list[str] | tuple[str, ...], combiner: str, oracle_band: bool) -> str:
    """The generated combiner for detectors ``names`` (without the ``detect_`` prefix)."""
    if combiner not in COMBINERS:
        raise ValueError(f"unknown combiner {combiner!r}")
    body = ["def score(traj):"]
    terms = [f'PARAMS["w_{n}"] * {DETECTOR_PREFIX}{n}(traj)' for n in names]
    if combiner == "sum":
        body.append('    s = PARAMS["bias"]')
        body += [f"    s += {t}" for t in terms]
    elif combiner == "soft_or":
        body.append('    s = PARAMS["bias"]')
        body += [f"    s += math.tanh({t})" for t in terms]
    else:
        body.append("    parts = [")
        body += [f"        {t}," for t in terms]
        body.append("    ]")
        if combiner == "max":
            body.append('    s = PARAMS["bias"] + max(parts + [0.0])')
        else:
            body.append(
                '    s = PARAMS["bias"] + sum(parts) + PARAMS["w_max"] * max(parts + [0.0])'
            )
    if oracle_band:
        body += [
            '    if PARAMS["band_lo"] <= s < PARAMS["band_hi"]:',
            "        answer = oracle(traj)",
            "        if answer is not None:",
            '            s += PARAMS["w_oracle"] * (answer - 0.5)',
        ]
    body.append("    return s")
    return "\n".join(body)


def render(program: Program) -> str:
    """Program source in the convention (parses back to an equal :class:`Program`)."""
    parts = [f'"""{_doc_text(program.docstring)}"""', render_params(program.params)]
    if program.constants:
        parts.append("\n".join(c.strip("\n") for c in program.constants))
    parts += list(program.helpers)
    parts += [d.source for d in program.detectors]
    parts.append(
        render_score([d.name for d in program.detectors], program.combiner, program.oracle_band)
    )
    return "\n\n\n".join(p.strip("\n") for p in parts) + "\n"


def _doc_text(doc: str) -> str:
    # Escaped so that the parsed docstring is exactly ``doc`` again.
    return doc.replace("\\", "\\\\").replace('"', '\\"')


def required_params(program: Program) -> list[str]:
    """The params ``score`` reads: every weight, bias, and the combiner's/band's own."""
    names = [d.weight for d in program.detectors] + ["bias"]
    if program.combiner == "sum_max":
        names.append("w_max")
    if program.oracle_band:
        names += list(BAND_PARAMS)
    return names


# --------------------------------------------------------------------------- parse


def _number(node: ast.AST) -> float | None:
    sign = 1.0
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        sign = -1.0 if isinstance(node.op, ast.USub) else 1.0
        node = node.operand
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return sign * float(node.value)
    return None


def _params(node: ast.stmt) -> tuple[tuple[str, float], ...] | None:
    if not (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and node.targets[0].id == "PARAMS"
        and isinstance(node.value, ast.Dict)
    ):
        return None
    out = []
    for k, v in zip(node.value.keys, node.value.values, strict=True):
        if not (isinstance(k, ast.Constant) and isinstance(k.value, str)):
            return None
        number = _number(v)
        if number is None:
            return None
        out.append((k.value, number))
    if len({k for k, _ in out}) != len(out):
        return None
    return tuple(out)


def _same(a: str, b: str) -> bool:
    return ast.dump(ast.parse(a)) == ast.dump(ast.parse(b))


def parse_program(source: str) -> Program | None:
    """The :class:`Program` of ``source``, or None if it does not follow the convention."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    body = list(tree.body)
    doc = ""
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        if not isinstance(body[0].value.value, str):
            return None
        doc = body[0].value.value
        body = body[1:]
    if not body:
        return None
    params = _params(body[0])
    if params is None:
        return None
    constants: list[str] = []
    helpers: list[str] = []
    detectors: list[Detector] = []
    score_src: str | None = None
    for node in body[1:]:
        text = ast.get_source_segment(source, node)
        if text is None:
            return None
        if isinstance(node, ast.FunctionDef):
            if score_src is not None:
                return None  # score must come last
            if node.name == "score":
                score_src = text
            elif node.name.startswith(DETECTOR_PREFIX):
                name = node.name[len(DETECTOR_PREFIX) :]
                if not _NAME.match(name) or len(node.args.args) != 1:
                    return None
                detectors.append(Detector(name, text))
            else:
                if detectors:
                    return None  # helpers come before detectors
                helpers.append(text)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            if helpers or detectors or score_src is not None:
                return None
            names = [
                t.id
                for t in getattr(node, "targets", [getattr(node, "target", None)])
                if isinstance(t, ast.Name)
            ]
            if "PARAMS" in names or "score" in names:
                return None
            constants.append(text)
        else:
            return None
    if score_src is None or not detectors:
        return None
    if len({d.name for d in detectors}) != len(detectors):
        return None
    names = [d.name for d in detectors]
    for combiner in COMBINERS:
        for band in (False, True):
            if _same(score_src, render_score(names, combiner, band)):
                program = Program(
                    doc, params, tuple(detectors), combiner, band, tuple(constants), tuple(helpers)
                )
                have = {k for k, _ in params}
                if any(p not in have for p in required_params(program)):
                    return None
                return program
    return None
