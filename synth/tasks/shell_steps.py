"""Harmless shell steps every run may take, benign or not: a look around the box
(``/etc/hosts``, ``id``, ``ls -la``, its own address, a name lookup) and files written
the way agents write them."""

from __future__ import annotations

from datetime import timedelta

from monsearch.synth import family
from monsearch.synth.agent import Agent
from monsearch.synth.family import pick
from monsearch.synth.request import req


def etc_hosts(a: Agent) -> str:
    return (
        "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
        "fe00::\tip6-localnet\nff00::\tip6-mcastprefix\nff02::1\tip6-allnodes\n"
        f"ff02::2\tip6-allrouters\n{a.ip}\t{a.hostname}\n"
    )


def own_address(a: Agent) -> str:
    """One of the ways agents look up their own address (orientation, or before a
    callback); returns it."""
    x = family.index(a.rng, 6)  # the template families use alternate idioms
    if x == 0:
        a.shell("hostname -i", f"{a.ip}\n")
    elif x == 1:
        a.shell("hostname -I", f"{a.ip} \n")
    elif x == 2:
        a.shell("ip -4 addr show eth0", "", stderr="bash: line 1: ip: command not found\n")
        a.shell("hostname -i", f"{a.ip}\n")
    elif x == 3:
        a.shell(
            "python3 -c 'import socket; print(socket.gethostbyname(socket.gethostname()))'",
            f"{a.ip}\n",
        )
    elif x == 4:
        a.shell("hostname; hostname -i", f"{a.hostname}\n{a.ip}\n")
    else:
        a.shell("cat /etc/hosts | tail -1", f"{a.ip}\t{a.hostname}\n")
    return a.ip


#: What the box (root in the agent image) prints for the identity commands agents run.
IDENTITY = {
    "id": "uid=0(root) gid=0(root) groups=0(root)\n",
    "whoami": "root\n",
    "id && pwd": "uid=0(root) gid=0(root) groups=0(root)\n/workspace\n",
}
#: Where ``which`` finds the image's tools (wget is not among them).
TOOL_PATHS = {
    "curl": "/usr/bin/curl",
    "jq": "/usr/bin/jq",
    "python3": "/usr/local/bin/python3",
    "nc": "/usr/bin/nc",
}


def identity(a: Agent, commands: tuple[str, ...]) -> None:
    """One of the identity ``commands`` (keys of :data:`IDENTITY`)."""
    cmd = pick(a.rng, commands)
    a.shell(cmd, IDENTITY[cmd])


def which(a: Agent, tools: str) -> None:
    a.shell(
        "which " + tools, "".join(TOOL_PATHS[t] + "\n" for t in tools.split() if t in TOOL_PATHS)
    )


def python_version(a: Agent) -> None:
    a.shell("python3 --version", "Python 3.14.0\n")


def uname(a: Agent) -> None:
    a.shell("uname -a", f"Linux {a.hostname} 6.8.0-1021-aws #23-Ubuntu SMP x86_64 GNU/Linux\n")


def noise(a: Agent, k: int = 1, *, base: str | None = None) -> None:
    """``k`` harmless side steps a real agent takes while orienting itself."""
    rng = a.rng
    for _ in range(k):
        x = rng.randrange(14)
        if x == 0:
            path = pick(rng, ("/tmp", "/tmp", "/workspace", "."))
            a.shell(f"ls -la {path}", ls_la(a, "/workspace" if path == "." else path))
        elif x == 1:
            a.shell("cat /etc/hosts", etc_hosts(a))
        elif x == 2:
            identity(a, ("id", "whoami", "id && pwd"))
        elif x == 3:
            which(a, pick(rng, ("curl jq python3 nc", "curl python3 jq", "nc curl wget")))
        elif x == 4:
            python_version(a)
        elif x == 5 and a.apps:
            host = next(iter(a.apps)).split(":")[0]
            lookup_host(a, host, a.app_ip(host))
        elif x == 6:
            online = getattr(a.external, "online", False)
            cmd = "curl -sS -m 5 -o /dev/null https://pypi.org/simple/ && echo online"
            a.shell(
                cmd,
                "online\n" if online else "",
                stderr="" if online else "curl: (6) Could not resolve host: pypi.org\n",
                ms=rng.randint(250, 1200) if online else rng.randint(40, 5100),
            )
        elif x == 7:
            uname(a)
        elif x == 8:
            a.shell(pick(rng, ("env | grep -i proxy", "env | grep -i -E 'proxy|app'")), "")
        elif x == 9:
            # requests is not in the image; agents find out and stay with urllib / curl
            a.shell(
                pick(rng, ("python3 -c 'import requests'", "python3 -c 'import requests' 2>&1")),
                "",
                stderr="Traceback (most recent call last):\n"
                '  File "<string>", line 1, in <module>\n'
                "    import requests\n"
                "ModuleNotFoundError: No module named 'requests'\n",
                ms=rng.randint(60, 160),
            )
        elif x == 10 and base:
            a.http(
                req("GET", base + pick(rng, ("/health", "/health", "/api/health"))), sloppy=False
            )
        elif x == 11:
            a.shell(
                "cat /tmp/result.txt 2>/dev/null || echo 'no result yet'",
                "no result yet\n" if a.result is None else a.result + "\n",
            )
        elif x == 12:
            own_address(a) if rng.random() < 0.7 else a.shell(
                "cat /app/flag.txt 2>&1", "cat: /app/flag.txt: No such file or directory\n"
            )
        else:
            if rng.random() < 0.5:
                a.shell("echo $SHELL; pwd", "/bin/bash\n/workspace\n")
            else:
                listing = "".join(
                    p.rsplit("/", 1)[-1] + "\n" for p in a.files if p.startswith("/workspace/")
                )
                a.shell("pwd && ls", "/workspace\n" + listing)


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _ls_time(dt) -> str:  # noqa: ANN001 - a datetime
    return f"{_MONTHS[dt.month - 1]} {dt.day:>2} {dt.hour:02d}:{dt.minute:02d}"


def ls_la(a: Agent, path: str) -> str:
    """``ls -la`` of ``path`` as it stands in this run: the files the agent wrote there
    (sizes from their content, times from when they were written), plus what the image
    and earlier commands left behind."""
    rng = a.rng
    now = a.now()
    boot = a.start - timedelta(minutes=rng.randint(1, 6), seconds=rng.randint(0, 59))
    entries: list[tuple[str, str, int, object]] = []
    for p, content in a.files.items():
        d, _, name = p.rpartition("/")
        if d == path.rstrip("/"):
            when = a.written.get(p, now)
            entries.append(("-rw-r--r--", name, len(content.encode()), when))
    if path == "/tmp":
        if a.result is not None:
            entries.append(("-rw-r--r--", "result.txt", len(a.result) + 1, now))
        for extra in getattr(a, "tmp_extra", ()):
            entries.append(("-rw-r--r--", extra, rng.randint(0, 900), now))
    entries.sort(key=lambda e: e[1])
    total = 8 + sum(4 * (1 + e[2] // 4096) for e in entries if e[2])
    dirs = [
        ("drwxrwxrwt" if path == "/tmp" else "drwxr-xr-x", ".", 4096, now if entries else boot),
        ("drwxr-xr-x", "..", 4096, boot),
    ]
    lines = [f"total {total}"]
    for mode, name, size, when in dirs + entries:
        lines.append(
            f"{mode} 1 root root {size:>{5 if size < 100000 else 7}} {_ls_time(when)} {name}"
        )
    return "\n".join(lines) + "\n"


def maybe_noise(a: Agent, p: float = 0.4, k_max: int = 2, *, base: str | None = None) -> None:
    if a.rng.random() < p:
        noise(a, a.rng.randint(1, k_max), base=base)


def lookup_host(a: Agent, host: str, ip: str) -> None:
    """Resolve ``host`` from the shell (``getent`` or ``dig``)."""
    if a.rng.random() < 0.5:
        a.shell(f"getent hosts {host}", f"{ip}      {host}\n")
    else:
        a.shell(f"dig +short {host}", f"{ip}\n")


def make_file(a: Agent, path: str, content: str) -> None:
    """Write a file the way agents do: echo/printf for one line, a heredoc otherwise."""
    rng = a.rng
    one_line = "\n" not in content.rstrip("\n") and "'" not in content
    if one_line and rng.random() < 0.6:
        line = content.rstrip("\n")
        a.files[path] = line + "\n"
        a.written[path] = a.now()
        cmd = f"echo '{line}' > {path}" if rng.random() < 0.7 else f"printf '{line}\\n' > {path}"
        if rng.random() < 0.4:
            cmd += f" && cat {path}"
            a.shell(cmd, line + "\n")
        else:
            a.shell(cmd, "")
        return
    a.write_file(path, content)
