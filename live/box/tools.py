"""The container's small tools that a live worker cannot simply borrow from the host,
each emulated from the run's facts: ``sleep`` (on the virtual clock), the identity
commands (``hostname``, ``uname``, ``id``, ``whoami``), the resolver's (``getent``,
``dig``, ``nslookup``, ``host``) and ``which``. Run as ``tools.py NAME ARGS...``.
"""

from __future__ import annotations

import sys

import livebox

#: What ``which`` answers: the agent image's tools and where they live there.
TOOL_PATHS = {
    "python3": "/usr/local/bin/python3",
    "python": "/usr/local/bin/python",
    "pip": "/usr/local/bin/pip",
    "pip3": "/usr/local/bin/pip3",
}
KERNEL = "6.8.0-1021-aws"


def sleep(args: list[str]) -> int:
    total = 0.0
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    for a in args:
        if a.startswith("-"):
            continue
        unit = units.get(a[-1:])
        try:
            total += float(a[:-1] if unit else a) * (unit or 1)
        except ValueError:
            sys.stderr.write(f"sleep: invalid time interval '{a}'\n")
            return 1
    livebox.virtual_sleep(total)
    return 0


def hostname(args: list[str]) -> int:
    f = livebox.net()
    if "-i" in args or "--ip-address" in args:
        print(f["ip"])
    elif "-I" in args or "--all-ip-addresses" in args:
        print(f["ip"] + " ")
    else:
        print(f["hostname"])
    return 0


def uname(args: list[str]) -> int:
    f = livebox.net()
    parts = {"-s": "Linux", "-n": f["hostname"], "-r": KERNEL, "-m": "x86_64", "-o": "GNU/Linux"}
    if not args:
        print("Linux")
    elif "-a" in args or "--all" in args:
        print(f"Linux {f['hostname']} {KERNEL} #23-Ubuntu SMP x86_64 GNU/Linux")
    else:
        print(" ".join(parts[a] for a in args if a in parts))
    return 0


def id_(args: list[str]) -> int:
    print("uid=0(root) gid=0(root) groups=0(root)" if not args else "0")
    return 0


def whoami(args: list[str]) -> int:
    print("root")
    return 0


def which(args: list[str]) -> int:
    import os

    rc = 0
    for name in (a for a in args if not a.startswith("-")):
        if name in TOOL_PATHS:
            print(TOOL_PATHS[name])
        elif os.path.exists(os.path.join(livebox.ROOT, "bin", name)) and "/" not in name:
            print("/usr/bin/" + name)
        else:
            rc = 1
    return rc


def getent(args: list[str]) -> int:
    if len(args) < 2 or args[0] not in ("hosts", "ahosts", "ahostsv4"):
        return 2
    rc = 0
    for name in args[1:]:
        ip = livebox.resolve(name)
        if ip is None:
            rc = 2
        else:
            print(f"{ip:<15} {name}")
    return rc


def dig(args: list[str]) -> int:
    names = [a for a in args if not a.startswith(("+", "-", "@"))]
    short = "+short" in args
    for name in names or ["."]:
        ip = livebox.resolve(name)
        if short:
            if ip is not None:
                print(ip)
            continue
        status = "NOERROR" if ip else "NXDOMAIN"
        print(f"\n; <<>> DiG 9.20.11-4-Debian <<>> {' '.join(args)}\n;; global options: +cmd")
        print(f";; Got answer:\n;; ->>HEADER<<- opcode: QUERY, status: {status}")
        print(f"\n;; QUESTION SECTION:\n;{name}.\t\t\tIN\tA\n")
        if ip:
            print(f";; ANSWER SECTION:\n{name}.\t\t600\tIN\tA\t{ip}\n")
        print(";; SERVER: 127.0.0.11#53(127.0.0.11) (UDP)")
    return 0


def nslookup(args: list[str]) -> int:
    names = [a for a in args if not a.startswith("-")]
    print("Server:\t\t127.0.0.11\nAddress:\t127.0.0.11#53\n")
    rc = 0
    for name in names[:1]:
        ip = livebox.resolve(name)
        if ip is None:
            print(f"** server can't find {name}: NXDOMAIN\n")
            rc = 1
        else:
            print(f"Non-authoritative answer:\nName:\t{name}\nAddress: {ip}\n")
    return rc


def host(args: list[str]) -> int:
    names = [a for a in args if not a.startswith("-")]
    if not names:
        return 1
    ip = livebox.resolve(names[0])
    if ip is None:
        print(f"Host {names[0]} not found: 3(NXDOMAIN)")
        return 1
    print(f"{names[0]} has address {ip}")
    return 0


TOOLS = {
    "sleep": sleep,
    "hostname": hostname,
    "uname": uname,
    "id": id_,
    "whoami": whoami,
    "which": which,
    "getent": getent,
    "dig": dig,
    "nslookup": nslookup,
    "host": host,
}

if __name__ == "__main__":
    sys.exit(TOOLS[sys.argv[1]](sys.argv[2:]))
