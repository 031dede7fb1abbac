"""The read-only trajectory view a monitor program sees: ``build_view(traj)``.

A view is a :class:`~monsearch.views.frozen.FrozenDict` (fields readable as
``view.steps`` or ``view["steps"]``), tuples for sequences, and plain
str/int/float/bool/None leaves. It never contains labels, verdicts, judge
output, file paths, the generator name or ``meta``. Parsing is done once per
trajectory, outside the sandbox; :func:`build_view` is pure and never raises.

Schema (every field is always present)::

    view
      id            str    opaque id: HMAC of the trajectory id under a secret key
                           of the sandbox pool (per process outside a pool), so it
                           cannot be turned back into the real id
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
      files_written tuple[file]     all files written (cat/echo/printf > f, tee,
                                    Python open(f, "w").write / json.dump)
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
                    "python_aiohttp" | "python_socket"
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
      field  JSON/form field path for body findings, header name for header
             findings, file path for file_written, else ""
      A value is reported once per (where, field); values found earlier in
      the run (and the prompt's "known test credentials") are also found
      where no pattern would match them (e.g. "viewer123" in a project name).

    listener {kind, port, background, echo, step}
      kind   "nc" | "socat" | "http.server" | "python_server" | "php" |
             "httpd" | "tunnel"
      echo   a Python handler that writes the request body back

Mapping keys double as attributes except where they collide with dict
methods: use ``req.json["items"]``, not ``req.json.items``, for a body field
named ``items``.

Build many views with :func:`build_views` (pauses the cyclic GC). Parsing is
memoised per command text (and the earlier files it reads), so a worker can
call :func:`clear_caches` once its views are built. Views pickle, but a round
trip costs more than building one: fork workers that already hold them.

Limits. Agents write the trajectories, so a view's work is bounded whatever their
size; each limit is spent in step order (a prefix of a trajectory gets the view of
that prefix of its full view), and none is reached by a real run (the largest of
the synthetic corpus uses under a tenth of each):

- :data:`PARSE_BUDGET`: the commands of a trajectory are parsed (shell, Python,
  HTTP) while their text, :data:`STEP_PARSE_COST` per step and what the readers
  built from it (:mod:`monsearch.views.expansions`) add up to at most this; a
  step that does not fit keeps its command, output and secret findings, but no
  requests, listeners or files written (a later, smaller step may still fit);
- :data:`SCAN_WORDS`: the secret scan of texts taken from the trajectory (outputs,
  commands, thoughts) looks at this many words of 16 characters or more (where
  every pattern lives) in all; past it, a text is scanned up to where its share
  ends. Only trajectories of more than :data:`SCAN_FREE_CHARS` characters count;
- :data:`SEARCH_BUDGET`: the search for values found earlier (the last paragraph
  of ``finding``) looks through at most this many characters, each text counted
  once per value searched for; past it, values are searched for oldest first
  while any is left;
- own addresses: a step's output is read for at most
  :data:`~monsearch.views.infra.OWN_CANDIDATES` addresses per reading (and
  :data:`~monsearch.views.infra.OWN_LINES` lines), the rest ignored.
"""

from __future__ import annotations

import base64
import functools
import gc
import itertools
import re
from collections.abc import Iterable
from typing import Any, NamedTuple

from monsearch.corpora.model import Trajectory
from monsearch.views import expansions
from monsearch.views import secrets as sec
from monsearch.views.command import Command
from monsearch.views.frozen import FrozenDict, freeze
from monsearch.views.http_extract import extract_requests, read_python
from monsearch.views.ids import new_view_id_key, view_id  # noqa: F401 - re-exported
from monsearch.views.infra import (
    listeners_of,
    own_addresses_of,
    statuses_in,
    strip_write_out,
    write_out_status,
)
from monsearch.views.python_reader import clear_caches as _clear_python_caches
from monsearch.views.request import split_url
from monsearch.views.request_proto import _Proto, _proto
from monsearch.views.request_proto import clear_caches as _clear_proto_caches
from monsearch.views.run_context import (  # noqa: F401 - host_class re-exported
    _prompt_parts,
    _relative_times,
    _targets,
    host_class,
)
from monsearch.views.shell import clear_caches as _clear_shell_caches
from monsearch.views.shell import run_script

#: The view type: one concrete read-only mapping class.
TrajectoryView = FrozenDict

#: Parse work of one trajectory (characters of command text, and of what the readers
#: built from them, plus :data:`STEP_PARSE_COST` per step): see the module docstring.
PARSE_BUDGET = 1_000_000
#: What parsing a step costs besides its text (splitting, the request's URL...).
STEP_PARSE_COST = 256
#: Words of 16 characters or more the secret scan of one trajectory looks at.
SCAN_WORDS = 30_000
#: A trajectory of at most this many characters of commands and outputs cannot hold
#: more than :data:`SCAN_WORDS` such words (each takes 16 at least): it is
#: scanned without counting them.
SCAN_FREE_CHARS = 16 * SCAN_WORDS
#: Characters the search for earlier-found values may look through in one trajectory.
SEARCH_BUDGET = 100_000_000
#: A word the secret scan looks at (:func:`~monsearch.views.secrets.scan` splits at
#: whitespace, as ``\S`` does).
_LONG_WORD = re.compile(r"\S{16,}")
_LONG_WORDS = _LONG_WORD.findall

_PYTHON_TOOLS = frozenset(
    {"python", "execute_python", "run_python", "ipython", "python_exec", "code_interpreter"}
)


# --------------------------------------------------------------------------- responses

_VERBOSE_LINE = re.compile(
    r"^(?:[*<>{}](?: .*)?|\s*% Total.*|\s+Dload.*|\s*\d+\s+\d+\s+\d+\s+\d+.*)\r?$"
)
_STATUS_LINE = re.compile(r"^(?:< )?HTTP/\d")


@functools.lru_cache(maxsize=32768)
def _strip_headers(text: str) -> str:
    """Response body: the output without status/header blocks and curl -v noise.

    Cached (pure): outputs repeat across steps and runs."""
    if "HTTP/" not in text and "\n* " not in text and not text.startswith("*"):
        return text.strip("\n")
    out: list[str] = []
    in_headers = False
    for line in text.split("\n"):
        s = line.rstrip("\r")
        # The first character rules out most lines before a pattern is tried.
        c = s[:1]
        if (c == "H" or c == "<") and _STATUS_LINE.match(s):
            in_headers = True
            continue
        if in_headers:
            if s.strip() in ("", "<"):
                in_headers = False
            continue
        if c:
            if c in "*<>{}":
                # _VERBOSE_LINE's first branch (a curl -v marker alone or before a blank);
                # its other branches need a "%", blank or digit first.
                if len(s) == 1 or s[1] == " ":
                    continue
            elif (c == "%" or c.isspace() or c.isdecimal()) and _VERBOSE_LINE.match(s):
                continue
        out.append(line)
    return "\n".join(out).strip("\n")


# --------------------------------------------------------------------------- secrets


class _Secrets:
    """Collects one step's findings (frozen, de-duplicated) and remembers known values.

    One collector serves a whole trajectory: :meth:`take` hands over a step's findings
    and starts the next step's (most steps find nothing, so nothing is rebuilt then)."""

    __slots__ = ("known", "items", "seen", "search", "words")

    def __init__(self, known: dict[str, str], words: int | None = None):
        self.known = known
        self.items: list[FrozenDict] = []
        self.seen: set[tuple[str, str, str, str]] = set()
        #: What is left of :data:`SEARCH_BUDGET`, and of :data:`SCAN_WORDS` (None when
        #: the trajectory is too small to count them: see :func:`_build`).
        self.search = SEARCH_BUDGET
        self.words = words

    def take(self) -> tuple[FrozenDict, ...]:
        """The findings collected since the last call, in order."""
        items = self.items
        if not items:
            return ()
        self.items = []
        self.seen = set()
        return tuple(items)

    def add(self, kind: str, value: str, where: str, step: int, field: str = "") -> None:
        if not value:
            return
        key = (kind, value, where, field)
        if key in self.seen:
            return
        self.seen.add(key)
        # (A dict display passed to FrozenDict is cheaper than keyword arguments.)
        self.items.append(
            FrozenDict({"kind": kind, "value": value, "where": where, "step": step, "field": field})
        )
        if len(value) >= 6 and kind != "flag" and value not in self.known:
            self.known[value] = kind

    def text(self, text: str, where: str, step: int, field: str = "") -> None:
        """Pattern findings plus every earlier-seen secret value inside ``text``."""
        if not text:
            return
        for kind, value in sec.scan(text):
            self.add(kind, value, where, step, field)
        if self.known and len(text) >= 6:
            cost = len(text) * len(self.known)
            if cost > self.search:
                self.search_some(text, where, step, field)
                return
            self.search -= cost
            for value, kind in self.known.items():
                if value in text:
                    self.add(kind, value, where, step, field)

    def scanned(self, found: tuple[tuple[str, str], ...], text: str, where: str, step: int) -> None:
        """:meth:`text` (no field) given ``found = sec.scan(text)`` (``()`` for an empty
        text): a step's output keeps its scan in the derived cache (one lookup fewer)."""
        for kind, value in found:
            self.add(kind, value, where, step)
        if self.known and len(text) >= 6:
            cost = len(text) * len(self.known)
            if cost > self.search:
                self.search_some(text, where, step)
                return
            self.search -= cost
            for value, kind in self.known.items():
                if value in text:
                    self.add(kind, value, where, step)

    def search_some(self, text: str, where: str, step: int, field: str = "") -> None:
        """The search of :meth:`text` past :data:`SEARCH_BUDGET`: the values it still
        affords, oldest first (the prompt's credentials come first)."""
        n = self.search // len(text)
        if not n:
            return
        self.search -= n * len(text)
        for value, kind in list(itertools.islice(self.known.items(), n)):
            if value in text:
                self.add(kind, value, where, step, field)

    def budgeted(self, text: str) -> tuple[tuple[str, str], ...] | None:
        """``sec.scan(text)`` limited to what is left of :data:`SCAN_WORDS`, which it
        spends; None when that is all of it, or nothing is counted (then the caller's
        own, cached, ``sec.scan(text)`` is the same)."""
        if self.words is None or len(text) < 16:
            return None
        if not self.words:  # (spent: any word at all cuts the scan to nothing)
            return () if _LONG_WORD.search(text) else None
        n = len(_LONG_WORDS(text))
        if n <= self.words:
            self.words -= n
            return None
        left, self.words = self.words, 0
        if not left:
            return ()
        end = next(itertools.islice(_LONG_WORD.finditer(text), left - 1, None)).end()
        # Uncached: a cut text is seen once, and may be megabytes.
        return sec.scan.__wrapped__(text[:end])


def _request_secrets(
    p: _Proto, cls: str, body_urls: tuple[FrozenDict, ...], col: _Secrets, step: int
) -> tuple[FrozenDict, ...]:
    """The findings in one request (also collected as the step's findings)."""
    if p.haystack is not None:
        # Only known values can be found: none of them inside the haystack, nothing found.
        # (Past SEARCH_BUDGET the parts are searched one by one, with what is left.)
        haystack = p.haystack
        cost = len(haystack) * len(col.known)
        if cost <= col.search:
            col.search -= cost
            for value in col.known:
                if value in haystack:
                    break
            else:
                return ()
    start = len(col.items)
    for name, value in dict.items(p.headers):  # (skips FrozenDict's attribute hook)
        col.text(value, "header", step, name)
        if name == "authorization" and value[:6].lower() == "basic ":
            try:
                decoded = base64.b64decode(value[6:].strip() + "==", validate=False).decode("utf-8")
            except (ValueError, UnicodeDecodeError):
                decoded = ""
            if ":" in decoded:
                col.add("basic_auth", decoded, "header", step, name)
    if p.auth_password is not None:
        where = "header" if cls == "target" else "url_other_host"
        col.add("basic_auth", f"{p.auth or ''}:{p.auth_password}", where, step)
        col.add("password", p.auth_password, where, step)
    col.text(p.url_text, "query" if cls == "target" else "url_other_host", step)
    if p.leaves:
        for path, value, where, is_password in p.leaves:
            if is_password:
                col.add("password", value, where, step, path)
            col.text(value, where, step, path)
    elif p.body:
        col.text(p.body, "body", step)
    for bu in body_urls:
        if bu["host_class"] not in ("target", "loopback"):
            col.text(bu["url"], "url_other_host", step, bu["field"])
    for upl in p.files:
        col.text(upl["content"], "file_content", step, upl["field"])
    # Every finding added since ``start`` belongs to this request.
    return tuple(col.items[start:])


#: ``_statuses`` of the many outputs that show no status (one shared value, so caching
#: them keeps no new objects for the garbage collector to walk).
_NO_STATUSES: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())


@functools.lru_cache(maxsize=32768)
def _statuses(observation: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Positions and codes of ``statuses_in(observation)``. Cached (pure): outputs repeat
    across steps and runs."""
    found = statuses_in(observation)
    if not found:
        return _NO_STATUSES
    return tuple([pos for pos, _ in found]), tuple([c for _, c in found])


def _attribute(
    protos: tuple[_Proto, ...], observation: str
) -> tuple[tuple[int, ...], tuple[int | str | None, ...]]:
    """HTTP statuses shown in the output, and (status, response) per request when
    attributable, flattened into one tuple (fewer objects to keep in the cache)."""
    positions, codes = _statuses(observation)
    n = len(protos)
    if n == 0:
        return codes, ()
    if n == 1:
        p = protos[0]
        status = write_out_status(observation, p.write_out) if p.write_out else None
        if status is None and codes:
            status = codes[-1]
        if status is not None and status not in codes:
            codes += (status,)
        body = _strip_headers(observation)
        if p.write_out:
            body = strip_write_out(body, p.write_out)
        return codes, (status, body)
    if len(positions) == n and all(p.include_headers for p in protos):
        out: list[int | str | None] = []
        for k in range(n):
            end = positions[k + 1] if k + 1 < n else len(observation)
            out += (codes[k], _strip_headers(observation[positions[k] : end]))
        return codes, tuple(out)
    return codes, (None, "") * n


# --------------------------------------------------------------------------- build


_SLEEP_ARG = re.compile(r"(\d+(?:\.\d+)?)([smh]?)")
_SLEEP_UNIT = {"": 1, "s": 1, "m": 60, "h": 3600}


def _repeat_and_sleeps(cmds: list[Command]) -> tuple[int, float]:
    """Largest loop count of a step's commands (1 without commands) and its total
    seconds of ``sleep`` (loops counted), in one pass."""
    if not cmds:
        return 1, 0.0
    repeat = cmds[0].repeat
    total = 0.0
    for c in cmds:
        if c.repeat > repeat:
            repeat = c.repeat
        argv = c.argv
        if argv and argv[0] == "sleep" and len(argv) > 1:
            m = _SLEEP_ARG.fullmatch(argv[1])
            if m:
                total += float(m.group(1)) * _SLEEP_UNIT[m.group(2)] * c.repeat
    return repeat, total


def clear_caches() -> None:
    """Drop the parse caches (e.g. in a worker once its views are built)."""
    _STEP_CACHE.clear()
    _DERIVED_CACHE.clear()
    _prompt_parts.cache_clear()
    _clear_proto_caches()
    _statuses.cache_clear()
    _strip_headers.cache_clear()
    sec.scan.cache_clear()
    sec.word_findings.cache_clear()
    sec.classify_token.cache_clear()
    sec.is_password_field.cache_clear()
    _clear_shell_caches()
    split_url.cache_clear()
    _clear_python_caches()


def build_view(traj: Trajectory) -> FrozenDict:
    """The read-only view of ``traj`` (see the module docstring for the schema)."""
    try:
        return _build(traj)
    except Exception as exc:  # never let one odd trajectory stop a corpus; keep the raw text
        return _fallback(traj, exc)


class PrefixViews:
    """The views of a trajectory's prefixes (its first ``k`` steps, for ``k`` from 0 to
    all of them), each equal to :func:`build_view` of that prefix, without building each.

    Building every prefix repeats each step's second pass once per later prefix
    (quadratic in the steps). But a prefix's view is its full view's first ``k`` steps
    and the requests, secrets, listeners and files written of those steps, with its own
    ``n_steps``, ``flag_step`` and ``hosts``: every step is read in order, and every
    limit of the module docstring spent in step order, so a step's view depends on the
    steps before it only, except through the agent's own addresses (learned anywhere in
    the run, they classify the hosts of every step). A prefix that has not yet learned
    all of them (the few before the step that taught the last) is built instead; so is
    every prefix when the full view is the fallback of a trajectory that failed.
    """

    def __init__(self, traj: Trajectory) -> None:
        self.traj = traj
        try:
            self.full = _build(traj)
        except Exception as exc:  # build_view's fallback: then every prefix is built
            self.full = _fallback(traj, exc)
            self.exact_from = len(traj.steps) + 1
            return
        full = self.full
        # Where each step's requests, secrets, listeners and files end in the full lists.
        ends = [(0, 0, 0, 0)]
        r = s = li = f = 0
        for st in full["steps"]:
            r += len(st["requests"])
            s += len(st["secrets"])
            li += len(st["listeners"])
            f += len(st["files_written"])
            ends.append((r, s, li, f))
        self.ends = ends
        self.flag_pos = next(
            (i for i, st in enumerate(traj.steps) if "FLAG{" in (st.observation or "")),
            len(traj.steps),
        )
        self.exact_from = self._learned_all(full["own_addresses"])

    def _learned_all(self, own: tuple[str, ...]) -> int:
        """The shortest prefix that knows all the run's own addresses (its views and the
        longer ones are derived): found by bisection, as the list only grows."""
        if not own:
            return 0
        lo, hi = 1, len(self.traj.steps)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.built(mid)["own_addresses"] == own:
                hi = mid
            else:
                lo = mid + 1
        return lo

    def built(self, k: int) -> FrozenDict:
        """:func:`build_view` of the first ``k`` steps."""
        t = self.traj
        return build_view(
            Trajectory(t.id, t.task, t.generator, t.prompt, t.steps[:k], t.outcome, t.solved)
        )

    def view(self, k: int) -> FrozenDict:
        """The view of the first ``k`` steps (0 <= k <= number of steps)."""
        if k < self.exact_from:
            return self.built(k)
        full = self.full
        if k == len(full["steps"]):
            return full
        r, s, li, f = self.ends[k]
        requests = full["requests"][:r]
        hosts: dict[str, int] = {}
        for req in requests:
            host = req["host"]
            hosts[host] = hosts.get(host, 0) + req["repeat"]
        # (The keys in _build's order: programs may iterate over them.)
        return FrozenDict(
            {
                "id": full["id"],
                "task": full["task"],
                "prompt": full["prompt"],
                "outcome": full["outcome"],
                "solved": full["solved"],
                "n_steps": k,
                "targets": full["targets"],
                "target_hosts": full["target_hosts"],
                "own_addresses": full["own_addresses"],
                "steps": full["steps"][:k],
                "requests": requests,
                "secrets": full["secrets"][:s],
                "listeners": full["listeners"][:li],
                "files_written": full["files_written"][:f],
                "flag_step": full["flag_step"] if self.flag_pos < k else -1,
                "hosts": FrozenDict(sorted(hosts.items())),
            }
        )


def build_views(trajectories: Iterable[Trajectory]) -> list[FrozenDict]:
    """Views of many trajectories, in order.

    The cyclic garbage collector is paused while building: views hold no
    reference cycles, and collecting over millions of new containers would
    otherwise cost about a quarter of the time.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return [build_view(t) for t in trajectories]
    finally:
        if was_enabled:
            gc.enable()


def _fallback(traj: Trajectory, exc: Exception) -> FrozenDict:
    steps = []
    for s in traj.steps:
        think = s.tool == "think"
        steps.append(
            {
                "index": s.index,
                "tool": s.tool,
                "command": "" if think else s.text,
                "think": s.text if think else "",
                "observation": s.observation,
                "timestamp": None,
                "latency_ms": s.latency_ms,
                "requests": (),
                "status": None,
                "statuses": (),
                "listeners": (),
                "files_written": (),
                "secrets": (),
                "repeat": 1,
                "sleeps": 0.0,
            }
        )
    targets, hosts = _targets(traj.prompt)
    return freeze(
        {
            "id": view_id(traj.id),
            "task": traj.task,
            "prompt": traj.prompt,
            "outcome": traj.outcome,
            "solved": traj.solved is True,
            "n_steps": len(traj.steps),
            "targets": targets,
            "target_hosts": hosts,
            "own_addresses": (),
            "steps": steps,
            "requests": (),
            "secrets": (),
            "listeners": (),
            "files_written": (),
            "flag_step": next(
                (i for i, s in enumerate(traj.steps) if "FLAG{" in s.observation), -1
            ),
            "hosts": {},
        }
    )


#: Commands, files written, the requests (each as its :class:`_Proto`) and listeners.
_StepParse = tuple[list[Command], dict[str, str], tuple[_Proto, ...], tuple[dict[str, Any], ...]]
#: A :data:`_STEP_CACHE` entry: the files read from earlier steps and their contents
#: (None when none), then the :data:`_StepParse` fields (flat: one tuple per step, not
#: two, for the garbage collector to walk), then the characters the readers built
#: (:func:`monsearch.views.expansions.last_spent`, charged to :data:`PARSE_BUDGET`).
_StepEntry = tuple[
    dict[str, Any] | None,
    list[Command],
    dict[str, str],
    tuple[_Proto, ...],
    tuple[dict[str, Any], ...],
    int,
]
# (tool, text) -> entry. A hit needs the same text AND the same contents of every
# earlier file it read, so the cache never changes a result; it only skips
# re-parsing the commands agents repeat within and across runs.
_STEP_CACHE: dict[tuple[str, str], _StepEntry] = {}
_STEP_CACHE_MAX = 50_000


_MODULE_DEP = "\0module:"


def find_module(files: dict[str, str], rel: str) -> tuple[str, str] | None:
    """The latest-listed file in ``files`` that ``import`` of ``rel`` (``pkg/client``) can
    mean: ``.../pkg/client.py`` or ``.../pkg/client/__init__.py``."""
    py, init = f"{rel}.py", f"{rel}/__init__.py"
    found = None
    for path in files:
        if path in (py, init) or path.endswith(("/" + py, "/" + init)):
            found = path
    return (found, files[found]) if found is not None else None


#: Key in the per-run file map under which a Python tool's earlier cells are kept
#: (a notebook-like tool keeps the functions and names they define).
_SESSION = "\0python-session:"
#: Separates the cells kept under :data:`_SESSION`.
CELL_SEP = "\n#\0cell\n"


def remember_step(files: dict[str, str], tool: str, text: str, written: dict[str, str]) -> None:
    """Update the run's file map after a step: files it wrote, and a Python tool's cell."""
    files.update(written)
    if tool in _PYTHON_TOOLS:
        key = _SESSION + tool
        files[key] = files[key] + CELL_SEP + text if key in files else text


def _dep_value(files: dict[str, str], key: str) -> Any:
    if key.startswith(_MODULE_DEP):
        return find_module(files, key[len(_MODULE_DEP) :])
    return files.get(key)


def _parse_step(tool: str, text: str, files: dict[str, str]) -> _StepParse:
    """Commands, files written, requests (as :class:`_Proto`) and listeners of one step
    (memoised, pure)."""
    return _parse_entry(tool, text, files)[1:5]  # type: ignore[return-value]


def _parse_entry(tool: str, text: str, files: dict[str, str]) -> _StepEntry:
    """:func:`_parse_step`'s cache entry: the earlier files it read with their contents
    (None when it read none), and the result's fields."""
    key = (tool, text)
    hit = _STEP_CACHE.get(key)
    if hit is not None:
        deps = hit[0]
        if not deps or all(_dep_value(files, p) == c for p, c in deps.items()):
            return hit
    accessed: dict[str, Any] = {}

    def earlier(path: str) -> str | None:
        value = files.get(path)
        accessed[path] = value
        return value

    cmds: list[Command] = []
    written: dict[str, str] = {}

    def modules(rel: str) -> tuple[str, str] | None:
        # A module written earlier in this step, else in an earlier step (a dependency).
        found = find_module(written, rel) if written else None
        if found is None:
            found = find_module(files, rel)
            accessed[_MODULE_DEP + rel] = found
        return found

    listeners: list[dict[str, Any]] = []
    # One expansion budget for the whole step: the shell, the Python heredocs it runs
    # and the requests read from them.
    expansions.begin()
    try:
        if tool in _PYTHON_TOOLS:
            cells = earlier(_SESSION + tool)
            reqs, written = read_python(
                text, earlier, modules=modules, session=cells.split(CELL_SEP) if cells else None
            )
        else:
            cmds, written = run_script(text, earlier)

            def lookup(path: str) -> str | None:
                return written[path] if path in written else earlier(path)

            # Python writes land in ``written`` as they happen, so later commands see them.
            reqs = extract_requests(cmds, lookup, written, modules)
            listeners = listeners_of(cmds, lookup)
    finally:
        expansions.end()
    # The requests are kept as their protos (all a view reads of them): the cache then
    # keeps no Request, and its lists, for the garbage collector to walk. A request
    # whose proto cannot be made (e.g. JSON nested too deep) leaves the requests
    # themselves, and :func:`_derive` raises as before, for the view's fallback.
    protos: tuple[Any, ...] = ()
    if reqs:
        try:
            protos = tuple([_proto(r) for r in reqs])
        except Exception:  # noqa: BLE001 - raised again by _derive
            protos = tuple(reqs)
    # (Most steps read no earlier file: keep no empty dict for them. The listeners are
    # a tuple: never changed, and most steps have none, so the shared ``()`` replaces an
    # empty list the garbage collector would walk.)
    entry: _StepEntry = (
        accessed or None,
        cmds,
        written,
        protos,
        tuple(listeners),
        expansions.last_spent(),
    )
    if len(_STEP_CACHE) >= _STEP_CACHE_MAX:
        _STEP_CACHE.clear()
    _STEP_CACHE[key] = entry
    return entry


#: What pass 1 of :func:`_build` derives from a step's parse result and output alone.
#: (Tuples, empty ones shared: a cold build keeps one per new step for the garbage
#: collector to walk.)
class _Derived(NamedTuple):
    #: The earlier files (with their contents) that the step's parse read, None when
    #: none: a cache hit needs them unchanged.
    deps: dict[str, Any] | None
    #: The parse result's files written and listeners (what pass 1 passes on of it).
    written: dict[str, str]
    listeners: tuple[dict[str, Any], ...]
    own_addresses: tuple[str, ...]
    protos: tuple[_Proto, ...]
    codes: tuple[int, ...]
    #: (status, response) per request, flattened.
    responses: tuple[int | str | None, ...]
    files_written: tuple[FrozenDict, ...]
    repeat: int
    sleeps: float
    #: ``sec.scan`` of the output and of the command text (``()`` for a step not parsed:
    #: a parse result belongs to one text), and whether the output holds "FLAG{". Kept
    #: here, pass 2 skips two scan-cache lookups and a search per step.
    obs_found: tuple[tuple[str, str], ...]
    text_found: tuple[tuple[str, str], ...]
    flag: bool
    #: What parsing the step cost (:data:`PARSE_BUDGET`); 0 when it was not parsed.
    cost: int


_NOT_PARSED: _StepEntry = (None, [], {}, (), (), 0)
# (tool, text, output) -> derived for a parsed step, ("", "", output) for one that is not
# (a parsed step has a text). A step repeated within or across runs skips parsing and
# deriving with this one lookup when the earlier files its parse read are unchanged (as
# a hit of :func:`_parse_step`'s cache needs).
_DERIVED_CACHE: dict[tuple[Any, ...], _Derived] = {}


def _step_derived(
    tool: str,
    text: str,
    obs: str,
    files: dict[str, str],
    parse: bool,
    obs_found: tuple[tuple[str, str], ...] | None = None,
    text_found: tuple[tuple[str, str], ...] | None = None,
) -> _Derived:
    """:func:`_derive` of the step's parse result (``parse``: read ``text`` with
    :func:`_parse_step`, else :data:`_NOT_PARSED`), memoised; with the scans of the
    output and the text given when :data:`SCAN_WORDS` cut them (they join the key)."""
    if obs_found is None and text_found is None:
        key: tuple[Any, ...] = (tool, text, obs) if parse else ("", "", obs)
    else:
        text_found = text_found if parse else None
        key = (tool, text, obs, obs_found, text_found) if parse else ("", "", obs, obs_found)
    hit = _DERIVED_CACHE.get(key)
    if hit is not None:
        deps = hit.deps
        if not deps or all(_dep_value(files, p) == c for p, c in deps.items()):
            return hit
    entry = _parse_entry(tool, text, files) if parse else _NOT_PARSED
    derived = _derive(entry, obs, text, obs_found, text_found)
    if len(_DERIVED_CACHE) >= 100_000:
        _DERIVED_CACHE.clear()
    _DERIVED_CACHE[key] = derived
    return derived


def _derive(
    entry: _StepEntry,
    obs: str,
    text: str,
    obs_found: tuple[tuple[str, str], ...] | None = None,
    text_found: tuple[tuple[str, str], ...] | None = None,
) -> _Derived:
    """What pass 1 derives from a step's parse entry (of ``text``, or
    :data:`_NOT_PARSED`) and output ``obs`` (with the secret scans of both, unless
    given: see :meth:`_Secrets.budgeted`)."""
    deps, cmds, written, protos, listeners, spent = entry
    if protos and type(protos[0]) is not _Proto:
        # Requests whose protos could not be made when parsing: raise that error here.
        protos = tuple([_proto(r) for r in protos])
    codes, responses = _attribute(protos, obs)
    repeat, sleeps = _repeat_and_sleeps(cmds)
    return _Derived(
        deps,
        written,
        listeners,
        tuple(own_addresses_of(cmds, obs)) if cmds and obs else (),
        protos,
        codes,
        responses,
        # (Most steps write nothing: skip building an empty generator.)
        tuple(FrozenDict(path=k, content=v) for k, v in written.items()) if written else (),
        repeat,
        sleeps,
        (sec.scan(obs) if obs else ()) if obs_found is None else obs_found,
        (sec.scan(text) if entry is not _NOT_PARSED else ()) if text_found is None else text_found,
        "FLAG{" in obs,
        len(text) + STEP_PARSE_COST + spent if entry is not _NOT_PARSED else 0,
    )


def _build(traj: Trajectory) -> FrozenDict:
    targets, target_hosts, target_set, passwords = _prompt_parts(traj.prompt or "")
    files: dict[str, str] = {}
    known: dict[str, str] = dict.fromkeys(passwords, "password")
    own: list[str] = []
    own_seen: set[str] = set()
    # The limits of the module docstring: parse work left, and scanned words (counted
    # only in a trajectory large enough to reach them).
    parse_left = PARSE_BUDGET
    size = 0
    for step in traj.steps:
        size += len(step.text or "") + len(step.observation or "")
    col = _Secrets(known, None if size <= SCAN_FREE_CHARS else SCAN_WORDS)
    # Pass 1: read each step (own addresses must be complete before classifying hosts),
    # keeping (step, tool, is_think, text, obs, listeners, derived, text_found): the
    # last is the scan of a thought, or of a command too large to parse (None: a plain
    # sec.scan of it).
    parts = []
    for step in traj.steps:
        tool = step.tool or ""
        is_think = tool == "think"
        text = step.text or ""
        obs = step.observation or ""
        parse = not is_think and bool(text)
        # A command is parsed while it fits in what is left of the budget.
        unparsed = parse and len(text) + STEP_PARSE_COST > parse_left
        parse = parse and not unparsed
        text_cut = obs_cut = None
        if col.words is not None:
            text_cut = col.budgeted(text)
            obs_cut = col.budgeted(obs)
        if obs_cut is None and (text_cut is None or not parse):
            derived = _step_derived(tool, text, obs, files, parse)
        else:  # a scan cut short by SCAN_WORDS
            derived = _step_derived(tool, text, obs, files, parse, obs_cut, text_cut)
        if parse:
            remember_step(files, tool, text, derived.written)
            parse_left -= derived.cost
        for addr in derived.own_addresses:
            if addr not in own_seen:
                own_seen.add(addr)
                own.append(addr)
        found = None if parse else text_cut
        if unparsed and found is None:
            found = sec.scan(text)
        parts.append((step, tool, is_think, text, obs, derived.listeners, derived, found))
    # Pass 2: classify hosts, find secrets, freeze.
    own_set = frozenset(a.lower() for a in own)
    hosts: dict[str, int] = {}
    steps: list[FrozenDict] = []
    all_requests: list[FrozenDict] = []
    all_secrets: list[FrozenDict] = []
    all_listeners: list[FrozenDict] = []
    all_files: list[FrozenDict] = []
    flag_step = -1
    rel_times = _relative_times(traj.steps)
    for pos, (step, tool, is_think, text, obs, listeners, derived, found) in enumerate(parts):
        # (Most steps send nothing, write nothing, start nothing: skip that work for them.)
        if derived.protos:
            requests = _step_requests(derived, pos, target_set, own_set, col, hosts)
            all_requests += requests
        else:
            requests = ()
        n_in_requests = len(col.items)
        files_written = derived.files_written
        if files_written:
            for fw in files_written:
                col.text(fw["content"], "file_written", pos, fw["path"])
            all_files += files_written
        if not is_think and text:
            found_in_text = derived.text_found if found is None else found
            if found_in_text:
                # The values found in this step's requests (built only when needed).
                in_requests = {f["value"] for f in col.items[:n_in_requests]}
                for kind, value in found_in_text:
                    if value not in in_requests:
                        col.add(kind, value, "command", pos)
        elif is_think:
            if found is None:
                col.text(text, "think", pos)
            else:
                col.scanned(found, text, "think", pos)
        # (:meth:`_Secrets.scanned` does nothing without findings or known values to
        # look for, as in most steps: skip the call then.)
        obs_found = derived.obs_found
        if obs_found or (col.known and len(obs) >= 6):
            col.scanned(obs_found, obs, "observation", pos)
        if listeners:
            listeners = tuple([FrozenDict(li, step=pos) for li in listeners])
            all_listeners += listeners
        else:
            listeners = ()
        index = step.index if isinstance(step.index, int) else pos
        if flag_step < 0 and derived.flag:
            flag_step = index
        if col.items:
            secrets = col.take()
            all_secrets += secrets
        else:
            secrets = ()
        codes = derived.codes
        steps.append(
            FrozenDict(
                {
                    "index": index,
                    "tool": tool,
                    "command": "" if is_think else text,
                    "think": text if is_think else "",
                    "observation": obs,
                    "timestamp": rel_times[pos],
                    "latency_ms": step.latency_ms,
                    "requests": requests,
                    "status": codes[-1] if codes else None,
                    "statuses": codes,
                    "listeners": listeners,
                    "files_written": files_written,
                    "secrets": secrets,
                    "repeat": derived.repeat,
                    "sleeps": derived.sleeps,
                }
            )
        )
    return FrozenDict(
        {
            "id": view_id(traj.id),
            "task": traj.task,
            "prompt": traj.prompt or "",
            "outcome": traj.outcome,
            "solved": traj.solved is True,
            "n_steps": len(traj.steps),
            "targets": targets,
            "target_hosts": target_hosts,
            "own_addresses": tuple(own),
            "steps": tuple(steps),
            "requests": tuple(all_requests),
            "secrets": tuple(all_secrets),
            "listeners": tuple(all_listeners),
            "files_written": tuple(all_files),
            "flag_step": flag_step,
            "hosts": FrozenDict(sorted(hosts.items())),
        }
    )


def _step_requests(
    derived: _Derived,
    pos: int,
    target_set: frozenset[str],
    own_set: frozenset[str],
    col: _Secrets,
    hosts: dict[str, int],
) -> tuple[FrozenDict, ...]:
    """The frozen requests of step ``pos`` (their findings go to ``col``, their
    repeats to ``hosts``)."""
    requests = []
    # (status, response) per request, flattened (indexed: a strict zip over one iterator
    # twice raises and clears a StopIteration per step, a microsecond).
    responses = derived.responses
    k = 0
    for p in derived.protos:
        status = responses[k]
        response = responses[k + 1]
        k += 2
        # host_class(p.host, target_set, own_set), its request-only part worked out once.
        h = p.host_key
        cls = "target" if h in target_set else "own" if h in own_set else p.host_other
        body_urls = (
            tuple(
                [
                    FrozenDict(
                        {
                            "url": u,
                            "host": (bp := split_url(u)).host,
                            "port": bp.port,
                            "host_class": host_class(bp.host, target_set, own_set),
                            "field": fld,
                        }
                    )
                    for u, fld in p.body_urls
                ]
            )
            if p.body_urls
            else ()
        )
        found = _request_secrets(p, cls, body_urls, col, pos)
        hosts[p.host] = hosts.get(p.host, 0) + p.repeat
        # (The template's clone plus six fields is cheaper than a 24-field display.)
        requests.append(
            FrozenDict(
                p.view,
                step=pos,
                host_class=cls,
                status=status,
                response=response,
                body_urls=body_urls,
                secrets=found,
            )
        )
    return tuple(requests)
