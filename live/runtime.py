"""A live worker's world: its container, its app host and its third-party sink, and
the start and end of each run in them."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from monsearch.live.app_host import AppHost
from monsearch.live.checkout import Checkout
from monsearch.live.container import Container, RunFacts
from monsearch.live.execute import Outcome, run_command
from monsearch.live.sink import Sink


class Runtime:
    def __init__(self, checkout: Checkout, root: str | Path) -> None:
        self.checkout = checkout
        self.root = Path(root)
        self.logs = self.root / "log"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.box = Container(self.root)
        self.host = AppHost()
        self.sink = Sink(self.root / "tls")
        self.task: str | None = None
        self.app_pid: int | None = None
        self._offset = 0

    # -- one run -------------------------------------------------------------------
    def begin(self, task: str) -> None:
        self.task = task
        self.app_pid = None
        self._offset = 0

    def ensure_started(self, agent: Any) -> None:
        """Start the task's real apps for ``agent``'s run (at its first command)."""
        if self.app_pid is not None:
            return
        task = self.checkout.task(self.task or "")
        instances = []
        hosts: dict[str, str] = {}
        for netloc, app in agent.apps.items():
            name = netloc.split(":")[0]
            hosts[name] = app.ip
            instances.append({"name": name, "ip": app.ip, "env": task.env_for(name)})
        from monsearch.synth.tasks.shell_steps import etc_hosts

        facts = RunFacts(
            hostname=agent.hostname,
            ip=agent.ip,
            hosts=hosts,
            apps={},
            sink=self.sink.port,
            sink_tls=self.sink.tls_port,
            online=bool(getattr(agent.external, "online", False)),
            etc_hosts=etc_hosts(agent),
        )
        box = self.box
        box.prepare(facts, agent.start.timestamp() + agent.t, task.flag)
        exchanges = self.logs / "exchanges.jsonl"
        exchanges.write_text("", encoding="utf-8")
        self._offset = 0
        spec = {
            "key": task.name.replace("-", "_"),
            "source": str(task.app),
            "clock": str(box.c / "clock"),
            "fs_root": str(box.c),
            "exchanges": str(exchanges),
            "log": str(self.logs / "app.log"),
            "agent_ip": agent.ip,
            "agent_hostname": agent.hostname,
            "instances": instances,
            "sink_port": self.sink.port,
            "sink_tls_port": self.sink.tls_port,
            "online": facts.online,
        }
        self.app_pid, ports = self.host.start(spec)
        facts.apps = {i["name"]: {"ip": i["ip"], "port": ports[i["name"]]} for i in instances}
        box.publish(facts)
        self._answer_with(agent)

    def _answer_with(self, agent: Any) -> None:
        from monsearch.synth.request import Req

        sink = self.sink
        sink.now = self.box.clock.now if self.box.clock else (lambda: 0.0)

        def answer(method: str, url: str, headers: dict[str, str], body: bytes):
            hdrs = tuple((k, v) for k, v in headers.items() if k.lower() in ("content-type", "authorization"))
            text = body.decode("utf-8", "replace") if body else None
            r = Req(method, url, hdrs, None, (), (), text)
            resp = agent.external(r, agent.t)
            if resp is None:
                return None
            return resp.status, resp.content_type, resp.body.encode()

        sink.answer = answer

    def execute(self, text: str, virtual_start: float) -> Outcome:
        return run_command(self.box, text, virtual_start)

    def take(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The app exchanges and third-party requests since the last call."""
        path = self.logs / "exchanges.jsonl"
        out: list[dict[str, Any]] = []
        with contextlib.suppress(FileNotFoundError), open(path, encoding="utf-8") as fh:
            fh.seek(self._offset)
            data = fh.read()
            complete = data[: data.rfind("\n") + 1]
            self._offset += len(complete.encode("utf-8"))
            for line in complete.splitlines():
                with contextlib.suppress(ValueError):
                    out.append(json.loads(line))
        return out, self.sink.take()

    def result_text(self) -> str | None:
        try:
            return Path("/tmp/result.txt").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    def end(self) -> None:
        if self.app_pid is not None:
            with contextlib.suppress(Exception):
                self.host.stop(self.app_pid)
        self.app_pid = None
        self.box.end_run()
        self.sink.answer = None
        self.sink.take()

    def close(self) -> None:
        self.end()
        with contextlib.suppress(Exception):
            self.host.close()
        with contextlib.suppress(Exception):
            self.sink.close()
