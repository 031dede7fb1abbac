"""The name lists behind two fast paths must match the branches they let through.

``shell._UNWRAP_NAMES`` lets ``_Interp.unwrap`` skip its branch tests for any other
command name, and ``infra._LISTENER_NAMES`` does the same for ``listeners_of``. A name
missing from a list silently disables its branch, so every name gets a case here that
only its branch can pass, and the cases must cover each list exactly.
"""

from __future__ import annotations

import pytest

from monsearch.sandbox import infra, shell
from monsearch.sandbox.infra import listeners_of
from monsearch.sandbox.shell import run_script

URL = "http://target.example/api"
FILES = {"/tmp/job.sh": f"curl -s {URL}\n"}

# name -> a command text whose only curl is reachable through that name's branch.
UNWRAP_CASES: dict[str, str] = {
    **{name: f"{name} curl -s {URL}" for name in shell._WRAPPERS_NOARG},
    "timeout": f"timeout -s KILL 5 curl -s {URL}",
    "sudo": f"sudo -u root curl -s {URL}",
    "doas": f"doas -u root curl -s {URL}",
    "env": f"env -u HOME A=1 curl -s {URL}",
    "watch": f"watch -n 1 'curl -s {URL}'",
    "bash": f"bash -c 'curl -s {URL}'",
    "sh": f"sh -c 'curl -s {URL}'",
    "zsh": f"zsh -c 'curl -s {URL}'",
    "dash": f"dash -c 'curl -s {URL}'",
    "source": "source /tmp/job.sh",
    ".": ". /tmp/job.sh",
    "eval": f"eval curl -s {URL}",
    "xargs": f"echo {URL} | xargs curl -s",
}


def test_unwrap_cases_cover_the_name_list_exactly() -> None:
    assert set(UNWRAP_CASES) == set(shell._UNWRAP_NAMES)


@pytest.mark.parametrize("name", sorted(UNWRAP_CASES))
def test_each_unwrap_name_reaches_the_wrapped_command(name: str) -> None:
    cmds, _ = run_script(UNWRAP_CASES[name], FILES.get)
    assert [c.argv[0] for c in cmds if c.argv][-1] == "curl", name
    assert URL in cmds[-1].argv


def test_a_path_to_a_written_script_is_run_too() -> None:
    cmds, _ = run_script("./job.sh", {"./job.sh": f"curl -s {URL}\n"}.get)
    assert cmds[-1].argv[:2] == ["curl", "-s"]


# name -> (command text, the listener kind only that name's branch reports).
LISTENER_CASES: dict[str, tuple[str, str]] = {
    "nc": ("nc -lvnp 4444", "nc"),
    "ncat": ("ncat --listen -p 4444", "nc"),
    "netcat": ("netcat -l -p 4444", "nc"),
    "socat": ("socat TCP-LISTEN:4444,fork -", "socat"),
    "ssh": ("ssh -R 80:localhost:8000 serveo.net", "tunnel"),
    "php": ("php -S 0.0.0.0:8080", "php"),
    "busybox": ("busybox httpd -f -p 8081", "httpd"),
    **{name: (f"{name} 8000", "tunnel") for name in infra._TUNNELS},
}


def test_listener_cases_cover_the_name_list_exactly() -> None:
    assert set(LISTENER_CASES) == set(infra._LISTENER_NAMES)


@pytest.mark.parametrize("name", sorted(LISTENER_CASES))
def test_each_listener_name_is_read(name: str) -> None:
    text, kind = LISTENER_CASES[name]
    cmds, _ = run_script(text)
    assert [li["kind"] for li in listeners_of(cmds, lambda _p: None)] == [kind], text
