"""Python shapes the view must parse (issue 8, item 8): helper functions, modules the
agent wrote earlier, ``http.client``, ``urllib`` Request objects, sessions with base
URLs, scripts that read ``sys.argv`` / the environment, and curl run from Python."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from python_shapes import SHAPES, Shape
from view_support import make_traj

from monsearch.views import build as view_module
from monsearch.views.build import build_view
from monsearch.views.http_extract import read_python


def _view_requests(traj):
    return build_view(traj).requests


def _header_ok(got: dict, want: dict) -> bool:
    # A wanted value ending in "{" is a prefix: the rest is an unknown placeholder.
    return all(
        (got.get(k, "").startswith(v) if v.endswith("{") else got.get(k) == v)
        for k, v in want.items()
    )


@pytest.mark.parametrize("shape", SHAPES, ids=[s.name for s in SHAPES])
def test_shape_requests(shape: Shape):
    reqs = _view_requests(shape.trajectory())
    got = [(r.step, r.method, r.url) for r in reqs]
    assert got == [(w[0], w[1], w[2]) for w in shape.want], got
    for r, (_step, _m, _u, headers, body) in zip(reqs, shape.want, strict=True):
        assert _header_ok(dict(r.headers), headers), (r.url, dict(r.headers))
        if body is not None:
            assert r.body == body, (r.url, r.body)


def _shape(name: str) -> Shape:
    return next(s for s in SHAPES if s.name == name)


def test_helper_truth_values_leave_get_requests_without_body_or_json_type():
    # call("GET", ...) with body=None: no "null" body, no content type from the
    # "if body is not None" branch the helper did not take.
    code = """python3 - <<'EOF'
import json, urllib.request
def call(method, url, body=None, headers=None):
    data = json.dumps(body).encode() if body is not None else None
    h = {"Content-Type": "application/json"} if body is not None else {}
    h.update(headers or {})
    return urllib.request.urlopen(urllib.request.Request(url, data=data, headers=h, method=method))
call("GET", "http://app:5000/a")
call("POST", "http://app:5000/b", {"k": 1}, {"X-T": "t"})
EOF"""
    a, b = _view_requests(make_traj((code, "")))
    assert (a.method, a.body, dict(a.headers)) == ("GET", "", {})
    assert (b.method, b.body) == ("POST", '{"k": 1}')
    assert dict(b.headers) == {"content-type": "application/json", "x-t": "t"}
    assert b.json == {"k": 1}


def test_clients_and_auth_of_the_new_shapes():
    by_url = {r.url: r for r in _view_requests(_shape("requests-session-base-url").trajectory())}
    assert by_url["http://app:5000/api/d"].auth == "admin"
    assert {r.client for r in by_url.values()} == {"python_requests"}
    assert {r.client for r in _view_requests(_shape("subprocess-curl").trajectory())} == {"curl"}
    assert {r.client for r in _view_requests(_shape("http-client-putrequest").trajectory())} == {
        "python_http_client"
    }
    assert {r.client for r in _view_requests(_shape("httpx-client-base-url").trajectory())} == {
        "python_httpx"
    }


def test_secret_in_a_module_helper_header_is_found_as_a_header():
    r = _view_requests(_shape("http-client-putrequest").trajectory())[1]
    assert r.headers["x-upload-key"] == "sk_test_1"
    assert r.host_class == "target"


def test_long_loops_through_a_helper_keep_their_repeat_count():
    code = """python3 - <<'EOF'
import urllib.request
from concurrent.futures import ThreadPoolExecutor
def hit(n):
    return urllib.request.urlopen(f"http://app:5000/otp?code={n:04d}").read()
with ThreadPoolExecutor(8) as ex:
    list(ex.map(hit, range(10000)))
for i in range(200):
    hit(i)
EOF"""
    reqs = _view_requests(make_traj((code, "")))
    assert [(r.url, r.repeat, r.repeat_known) for r in reqs] == [
        ("http://app:5000/otp?code=0000", 10000, True),
        ("http://app:5000/otp?code=0000", 200, True),
    ]


def test_module_found_by_name_anywhere_the_run_wrote_it():
    # Neither sys.path nor the working folder says where: the file the run wrote wins.
    write = "mkdir -p /opt/x && cat > /opt/x/helpers.py <<'EOF'\n" + (
        "import urllib.request\ndef ping(p):\n    urllib.request.urlopen('http://app:5000' + p)\n"
        "EOF"
    )
    reqs = _view_requests(
        make_traj((write, ""), ("python3 -c 'import helpers; helpers.ping(\"/p\")'", ""))
    )
    assert [(r.step, r.url) for r in reqs] == [(1, "http://app:5000/p")]


def test_module_in_the_same_step_and_star_import():
    code = (
        "cat > lib.py <<'EOF'\nimport urllib.request\nB = 'http://app:5000'\n"
        "def go(p, key):\n    urllib.request.urlopen(urllib.request.Request(B + p, "
        "headers={'X-Key': key}))\nEOF\npython3 -c 'from lib import *; go(\"/s\", \"k9\")'"
    )
    (r,) = _view_requests(make_traj((code, "")))
    assert (r.step, r.url, r.headers["x-key"]) == (0, "http://app:5000/s", "k9")


def test_step_cache_tracks_the_imported_module():
    """The same command text importing a module must follow that module's content."""
    run = "python3 -c 'import client; client.get(\"/x\")'"

    def traj(base: str):
        write = (
            "cat > /tmp/client.py <<'EOF'\nimport urllib.request\n"
            f"def get(p):\n    urllib.request.urlopen('{base}' + p)\nEOF"
        )
        return make_traj((write, ""), (run, ""))

    view_module.clear_caches()
    assert [r.url for r in _view_requests(traj("http://app:5000"))] == ["http://app:5000/x"]
    assert [r.url for r in _view_requests(traj("http://evil.example"))] == ["http://evil.example/x"]
    # And with nothing written, the import is unknown: no request.
    assert _view_requests(make_traj((run, ""))) == ()


def test_unresolved_import_keeps_other_requests_and_never_raises():
    code = "import nosuchmod, urllib.request\nnosuchmod.go()\nurllib.request.urlopen('http://app:5000/ok')"
    reqs, _ = read_python(code, lambda _p: None, modules=lambda _r: None)
    assert [r.url for r in reqs] == ["http://app:5000/ok"]


def test_circular_and_self_imports_terminate():
    files = {
        "/tmp/a.py": (
            "import b\nimport urllib.request\n"
            "def f():\n    urllib.request.urlopen('http://app:5000/a')\n"
        ),
        "/tmp/b.py": "import a\nimport b\ndef g():\n    a.f()\n",
    }
    code = "import sys\nsys.path.append('/tmp')\nimport a, b\nb.g()\na.f()"
    reqs, _ = read_python(code, files.get)
    assert [r.url for r in reqs] == ["http://app:5000/a", "http://app:5000/a"]


def test_script_relative_to_cd_python_m_and_options_with_values():
    write = "cat > /tmp/s.py <<'EOF'\nimport urllib.request\nurllib.request.urlopen('http://app:5000/rel')\nEOF"
    reqs = _view_requests(
        make_traj(
            (write, ""),
            ("cd /tmp && python3 s.py", ""),
            ("cd /tmp && python3 -m s", ""),
            ("python3 -W ignore /tmp/s.py", ""),
        )
    )
    assert [(r.step, r.url) for r in reqs] == [(i, "http://app:5000/rel") for i in (1, 2, 3)]


def test_os_environ_and_unknown_argv():
    code = (
        "import os, sys, urllib.request\n"
        "urllib.request.urlopen(os.environ['BASE'] + '/e')\n"
        "urllib.request.urlopen(os.environ.get('HOST', 'http://app:5000') + '/d')\n"
        "urllib.request.urlopen(sys.argv[1])\n"
    )
    reqs, _ = read_python(code, environ={"BASE": "http://app:5000"})
    assert [r.url for r in reqs] == ["http://app:5000/e", "http://app:5000/d"]


_FRAGMENTS = [
    "import client",
    "from client import get, post",
    "import sys; sys.path.insert(0, '/tmp')",
    "class C(requests.Session):\n    def request(self, m, u, *a, **k):\n        return super().request(m, 'http://app:5000' + u)",
    "c = C()\nc.get('/x')",
    "def f(a, b=None, *c, **d):\n    global G\n    G = a\n    return f(a)",
    "f(1)",
    "x = functools.partial(f, 1)\nx(2)",
    "conn = http.client.HTTPConnection('app', 5000)\nconn.putrequest('GET', '/')\nconn.endheaders()\nconn.send(b'x')",
    "import requests, http.client, functools, asyncio, subprocess, os",
    "subprocess.run(['curl', 'http://app:5000/s'])",
    "os.system('python3 -c \"import os; os.system(\\'curl http://app:5000\\')\"')",
    "async def g():\n    await g()\nasyncio.run(g())",
    "exec(open('/tmp/client.py').read())",
    "super().x()",
    "p = argparse.ArgumentParser(); p.add_argument('--u'); a = p.parse_args(); a.u",
    "while True:\n    f(1)",
    "for i in range(10**6):\n    get('/%d' % i)",
    "if None: pass\nelif []: pass\nelse: pass",
    "y = (lambda q: q)(C)",
    "C.request = 1; C().get('/z')",
]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.sampled_from(_FRAGMENTS), max_size=8),
    st.text(max_size=40),
    st.booleans(),
)
def test_new_shapes_never_raise(parts, noise, tool):
    code = "\n".join(parts) + "\n" + noise
    module = "\n".join(reversed(parts))
    files = {"/tmp/client.py": module, "client.py": module}
    reqs, written = read_python(code, files.get, modules=lambda rel: None, argv=["x", noise])
    assert isinstance(reqs, list) and isinstance(written, dict)
    steps = [("cat > /tmp/client.py <<'EOF'\n" + module + "\nEOF", "")]
    steps.append(("python", code, "") if tool else ("python3 - <<'EOF'\n" + code + "\nEOF", ""))
    v = build_view(make_traj(*steps))
    assert len(v.steps) == 2
