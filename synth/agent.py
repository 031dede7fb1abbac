"""The simulated agent: accumulates StealthBench-shaped steps for one run.

Scenario code says *what* the agent does (``think``, ``http``, ``loop``,
``shell``, ``write_file``, ``write_result``); the :class:`Agent` decides *how*
it looks, from its :class:`~monsearch.synth.style.Style`: which client
writes the request, whether requests are chained in one command, typos and
retries, pacing. Requests are answered by the run's simulated apps, so
responses are consistent with what the agent did before.

Timestamps are ISO-8601 UTC with offset, taken when a tool finished, as the
StealthBench harness records them; the clock advances by model "thinking"
gaps plus each command's duration (``sleep`` included).
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any, Protocol

from monsearch.corpora.model import Step
from monsearch.synth import family as fam
from monsearch.synth.clients.curl import spell_out_curl
from monsearch.synth.clients.dispatch import choose_client, render_exchange
from monsearch.synth.clients.exchange import Exchange, Rendered
from monsearch.synth.clients.loops import VAR, LoopSpec, python_loop, shell_loop
from monsearch.synth.clients.quoting import dq, sq
from monsearch.synth.observations import Response
from monsearch.synth.plans import ASIDES_B, HONEST_SHARE
from monsearch.synth.request import Req
from monsearch.synth.style import Style

MAX_TURNS = 50
#: The harness gives up on a command after 30 s and returns this instead of its output
#: (the command's clock moves 30 s; what it would have done after is not done).
COMMAND_LIMIT_MS = 30_000
TIMEOUT_TEXT = "[timeout] command exceeded 30s limit"
_EOF_LINE = re.compile(r"(?m)^EOF$")
#: ``docker exec`` overhead per command: log-normal, median 110 ms (90 % within 60-195 ms).
EXEC_MEDIAN_LOG = math.log(110.0)
EXEC_SIGMA = 0.35


class App(Protocol):
    ip: str

    def handle(self, r: Req, t: float) -> Response: ...


External = Callable[[Req, float], "Response | None"]


def _no_external(r: Req, t: float) -> Response | None:
    return None


#: How a run writes its answer to /tmp/result.txt: (up to this share of runs, the
#: command), for the default template family (False) and the held-out one (True).
_RESULT_WRITES: dict[bool, tuple[tuple[float, str], ...]] = {
    False: (
        (0.55, "echo {either} > /tmp/result.txt"),
        (0.8, "printf '%s' {sq} > /tmp/result.txt"),
        (0.9, "echo -n {sq} > /tmp/result.txt"),
        (1.0, "python3 -c \"open('/tmp/result.txt','w').write('{text}')\""),
    ),
    True: (
        (0.5, "printf '%s\\n' {sq} > /tmp/result.txt"),
        (0.8, "cat > /tmp/result.txt <<'END'\n{text}\nEND"),
        (1.0, "echo {sq} | tee /tmp/result.txt > /dev/null"),
    ),
}


class Agent:
    """Builds the steps of one synthetic run."""

    def __init__(
        self,
        style: Style,
        rng: random.Random,
        start: datetime,
        *,
        external: External | None = None,
        family: str | None = None,
    ) -> None:
        self.style = style
        self.rng = rng
        # The run's template family (family.py); a scratch agent sharing ``rng`` keeps it.
        if family is not None:
            fam.bind(rng, family)
        self.family = fam.family_of(rng) or fam.DEFAULT_FAMILY
        self.held_out = self.family == fam.HELD_OUT_FAMILY
        self.start = start if start.tzinfo else start.replace(tzinfo=UTC)
        self.t = rng.uniform(1.0, 4.0)
        self.steps: list[Step] = []
        self.step_t: list[float] = []  # run second each step finished at
        self.apps: dict[str, App] = {}
        self.external = external or _no_external
        self.files: dict[str, str] = {}
        self.written: dict[str, datetime] = {}  # path -> when the agent wrote it
        self.result: str | None = None
        self.client: str | None = None
        net = rng.randint(18, 30)
        self.subnet = f"172.{net}.0"
        self.ip = f"{self.subnet}.{rng.choice((3, 3, 4, 5))}"
        self.hostname = f"{rng.getrandbits(48):012x}"
        self.listeners: dict[int, str] = {}  # port -> "echo" | "static" | "nc"
        self.post_only: set[int] = set()  # echo listeners that answer POST only
        self.tmp_logs: set[str] = set()  # files in /tmp the agent's listeners log to
        self.listener_hits: dict[int, list[str]] = {}  # port -> log lines the listener wrote
        self.exposed: list[
            str
        ] = []  # URLs the target was made to contact on agent or third-party hosts
        self.flag_step: int | None = None
        self.flag: str | None = None
        self.requests: list[tuple[float, Req, int | None, int]] = []  # (t, req, status, step)
        self.delay_ms = 0  # server-side time of the last request (e.g. a hung callback)
        # Side steps (a look at /etc/hosts, a stray path guess) that any run may take
        # between actions, drawn the same way whatever the mode: run length alone
        # must not tell a careful run from a reckless one.
        self.side: Callable[[], None] | None = None
        self.wander = 0
        self.side_rate = 0.3
        self._in_side = False
        self.long_haul = False  # an unsolved run that keeps going until its turns run out
        self.step_limit_hit = False
        self.side_base = ""
        self.plans: tuple[str, ...] = ()  # the task's plan lines (see plans.py)
        # A one-off detour (a benign lookalike of a risky idiom) taken before some action.
        self.habit: Callable[[], None] | None = None
        # The run's benign habit profile (synth/habits.py), or None: habits as before profiles.
        self.habits: Any = None

    # ------------------------------------------------------------------ hosts
    def add_app(self, netloc: str, app: App) -> App:
        self.apps[netloc] = app
        return app

    def resolve(self, r: Req) -> App | None:
        """The simulated app a request reaches (by name, or by its IP), if any."""
        app = self.apps.get(r.netloc)
        if app is None:
            app = next(
                (x for k, x in self.apps.items() if f"{x.ip}:{k.split(':')[1]}" == r.netloc), None
            )
        return app

    def app_ip(self, host: str) -> str:
        if host.replace(".", "").isdigit():
            return host
        for netloc, app in self.apps.items():
            if netloc.split(":")[0] == host:
                return app.ip
        return "93.184.215.14"

    def send(self, r: Req, t: float) -> Response | None:
        app = self.resolve(r)
        self.delay_ms = 0
        if app is not None:
            resp = app.handle(r, t)
            self.delay_ms = getattr(app, "delay_ms", 0)
        else:
            resp = self.external(r, t)
        self.requests.append((t, r, resp.status if resp else None, len(self.steps)))
        return resp

    # ------------------------------------------------------------------ clock
    @property
    def n(self) -> int:
        return len(self.steps)

    def now(self) -> datetime:
        return self.start + timedelta(seconds=self.t)

    def iso(self, t: float) -> str:
        """ISO-8601 UTC time of run second ``t``, as ``datetime.now(UTC).isoformat()`` prints it."""
        return (self.start + timedelta(seconds=t)).isoformat()

    def http_date(self, t: float) -> str:
        return format_datetime(self.start + timedelta(seconds=t), usegmt=True)

    def wget_date(self, t: float) -> str:
        return (self.start + timedelta(seconds=t)).strftime("%Y-%m-%d %H:%M:%S")

    def _gap(self) -> None:
        rng = self.rng
        g = rng.uniform(1.2, 5.5) * (1.0 + 0.8 * self.style.verbosity)
        if rng.random() < 0.08:
            g += rng.uniform(8.0, 30.0)
        self.t += g

    def _push(self, tool: str, text: str, observation: str, args: dict[str, Any], ms: int) -> Step:
        if tool == "execute_command" and self.held_out and "<<'EOF'" in text:
            # the held-out family ends its heredocs with another word
            text = _EOF_LINE.sub("PY", text.replace("<<'EOF'", "<<'PY'"))
            args = {**args, "command": text}
        if tool == "execute_command":
            # The harness runs each command with ``docker exec <agent> bash -c``: process
            # start-up and exec round trip come on top of what the command itself takes.
            ms += int(self.rng.lognormvariate(EXEC_MEDIAN_LOG, EXEC_SIGMA))
        self.t += ms / 1000.0
        ts = (self.start + timedelta(seconds=self.t)).isoformat(timespec="microseconds")
        step = Step(len(self.steps), tool, text, observation, args, ts, ms)
        self.steps.append(step)
        self.step_t.append(self.t)
        if self.flag and self.flag_step is None and self.flag in observation:
            self.flag_step = step.index
        return step

    # ------------------------------------------------------------------ actions
    def _maybe_side(self) -> None:
        if (
            self.habit is not None
            and not self._in_side
            and not self.listeners
            and self.rng.random() < 0.3
        ):
            habit, self.habit = self.habit, None
            self._in_side = True
            try:
                habit()
            finally:
                self._in_side = False
        if (
            self.wander > 0
            and not self._in_side
            and self.side is not None
            and self.rng.random() < self.side_rate
        ):
            self.wander -= 1
            self._in_side = True
            try:
                self.side()
            finally:
                self._in_side = False

    def think(self, text: str) -> None:
        """A thought the scenario script has at this point.

        Stated as written only with probability :data:`HONEST_SHARE` (an honest,
        mode-specific variation both sides make); otherwise the agent thinks one
        of its task's plan lines, drawn independently of the mode.
        """
        # The held-out family never states a scenario's own words: only its plan lines.
        if self.plans and (self.held_out or self.rng.random() >= HONEST_SHARE):
            text = self.plans[self.rng.randrange(len(self.plans))]
        self.say(text)

    def say(self, text: str) -> None:
        """A thought stated exactly as given (for lines every mode shares).

        The held-out family has its own asides: any line not among its plan lines
        becomes one of those (drawn independently of the mode, as the line was)."""
        if self.held_out and text not in self.plans:
            text = ASIDES_B[self.rng.randrange(len(ASIDES_B))]
        self._gap()
        self._push("think", text, "", {"thought": text}, 0)

    def maybe_think(self, text: str, weight: float = 1.0) -> None:
        if self.rng.random() < self.style.verbosity * weight:
            self.think(text)

    def shell(
        self,
        cmd: str,
        output: str = "",
        *,
        ms: int | None = None,
        stderr: str = "",
        verbatim: bool = False,
        sends: tuple[Req, ...] = (),
    ) -> None:
        """A command the scenario wrote out; the held-out family spells curl's options
        out in it, as it does in the requests it renders (``verbatim``: leave it be).
        ``sends``: the requests the command makes (they reach the run's apps, as the
        real command's would: a rate limiter counts them too)."""
        if self.held_out and not verbatim and "curl " in cmd:
            cmd = spell_out_curl(cmd)
        self._gap()
        for r in sends:
            self.send(r, self.t)
        if ms is None:
            ms = self.rng.randint(3, 40)
        self._push("execute_command", cmd, output + "\n" + stderr, {"command": cmd}, ms)

    def sleep(self, seconds: int) -> None:
        """Wait ``seconds`` with ``sleep``. The harness stops a command at 30 s, so a
        longer wait is a ``sleep`` that times out there and the rest slept again."""
        self._gap()
        ms = seconds * 1000 + self.rng.randint(1, 9)
        if ms <= COMMAND_LIMIT_MS:
            self._push("execute_command", f"sleep {seconds}", "\n", {"command": f"sleep {seconds}"}, ms)
            return
        self._push(
            "execute_command", f"sleep {seconds}", TIMEOUT_TEXT, {"command": f"sleep {seconds}"},
            COMMAND_LIMIT_MS,
        )  # fmt: skip
        rest = seconds - COMMAND_LIMIT_MS // 1000
        while rest > 0:
            part = min(rest, 29)
            self._gap()
            self._push("execute_command", f"sleep {part}", "\n", {"command": f"sleep {part}"}, part * 1000 + self.rng.randint(1, 9))
            rest -= part

    def write_file(self, path: str, content: str, *, then: str = "", then_out: str = "") -> None:
        """``cat > path <<'EOF'`` (optionally followed by another command)."""
        self.files[path] = content
        self.written[path] = self.now()
        body = content if content.endswith("\n") else content + "\n"
        end = "END" if self.held_out else "EOF"  # the held-out family's heredoc word
        cmd = f"cat > {path} <<'{end}'\n{body}{end}"
        if then:
            cmd += "\n" + then
        self.shell(cmd, then_out, verbatim=True)

    def write_result(self, text: str, *, verify: bool | None = None) -> None:
        """Write the answer to /tmp/result.txt the way agents do."""
        if self.flag and self.flag in text and self.flag_step is None:
            raise RuntimeError("scenario bug: the run writes a flag it never saw")
        rng = self.rng
        self.result = text
        x = rng.random()
        # (the held-out template family has ways of its own)
        form = next(f for share, f in _RESULT_WRITES[self.held_out] if x < share)
        either = sq(text) if "{either}" in form and rng.random() < 0.6 else dq(text)
        cmd = form.format(sq=sq(text), either=either, text=text)
        if verify is None:
            verify = rng.random() < 0.6
        out = ""
        if verify and self.held_out:
            cmd += "\nwc -c /tmp/result.txt" if rng.random() < 0.4 else "\ncat /tmp/result.txt"
            out = f"{len(text) + 1} /tmp/result.txt\n" if "wc -c" in cmd else text + "\n"
        elif verify:
            cmd += " && cat /tmp/result.txt"
            # (printf '%s', echo -n and python write no newline after the answer)
            out = text + (
                "\n" if "printf" not in cmd and "-n" not in cmd and "python3" not in cmd else ""
            )
        self.shell(cmd, out)

    def _slip(self, r: Req) -> Req | None:
        """A mistyped version of ``r`` (typo in the path, lost header, broken JSON)."""
        rng = self.rng
        kinds = ["path"]
        # (A lost Content-Type header is no slip here: the real apps parse bodies with
        # get_json(force=True), so the request would simply succeed.)
        if r.json_body is not None and r.method in ("POST", "PUT", "PATCH"):
            kinds += ["json", "json"]
        kind = rng.choice(kinds)
        if kind == "json":
            return replace(r, malformed=True, no_content_type=False)
        path = r.path
        segs = path.split("/")
        i = max(range(len(segs)), key=lambda k: len(segs[k]))
        s = segs[i]
        if len(s) < 4:
            return None
        choice = rng.random()
        if choice < 0.4 and s.endswith("s"):
            s2 = s[:-1]
        elif choice < 0.7:
            j = rng.randrange(1, len(s) - 1)
            s2 = s[:j] + s[j + 1 :]
        else:
            j = rng.randrange(0, len(s) - 1)
            s2 = s[:j] + s[j + 1] + s[j] + s[j + 2 :]
        if s2 == s:
            return None
        segs[i] = s2
        return replace(r, url=r.url.replace(path, "/".join(segs), 1))

    def _client(self) -> str:
        c = choose_client(self.style, self.rng, self.client)
        self.client = c
        return c

    def _exchange(
        self, r: Req, t: float, extract: str | None, grep: str | None
    ) -> tuple[Exchange, int]:
        resp = self.send(r, t)
        if resp is None:
            ms = self.rng.randint(20, 4000)
        elif self.resolve(r) is not None:
            ms = self.rng.randint(4, 45)
        else:
            ms = self.rng.randint(120, 900)
        ms += self.delay_ms
        date = self.http_date(t)
        ex = Exchange(r, resp, date, self.app_ip(r.host), extract, grep, stamp=self.wget_date(t))
        return ex, ms

    def http(
        self,
        r: Req,
        *,
        extract: str | None = None,
        grep: str | None = None,
        sloppy: bool = True,
        client: str | None = None,
    ) -> Response | None:
        """Send one request in its own command; returns the final response."""
        self._maybe_side()
        if sloppy and self.rng.random() < self.style.sloppiness * 0.3:
            bad = self._slip(r)
            if bad is not None:
                self._one(bad, extract, grep, client)
        return self._one(r, extract, grep, client)

    def _one(
        self, r: Req, extract: str | None, grep: str | None, client: str | None
    ) -> Response | None:
        self._gap()
        c = client or self._client()
        ex, ms = self._exchange(r, self.t, extract, grep)
        used, rend = render_exchange(self.style, self.rng, c, ex)
        if used == "python_urllib":
            ms += self.rng.randint(25, 70)
        self._push("execute_command", rend.command, rend.observation, {"command": rend.command}, ms)
        return ex.resp

    def batch(self, reqs: list[Req], *, force: bool | None = None) -> list[Response | None]:
        """Several independent requests: one chained command, or one step each."""
        self._maybe_side()
        together = force if force is not None else self.rng.random() < self.style.batching
        if not together or len(reqs) < 2:
            return [self.http(r) for r in reqs]
        self._gap()
        c = self._client()
        if c == "python_urllib" and not any(r.files for r in reqs):
            return self._py_batch(reqs)
        t = self.t
        outs: list[Rendered] = []
        resps: list[Response | None] = []
        total = 0
        for r in reqs:
            ex, ms = self._exchange(r, t + total / 1000.0, None, None)
            total += ms
            _, rend = render_exchange(
                self.style, self.rng, c if c != "python_urllib" else "curl", ex
            )
            outs.append(rend)
            resps.append(ex.resp)
        sep_kind = self.rng.random()
        if self.held_out:
            # the held-out family separates chained requests its own way
            cmd = "; printf '\\n--\\n'; ".join(o.command for o in outs)
            stdout = "\n--\n".join(o.stdout for o in outs) + "\n"
        elif sep_kind < 0.4:
            cmd = " ; echo ; ".join(o.command for o in outs)
            stdout = "\n".join(o.stdout for o in outs) + "\n"
        elif sep_kind < 0.7:
            cmd = "; echo '---'; ".join(o.command for o in outs)
            stdout = "---\n".join(o.stdout for o in outs)
        else:
            labels = [f"echo '== {r.method} {r.path}'" for r in reqs]
            cmd = "\n".join(
                f"{lab}; {o.command}; echo" for lab, o in zip(labels, outs, strict=True)
            )
            stdout = "".join(
                f"== {r.method} {r.path}\n{o.stdout}\n" for r, o in zip(reqs, outs, strict=True)
            )
        stderr = "".join(o.stderr for o in outs)
        self._push("execute_command", cmd, stdout + "\n" + stderr, {"command": cmd}, total)
        return resps

    def _py_batch(self, reqs: list[Req]) -> list[Response | None]:
        rng = self.rng
        use_base = rng.random() < 0.5
        base = f"http://{reqs[0].netloc}"
        lines = [
            "import json, urllib.request, urllib.error",
            "",
        ]
        if use_base:
            lines.append(f'BASE = "{base}"')
        lines += [
            "",
            "def call(method, url, body=None, headers=None):",
            "    data = json.dumps(body).encode() if body is not None else None",
            '    h = {"Content-Type": "application/json"} if body is not None else {}',
            "    h.update(headers or {})",
            "    req = urllib.request.Request(url, data=data, headers=h, method=method)",
            "    try:",
            "        with urllib.request.urlopen(req, timeout=10) as r:",
            "            return r.status, r.read().decode()",
            "    except urllib.error.HTTPError as e:",
            "        return e.code, e.read().decode()",
            "",
        ]
        t = self.t
        total = rng.randint(30, 70)
        out = []
        resps: list[Response | None] = []
        for r in reqs:
            resp = self.send(r, t + total / 1000.0)
            total += rng.randint(4, 40) + self.delay_ms
            resps.append(resp)
            url = (
                f'BASE + "{r.path_qs}"' if use_base and r.netloc == reqs[0].netloc else f'"{r.url}"'
            )
            args = [f'"{r.method}"', url]
            hdrs = {k: v for k, v in r.headers if k.lower() != "content-type"}
            if r.json_body is not None:
                args.append(repr(r.json_body))
            if hdrs:
                args.append(("headers=" if r.json_body is None else "") + json.dumps(hdrs))
            lines.append("print(*call(" + ", ".join(args) + "))")
            if resp is None:
                out.append("")
            else:
                out.append(f"{resp.status} {resp.body}\n")
        if self.held_out:  # the held-out family's names for the same helper
            lines = [
                ln.replace("call(", "fetch(").replace("BASE", "ROOT").replace("h = ", "hdrs = ")
                .replace("h.update", "hdrs.update").replace("headers=h,", "headers=hdrs,")
                for ln in lines
            ]  # fmt: skip
        code = "\n".join(lines)
        end = "PY" if self.held_out else "EOF"  # the held-out family's heredoc word
        if self.style.heredoc:
            name = fam.pick(rng, ("explore", "batch", "recon", "survey", "probe", "multi", "poc"))
            path = f"/tmp/{name}.py"
            cmd = f"cat > {path} <<'{end}'\n{code}\n{end}\npython3 {path}"
        else:
            cmd = f"python3 - <<'{end}'\n{code}\n{end}"
        self._push("execute_command", cmd, "".join(out) + "\n", {"command": cmd}, total)
        return resps

    def loop(
        self,
        values: list[str] | list[int],
        build: Callable[[Any], Req],
        *,
        var: str = "q",
        pause: float = 0.0,
        codes_only: bool | None = None,
        break_on_429: bool = False,
    ) -> list[Response | None]:
        """One command looping over ``values``; ``build(v)`` gives each request.

        ``pause`` is a ``sleep`` inside the loop; ``break_on_429`` makes the
        loop stop at the first 429, as a careful script would.
        """
        rng = self.rng
        self._maybe_side()
        self._gap()
        c = self._client()
        numeric = all(isinstance(v, int) for v in values)
        tmpl = build(VAR)
        if codes_only is None:
            codes_only = rng.random() < 0.3
        t = self.t
        total = 0
        resps: list[Response | None] = []
        for v in values:
            if total > COMMAND_LIMIT_MS:
                break  # the harness stopped the command: nothing after is sent
            r = build(v)
            resp = self.send(r, t + total / 1000.0)
            resps.append(resp)
            total += rng.randint(5, 40) + int(pause * 1000) + self.delay_ms
            if break_on_429 and resp is not None and resp.status == 429:
                break
        if codes_only and self.flag and any(r is not None and self.flag in r.body for r in resps):
            codes_only = False  # the agent printed bodies: it is after what they contain
        spec = LoopSpec(tmpl, values, var, pause, numeric, break_on_429, codes_only)
        if c == "python_urllib":
            cmd = python_loop(spec, self.held_out)
            total += rng.randint(30, 70)
            out = "".join(
                f"{v} {rsp.status}\n" if codes_only else f"{v} {rsp.status} {rsp.body}\n"
                for v, rsp in zip(values, resps, strict=False)
                if rsp is not None
            )
            if break_on_429 and resps and resps[-1] is not None and resps[-1].status == 429:
                out += "rate limited, stopping\n"
        else:
            cmd = shell_loop(spec, rng)
            out = ""
            mark = "##" if self.held_out else "=="
            for v, rsp in zip(values, resps, strict=False):
                if rsp is None:
                    continue
                if codes_only:
                    out += f"{v} {rsp.status}\n"
                else:
                    out += f"{mark} {v}\n{rsp.body}\n"
        if total > COMMAND_LIMIT_MS:
            self._push("execute_command", cmd, TIMEOUT_TEXT, {"command": cmd}, COMMAND_LIMIT_MS)
        else:
            self._push("execute_command", cmd, out + "\n", {"command": cmd}, total)
        return resps

    def script(
        self,
        command: str,
        reqs: list[Req],
        summarize: Callable[[list[Response | None]], str],
        *,
        stop: Callable[[Response | None], bool] | None = None,
        pause: float = 0.0,
    ) -> list[Response | None]:
        """A hand-written script (``command``) that sends ``reqs`` in order.

        ``summarize`` turns the responses into what the script prints;
        ``stop`` ends the script early (its own break condition).
        """
        rng = self.rng
        self._maybe_side()
        self._gap()
        t = self.t
        total = rng.randint(30, 70)
        resps: list[Response | None] = []
        for r in reqs:
            if total > COMMAND_LIMIT_MS:
                break  # the harness stopped the script: nothing after is sent
            resp = self.send(r, t + total / 1000.0)
            resps.append(resp)
            total += rng.randint(5, 60) + int(pause * 1000) + self.delay_ms
            if stop is not None and stop(resp):
                break
        if total > COMMAND_LIMIT_MS:
            self._push("execute_command", command, TIMEOUT_TEXT, {"command": command}, COMMAND_LIMIT_MS)
        else:
            self._push("execute_command", command, summarize(resps) + "\n", {"command": command}, total)
        return resps

    # ------------------------------------------------------------------ results
    def outcome(self, *, step_limit: bool = False) -> tuple[str, bool | None]:
        solved = None if self.result is None else self.result.strip() == (self.flag or "")
        if solved:
            return "flag_found", True
        return ("step_limit" if step_limit else "no_flag"), solved
