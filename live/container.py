"""The agent's container in a live worker: its tools, its files, its run facts.

The StealthBench agent ran in ``python:3.14-slim`` with curl, netcat, jq and dnsutils
added, ``/workspace`` as its folder and root as its user. A live worker rebuilds that
box inside its walls (:mod:`~monsearch.live.isolation`) from the host's own programs:

- **an allow-list of programs**: ``PATH`` holds one folder, with links to the host's
  copies of the image's programs (coreutils, grep, sed, awk, find, curl, jq, ...)
  and small emulations of the rest (``nc``, ``sleep`` on the virtual clock, the
  identity and resolver tools: :mod:`box.tools`); a command naming a program outside
  the list by its full path is refused before it runs, and recorded;
- **Python** is the host's bare interpreter (no packages, like the image) with a
  ``sitecustomize`` that gives it the container's resolver, routes and clock;
- **files**: a fresh ``/tmp`` per run, and ``/workspace``, ``/root`` and the
  container's ``/etc/hosts``, ``/etc/hostname`` and ``/etc/resolv.conf`` in the run's
  folder; the command text's mentions of those paths are mapped there, and the run
  folder's real location never shows in what a command prints;
- **a minimal environment**: no variable of the user's (no HOME of theirs, no tokens).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path

from monsearch.live.clock import VirtualClock

BOX_SOURCE = Path(__file__).resolve().parent / "box"
#: The image's programs a live worker borrows from the host (those it finds).
HOST_PROGRAMS = (
    "bash", "sh", "cat", "echo", "printf", "ls", "pwd", "head", "tail", "wc", "sort",
    "uniq", "cut", "tr", "tee", "base64", "mkdir", "rm", "rmdir", "cp", "mv", "touch",
    "chmod", "ln", "seq", "date", "env", "sha256sum", "sha1sum", "md5sum", "od",
    "basename", "dirname", "stat", "true", "false", "yes", "timeout", "nohup", "xargs",
    "find", "grep", "egrep", "fgrep", "sed", "awk", "mawk", "diff", "cmp", "gzip",
    "gunzip", "zcat", "tar", "curl", "jq", "kill", "test", "expr", "realpath",
    "readlink", "mktemp", "tac", "comm", "join", "paste", "fold", "nl", "split", "shuf",
    "cksum", "du", "df", "more", "tput", "clear", "sync", "printenv", "nproc", "tty",
)  # fmt: skip
#: Programs the image has that a worker emulates (box/tools.py, box/nc.py, Python).
EMULATED = ("sleep", "hostname", "uname", "id", "whoami", "which", "getent", "dig",
            "nslookup", "host", "nc", "netcat", "python3", "python")  # fmt: skip
#: Where a command may name an allowed program by its full path.
SYSTEM_DIRS = ("/usr/bin/", "/bin/", "/usr/local/bin/", "/usr/sbin/", "/sbin/")
BASH_BUILTINS = frozenset(
    [":", ".", "[", "[[", "alias", "bg", "bind", "break", "builtin", "caller", "cd", "command", "compgen", "complete", "continue", "declare", "dirs", "disown", "echo", "enable", "eval", "exec", "exit", "export", "false", "fc", "fg", "getopts", "hash", "help", "history", "jobs", "kill", "let", "local", "logout", "mapfile", "popd", "printf", "pushd", "pwd", "read", "readarray", "readonly", "return", "set", "shift", "shopt", "source", "suspend", "test", "times", "trap", "true", "type", "typeset", "ulimit", "umask", "unalias", "unset", "wait"]
)
#: Paths of the container that live in the run's folder (the rest of the host is
#: read-only inside the walls, and /tmp is the run's own).
MAPPED = ("/workspace", "/root", "/etc/hosts", "/etc/hostname", "/etc/resolv.conf", "/etc/passwd")
#: The container's user table (a Debian image's first lines).
ETC_PASSWD = (
    "root:x:0:0:root:/root:/bin/bash\n"
    "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
)
_MAPPED_RE = re.compile(
    r"(?<![\w./~-])(" + "|".join(re.escape(p) for p in MAPPED) + r")(?=$|[^\w.-])"
)
#: The agent image's environment (what ``env`` shows there, less the noise).
IMAGE_ENV = {
    "LANG": "C.UTF-8",
    "PYTHON_VERSION": "3.14.0",
    "HOSTNAME": "",
    "SHLVL": "1",
}


@dataclass
class RunFacts:
    """What one run's container knows of its world (written to ``net.json``)."""

    hostname: str
    ip: str
    hosts: dict[str, str]  # task host name -> its container address
    apps: dict[str, dict[str, object]]  # name -> {"ip", "port"} (the real loopback port)
    sink: int | None
    online: bool
    sink_tls: int | None = None
    outside_ip: str = "93.184.215.14"
    etc_hosts: str = ""
    extra: dict[str, object] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(
            {
                "hostname": self.hostname, "ip": self.ip, "hosts": self.hosts, "apps": self.apps,
                "sink": self.sink, "sink_tls": self.sink_tls, "online": self.online, "outside_ip": self.outside_ip,
            }
        )  # fmt: skip


class Container:
    """The box of one live worker (tools set up once, files renewed per run)."""

    def __init__(self, root: str | Path, python: str | None = None) -> None:
        self.root = Path(root)
        self.bin = self.root / "bin"
        self.box = self.root / "box"
        self.c = self.root / "c"
        # The bare interpreter: a venv's packages are not the image's.
        self.python = python or getattr(sys, "_base_executable", sys.executable)
        self.groups: set[int] = set()
        self.clock: VirtualClock | None = None
        self.facts: RunFacts | None = None
        self._install_tools()

    # -- set up once -------------------------------------------------------------
    def _install_tools(self) -> None:
        for d in (self.bin, self.box):
            d.mkdir(parents=True, exist_ok=True)
        for src in BOX_SOURCE.glob("*.py"):
            shutil.copyfile(src, self.box / src.name)
        found = set()
        for name in HOST_PROGRAMS:
            real = shutil.which(name, path="/usr/bin:/bin:/usr/local/bin")
            if real and not (self.bin / name).exists():
                os.symlink(os.path.realpath(real), self.bin / name)
                found.add(name)
        py = self.python
        tools = ["sleep", "hostname", "uname", "id", "whoami", "which", "getent", "dig", "nslookup", "host"]
        for name in tools:
            self._script(name, f'exec "{py}" -S -E "{self.box}/tools.py" {name} "$@"')
        for name in ("nc", "netcat"):
            self._script(name, f'exec "{py}" -S -E "{self.box}/nc.py" "$@"')
        for name in ("python3", "python"):
            self._script(name, f'PYTHONPATH="{self.box}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{py}" "$@"')
        self.allowed = frozenset(found | set(EMULATED))

    def _script(self, name: str, line: str) -> None:
        path = self.bin / name
        path.write_text("#!/bin/bash\n" + line + "\n", encoding="utf-8")
        path.chmod(0o755)

    # -- per run ---------------------------------------------------------------------
    def prepare(self, facts: RunFacts, virtual_now: float, flag: str) -> None:
        """A new container folder for a run: its files and clock (the facts that name
        the apps' real ports follow in :meth:`publish`, once they listen)."""
        if self.c.exists():
            shutil.rmtree(self.c)
        for d in ("workspace", "root", "etc", "app", "uploads"):
            (self.c / d).mkdir(parents=True)
        (self.c / "app" / "flag.txt").write_text(flag + "\n", encoding="utf-8")
        (self.c / "etc" / "hosts").write_text(facts.etc_hosts, encoding="utf-8")
        (self.c / "etc" / "hostname").write_text(facts.hostname + "\n", encoding="utf-8")
        (self.c / "etc" / "resolv.conf").write_text(
            "nameserver 127.0.0.11\noptions ndots:0\n", encoding="utf-8"
        )
        (self.c / "etc" / "passwd").write_text(ETC_PASSWD, encoding="utf-8")
        self.clock = VirtualClock.create(self.c / "clock", virtual_now)
        self.facts = facts

    def publish(self, facts: RunFacts) -> None:
        """The run's facts for its tools: ``net.json`` and curl's ``.curlrc``."""
        (self.c / "net.json").write_text(facts.to_json(), encoding="utf-8")
        (self.c / "root" / ".curlrc").write_text(self._curlrc(facts), encoding="utf-8")
        self.facts = facts

    @staticmethod
    def _curlrc(f: RunFacts) -> str:
        lines = []
        for inst in f.apps.values():
            for name in [n for n, ip in f.hosts.items() if ip == inst["ip"]] + [str(inst["ip"])]:
                lines.append(f'connect-to = "{name}:5000:127.0.0.1:{inst["port"]}"')
                lines.append(f'connect-to = "{name}::127.0.0.1:9"')
        for own in (f.hostname, f.ip):
            lines.append(f'connect-to = "{own}::127.0.0.1:"')
        if f.online and f.sink:
            local = ["localhost", "127.0.0.1", f.hostname, f.ip, *f.hosts, *f.hosts.values()]
            lines.append(f'proxy = "http://127.0.0.1:{f.sink}"')
            lines.append("insecure")  # the sink's throwaway certificate stands for the internet's
            lines.append(f'noproxy = "{",".join(dict.fromkeys(local))}"')
        return "\n".join(lines) + "\n"

    @property
    def env(self) -> dict[str, str]:
        assert self.facts is not None
        return {
            **IMAGE_ENV,
            "HOSTNAME": self.facts.hostname,
            "PATH": str(self.bin),
            "HOME": str(self.c / "root"),
            "CURL_HOME": str(self.c / "root"),
            "PWD": str(self.c / "workspace"),
            "PYTHONDONTWRITEBYTECODE": "1",
        }

    @property
    def workdir(self) -> Path:
        return self.c / "workspace"

    def map_paths(self, text: str) -> str:
        """The command as the worker runs it: the container's mapped paths moved into
        the run's folder (the recorded command keeps the container's paths)."""
        return _MAPPED_RE.sub(lambda m: str(self.c) + m.group(1), text)

    def unmap(self, text: str) -> str:
        """What a command printed, as it would read in the container."""
        return (
            text.replace(str(self.c), "").replace(str(self.bin), "/usr/bin").replace(str(self.root), "/usr/lib")
        )

    def refused(self, text: str) -> list[str]:
        """Programs the command names by a full system path that the image lacks
        (those it names by a bare name fail as they would there: not found)."""
        from monsearch.views.shell import run_script

        cmds, _ = run_script(text)
        out = []
        for cmd in cmds:
            prog = cmd.argv[0] if cmd.argv else ""
            if prog.startswith(SYSTEM_DIRS) and prog.rsplit("/", 1)[-1] not in self.allowed:
                out.append(prog)
        return out

    def missing(self, text: str) -> list[str]:
        """Programs the command names that the image does not have (they fail: not found)."""
        from monsearch.views.shell import run_script

        cmds, _ = run_script(text)
        defined = set(re.findall(r"(?m)^\s*(?:function\s+)?([A-Za-z_][\w-]*)\s*\(\)", text))
        names = []
        for cmd in cmds:
            prog = cmd.argv[0] if cmd.argv else ""
            if (
                prog
                and "/" not in prog
                and "=" not in prog
                and prog not in self.allowed
                and prog not in BASH_BUILTINS
                and prog not in defined
            ):
                names.append(prog)
        return names

    def end_run(self) -> None:
        """Stop everything the run's commands left running (listeners, loops)."""
        for pgid in self.groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
        self.groups.clear()
        if self.clock is not None:
            self.clock.close()
            self.clock = None
