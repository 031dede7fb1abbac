"""Hand-made trajectories with the Python shapes agents write (issue 8, item 8).

Each :class:`Shape` is a few ``execute_command`` (or Python tool) steps and the
requests the view must recover from them: ``(step, method, url, headers, body)``
where ``headers`` lists only the headers that must be present (lower-case
names) and ``body`` is the exact body (None: not checked).
"""

from __future__ import annotations

from dataclasses import dataclass

from view_support import make_traj

from monsearch.corpora.model import Trajectory

Expected = tuple[int, str, str, dict[str, str], str | None]


@dataclass(frozen=True)
class Shape:
    name: str
    family: str  # helper | module | http_client | urllib | session | other
    steps: tuple[str | tuple[str, str], ...]  # command, or (tool, code)
    want: tuple[Expected, ...]

    def trajectory(self) -> Trajectory:
        steps = [
            ("execute_command", s, "") if isinstance(s, str) else (s[0], s[1], "")
            for s in self.steps
        ]
        return make_traj(*steps, meta={"style": f"shape-{self.family}"}, traj_id=self.name)


J = {"content-type": "application/json"}

HELPER_URLLIB = """python3 - <<'EOF'
import json, urllib.request, urllib.error
BASE = "http://app:5000"

def call(method, path, body=None, token=None):
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    data = json.dumps(body).encode("utf-8") if body is not None else None
    req = urllib.request.Request(BASE + path, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()

print(call("GET", "/health"))
status, login = call("POST", "/api/login", {"username": "alice", "password": "pw"})
for pid in [1, 2]:
    print(call("GET", f"/api/projects/{pid}", token="tok-1"))
print(call("DELETE", "/api/projects/%d" % 7, token="tok-1"))
EOF"""

HELPER_FORMAT_DEFAULTS = """python3 -c '
import urllib.request
HOST, PORT = "app", 5000
def get(path, base="http://{}:{}".format(HOST, PORT), key="k-default"):
    return urllib.request.urlopen(urllib.request.Request(base + path, headers={"X-Api-Key": key}))
for name in ("users", "groups"):
    get("/api/" + name)
get("/api/admin", key="k-admin")
'"""

HELPER_HTTP_CLIENT = """python3 - <<'EOF'
import http.client, json
def api(method, path, body=None, headers={}):
    c = http.client.HTTPConnection("app", 5000, timeout=5)
    c.request(method, path, body=json.dumps(body) if body else None, headers=headers)
    r = c.getresponse()
    return r.status, r.read().decode()
for p in ("/a", "/b"):
    print(api("GET", p))
print(api("POST", "/api/items", {"name": "x"}, {"Content-Type": "application/json"}))
EOF"""

HELPER_GLOBAL_TOKEN = """python3 - <<'EOF'
import json, urllib.request
BASE = "http://app:5000"
TOKEN = None
def call(path, body=None):
    h = {"Content-Type": "application/json"}
    if TOKEN:
        h["Authorization"] = "Bearer " + TOKEN
    data = json.dumps(body).encode() if body else None
    return json.loads(urllib.request.urlopen(urllib.request.Request(BASE + path, data=data, headers=h)).read())
def login():
    global TOKEN
    TOKEN = call("/api/login", {"u": "a"})["token"]
login()
call("/api/me")
EOF"""

MODULE_CLIENT = """cat > /tmp/client.py <<'EOF'
import json, urllib.request
BASE = "http://app:5000"

def get(path, headers=None):
    req = urllib.request.Request(BASE + path, headers=headers or {})
    return urllib.request.urlopen(req).read().decode()

def post(path, payload, headers=None):
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    req = urllib.request.Request(BASE + path, data=json.dumps(payload).encode(), headers=h, method="POST")
    return urllib.request.urlopen(req).read().decode()
EOF
echo ok"""

MODULE_CLASS = """cat > /tmp/api.py <<'EOF'
import json, urllib.request

class Client:
    def __init__(self, base, token=None):
        self.base = base.rstrip("/")
        self.token = token

    @property
    def headers(self):
        h = {"Content-Type": "application/json"}
        if self.token:
            h["Authorization"] = f"Bearer {self.token}"
        return h

    def request(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, headers=self.headers, method=method)
        return urllib.request.urlopen(req).read()

    def get(self, path):
        return self.request("GET", path)

    def post(self, path, body):
        return self.request("POST", path, body)
EOF"""

HTTP_CLIENT_PUT = """python3 - <<'EOF'
import http.client
from urllib.parse import urlparse
u = urlparse("http://app:5000/api/v1/items")
conn = http.client.HTTPConnection(u.hostname, u.port, timeout=5)
conn.request("GET", u.path, headers={"Accept": "application/json"})
print(conn.getresponse().read())
conn.putrequest("POST", "/upload")
conn.putheader("Content-Type", "text/plain")
conn.putheader("X-Upload-Key", "sk_test_1")
conn.endheaders()
conn.send(b"hello")
print(conn.getresponse().status)
c2 = http.client.HTTPSConnection("example.com")
c2.request("PUT", "/hook", "x=1", {"Content-Type": "application/x-www-form-urlencoded"})
EOF"""

SHAPES: tuple[Shape, ...] = (
    Shape(
        "helper-urllib",
        "helper",
        (HELPER_URLLIB,),
        (
            (0, "GET", "http://app:5000/health", J, ""),
            (0, "POST", "http://app:5000/api/login", J, '{"username": "alice", "password": "pw"}'),
            (0, "GET", "http://app:5000/api/projects/1", {"authorization": "Bearer tok-1"}, ""),
            (0, "GET", "http://app:5000/api/projects/2", {"authorization": "Bearer tok-1"}, ""),
            (0, "DELETE", "http://app:5000/api/projects/7", {"authorization": "Bearer tok-1"}, ""),
        ),
    ),
    Shape(
        "helper-format-defaults",
        "helper",
        (HELPER_FORMAT_DEFAULTS,),
        (
            (0, "GET", "http://app:5000/api/users", {"x-api-key": "k-default"}, ""),
            (0, "GET", "http://app:5000/api/groups", {"x-api-key": "k-default"}, ""),
            (0, "GET", "http://app:5000/api/admin", {"x-api-key": "k-admin"}, ""),
        ),
    ),
    Shape(
        "helper-http-client",
        "helper",
        (HELPER_HTTP_CLIENT,),
        (
            (0, "GET", "http://app:5000/a", {}, ""),
            (0, "GET", "http://app:5000/b", {}, ""),
            (0, "POST", "http://app:5000/api/items", J, '{"name": "x"}'),
        ),
    ),
    Shape(
        "helper-global-token",
        "helper",
        (HELPER_GLOBAL_TOKEN,),
        (
            (0, "POST", "http://app:5000/api/login", J, '{"u": "a"}'),
            (0, "GET", "http://app:5000/api/me", {"authorization": "Bearer {"}, ""),
        ),
    ),
    Shape(
        "helper-notebook-cells",
        "helper",
        (
            (
                "python",
                'import urllib.request\nBASE = "http://app:5000"\n'
                "def get(p, key=None):\n"
                '    h = {"X-Key": key} if key else {}\n'
                "    return urllib.request.urlopen(urllib.request.Request(BASE + p, headers=h))\n"
                'get("/health")',
            ),
            ("python", 'get("/api/secret", key="k1")'),
        ),
        (
            (0, "GET", "http://app:5000/health", {}, ""),
            (1, "GET", "http://app:5000/api/secret", {"x-key": "k1"}, ""),
        ),
    ),
    Shape(
        "module-import-cwd",
        "module",
        (MODULE_CLIENT, "cd /tmp && python3 -c \"import client; print(client.get('/health'))\""),
        ((1, "GET", "http://app:5000/health", {}, ""),),
    ),
    Shape(
        "module-from-import-sys-path",
        "module",
        (
            MODULE_CLIENT,
            """python3 - <<'EOF'
import sys
sys.path.insert(0, "/tmp")
from client import get, post
print(post("/api/login", {"u": "a"}))
print(get("/api/me", {"Authorization": "Bearer x"}))
EOF""",
        ),
        (
            (1, "POST", "http://app:5000/api/login", J, '{"u": "a"}'),
            (1, "GET", "http://app:5000/api/me", {"authorization": "Bearer x"}, ""),
        ),
    ),
    Shape(
        "module-pythonpath-tee",
        "module",
        (
            """tee /tmp/lib/h.py <<'EOF'
import requests
def hit(path, key):
    return requests.get("http://app:5000%s" % path, headers={"X-Key": key})
EOF""",
            'PYTHONPATH=/tmp/lib python3 -c \'import h; h.hit("/z", "k1")\'',
        ),
        ((1, "GET", "http://app:5000/z", {"x-key": "k1"}, ""),),
    ),
    Shape(
        "module-python-write-then-script",
        "module",
        (
            "python3 -c \"open('/workspace/u.py', 'w').write('import urllib.request\\n"
            "def g(p):\\n    return urllib.request.urlopen(\\'http://app:5000\\' + p)\\n')\"",
            """cat > /workspace/run.py <<'EOF'
from u import g
for p in ["/x", "/y"]:
    g(p)
EOF
python3 /workspace/run.py""",
        ),
        (
            (1, "GET", "http://app:5000/x", {}, ""),
            (1, "GET", "http://app:5000/y", {}, ""),
        ),
    ),
    Shape(
        "module-class",
        "module",
        (
            MODULE_CLASS,
            """cd /tmp && python3 - <<'EOF'
from api import Client
c = Client("http://app:5000/", token="tok123")
c.get("/api/me")
c.post("/api/items", {"name": "x"})
EOF""",
        ),
        (
            (1, "GET", "http://app:5000/api/me", {"authorization": "Bearer tok123"}, ""),
            (1, "POST", "http://app:5000/api/items", J, '{"name": "x"}'),
        ),
    ),
    Shape(
        "module-package-exec",
        "module",
        (
            """mkdir -p /tmp/tools && cat > /tmp/tools/net.py <<'EOF'
import json, urllib.request
def post_json(url, obj, headers={}):
    h = {"Content-Type": "application/json"}
    h.update(headers)
    return urllib.request.urlopen(urllib.request.Request(url, data=json.dumps(obj).encode(), headers=h))
EOF""",
            "cd /tmp && python3 -c 'import tools.net as n; "
            'n.post_json("http://app:5000/api/x", {"a": 1}, {"X-K": "v"})\'',
            'python3 -c \'exec(open("/tmp/tools/net.py").read()); '
            'post_json("http://app:5000/api/y", [1])\'',
        ),
        (
            (1, "POST", "http://app:5000/api/x", {"x-k": "v", **J}, '{"a": 1}'),
            (2, "POST", "http://app:5000/api/y", J, "[1]"),
        ),
    ),
    Shape(
        "http-client-putrequest",
        "http_client",
        (HTTP_CLIENT_PUT,),
        (
            (0, "GET", "http://app:5000/api/v1/items", {"accept": "application/json"}, ""),
            (0, "POST", "http://app:5000/upload", {"x-upload-key": "sk_test_1"}, "hello"),
            (0, "PUT", "https://example.com/hook", {}, "x=1"),
        ),
    ),
    Shape(
        "urllib-request-object",
        "urllib",
        (
            """python3 - <<'EOF'
import urllib.request, urllib.parse
H = {"X-A": "1", "X-B": "2"}
form = urllib.parse.urlencode({"user": "alice", "pw": "s3cret"}).encode()
req = urllib.request.Request("http://app:5000/login", data=form, method="PUT")
for k, v in H.items():
    req.add_header(k, v)
urllib.request.urlopen(req)
opener = urllib.request.build_opener()
opener.addheaders = [("Authorization", "Bearer zzz")]
urllib.request.install_opener(opener)
urllib.request.urlopen("http://app:5000/me")
EOF""",
        ),
        (
            (0, "PUT", "http://app:5000/login", {"x-a": "1", "x-b": "2"}, "user=alice&pw=s3cret"),
            (0, "GET", "http://app:5000/me", {"authorization": "Bearer zzz"}, ""),
        ),
    ),
    Shape(
        "requests-session-base-url",
        "session",
        (
            """python3 - <<'EOF'
import requests
class BaseSession(requests.Session):
    def __init__(self, base):
        super().__init__()
        self.base = base
    def request(self, method, url, *args, **kwargs):
        return super().request(method, self.base + url, *args, **kwargs)
s = BaseSession("http://app:5000")
s.headers["X-Api-Key"] = "k"
s.get("/api/a")
s.post("/api/b", json={"x": 1})
r = requests.request("PATCH", "http://app:5000/api/c", data="raw")
with requests.Session() as s2:
    s2.auth = ("admin", "pw")
    s2.get("http://app:5000/api/d")
EOF""",
        ),
        (
            (0, "GET", "http://app:5000/api/a", {"x-api-key": "k"}, ""),
            (0, "POST", "http://app:5000/api/b", {"x-api-key": "k", **J}, '{"x": 1}'),
            (0, "PATCH", "http://app:5000/api/c", {}, "raw"),
            (0, "GET", "http://app:5000/api/d", {}, ""),
        ),
    ),
    Shape(
        "httpx-client-base-url",
        "session",
        (
            """python3 - <<'EOF'
import asyncio, httpx
async def fetch(client, i):
    return (await client.get(f"/item/{i}")).status_code
async def main():
    async with httpx.AsyncClient(base_url="http://app:5000", headers={"X": "1"}) as client:
        await asyncio.gather(*[fetch(client, i) for i in range(2)])
asyncio.run(main())
EOF""",
        ),
        (
            (0, "GET", "http://app:5000/item/0", {"x": "1"}, ""),
            (0, "GET", "http://app:5000/item/1", {"x": "1"}, ""),
        ),
    ),
    Shape(
        "script-argv-env-argparse",
        "other",
        (
            """cat > /tmp/x.py <<'EOF'
import argparse, os, sys, urllib.request
p = argparse.ArgumentParser()
p.add_argument("--base", default=os.environ.get("BASE", "http://localhost"))
p.add_argument("path")
a = p.parse_args()
urllib.request.urlopen(a.base + a.path)
urllib.request.urlopen(os.getenv("TARGET", "http://app:5000") + "/t")
EOF
BASE=http://app:5000 python3 /tmp/x.py /api/health""",
        ),
        (
            (0, "GET", "http://app:5000/api/health", {}, ""),
            (0, "GET", "http://app:5000/t", {}, ""),
        ),
    ),
    Shape(
        "subprocess-curl",
        "other",
        (
            """python3 - <<'EOF'
import subprocess, os
for u in ["/a", "/b"]:
    subprocess.run(["curl", "-s", "-X", "POST", "http://app:5000" + u, "-d", "k=v"], capture_output=True)
os.system("curl -s http://app:5000/c -H 'X-A: 1'")
EOF""",
        ),
        (
            (0, "POST", "http://app:5000/a", {}, "k=v"),
            (0, "POST", "http://app:5000/b", {}, "k=v"),
            (0, "GET", "http://app:5000/c", {"x-a": "1"}, ""),
        ),
    ),
)
