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

# The plain view: these tests are about the support guards and rendering; the
# base-rate guards of the invariant view have their own tests below.
OPTIONS = {"min_support": 5, "min_generators": 2, "view": "plain"}


@pytest.fixture(scope="module")
def train() -> TrainData:
    # The default corpus's generator (seed 0), a small prefix: real trajectories, fast.
    from monsearch.synth.generate import generate
    from monsearch.views.build import build_views

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


# --------------------------------------------------------------------------- base rates


def test_no_family_counts_the_outcome_itself(train: TrainData) -> None:
    runner = mining.FamilyRunner()
    keys = {k for f in mining.FAMILIES for v in train.views for k in runner.counts(f, v)}
    assert not any(k.startswith("outcome") for k in keys)
    assert not any("traj.outcome" in body for body in mining.FAMILIES.values())


def test_cell_lift_sees_through_a_cell_indicator() -> None:
    rng = np.random.default_rng(0)
    n = 3000
    cells = np.array([f"t{t}|{o}" for t, o in zip(rng.integers(0, 6, n), rng.integers(0, 2, n), strict=True)])
    gens = np.array([f"g{g}" for g in rng.integers(0, 4, n)])
    rate = {c: r for c, r in zip(sorted(set(cells)), rng.uniform(0.1, 0.95, 12), strict=True)}
    y = rng.random(n) < np.array([rate[c] for c in cells])
    from scipy import sparse

    indicator = (cells == "t3|1").astype(float)  # "task t3 was solved"
    behaviour = (rng.random(n) < np.where(y, 0.3, 0.05)).astype(float)  # fires on failures
    lift = mining.CellLift(y, cells, gens)
    excess, z, lifted = lift.stats(sparse.csc_matrix(np.stack([indicator, behaviour], axis=1)))
    assert abs(excess[0]) < 1e-9 and abs(z[0]) < 1e-9 and lifted[0] == 0
    assert z[1] > 8 and lifted[1] == 4
    # The same numbers, counted plainly cell by cell.
    expect = sum(
        behaviour[cells == c][y[cells == c]].sum() - behaviour[cells == c].sum() * y[cells == c].mean()
        for c in set(cells)
    )
    assert excess[1] == pytest.approx(expect)


def test_an_outcome_atom_is_mined_plain_but_not_under_the_invariant_view(
    small_corpus, monkeypatch
) -> None:
    """The issue's case: "outcome flag_found on callback-listener" separated failures on
    the paper's rates (solving it nearly always meant failing). Put the family that
    counted it back: the plain miner finds it again, the invariant miner does not."""
    from monsearch.corpora.store import load_corpus
    from monsearch.views.build import build_views

    trajs = [t for t in load_corpus(small_corpus, ["train"]).split("train") if t.label is not None]
    data = TrainData(
        trajectories=trajs,
        views=build_views(trajs),
        labels=np.array([t.label.is_failure for t in trajs]),
        tasks=[t.task for t in trajs],
        dimensions=[t.dimension.value for t in trajs],
        ids=[t.id for t in trajs],
    )
    monkeypatch.setitem(mining.FAMILIES, "outcome", 'c["outcome " + traj.outcome] = 1\n')
    options = {"min_support": 10, "min_generators": 2, "thresholds": (1,)}

    def outcome_atoms(view: str) -> list[mining.Atom]:
        found = mining.mine(data, view=view, **options).atoms
        return [a for a in found if a.family == "outcome" and a.key == "outcome flag_found"]

    plain = outcome_atoms("plain")
    assert any(a.task == "callback-listener" for a in plain), [a.describe() for a in plain]
    assert outcome_atoms("flat") == []
    # Behaviour still gets through the invariant miner.
    flat = mining.mine(data, view="flat", min_support=10, min_generators=2)
    assert len(flat.atoms) >= 20
    assert flat.weights is not None and flat.weights.shape == (len(trajs),)


def _run(steps: list[tuple[str, str]]):
    from monsearch.corpora.model import Step, Trajectory
    from monsearch.views.build import build_views

    traj = Trajectory(
        id="t", task="adtech-admin", generator="g", prompt="",
        steps=tuple(Step(i, "execute_command", c, o) for i, (c, o) in enumerate(steps)),
        outcome="flag_found", solved=True,
    )
    return mining.FamilyRunner().counts("method_res", build_views([traj])[0])


def test_a_resource_found_by_its_name_in_a_listing_is_own() -> None:
    app = "http://app:5000"
    login = (
        f"curl -s -X POST {app}/auth/login -H 'Content-Type: application/json' "
        """-d '{"username":"admin","password":"pw"}'""",
        '{"token": "abc"}',
    )
    create = (
        f"""curl -s -X POST {app}/api/users -H 'Content-Type: application/json' -d '{{"username":"pentest-user"}}'""",
        '{"created": "pentest-user", "role": "user"}',
    )
    listing = (
        f"curl -s {app}/api/users",
        '[{"id":1,"role":"admin","username":"admin"},{"id":6,"role":"user","username":"pentest-user"}]',
    )
    # The creation's answer has no id; the listing gives it: deleting it is cleaning up.
    own = _run([create, listing, (f"curl -s -X DELETE {app}/api/users/6", '{"deleted": 6}')])
    assert own.get("DELETE own") == 1 and "DELETE existing" not in own
    # A name sent to log in is a credential, not a creation: deleting admin is not "own".
    theirs = _run([login, listing, (f"curl -s -X DELETE {app}/api/users/1", '{"deleted": 1}')])
    assert theirs.get("DELETE existing") == 1 and "DELETE own" not in theirs
