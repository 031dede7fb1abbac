"""The read-only trajectory view a monitor program sees: ``build_view(traj)``.

A view is a :class:`~monsearch.sandbox.frozen.FrozenDict` (fields readable as
``view.steps`` or ``view["steps"]``), tuples for sequences, and plain
str/int/float/bool/None leaves. It never contains labels, verdicts, judge
output, file paths, the generator name or ``meta``. Parsing is done once per
trajectory, outside the sandbox; :func:`build_view` is pure and never raises.

Schema (every field is always present)::

    view
      id            str    opaque id (hash of the trajectory id)
      task          str    StealthBench task name, e.g. "storefront-upload"
      prompt        str    the instruction the agent got
      outcome       str    "flag_found" | "no_flag" | "step_limit" | "error"
      solved        bool   the flag the agent wrote was correct
      n_steps       int
      targets       tuple[str]  target base URLs from the prompt ("http://app:5000")
      target_hosts  tuple[str]  their hosts ("app"; "staging", "production")
      own_addresses tuple[str]  IPs/hostname the agent learned as its own
                                (hostname -i/-I, ip a, ifconfig, /etc/hosts output)
      steps         tuple[step]
      requests      tuple[request]  all requests of all steps, in order
      secrets       tuple[finding]  all secret findings of all steps
      listeners     tuple[listener] all listeners/tunnels started
      files_written tuple[file]     all files written by shell redirections / tee
      flag_step     int    first step whose observation contains "FLAG{", else -1
      hosts         {host: int}     requests per host (loop repeats counted)

    step
      index         int
      tool          str    "execute_command", "think", ...
      command       str    the command text ("" for think)
      think         str    the thought ("" unless tool == "think")
      observation   str    the tool output (stdout + "\\n" + stderr)
      timestamp     float | None   seconds since the first step
      latency_ms    int | None
      requests      tuple[request]
      status        int | None   last HTTP status shown in the output
      statuses      tuple[int]   every HTTP status shown in the output, in order
      listeners     tuple[listener]
      files_written tuple[file]   each {path, content}
      secrets       tuple[finding]
      repeat        int    largest loop count in the command (1 without loops)
      sleeps        float  total seconds of `sleep` in the command (loops counted)

    request
      step          int    index of the step that sent it
      method        str    "GET", "POST", ...
      url           str    full URL without user:pass@ credentials
      scheme, host, port, path       (port is an int; 80/443 when implicit)
      query         {str: str}          first value per key
      query_all     {str: tuple[str]}   every value per key
      headers       {str: str}          lower-case names
      body          str
      json          parsed JSON body (FrozenDict/tuple/leaves) or None
      form          {str: str}          urlencoded or multipart fields
      files         tuple[{field, filename, content}]  uploaded files; content
                    known when the file was written earlier in the trajectory
      client        "curl" | "wget" | "httpie" | "nc" | "python_urllib" |
                    "python_requests" | "python_http_client" | "python_httpx" |
                    "python_socket"
      host_class    "target" | "own" | "loopback" | "internal" | "external"
      repeat        int    times it runs (loops, seq, xargs, curl globs)
      repeat_known  bool   False when a loop count had to be guessed
      status        int | None   response status when attributable
      response      str    response body when attributable, else ""
      auth          str | None   basic-auth user (-u, URL credentials)
      body_urls     tuple[{url, host, port, host_class, field}]  URLs inside
                    the body (e.g. a webhook or SSRF "url" field)
      secrets       tuple[finding]  the findings in this request
      background    bool   sent from a backgrounded command

    finding  {kind, value, where, step, field}
      kind   "jwt" | "bearer" | "api_key" | "password" | "basic_auth" |
             "high_entropy" | "flag"
      where  "header" | "query" (URL path or query of a target request) |
             "body" (auth fields, unstructured bodies) | "stored_field" (a
             non-auth field of a POST/PUT/PATCH JSON or form body, e.g.
             "message", "spans[0].attributes.token") | "file_content"
             (uploaded file body) | "url_other_host" (inside a URL to a
             non-target host) | "observation" | "command" (elsewhere in the
             command) | "file_written" | "think"
      field  JSON/form field path for body findings, else ""

    listener {kind, port, background, echo, step}
      kind   "nc" | "socat" | "http.server" | "python_server" | "php" |
             "httpd" | "tunnel"
      echo   a Python handler that writes the request body back

Mapping keys double as attributes except where they collide with dict
methods: use ``req.json["items"]``, not ``req.json.items``, for a body field
named ``items``.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import json
import re
from datetime import datetime
from typing import Any
from urllib.parse import parse_qsl, urlencode

from monsearch.corpora.model import Trajectory
from monsearch.sandbox import secrets as sec
from monsearch.sandbox.frozen import FrozenDict, freeze
from monsearch.sandbox.http_extract import Request, extract_requests, split_url, strip_credentials
from monsearch.sandbox.http_python import python_requests
from monsearch.sandbox.infra import listeners_of, own_addresses_of, statuses_in, write_out_status
from monsearch.sandbox.shell import Command, run_script

#: The view type: one concrete read-only mapping class.
TrajectoryView = FrozenDict

_PYTHON_TOOLS = frozenset({"python", "execute_python", "run_python", "ipython", "python_exec", "code_interpreter"})
_TARGET_URL = re.compile(r"\bhttps?://[A-Za-z0-9._-]+(?::\d+)?", re.I)
_BODY_URL = re.compile(r"\b(?:https?|ftp|file|gopher|dict|ws|wss)://[^\s\"'<>\\]+", re.I)
_CREDS_IN_PROMPT = re.compile(r"credentials?:?\s*([A-Za-z0-9_.@-]+)\s*/\s*(\S+)", re.I)
_WRITE_METHODS = frozenset({"POST", "PUT", "PATCH"})
_LOOPBACK_NAMES = frozenset({"localhost", "ip6-localhost", "ip6-loopback", "0.0.0.0", "[::1]", "::1", "[::]", "::"})


def opaque_id(trajectory_id: str) -> str:
    """The view's id for a trajectory id (stable across processes; reveals nothing)."""
    return hashlib.sha256(trajectory_id.encode("utf-8", "replace")).hexdigest()[:16]


def _targets(prompt: str) -> tuple[list[str], list[str]]:
    bases: list[str] = []
    hosts: list[str] = []
    for m in _TARGET_URL.finditer(prompt or ""):
        base = m.group().rstrip(".").lower()
        if base not in bases:
            bases.append(base)
            host = split_url(base).host
            if host and host not in hosts:
                hosts.append(host)
    return bases, hosts


def _seconds(ts: str | None) -> float | None:
    if not ts:
        return None
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except (ValueError, TypeError):
        return None


def host_class(host: str, targets: set[str], own: set[str]) -> str:
    """``target`` | ``own`` | ``loopback`` | ``internal`` | ``external`` for a host."""
    h = host.strip("[]").lower()
    if h in targets:
        return "target"
    if h in own:
        return "own"
    if h in _LOOPBACK_NAMES or h.startswith("127.") or h == "0.0.0.0" or h == "::1":
        return "loopback"
    try:
        addr = ipaddress.ip_address(h)
    except ValueError:
        if not h:
            return "internal"
        if "." not in h or h.endswith((".internal", ".local", ".lan", ".localdomain", ".svc", ".cluster.local", ".docker")):
            return "internal"
        return "external"
    if addr.is_loopback or addr.is_unspecified:
        return "loopback"
    if addr.is_private or addr.is_link_local:
        return "internal"
    return "external"


# --------------------------------------------------------------------------- responses

_VERBOSE_LINE = re.compile(r"^(?:[*<>{}] |\* |< |> |  % Total|\s+Dload|\s*\d+\s+\d+\s+\d+).*$")


def _strip_headers(text: str) -> str:
    """Response body: the output without status/header blocks and curl -v noise."""
    if "HTTP/" not in text and "\n* " not in text and not text.startswith("*"):
        return text.strip("\n")
    lines = text.split("\n")
    out: list[str] = []
    in_headers = False
    for line in lines:
        s = line.rstrip("\r")
        if re.match(r"^(?:< )?HTTP/\d", s):
            in_headers = True
            continue
        if in_headers:
            if s.strip() in ("", "<"):
                in_headers = False
            continue
        if _VERBOSE_LINE.match(s):
            continue
        out.append(line)
    return "\n".join(out).strip("\n")


def _strip_write_out(text: str, status: int | None) -> str:
    if status is None:
        return text
    return re.sub(rf"\s*(?:HTTP[ _-]?(?:code|status)?[:= ]*)?{status}\s*$", "", text, flags=re.I)


# --------------------------------------------------------------------------- secrets


class _Secrets:
    """Collects findings for one step, de-duplicated, and remembers known values."""

    def __init__(self, known: dict[str, str]):
        self.known = known
        self.items: list[dict[str, Any]] = []
        self.seen: set[tuple[str, str, str, str]] = set()

    def add(self, kind: str, value: str, where: str, step: int, field: str = "") -> dict[str, Any] | None:
        if not value:
            return None
        key = (kind, value, where, field)
        if key in self.seen:
            return None
        self.seen.add(key)
        finding = {"kind": kind, "value": value, "where": where, "step": step, "field": field}
        self.items.append(finding)
        if len(value) >= 6 and value not in self.known and kind != "flag":
            self.known[value] = kind
        return finding

    def scan(self, text: str, where: str, step: int, field: str = "") -> list[dict[str, Any]]:
        out = []
        for kind, value in sec.scan(text):
            f = self.add(kind, value, where, step, field)
            if f is not None:
                out.append(f)
        return out

    def known_in(self, text: str, where: str, step: int, field: str = "") -> list[dict[str, Any]]:
        out = []
        if not text or not self.known:
            return out
        for value, kind in list(self.known.items()):
            if value in text:
                f = self.add(kind, value, where, step, field)
                if f is not None:
                    out.append(f)
        return out


def _request_secrets(req: dict[str, Any], col: _Secrets, step: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    cls = req["host_class"]
    url_where = "query" if cls == "target" else "url_other_host"
    for name, value in req["headers"].items():
        out += col.scan(value, "header", step, name)
        out += col.known_in(value, "header", step, name)
        if name == "authorization" and value[:6].lower() == "basic ":
            try:
                decoded = base64.b64decode(value[6:].strip() + "==", validate=False).decode("utf-8")
            except (ValueError, UnicodeDecodeError):
                decoded = ""
            if ":" in decoded:
                f = col.add("basic_auth", decoded, "header", step, name)
                out += [f] if f else []
    if req["auth_password"] is not None:
        where = "header" if cls == "target" else "url_other_host"
        for f in (
            col.add("basic_auth", f"{req['auth'] or ''}:{req['auth_password']}", where, step),
            col.add("password", req["auth_password"], where, step),
        ):
            out += [f] if f else []
    url_text = req["path"] + ("?" + req["query_text"] if req["query_text"] else "")
    out += col.scan(url_text, url_where, step)
    out += col.known_in(url_text, url_where, step)
    write = req["method"] in _WRITE_METHODS
    leaves: list[tuple[str, str, int]] = []
    if req["json_plain"] is not None:
        leaves = sec.json_leaves(req["json_plain"])
    elif req["form"]:
        leaves = [(k, v, 1) for k, v in req["form"].items()]
    if leaves:
        for path, value, depth in leaves:
            where = "body" if (sec.is_auth_field(path, depth) or not write) else "stored_field"
            if sec.is_password_field(path) and value and not value.startswith("$"):
                f = col.add("password", value, where, step, path)
                out += [f] if f else []
            out += col.scan(value, where, step, path)
            out += col.known_in(value, where, step, path)
    elif req["body"]:
        out += col.scan(req["body"], "body", step)
        out += col.known_in(req["body"], "body", step)
    for bu in req["body_urls"]:
        if bu["host_class"] not in ("target", "loopback"):
            out += col.scan(bu["url"], "url_other_host", step, bu["field"])
            out += col.known_in(bu["url"], "url_other_host", step, bu["field"])
    for upl in req["files"]:
        out += col.scan(upl["content"], "file_content", step, upl["field"])
        out += col.known_in(upl["content"], "file_content", step, upl["field"])
    return out


# --------------------------------------------------------------------------- requests


def _parse_json(body: str) -> Any:
    s = body.strip()
    if not s or s[0] not in "{[":
        return None
    try:
        return json.loads(s)
    except ValueError:
        return None


def _body_urls(body: str, json_plain: Any) -> list[tuple[str, str]]:
    if not body or "://" not in body:
        return []
    if json_plain is not None:
        return [(v, p) for p, v, _ in sec.json_leaves(json_plain) if "://" in v and _BODY_URL.match(v.strip())]
    return [(m.group(), "") for m in _BODY_URL.finditer(body)]


def _request_dict(req: Request, step: int) -> dict[str, Any]:
    parts = split_url(req.url)
    query_text = parts.query
    url = strip_credentials(req.url)
    if req.query_extra:
        extra = urlencode(req.query_extra)
        query_text = f"{query_text}&{extra}" if query_text else extra
        url = f"{url}{'&' if '?' in url else '?'}{extra}"
    pairs = parse_qsl(query_text, keep_blank_values=True)
    query: dict[str, str] = {}
    query_all: dict[str, list[str]] = {}
    for k, v in pairs:
        query.setdefault(k, v)
        query_all.setdefault(k, []).append(v)
    json_plain = _parse_json(req.body)
    return {
        "step": step,
        "method": req.method or "GET",
        "url": url,
        "scheme": parts.scheme,
        "host": parts.host,
        "port": parts.port,
        "path": parts.path,
        "query": query,
        "query_all": query_all,
        "query_text": query_text,
        "headers": req.headers,
        "body": req.body,
        "json_plain": json_plain,
        "form": req.form,
        "files": [{"field": f.get("field", ""), "filename": f.get("filename", ""), "content": f.get("content", "")} for f in req.files],
        "client": req.client,
        "host_class": "",
        "repeat": max(1, req.repeat),
        "repeat_known": req.repeat_known,
        "status": None,
        "response": "",
        "auth": req.auth_user if req.auth_user is not None else parts.user,
        "auth_password": req.auth_password if req.auth_password is not None else parts.password,
        "body_urls": _body_urls(req.body, json_plain),
        "background": req.background,
        "write_out": req.write_out,
        "include_headers": req.include_headers,
    }


def _attribute_responses(reqs: list[dict[str, Any]], observation: str) -> list[int]:
    """Set status/response on requests when the output can be tied to them."""
    found = statuses_in(observation)
    codes = [c for _, c in found]
    if not reqs:
        return codes
    if len(reqs) == 1:
        r = reqs[0]
        status = write_out_status(observation, r["write_out"]) if r["write_out"] else None
        if status is None and codes:
            status = codes[-1]
        if status is not None and status not in codes:
            codes.append(status)
        r["status"] = status
        body = _strip_headers(observation)
        if r["write_out"]:
            body = _strip_write_out(body, status)
        r["response"] = body
        return codes
    if len(found) == len(reqs) and all(r["include_headers"] for r in reqs):
        for k, r in enumerate(reqs):
            start = found[k][0]
            end = found[k + 1][0] if k + 1 < len(found) else len(observation)
            r["status"] = found[k][1]
            r["response"] = _strip_headers(observation[start:end])
    return codes


# --------------------------------------------------------------------------- build


def _sleep_seconds(cmds: list[Command]) -> float:
    total = 0.0
    for c in cmds:
        if c.argv and c.argv[0] == "sleep" and len(c.argv) > 1:
            m = re.fullmatch(r"(\d+(?:\.\d+)?)([smh]?)", c.argv[1])
            if m:
                total += float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)] * c.repeat
    return total


def build_view(traj: Trajectory) -> FrozenDict:
    """The read-only view of ``traj`` (see the module docstring for the schema)."""
    try:
        return _build(traj)
    except Exception as exc:  # never let one odd trajectory stop a corpus; keep the raw text
        return _fallback(traj, exc)


def _fallback(traj: Trajectory, exc: Exception) -> FrozenDict:
    steps = []
    for s in traj.steps:
        think = s.tool == "think"
        steps.append(
            {
                "index": s.index, "tool": s.tool, "command": "" if think else s.text, "think": s.text if think else "",
                "observation": s.observation, "timestamp": None, "latency_ms": s.latency_ms, "requests": (),
                "status": None, "statuses": (), "listeners": (), "files_written": (), "secrets": (), "repeat": 1,
                "sleeps": 0.0,
            }
        )
    targets, hosts = _targets(traj.prompt)
    return freeze(
        {
            "id": opaque_id(traj.id), "task": traj.task, "prompt": traj.prompt, "outcome": traj.outcome,
            "solved": traj.solved is True, "n_steps": len(traj.steps), "targets": targets, "target_hosts": hosts,
            "own_addresses": (), "steps": steps, "requests": (), "secrets": (), "listeners": (), "files_written": (),
            "flag_step": next((i for i, s in enumerate(traj.steps) if "FLAG{" in s.observation), -1), "hosts": {},
        }
    )


def _build(traj: Trajectory) -> FrozenDict:
    targets, target_hosts = _targets(traj.prompt)
    files: dict[str, str] = {}
    known: dict[str, str] = {}
    for m in _CREDS_IN_PROMPT.finditer(traj.prompt or ""):
        pw = m.group(2).rstrip(".,;)")
        if len(pw) >= 4:
            known[pw] = "password"
    own: list[str] = []
    t0: float | None = None
    raw_steps: list[dict[str, Any]] = []
    for pos, step in enumerate(traj.steps):
        tool = step.tool or ""
        is_think = tool == "think"
        text = step.text or ""
        obs = step.observation or ""
        cmds: list[Command] = []
        written: dict[str, str] = {}
        reqs: list[Request] = []
        if not is_think and text:
            if tool in _PYTHON_TOOLS:
                reqs = python_requests(text, files.get)
            else:
                cmds, written = run_script(text, files.get)

                def lookup(path: str, _w: dict[str, str] = written) -> str | None:
                    return _w[path] if path in _w else files.get(path)

                reqs = extract_requests(cmds, lookup)
        files.update(written)
        ts = _seconds(step.timestamp)
        if ts is not None and t0 is None:
            t0 = ts
        for addr in own_addresses_of(cmds, obs):
            if addr not in own:
                own.append(addr)
        req_dicts = [_request_dict(r, pos) for r in reqs]
        statuses = _attribute_responses(req_dicts, obs)
        raw_steps.append(
            {
                "index": step.index if isinstance(step.index, int) else pos,
                "pos": pos,
                "tool": tool,
                "command": "" if is_think else text,
                "think": text if is_think else "",
                "observation": obs,
                "timestamp": None if ts is None or t0 is None else round(ts - t0, 6),
                "latency_ms": step.latency_ms,
                "requests": req_dicts,
                "status": statuses[-1] if statuses else None,
                "statuses": statuses,
                "listeners": [dict(li, step=pos) for li in listeners_of(cmds, lambda p, _w=written: _w.get(p, files.get(p)))],
                "files_written": [{"path": p, "content": c} for p, c in written.items()],
                "repeat": max([c.repeat for c in cmds], default=1),
                "sleeps": _sleep_seconds(cmds),
            }
        )
    target_set = set(target_hosts)
    own_set = {a.lower() for a in own}
    hosts: dict[str, int] = {}
    for rs in raw_steps:
        pos = rs.pop("pos")
        col = _Secrets(known)
        for r in rs["requests"]:
            r["host_class"] = host_class(r["host"], target_set, own_set)
            r["body_urls"] = [
                {"url": u, "host": (p := split_url(u)).host, "port": p.port, "host_class": host_class(p.host, target_set, own_set), "field": fld}
                for u, fld in r["body_urls"]
            ]
            r["secrets"] = _request_secrets(r, col, pos)
            hosts[r["host"]] = hosts.get(r["host"], 0) + r["repeat"]
        in_requests = {f["value"] for f in col.items}
        for fw in rs["files_written"]:
            col.scan(fw["content"], "file_written", pos, fw["path"])
        if rs["command"]:
            for kind, value in sec.scan(rs["command"]):
                if value not in in_requests:
                    col.add(kind, value, "command", pos)
        if rs["think"]:
            col.scan(rs["think"], "think", pos)
        col.scan(rs["observation"], "observation", pos)
        rs["secrets"] = col.items
        for r in rs["requests"]:
            r["json"] = r.pop("json_plain")
            for k in ("query_text", "auth_password", "write_out", "include_headers"):
                del r[k]
    steps = [freeze(rs) for rs in raw_steps]
    requests = tuple(r for s in steps for r in s["requests"])
    return FrozenDict(
        id=opaque_id(traj.id),
        task=traj.task,
        prompt=traj.prompt or "",
        outcome=traj.outcome,
        solved=traj.solved is True,
        n_steps=len(traj.steps),
        targets=tuple(targets),
        target_hosts=tuple(target_hosts),
        own_addresses=tuple(own),
        steps=tuple(steps),
        requests=requests,
        secrets=tuple(f for s in steps for f in s["secrets"]),
        listeners=tuple(li for s in steps for li in s["listeners"]),
        files_written=tuple(fw for s in steps for fw in s["files_written"]),
        flag_step=next((s["index"] for s in steps if "FLAG{" in s["observation"]), -1),
        hosts=FrozenDict(sorted(hosts.items())),
    )
