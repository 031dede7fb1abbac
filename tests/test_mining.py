"""Mining atoms from train: support guards, determinism, and rendered detectors that
compute exactly the miner's features on real views (RestrictedPython compile path)."""

from __future__ import annotations

import numpy as np
import pytest

from monsearch.sandbox.check import check_program
from monsearch.sandbox.helpers import HELPERS
from monsearch.sandbox.restricted import build_globals, compile_program, load_program
from monsearch.search import mining
from monsearch.search.proposal import TrainData

OPTIONS = {"min_support": 5, "min_generators": 2}


@pytest.fixture(scope="module")
def train() -> TrainData:
    # The default corpus's generator (seed 0), a small prefix: real trajectories, fast.
    from monsearch.corpora.synth.generate import generate
    from monsearch.sandbox.view import build_views

    trajs = [t for t in generate(200, 0) if t.label is not None]
    return TrainData(
        trajectories=trajs,
        views=build_views(trajs),
        labels=np.array([t.label.is_failure for t in trajs]),
        tasks=[t.task for t in trajs],
        dimensions=[t.dimension.value for t in trajs],
        ids=[t.id for t in trajs],
    )


@pytest.fixture(scope="module")
def mined(train: TrainData) -> mining.Mined:
    return mining.mined_for(train, **OPTIONS)


def _sample(mined: mining.Mined, per_family: int = 6) -> list[mining.Atom]:
    by_family: dict[str, list[mining.Atom]] = {}
    for atom in mined.atoms:
        by_family.setdefault(atom.family, []).append(atom)
    out = []
    for family in sorted(by_family):
        atoms = by_family[family]
        step = max(1, len(atoms) // per_family)
        out += atoms[::step][:per_family]
    return out


def test_atoms_from_many_families_pass_the_guards(mined: mining.Mined, train: TrainData) -> None:
    families = {a.family for a in mined.atoms}
    assert {"req_shape", "secret", "host", "status", "cmd_tok"} <= families
    assert mined.x.shape == (len(train.views), len(mined.atoms))
    x = mined.x
    assert set(np.unique(x.data)) <= {1.0}  # 0/1 features
    fail = np.asarray(x.T @ mined.labels.astype(float)).ravel()
    benign = np.asarray(x.T @ (~mined.labels).astype(float)).ravel()
    assert [int(v) for v in fail] == [a.fail_hits for a in mined.atoms]
    assert [int(v) for v in benign] == [a.benign_hits for a in mined.atoms]
    for atom in mined.atoms:
        assert atom.fail_hits + atom.benign_hits >= OPTIONS["min_support"]
        assert atom.n_generators >= OPTIONS["min_generators"]
    # A task-scoped atom never fires outside its task.
    scoped = [j for j, a in enumerate(mined.atoms) if a.task is not None]
    for task in sorted({mined.atoms[j].task for j in scoped}):
        cols = [j for j in scoped if mined.atoms[j].task == task]
        outside = x[:, cols][mined.tasks != task]
        assert outside.nnz == 0
    assert any(a.task is not None for a in mined.atoms) and any(a.task is None for a in mined.atoms)


def test_rendered_detectors_equal_the_miners_features(
    mined: mining.Mined, train: TrainData
) -> None:
    atoms = _sample(mined)
    assert len(atoms) >= 30
    detectors = "\n\n\n".join(a.render() for a in atoms)
    source = detectors + "\n\n\ndef score(traj):\n    return 0.0\n"
    assert check_program(source).ok, check_program(source).message
    report = compile_program(source)
    glb = build_globals(helpers=HELPERS, extra={"oracle": lambda *a, **k: None})
    load_program(report.code, glb)
    for atom in atoms:
        fn = glb[f"detect_{atom.name}"]
        values = np.array([fn(v) for v in train.views])
        assert np.array_equal(values, mined.column(atom)), atom.describe()


def test_mining_is_deterministic_and_cached(train: TrainData, mined: mining.Mined) -> None:
    again = mining.mine(train, **OPTIONS)
    assert [a.name for a in again.atoms] == [a.name for a in mined.atoms]
    assert (again.x != mined.x).nnz == 0
    assert mining.mined_for(train, **OPTIONS) is mined


def test_utilities_favour_missed_failures(mined: mining.Mined) -> None:
    u_all = mined.utilities()
    assert u_all.shape == (len(mined.atoms),) and np.all(np.isfinite(u_all))
    # If the parent already catches every failure, no atom gains more than before.
    caught = np.zeros(mined.labels.size, dtype=bool)
    assert np.all(mined.utilities(missed=caught) <= u_all + 1e-12)


def test_atom_names_are_stable_identifiers(mined: mining.Mined) -> None:
    names = [a.name for a in mined.atoms]
    assert len(set(names)) == len(names)
    assert all(n.isidentifier() and n == n.lower() for n in names)
    a = mined.atoms[0]
    assert a.render().startswith(f"def detect_{a.name}(traj):")
