"""The view's HTTP coverage: steps that look like HTTP but yield no parsed request."""

from __future__ import annotations

import json
import random
import shlex
from datetime import UTC, datetime

from click.testing import CliRunner
from python_shapes import SHAPES
from view_support import make_traj

from monsearch.cli import cli
from monsearch.corpora.model import Trajectory
from monsearch.corpora.store import write_corpus
from monsearch.synth.generate import generate
from monsearch.synth.scenario import REGISTRY
from monsearch.synth.style import STYLES
from monsearch.views.coverage import (
    corpus_coverage,
    http_steps,
    sample_by_style,
    unparsed_http_steps,
    worst_style_share,
)

TARGET = 0.02


def _kinds(*steps):
    return [(s.index, s.kind, s.parsed) for s in http_steps(make_traj(*steps))]


def test_what_looks_like_http():
    assert _kinds(
        ("curl -s http://app:5000/health", ""),
        ("curl --version", ""),
        ("wget -qO- app:5000/x", ""),
        ("http :5000/api/users", ""),
        ("printf 'GET / HTTP/1.1\\r\\nHost: app\\r\\n\\r\\n' | nc app 5000", ""),
        ("nc -lvnp 8000 &", ""),
        ("pip install -q requests 2>&1 | tail -2", ""),
        ("echo http://app:5000 > /tmp/target.txt", ""),
        ("sqlmap -u 'http://app:5000/item?id=1' --batch", ""),
    ) == [
        (0, "curl", True),
        (2, "wget", True),
        (3, "httpie", True),
        (4, "nc", True),
        (8, "other", False),
    ]


def test_python_that_only_writes_a_module_is_not_http():
    module = "import urllib.request\ndef g(p):\n    return urllib.request.urlopen('http://app:5000' + p)\n"
    assert _kinds(
        ("cat > /tmp/c.py <<'EOF'\n" + module + "EOF", ""),
        ("python3 -c " + shlex.quote(f"open('/tmp/d.py', 'w').write({module!r})"), ""),
        ("python3 -c 'import json,sys; print(json.load(sys.stdin))' < /tmp/out.json", ""),
        ("python3 -c 'import c; c.g(\"/x\")'", ""),
        ("python3 -m http.server 8000 &", ""),
    ) == [(3, "python", True)]


def test_unparsed_python_steps_are_counted():
    steps = (
        # a script this run never wrote, aimed at the target
        ("python3 /opt/exploit.py http://app:5000", ""),
        # the request is sent from a callback the reader never calls
        (
            "python3 -c 'import atexit, urllib.request; "
            'atexit.register(lambda: urllib.request.urlopen("http://app:5000/x"))\'',
            "",
        ),
        # a module import nobody wrote: an import error at run time, not an HTTP step
        ("python3 -c 'import client; client.get(\"/x\")'", ""),
    )
    got = [(s.index, s.kind) for s in unparsed_http_steps(make_traj(*steps))]
    assert got == [(0, "python"), (1, "python")]


def test_notebook_cells_calling_an_earlier_helper():
    helper = "import urllib.request\ndef get(p):\n    return urllib.request.urlopen('http://app:5000' + p)"
    traj = make_traj(
        ("python", helper, ""), ("python", "get('/a')", ""), ("python", "x = 1 + 1", "")
    )
    assert [(s.index, s.kind, s.parsed) for s in http_steps(traj)] == [(1, "python", True)]


def test_every_hand_made_shape_is_fully_parsed():
    cov = corpus_coverage([s.trajectory() for s in SHAPES], examples=5)
    assert cov["runs"] == len(SHAPES)
    assert cov["overall"]["http_steps"] >= len(SHAPES)
    assert cov["overall"]["unparsed"] == 0, cov["examples"]
    assert set(cov["styles"]) == {f"shape-{s.family}" for s in SHAPES}
    assert worst_style_share(cov) == 0.0


def test_coverage_blocks_sampling_and_examples():
    runs = [
        make_traj(("curl -s http://app:5000/", ""), meta={"style": "a"}, traj_id=f"a{i}")
        for i in range(5)
    ]
    runs += [
        make_traj(("python3 /nowhere.py http://app:5000", ""), meta={"style": "b"}, traj_id="b0"),
        make_traj(("ls -la", ""), traj_id="c0"),
    ]
    cov = corpus_coverage(runs, examples=3)
    assert cov["overall"] == {"runs": 7, "http_steps": 6, "unparsed": 1, "share": 1 / 6}
    assert cov["styles"]["a"]["share"] == 0.0 and cov["styles"]["b"]["share"] == 1.0
    assert cov["styles"]["-"] == {"runs": 1, "http_steps": 0, "unparsed": 0, "share": None}
    assert cov["kinds"]["python"] == {"http_steps": 1, "unparsed": 1, "share": 1.0}
    assert cov["examples"] == [["b0", 0, "python"]]
    assert worst_style_share(cov) == 1.0
    picked = sample_by_style(runs, 2)
    assert [t.id for t in picked] == ["a0", "a2", "b0", "c0"]
    assert sample_by_style(runs, 2) == picked
    assert corpus_coverage(runs, per_style=2)["runs"] == 4


def test_measure_never_raises_on_odd_steps():
    broken = (
        "python3 - <<'EOF'\nimport urllib.request\nurllib.request.urlopen('http://app:5000/'\nEOF"
    )
    traj = make_traj(
        ("curl 'http://[::1", ""), (broken, ""), ("python3 - <<'EOF'\nimport (\nEOF", "")
    )
    # Code that does not parse is read with regexes: the URL is still found.
    assert [(s.kind, s.parsed) for s in http_steps(traj)] == [("curl", True), ("python", True)]


START = datetime(2026, 8, 1, 12, 0, tzinfo=UTC)


def _every_style() -> list[Trajectory]:
    """One episode of every task in every surface style (meta names the style)."""
    out = []
    for style_name, style in sorted(STYLES.items()):
        for task, scenario in sorted(REGISTRY.items()):
            rng = random.Random(f"{task}/{style_name}")
            mode = scenario.modes[rng.randrange(len(scenario.modes))]
            ep = scenario.build(mode.name, style, rng, START)
            out.append(
                Trajectory(
                    id=f"{task}-{style_name}",
                    task=task,
                    generator="g",
                    prompt=scenario.prompt,
                    steps=tuple(ep.steps),
                    outcome=ep.outcome,
                    solved=ep.solved,
                    meta={"style": style_name},
                )
            )
    return out


def test_synthetic_styles_stay_under_the_target():
    cov = corpus_coverage(_every_style(), examples=10)
    assert set(cov["styles"]) == set(STYLES)
    for style, block in cov["styles"].items():
        assert block["http_steps"] > 0, style
        assert block["share"] < TARGET, (style, block, cov["examples"])


def test_generated_corpus_stays_under_the_target():
    cov = corpus_coverage(generate(160, 3), examples=10)
    assert len(cov["styles"]) >= 4
    assert worst_style_share(cov) < TARGET, cov


def test_corpus_stats_reports_coverage(tmp_path):
    runs = [s.trajectory() for s in SHAPES]
    runs.append(make_traj(("python3 /nowhere.py http://app:5000", ""), traj_id="blind"))
    write_corpus(tmp_path / "c", runs, name="shapes")
    res = CliRunner().invoke(cli, ["corpus", "stats", str(tmp_path / "c"), "--json"])
    assert res.exit_code == 0, res.output
    cov = json.loads(res.stdout)["http_coverage"]
    assert cov["runs"] == len(runs) and cov["per_style"] == 200
    assert cov["styles"]["-"]["unparsed"] == 1
    assert cov["overall"]["unparsed"] == 1
    res = CliRunner().invoke(cli, ["corpus", "stats", str(tmp_path / "c"), "--coverage-runs", "1"])
    assert res.exit_code == 0, res.output
    assert "view HTTP coverage per style" in res.stdout
    assert "at most 1 per style" in " ".join(res.stdout.split())
