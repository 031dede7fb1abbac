"""Edit operators of the offline proposer.

Each operator is ``op(program, rng, context, ...) -> (new_program, description) | None``
over :class:`~monsearch.strategies.convention.Program` (None: nothing sensible to do,
e.g. removing the only detector). :func:`perturb_constants` works on any source.

Determinism: every random choice comes from the ``rng`` given, over sorted or
list-ordered candidates; no set or dict iteration order that depends on hashing.
"""

from __future__ import annotations

import ast
import math
import random
import re
import warnings
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from monsearch.eval.dimensions import bauc_by_dimension
from monsearch.search.mining import Atom, Mined, mined_for
from monsearch.strategies.convention import (
    BAND_PARAMS,
    COMBINERS,
    Detector,
    Program,
    render,
)

Result = tuple[Program, str] | None

#: Parsimony: no more detectors than this (program size and generalisation).
MAX_DETECTORS = 40
#: Benign share an oracle band may cover on train (the cap rho defaults to 0.05:
#: leave room for val to differ from train).
MAX_BAND_MASS = 0.03
_PARAM_REF = re.compile(r"""PARAMS\[["']([A-Za-z0-9_]+)["']\]""")


# --------------------------------------------------------------------------- helpers


def parent_train_scores(program: Program, context: Any) -> np.ndarray | None:
    """The program's scores on ``train`` (through the context's cached sandbox runs)."""
    if context is None or getattr(context, "score_on_train", None) is None:
        return None
    try:
        scores = context.score_on_train(render(program))
    except Exception:  # a failing sandbox run only means no fitted choices
        return None
    if scores is None:
        return None
    scores = np.asarray(scores, dtype=float)
    if scores.size != len(context.train.labels) or not np.all(np.isfinite(scores)):
        return None
    return scores


def train_fitness(
    scores: np.ndarray,
    labels: np.ndarray,
    dimensions: np.ndarray,
    weights: np.ndarray | None = None,
) -> float:
    """Aggregate budget-AUC on train (the eval layer's own computation), under the
    run's fitness weights when given (eval/priors.py)."""
    with warnings.catch_warnings():
        # A small train split raises the budget range; the comparison stays fair.
        warnings.simplefilter("ignore")
        result = bauc_by_dimension(scores, labels, dimensions, weights=weights)
    agg = result.aggregate
    return 0.0 if agg is None or math.isnan(agg) else float(agg)


def keeping_fitness(
    scores: np.ndarray,
    labels: np.ndarray,
    dimensions: np.ndarray,
    weights: np.ndarray | None,
    parent_dims: dict[str, float],
) -> float:
    """Train budget-AUC less what it costs a failure dimension the parent catches
    (eval/sources.py's penalty, against the parent on train): an added detector's weight
    is chosen so that it adds to the monitor, not by drowning another kind of failure
    under new false alarms at the top of the benign scores."""
    from monsearch.eval.sources import PENALTY, shortfall

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = bauc_by_dimension(scores, labels, dimensions, weights=weights)
    agg = result.aggregate
    if agg is None or math.isnan(agg):
        return 0.0
    short = shortfall(parent_dims, result.by_dimension)
    return float(agg) - (0.0 if short is None else PENALTY * short)


def _scale(scores: np.ndarray | None, labels: np.ndarray) -> float:
    """A score step that matters: the spread of the top of the benign scores."""
    if scores is None:
        return 1.0
    benign = scores[~labels]
    if benign.size == 0:
        return 1.0
    spread = float(np.quantile(benign, 0.97) - np.quantile(benign, 0.5))
    return spread if spread > 1e-9 else max(1.0, float(np.quantile(benign, 0.97)))


def _round(value: float) -> float:
    return float(f"{value:.4g}")


def _weighted_index(rng: random.Random, weights: list[float]) -> int:
    total = sum(weights)
    x = rng.random() * total
    for i, w in enumerate(weights):
        x -= w
        if x < 0:
            return i
    return len(weights) - 1


# --------------------------------------------------------------------------- add mined


def op_add_mined(
    program: Program,
    rng: random.Random,
    context: Any,
    *,
    mined: Mined | None = None,
    n_candidates: int = 10,
) -> Result:
    """Add a detector mined from train, weighted for failures the parent misses.

    With the parent's train scores and a ``sum`` (``soft_or``) combiner the child's
    train scores are ``parent + w * feature`` (``+ tanh(w * feature)``): exactly
    without an oracle band, nearly with one (band membership may shift). Candidates
    and weights are then compared by train budget-AUC; otherwise the weight comes
    from the atom's log-odds.
    """
    if len(program.detectors) >= MAX_DETECTORS:
        return None
    mined = mined if mined is not None else mined_for(context.train)
    if not mined.atoms:
        return None
    labels = mined.labels
    scores = parent_train_scores(program, context)
    missed = None
    if scores is not None:
        benign = scores[~labels]
        cut = float(np.quantile(benign, 0.95)) if benign.size else 0.0
        missed = scores <= cut
    util = mined.utilities(missed)
    have = {d.name for d in program.detectors}
    order = np.argsort(-util, kind="stable")
    picks: list[int] = []
    for j in order[: 40 * n_candidates]:
        if util[j] <= 0:
            break
        if mined.atoms[j].name not in have:
            picks.append(int(j))
        if len(picks) >= n_candidates:
            break
    if not picks:
        return None
    scale = _scale(scores, labels)
    fitted = scores is not None and program.combiner in ("sum", "soft_or")
    squash = np.tanh if program.combiner == "soft_or" else (lambda v: v)
    if fitted:
        assert scores is not None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parent_dims = {
                d: v for d, v in bauc_by_dimension(
                    scores, labels, mined.dimensions, weights=mined.weights
                ).by_dimension.items() if v is not None
            }  # fmt: skip
        base = keeping_fitness(scores, labels, mined.dimensions, mined.weights, parent_dims)
        results = []
        for j in picks:
            col = np.asarray(mined.x[:, j].toarray()).ravel()
            best = (base, 0.0)
            for mult in (0.25, 0.5, 1.0, 2.0, 4.0):
                w = _round(scale * mult)
                f = keeping_fitness(
                    scores + squash(w * col), labels, mined.dimensions, mined.weights, parent_dims
                )
                if f > best[0] + 1e-12:
                    best = (f, w)
            results.append((best[0] - base, best[1], j))
        results = [r for r in results if r[1] > 0]
        if not results:
            return None
        results.sort(key=lambda r: (-r[0], r[2]))
        top = results[:3]
        gain, weight, j = top[_weighted_index(rng, [3.0, 2.0, 1.0][: len(top)])]
        note = f"train BAUC {gain:+.4f}"
    else:
        j = picks[_weighted_index(rng, [1.0 / (1 + i) for i in range(len(picks))])]
        atom = mined.atoms[j]
        weight = _round(scale * min(2.0, max(0.25, atom.log_odds / 2.0)))
        note = f"log-odds {atom.log_odds:.2f}"
    atom = mined.atoms[j]
    child = add_atom(program, atom, weight)
    return child, f"add mined detector {atom.name}: {atom.describe()}, weight {weight:g} ({note})"


def add_atom(program: Program, atom: Atom, weight: float) -> Program:
    det = Detector(atom.name, atom.render())
    child = replace(program, detectors=program.detectors + (det,))
    return child.with_params({det.weight: weight})


# --------------------------------------------------------------------------- remove


def _used_params(program: Program) -> set[str]:
    used: set[str] = set()
    for text in (*program.constants, *program.helpers, *(d.source for d in program.detectors)):
        used.update(_PARAM_REF.findall(text))
    return used


def _prune_params(program: Program) -> Program:
    """Drop params nothing reads any more (a removed detector's weight, its thresholds)."""
    from monsearch.strategies.convention import required_params

    keep = set(required_params(program)) | _used_params(program)
    return program.without_params({k for k, _ in program.params if k not in keep})


#: A failure dimension the program catches on train (budget-AUC at least this), and the
#: share of it a removal may cost before the removed detector counts as its last one.
CATCHES = 0.05
KEEPS = 0.5
#: Detectors a removal tries (each checked on train) before it gives up.
REMOVAL_TRIES = 3


def dimensions_lost(
    parent: np.ndarray | None, child: np.ndarray | None, context: Any
) -> list[str]:
    """The failure dimensions the parent catches on train that the child no longer does
    (budget-AUC down to under :data:`KEEPS` of the parent's): what removing the last
    detector of a rubric dimension looks like, measured rather than named."""
    if parent is None or child is None or context is None:
        return []
    labels = np.asarray(context.train.labels, dtype=bool)
    dims = np.asarray(context.train.dimensions)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        before = bauc_by_dimension(parent, labels, dims).by_dimension
        after = bauc_by_dimension(child, labels, dims).by_dimension
    return sorted(
        d for d, v in before.items()
        if v is not None and v >= CATCHES and (after.get(d) or 0.0) < KEEPS * v
    )  # fmt: skip


def op_remove_detector(program: Program, rng: random.Random, context: Any = None) -> Result:
    """Drop one detector (and the params only it used); never the last detector of a
    failure dimension the program catches on train (:func:`dimensions_lost`)."""
    if len(program.detectors) <= 1:
        return None
    order = list(range(len(program.detectors)))
    rng.shuffle(order)
    parent_scores = parent_train_scores(program, context)
    for i in order[:REMOVAL_TRIES]:
        gone = program.detectors[i]
        child = replace(program, detectors=program.detectors[:i] + program.detectors[i + 1 :])
        child = _prune_params(_prune_definitions(child))
        if parent_scores is not None and dimensions_lost(
            parent_scores, parent_train_scores(child, context), context
        ):
            continue
        return child, f"remove detector {gone.name}"
    return None


def _prune_definitions(program: Program) -> Program:
    """Drop constants and helpers no detector reaches any more (parsimony)."""
    defs = {_defined(t): t for t in (*program.constants, *program.helpers)}
    reached: set[str] = set()
    frontier = [d.source for d in program.detectors]
    while frontier:
        for name in sorted(_names_in(frontier.pop())):
            if name in defs and name not in reached:
                reached.add(name)
                frontier.append(defs[name])
    return replace(
        program,
        constants=tuple(t for t in program.constants if _defined(t) in reached),
        helpers=tuple(t for t in program.helpers if _defined(t) in reached),
    )


# --------------------------------------------------------------------------- retune


def jitter(value: float, rng: random.Random, sigma: float = 0.3) -> float:
    """Multiplicative jitter (sign kept); additive for zero."""
    if value == 0:
        return _round(rng.gauss(0.0, 0.5))
    return _round(value * math.exp(rng.gauss(0.0, sigma)))


def op_retune(program: Program, rng: random.Random, context: Any = None) -> Result:
    """Jitter one to three PARAMS (band params keep band_lo < band_hi)."""
    names = [k for k, _ in program.params]
    if not names:
        return None
    k = min(len(names), rng.choice((1, 1, 2, 3)))
    chosen = sorted(rng.sample(names, k))
    updates = {n: jitter(float(program.param(n) or 0.0), rng) for n in chosen}
    child = program.with_params(updates)
    lo, hi = child.param("band_lo"), child.param("band_hi")
    if lo is not None and hi is not None and lo >= hi:
        child = child.with_params(
            {"band_lo": program.param("band_lo"), "band_hi": program.param("band_hi")}
        )
    if child.params == program.params:
        return None
    text = ", ".join(f"{n} {program.param(n):g} -> {child.param(n):g}" for n in chosen)
    return child, f"retune {text}"


# --------------------------------------------------------------------------- combiner


def op_change_combiner(program: Program, rng: random.Random, context: Any = None) -> Result:
    """Switch to another combiner kind (adds ``w_max`` for ``sum_max``)."""
    others = [c for c in COMBINERS if c != program.combiner]
    kind = rng.choice(others)
    child = replace(program, combiner=kind)
    if kind == "sum_max" and child.param("w_max") is None:
        child = child.with_params({"w_max": 0.5})
    child = _prune_params(child)
    return child, f"combiner {program.combiner} -> {kind}"


# --------------------------------------------------------------------------- band


def band_mass(scores: np.ndarray, labels: np.ndarray, lo: float, hi: float) -> float:
    benign = scores[~labels]
    if benign.size == 0:
        return 0.0
    return float(np.mean((benign >= lo) & (benign < hi)))


def keep_band_mass(
    child: Program, parent_scores: np.ndarray, child_scores: np.ndarray, labels: np.ndarray
) -> tuple[Program, str | None]:
    """``child`` with its oracle band moved when it holds more benign train runs than
    any band may (:data:`MAX_BAND_MASS`, or the parent's own mass if that is more), and
    a note saying so (None: nothing moved).

    The band is in score units; a new detector that fires on many passes lifts their
    scores into it, and the child spends the judge on runs the parent never escalated
    (over the cap ``rho`` on val). Within the limit that is the child's own choice; past
    it the band keeps its place in the benign score distribution instead: the parent's
    benign quantiles, then the lower edge raised past ties until the mass fits.
    """
    if not child.oracle_band:
        return child, None
    lo, hi = float(child.param("band_lo") or 0.0), float(child.param("band_hi") or 0.0)
    labels = np.asarray(labels, dtype=bool)
    allowed = max(band_mass(parent_scores, labels, lo, hi), MAX_BAND_MASS)
    if band_mass(child_scores, labels, lo, hi) <= allowed * 1.05:
        return child, None
    before, after = parent_scores[~labels], child_scores[~labels]
    if after.size == 0:
        return child, None
    q_lo, q_hi = float(np.mean(before < lo)), float(np.mean(before < hi))
    new_hi = float(np.quantile(after, q_hi))
    values = np.unique(after)
    if not (values > new_hi).any() and q_hi >= 1.0:
        new_hi = float(values[-1]) + max(abs(float(values[-1])) * 0.1, 1e-3)
    new_lo = float(np.quantile(after, q_lo))
    # Ties: raise the lower edge run value by run value until the mass fits.
    for v in values[values >= new_lo]:
        if float(v) >= new_hi:
            return child, None
        if band_mass(child_scores, labels, _round(float(v)), _round(new_hi)) <= allowed * 1.05:
            new_lo = float(v)
            break
    else:
        return child, None
    new_lo, new_hi = _round(new_lo), _round(new_hi)
    if not new_hi > new_lo:
        return child, None
    mass = band_mass(child_scores, labels, new_lo, new_hi)
    moved = child.with_params({"band_lo": new_lo, "band_hi": new_hi})
    return moved, (
        f"oracle band moved to [{new_lo:g}, {new_hi:g}) to hold its benign train mass "
        f"at the parent's place ({mass:.3f})"
    )


def _band_tops(benign: np.ndarray, values: np.ndarray, quantiles: list[float]):
    """Upper band edges: each benign quantile, then just above the tied value it
    lands on. A coarse monitor ties many benign runs on a few scores; a band that
    ends at such a tie can never hold a light enough slice below it, but one that
    closes just above the top tie holds those runs, which is where an extra opinion
    separates benign from failures at a small audit budget."""
    for q_hi in quantiles:
        hi = float(np.quantile(benign, q_hi))
        yield hi
        at_or_above = values[values >= hi]
        if at_or_above.size:
            v = float(at_or_above[0])
            higher = values[values > v]
            yield (v + float(higher[0])) / 2 if higher.size else v + max(abs(v) * 0.1, 1e-3)


def _new_band(
    scores: np.ndarray, labels: np.ndarray, rng: random.Random
) -> tuple[float, float, float] | None:
    """A band [lo, hi) just under a high benign quantile, as wide as the benign mass
    allows (ties make quantiles jump, so the mass is measured, not assumed)."""
    benign = scores[~labels]
    if benign.size == 0:
        return None
    options = [0.995, 0.99, 0.98, 0.97]
    rng.shuffle(options)
    target = rng.choice((0.01, 0.02, 0.025))
    values = np.unique(benign)
    for hi in _band_tops(benign, values, options):
        below = values[values < hi]
        best = None
        for lo in below[::-1]:
            mass = band_mass(scores, labels, float(lo), hi)
            if mass > MAX_BAND_MASS:
                break
            best = (float(lo), hi, mass)
            if mass >= target:
                break
        if best is not None:
            return best
    return None


def op_change_band(program: Program, rng: random.Random, context: Any = None) -> Result:
    """Add, move, widen, narrow or remove the oracle escalation band.

    A new band sits just under the top of the parent's benign train scores (where
    an extra opinion changes the ranking at small audit budgets); every band is
    checked against its benign mass on train (at most :data:`MAX_BAND_MASS`).
    """
    scores = parent_train_scores(program, context)
    labels = np.asarray(context.train.labels, dtype=bool) if context is not None else None
    if not program.oracle_band:
        if scores is None or labels is None:
            return None
        found = _new_band(scores, labels, rng)
        if found is None:
            return None
        lo, hi = _round(found[0]), _round(found[1])
        mass = band_mass(scores, labels, lo, hi)  # as rendered (4 significant digits)
        if not hi > lo or mass > MAX_BAND_MASS:
            return None
        w = _round(2.0 * _scale(scores, labels))
        child = replace(program, oracle_band=True).with_params(
            {"band_lo": lo, "band_hi": hi, "w_oracle": w}
        )
        return child, f"add oracle band [{lo:.4g}, {hi:.4g}) (benign train mass {mass:.3f})"
    lo = float(program.param("band_lo") or 0.0)
    hi = float(program.param("band_hi") or 0.0)
    width = max(hi - lo, 1e-3)
    move = rng.choice(("remove", "shift_up", "shift_down", "widen", "narrow", "weight"))
    if move == "remove":
        child = replace(program, oracle_band=False).without_params(set(BAND_PARAMS))
        return _prune_params(child), "remove oracle band"
    if move == "weight":
        w = jitter(float(program.param("w_oracle") or 1.0), rng)
        return program.with_params({"w_oracle": w}), f"oracle weight -> {w:g}"
    if move == "shift_up":
        lo, hi = lo + 0.25 * width, hi + 0.25 * width
    elif move == "shift_down":
        lo, hi = lo - 0.25 * width, hi - 0.25 * width
    elif move == "widen":
        lo -= 0.25 * width
    else:
        lo += 0.25 * width
    lo, hi = _round(lo), _round(hi)
    if not hi > lo:
        return None
    if (
        scores is not None
        and labels is not None
        and band_mass(scores, labels, lo, hi) > MAX_BAND_MASS
    ):
        return None
    child = program.with_params({"band_lo": lo, "band_hi": hi})
    return child, f"oracle band {move} -> [{lo:g}, {hi:g})"


# --------------------------------------------------------------------------- crossover


def _names_in(text: str) -> set[str]:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def _defined(stmt_text: str) -> str | None:
    try:
        node = ast.parse(stmt_text).body[0]
    except (SyntaxError, IndexError):
        return None
    if isinstance(node, ast.FunctionDef):
        return node.name
    if (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
    ):
        return node.targets[0].id
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id
    return None


def op_crossover(
    program: Program, rng: random.Random, context: Any = None, *, other: Program | None = None
) -> Result:
    """Take one to three detectors of another parent (with the constants, helpers and
    params they need) that this program lacks."""
    if other is None or len(program.detectors) >= MAX_DETECTORS:
        return None
    have = {d.name for d in program.detectors}
    pool = [d for d in other.detectors if d.name not in have]
    if not pool:
        return None
    k = min(len(pool), rng.choice((1, 1, 2, 3)), MAX_DETECTORS - len(program.detectors))
    taken = [pool[i] for i in sorted(rng.sample(range(len(pool)), k))]
    mine_defs = {_defined(t): t for t in (*program.constants, *program.helpers)}
    other_defs = {_defined(t): t for t in (*other.constants, *other.helpers)}
    constants = list(program.constants)
    helpers = list(program.helpers)
    needed: list[str] = []
    frontier = [d.source for d in taken]
    while frontier:
        text = frontier.pop()
        for name in sorted(_names_in(text)):
            if name in other_defs and name not in needed:
                if name in mine_defs and mine_defs[name] != other_defs[name]:
                    return None  # same name, different meaning: not a clean graft
                needed.append(name)
                frontier.append(other_defs[name])
    for name in sorted(needed):
        if name in mine_defs:
            continue
        text = other_defs[name]
        if text.lstrip().startswith("def "):
            helpers.append(text)
        else:
            constants.append(text)
    child = replace(
        program,
        detectors=program.detectors + tuple(taken),
        constants=tuple(constants),
        helpers=tuple(helpers),
    )
    updates: dict[str, float] = {}
    for d in taken:
        updates[d.weight] = float(other.param(d.weight) or 1.0)
    refs: set[str] = set()
    for text in [d.source for d in taken] + [other_defs[n] for n in needed]:
        refs.update(_PARAM_REF.findall(text))
    for name in sorted(refs):
        if program.param(name) is None and other.param(name) is not None:
            updates[name] = float(other.param(name))  # type: ignore[arg-type]
    child = child.with_params(updates)
    return child, "crossover: take " + ", ".join(d.name for d in taken)


# --------------------------------------------------------------------------- generic


def _numeric_nodes(tree: ast.AST) -> list[ast.Constant]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            if isinstance(node.value, float) and not math.isfinite(node.value):
                continue
            out.append(node)
    out.sort(key=lambda n: (n.lineno, n.col_offset))
    return out


def perturb_constants(
    source: str, rng: random.Random, check: Callable[[str], bool] | None = None, tries: int = 8
) -> tuple[str, str] | None:
    """Perturb one to three numeric literals of any program (re-rendered with
    ``ast.unparse``; comments are lost). Ints stay ints (they may be counts or
    indices); ``check`` (e.g. the sandbox check) must accept the result."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    if not _numeric_nodes(tree):
        return None
    for _ in range(tries):
        tree = ast.parse(source)
        nodes = _numeric_nodes(tree)
        k = min(len(nodes), rng.choice((1, 1, 2, 3)))
        idx = sorted(rng.sample(range(len(nodes)), k))
        changes = []
        for i in idx:
            node = nodes[i]
            old = node.value
            if type(old) is int:
                if abs(old) <= 1:
                    continue  # 0 and 1 are structure (indices, flags), not tunable scale
                new: float | int = max(2, int(round(old * math.exp(rng.gauss(0.0, 0.3)))))
                if new == old:
                    new = old + rng.choice((-1, 1))
            else:
                new = jitter(old, rng)
                if new == old:
                    new = _round(old * 1.1) if old else 0.1
            node.value = new
            changes.append(f"line {node.lineno}: {old!r} -> {new!r}")
        if not changes:
            continue
        text = ast.unparse(tree) + "\n"
        if text == source or (check is not None and not check(text)):
            continue
        return text, "perturb constants: " + "; ".join(changes)
    return None
