"""Seed strategies and the program convention: parse / render round trips, the
generated combiners, and programs that are not in the convention."""

from __future__ import annotations

import math

import pytest

from monsearch.sandbox.check import check_program
from monsearch.sandbox.examples.seed_monitor import SEED_MONITOR
from monsearch.sandbox.helpers import HELPERS
from monsearch.sandbox.restricted import build_globals, compile_program, load_program
from monsearch.strategies import SEEDS
from monsearch.strategies.convention import (
    COMBINERS,
    Detector,
    Program,
    parse_program,
    render,
)


def _score_fn(source, oracle=lambda *a, **k: None):
    report = compile_program(source)
    assert report.ok, report.message
    glb = build_globals(helpers=HELPERS, extra={"oracle": oracle})
    return load_program(report.code, glb)


@pytest.mark.parametrize("name", sorted(SEEDS))
def test_seeds_pass_the_check_and_round_trip(name: str) -> None:
    source = SEEDS[name]
    assert check_program(source).ok, check_program(source).message
    program = parse_program(source)
    assert program is not None
    assert render(program) == source  # the seeds are written in the rendered layout
    assert parse_program(render(program)) == program
    assert {k for k, _ in program.params} >= {d.weight for d in program.detectors} | {"bias"}


def test_stronger_is_richer_than_baseline() -> None:
    base, strong = parse_program(SEEDS["baseline"]), parse_program(SEEDS["stronger"])
    assert len(strong.detectors) > len(base.detectors)
    # It reads the structured view, not only text.
    for field in ("requests", "secrets", "listeners", "statuses", "flag_step", "host_class"):
        assert field in SEEDS["stronger"]


def _tiny(combiner: str = "sum", band: bool = False) -> Program:
    params = [("w_a", 1.5), ("w_b", -0.25), ("bias", 0.0)]
    if combiner == "sum_max":
        params.append(("w_max", 0.5))
    if band:
        params += [("band_lo", 1.0), ("band_hi", 2.0), ("w_oracle", 3.0)]
    return Program(
        docstring='A test program with "quotes" and a back\\slash.',
        params=tuple(params),
        detectors=(
            Detector(
                "a", "def detect_a(traj):\n    # steps count\n    return float(len(traj.steps))"
            ),
            Detector("b", "def detect_b(traj):\n    return 1.0 if traj.solved else 0.0"),
        ),
        combiner=combiner,
        oracle_band=band,
        constants=('KINDS = ("jwt", "bearer")',),
        helpers=("def twice(x):\n    return 2 * x",),
    )


@pytest.mark.parametrize("combiner", COMBINERS)
@pytest.mark.parametrize("band", [False, True])
def test_every_combiner_renders_a_valid_program_that_parses_back(combiner: str, band: bool) -> None:
    program = _tiny(combiner, band)
    source = render(program)
    assert check_program(source).ok, check_program(source).message
    back = parse_program(source)
    assert back == program
    assert back.docstring == program.docstring
    assert "# steps count" in source  # detector text (comments included) kept verbatim
    assert render(back) == source


def test_combiners_compute_what_the_doc_says() -> None:
    from monsearch.views.frozen import freeze

    view = freeze({"steps": [1, 2], "solved": True, "id": "x"})
    a, b = 2.0, 1.0
    parts = [1.5 * a, -0.25 * b]
    expected = {
        "sum": sum(parts),
        "max": max(parts + [0.0]),
        "sum_max": sum(parts) + 0.5 * max(parts + [0.0]),
        "soft_or": sum(math.tanh(p) for p in parts),
    }
    for combiner, value in expected.items():
        assert _score_fn(render(_tiny(combiner)))(view) == pytest.approx(value)


def test_oracle_is_asked_only_inside_the_band() -> None:
    from monsearch.views.frozen import freeze

    calls = []

    def oracle(traj=None, variant=None):
        calls.append(traj)
        return 1.0

    score = _score_fn(render(_tiny("sum", band=True)), oracle)
    # sum = 1.5 * steps - 0.25: one step -> 1.25 (in [1, 2)), three steps -> 4.25 (above).
    inside = freeze({"steps": [1], "solved": True, "id": "in"})
    above = freeze({"steps": [1, 2, 3], "solved": True, "id": "up"})
    assert score(inside) == pytest.approx(1.25 + 3.0 * 0.5)
    assert score(above) == pytest.approx(4.25)
    assert len(calls) == 1


@pytest.mark.parametrize(
    "source",
    [
        SEED_MONITOR,  # detectors not named detect_*, score written by hand
        render(_tiny()).replace('s = PARAMS["bias"]', 's = PARAMS["bias"] + 1.0'),  # edited score
        render(_tiny()).replace('"w_b": -0.25,\n', ""),  # a weight missing
        render(_tiny()).replace('"bias": 0.0', '"bias": "zero"'),  # not a number
        "def score(traj):\n    return 0.0\n",
        "this is not python",
    ],
)
def test_programs_outside_the_convention_are_refused(source: str) -> None:
    assert parse_program(source) is None
