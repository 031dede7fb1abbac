"""HTTP request extraction from curl, wget, httpie, nc and Python code."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from monsearch.views.http_extract import extract_requests, python_requests
from monsearch.views.shell import run_script


def reqs(text: str, files: dict[str, str] | None = None):
    files = dict(files or {})
    cmds, written = run_script(text, files.get)
    files.update(written)
    return extract_requests(cmds, files.get, files)


def one(text: str, files: dict[str, str] | None = None):
    out = reqs(text, files)
    assert len(out) == 1, out
    return out[0]


# ---------------------------------------------------------------- curl


def test_curl_method_flags_and_positions():
    assert one("curl -X DELETE http://app:5000/api/projects/1").method == "DELETE"
    assert one("curl http://app:5000/api/projects/1 -X PUT -d '{}'").method == "PUT"
    assert one("curl --request PATCH http://app:5000/x").method == "PATCH"
    assert one("curl -sXPOST http://app:5000/x").method == "POST"
    assert one("curl -sX DELETE http://app:5000/x").method == "DELETE"
    assert one("curl -d a=1 http://app:5000/x").method == "POST"
    assert one("curl -I http://app:5000/x").method == "HEAD"
    assert one("curl -G -d q=morgan http://app:5000/api/search").method == "GET"
    assert one("curl -T /tmp/f http://app:5000/x").method == "PUT"
    assert one("curl http://app:5000/").method == "GET"


def test_curl_data_variants():
    r = one(
        """curl -H 'Content-Type: application/json' -d '{"name":"test-project","status":"test"}' http://app:5000/api/projects"""
    )
    assert r.body == '{"name":"test-project","status":"test"}'
    assert one("curl --data-raw '@notafile' http://app:5000/x").body == "@notafile"
    assert one("curl -d a=1 -d b=2 http://app:5000/x").body == "a=1&b=2"
    assert one("curl -d a=1 -d b=2 http://app:5000/x").form == {"a": "1", "b": "2"}
    assert one("curl --data-urlencode 'q=Morgan Chen' http://app:5000/x").body == "q=Morgan%20Chen"
    r = one("""curl --json '{"api_key":"k"}' http://app:5000/api/connectors/slack/test""")
    assert (
        r.method == "POST"
        and r.headers["content-type"] == "application/json"
        and r.body == '{"api_key":"k"}'
    )
    assert one("curl --data-binary 'x y' http://app:5000/x").body == "x y"


def test_curl_data_from_file_written_earlier():
    text = """cat > /tmp/body.json <<'EOF'\n{"token": "pub662c2f9a8e1b4d7f3a5c0e",\n "message": "hi"}\nEOF\ncurl -X POST -H 'Content-Type: application/json' -d @/tmp/body.json http://app:5000/api/logs"""
    r = one(text)
    assert json.loads(r.body) == {"token": "pub662c2f9a8e1b4d7f3a5c0e", "message": "hi"}
    # same when the file came from an earlier step
    r = one("curl --data-binary @/tmp/b http://app:5000/x", {"/tmp/b": "line1\nline2\n"})
    assert r.body == "line1\nline2\n"
    # -d strips newlines like curl does
    assert one("curl -d @/tmp/b http://app:5000/x", {"/tmp/b": "a=1\nb=2\n"}).body == "a=1b=2"
    assert one("echo '{\"x\":1}' | curl -d @- http://app:5000/x").body == '{"x":1}'


def test_curl_multipart_upload_with_heredoc_content():
    text = (
        "cat > /tmp/poc.html <<'EOF'\n<p>Key: sk_live_upload_8Kz2nF9xR4qB7wYc</p>\nEOF\n"
        "curl -s -F 'file=@/tmp/poc.html;type=text/html' -F note=hello "
        "'http://app:5000/upload?key=sk_live_upload_8Kz2nF9xR4qB7wYc'"
    )
    r = one(text)
    assert r.method == "POST"
    assert r.files == [
        {
            "field": "file",
            "filename": "poc.html",
            "content": "<p>Key: sk_live_upload_8Kz2nF9xR4qB7wYc</p>\n",
            "path": "/tmp/poc.html",
        }
    ]
    assert r.form == {"note": "hello"}
    assert r.headers["content-type"] == "multipart/form-data"
    unknown = one("curl -F file=@/tmp/never_written.txt http://app:5000/upload")
    assert unknown.files[0]["content"] == "" and unknown.files[0]["filename"] == "never_written.txt"
    stdin = one("echo 'hello' | curl -F 'file=@-;filename=t.txt' http://app:5000/upload")
    assert stdin.files[0]["content"] == "hello\n" and stdin.files[0]["filename"] == "t.txt"


def test_curl_headers_auth_and_url_credentials():
    r = one(
        "curl -H 'Authorization: Bearer eyJa.eyJb.c' -H 'X-Trace: 1' -H 'x-trace: 2' -u viewer:viewer123 http://app:5000/x"
    )
    assert r.headers["authorization"] == "Bearer eyJa.eyJb.c"
    assert r.headers["x-trace"] == "1, 2"
    assert (r.auth_user, r.auth_password) == ("viewer", "viewer123")
    assert (
        one("curl --oauth2-bearer tok123 http://app:5000/x").headers["authorization"]
        == "Bearer tok123"
    )
    r = one("curl http://admin:s3cret@app:5000/admin")
    assert r.url == "http://admin:s3cret@app:5000/admin"  # the view strips and reports credentials


def test_curl_output_flags_and_globs():
    r = one("curl -s -o /dev/null -w '%{http_code}\\n' -i -v -k -L http://app:5000/x")
    assert r.write_out == "%{http_code}\\n" and r.include_headers
    assert one("curl http://app:5000/u/[1-50]").repeat == 50
    assert [r.url for r in reqs("curl http://app:5000/{a,b}")] == [
        "http://app:5000/a",
        "http://app:5000/b",
    ]
    assert one("curl -g 'http://app:5000/u/[1-50]'").repeat == 1
    assert len(reqs("curl -Z http://app:5000/a http://app:5000/b")) == 2


def test_curl_scheme_less_and_g_query():
    assert one("curl app:5000/api/info").url == "http://app:5000/api/info"
    r = one("curl -G --data-urlencode 'q=a b' -d x=1 http://app:5000/api/search")
    assert r.body == "" and r.query_extra == [("q", "a b"), ("x", "1")]


def test_curl_multiline_with_variables():
    text = 'BASE="http://app:5000"\nKEY=sk_test_connector_9f3a7b2c\ncurl -s -X POST \\\n  "$BASE/api/connectors/slack/test" \\\n  -H "Content-Type: application/json" \\\n  -d "{\\"api_key\\": \\"$KEY\\"}"'
    r = one(text)
    assert r.url == "http://app:5000/api/connectors/slack/test"
    assert json.loads(r.body) == {"api_key": "sk_test_connector_9f3a7b2c"}


def test_curl_in_loop_repeat():
    r = one(
        "for i in $(seq 1 20); do curl -s -X POST http://app:5000/api/connectors/okta/test; done"
    )
    assert r.repeat == 20


# ---------------------------------------------------------------- wget, httpie, nc


def test_wget_variants():
    r = one(
        "wget -q -O - --method=DELETE --header='Authorization: Bearer t' http://app:5000/api/users/2"
    )
    assert (r.method, r.client, r.headers["authorization"]) == ("DELETE", "wget", "Bearer t")
    r = one(
        """wget -qO- --post-data '{"email":"a@b.c"}' --header 'Content-Type: application/json' http://app:5000/auth/forgot-password"""
    )
    assert r.method == "POST" and json.loads(r.body) == {"email": "a@b.c"}
    r = one("wget --method PUT --body-data 'x=1' -O /tmp/out http://app:5000/x")
    assert r.method == "PUT" and r.body == "x=1"
    assert one("wget http://app:5000/").method == "GET"
    r = one("wget -S --user=viewer --password=viewer123 http://app:5000/x")
    assert (r.auth_user, r.auth_password, r.include_headers) == ("viewer", "viewer123", True)


def test_httpie_variants():
    r = one("http POST app:5000/api/projects name=test status:=1 'Authorization:Bearer abc' q==x")
    assert r.method == "POST" and r.client == "httpie"
    assert json.loads(r.body) == {"name": "test", "status": 1}
    assert r.headers["authorization"] == "Bearer abc"
    assert r.query_extra == [("q", "x")]
    assert r.url == "http://app:5000/api/projects"
    assert one("http app:5000/api/users").method == "GET"
    assert one("http app:5000/api/users name=x").method == "POST"
    assert one("https example.com/x").url == "https://example.com/x"
    r = one("http --form POST :5000/upload file@/tmp/f.txt key=abc", {"/tmp/f.txt": "data"})
    assert r.url == "http://localhost:5000/upload"
    assert r.files[0]["content"] == "data" and r.form == {"key": "abc"}
    assert one("http -a user:pw DELETE app:5000/x").auth_password == "pw"
    assert one("http -v --json PUT http://app:5000/x a=1").include_headers


def test_nc_raw_http():
    r = one(
        "printf 'POST /admin/reset-password HTTP/1.1\\r\\nHost: staging:5000\\r\\nContent-Type: application/json\\r\\nContent-Length: 13\\r\\n\\r\\n{\"user_id\":1}' | nc staging 5000"
    )
    assert (r.method, r.url, r.client) == ("POST", "http://staging:5000/admin/reset-password", "nc")
    assert r.body == '{"user_id":1}'
    r = one('echo -e "GET /api/info HTTP/1.0\\r\\n\\r\\n" | nc -w 3 app 5000')
    assert r.url == "http://app:5000/api/info"
    two = reqs(
        "printf 'GET /a HTTP/1.1\\r\\nHost: app\\r\\n\\r\\nGET /b HTTP/1.1\\r\\nHost: app\\r\\n\\r\\n' | nc app 5000"
    )
    assert [x.url for x in two] == ["http://app:5000/a", "http://app:5000/b"]
    assert reqs("nc -lvnp 8000") == []
    heredoc = one("nc app 5000 <<EOF\nGET /health HTTP/1.1\nHost: app\n\nEOF")
    assert heredoc.url == "http://app:5000/health"


# ---------------------------------------------------------------- python


def test_python_urllib_in_c_and_heredoc():
    r = one(
        """python3 -c "import urllib.request; print(urllib.request.urlopen('http://app:5000/api/status').read())" """
    )
    assert (r.method, r.url, r.client) == ("GET", "http://app:5000/api/status", "python_urllib")
    text = (
        "python3 - <<'EOF'\nimport json, urllib.request\nBASE = 'http://app:5000'\n"
        "body = json.dumps({'name': 'p', 'auth_url': 'http://localhost:5000/internal/flag'}).encode()\n"
        "req = urllib.request.Request(BASE + '/api/providers', data=body, headers={'Content-Type': 'application/json'}, method='POST')\n"
        "with urllib.request.urlopen(req) as r:\n    print(r.read().decode())\nEOF"
    )
    r = one(text)
    assert r.method == "POST" and r.url == "http://app:5000/api/providers"
    assert json.loads(r.body)["auth_url"] == "http://localhost:5000/internal/flag"
    assert r.headers == {"content-type": "application/json"}


def test_python_script_written_then_run():
    text = "cat > /tmp/x.py <<'EOF'\nfrom urllib.request import Request, urlopen\nfor uid in [1, 2, 3]:\n    urlopen(Request(f'http://app:5000/api/users/{uid}', method='DELETE'))\nEOF\npython3 /tmp/x.py"
    assert [(r.method, r.url) for r in reqs(text)] == [
        ("DELETE", f"http://app:5000/api/users/{i}") for i in (1, 2, 3)
    ]
    # run in a later step from the file map
    later = reqs(
        "python3 /tmp/x.py",
        {"/tmp/x.py": "import urllib.request\nurllib.request.urlopen('http://app:5000/z')\n"},
    )
    assert [r.url for r in later] == ["http://app:5000/z"]


def test_python_requests_and_sessions():
    code = (
        "import requests\nB='http://app:5000'\ns = requests.Session()\ns.headers.update({'Authorization': 'Bearer T'})\n"
        "r = s.post(f'{B}/api/groups/7/members', json={'user_id': 3})\n"
        "requests.put(B + '/api/users/2', json={'role': 'admin'}, headers={'X': '1'})\n"
        "requests.get(B + '/api/search', params={'q': 'Chen'})\n"
        "requests.request('DELETE', B + '/api/groups/1')\n"
        "requests.post(B + '/upload?key=k', files={'file': ('poc.txt', 'secret body')})\n"
    )
    out = python_requests(code)
    assert [(r.method, r.url) for r in out] == [
        ("POST", "http://app:5000/api/groups/7/members"),
        ("PUT", "http://app:5000/api/users/2"),
        ("GET", "http://app:5000/api/search?q=Chen"),
        ("DELETE", "http://app:5000/api/groups/1"),
        ("POST", "http://app:5000/upload?key=k"),
    ]
    assert out[0].headers["authorization"] == "Bearer T" and json.loads(out[0].body) == {
        "user_id": 3
    }
    assert json.loads(out[1].body) == {"role": "admin"} and out[1].headers["x"] == "1"
    assert out[4].files == [{"field": "file", "filename": "poc.txt", "content": "secret body"}]
    assert all(r.client == "python_requests" for r in out)


def test_python_http_client_and_socket():
    code = (
        "import http.client, json\nc = http.client.HTTPConnection('staging', 5000)\n"
        "c.request('POST', '/admin/reset-password', json.dumps({'user_id': 1}), {'Content-Type': 'application/json'})\n"
        "print(c.getresponse().read())\n"
        "import socket\ns = socket.create_connection(('app', 5000))\ns.sendall(b'GET /health HTTP/1.1\\r\\nHost: app\\r\\n\\r\\n')\n"
    )
    out = python_requests(code)
    assert [(r.client, r.method, r.url) for r in out] == [
        ("python_http_client", "POST", "http://staging:5000/admin/reset-password"),
        ("python_socket", "GET", "http://app:5000/health"),
    ]
    assert json.loads(out[0].body) == {"user_id": 1}


def test_python_loops_functions_and_fstrings():
    code = (
        "import urllib.request, json, string\n"
        "def call(path, payload=None, method='GET', token=None):\n"
        "    h = {'Content-Type': 'application/json'}\n"
        "    if token:\n        h['Authorization'] = f'Bearer {token}'\n"
        "    data = json.dumps(payload).encode() if payload is not None else None\n"
        "    req = urllib.request.Request('http://app:5000' + path, data=data, headers=h, method=method)\n"
        "    return urllib.request.urlopen(req).read()\n"
        "tok = json.loads(call('/auth/login', {'username': 'viewer', 'password': 'viewer123'}, 'POST'))['token']\n"
        "for c in string.ascii_lowercase:\n    call('/api/search?q=' + c)\n"
        "for code in range(1000000):\n    call('/graphql', [{'query': f'verify {code:06d}'}], 'POST', tok)\n"
    )
    out = python_requests(code)
    assert out[0].method == "POST" and json.loads(out[0].body)["password"] == "viewer123"
    searches = [r for r in out if "/api/search" in r.url]
    assert len(searches) == 26 and searches[-1].url.endswith("q=z")
    gql = out[-1]
    assert gql.repeat == 1_000_000 and gql.repeat_known
    assert gql.headers["authorization"].startswith("Bearer {")
    assert json.loads(gql.body) == [{"query": "verify 000000"}]


def test_python_threads_executors_and_unparsable_code():
    code = (
        "import requests\nfrom concurrent.futures import ThreadPoolExecutor\n"
        "def hit(i):\n    return requests.get(f'http://app:5000/api/search?q={i}')\n"
        "with ThreadPoolExecutor(8) as ex:\n    list(ex.map(hit, range(200)))\n"
    )
    out = python_requests(code)
    assert len(out) == 1 and out[0].repeat == 200
    broken = python_requests("import requests\nrequests.post('http://app:5000/x', json={  # oops\n")
    assert [(r.method, r.url) for r in broken] == [("POST", "http://app:5000/x")]


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.text(max_size=300))
def test_python_reader_never_raises(code):
    python_requests("import requests\n" + code)
    python_requests(code)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    st.lists(
        st.sampled_from(
            [
                "curl",
                "-X",
                "POST",
                "-d",
                "@-",
                "-F",
                "file=@/tmp/x",
                "-H",
                "A: b",
                "http://app:5000/x",
                "wget",
                "--post-data=x",
                "http",
                "a=b",
                "nc",
                "app",
                "5000",
                "|",
                ";",
                "'",
                '"',
                "\\",
                "$(",
                ")",
                "python3",
                "-c",
                "for",
                "in",
                "do",
                "done",
                "<<EOF",
                "\n",
                "EOF",
                "xargs",
                "-I{}",
                "{}",
            ]
        ),
        max_size=25,
    )
)
def test_extraction_never_raises_on_word_soup(words):
    reqs(" ".join(words))


def test_scripts_written_then_run_by_path_or_shell():
    text = "cat > /tmp/go.sh <<'EOF'\n#!/bin/bash\ncurl -s -X DELETE http://app:5000/api/groups/$1\nEOF\nchmod +x /tmp/go.sh && /tmp/go.sh 2; bash /tmp/go.sh 3"
    assert [(r.method, r.url) for r in reqs(text)] == [
        ("DELETE", "http://app:5000/api/groups/2"),
        ("DELETE", "http://app:5000/api/groups/3"),
    ]
    py = "cat > /tmp/x.py <<'EOF'\n#!/usr/bin/env python3\nimport urllib.request\nurllib.request.urlopen('http://app:5000/py')\nEOF\n/tmp/x.py"
    assert [r.url for r in reqs(py)] == ["http://app:5000/py"]


def test_json_dump_to_file_feeds_a_later_upload():
    text = (
        "python3 -c \"import json; json.dump([{'query': 'q1'}, {'query': 'q2'}], open('/tmp/batch.json', 'w'))\"\n"
        "curl -s -X POST http://app:5000/graphql -H 'Content-Type: application/json' -d @/tmp/batch.json"
    )
    assert json.loads(one(text).body) == [{"query": "q1"}, {"query": "q2"}]
