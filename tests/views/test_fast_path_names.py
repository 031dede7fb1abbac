"""The name lists behind two fast paths must match the branches they let through.

``shell_interp._UNWRAP_NAMES`` lets ``_Interp.unwrap`` skip its branch tests for any other
command name, and ``infra._LISTENER_NAMES`` does the same for ``listeners_of``. A name
missing from a list silently disables its branch, so every name gets a case here that
only its branch can pass, and the cases must cover each list exactly.
"""

from __future__ import annotations

import pytest

from monsearch.views import command, infra, shell_interp
from monsearch.views.infra import listeners_of
from monsearch.views.shell import run_script

URL = "http://target.example/api"
FILES = {"/tmp/job.sh": f"curl -s {URL}\n"}

# name -> a command text whose only curl is reachable through that name's branch.
UNWRAP_CASES: dict[str, str] = {
    **{name: f"{name} curl -s {URL}" for name in shell_interp._WRAPPERS_NOARG},
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
    assert set(UNWRAP_CASES) == set(shell_interp._UNWRAP_NAMES)


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


def test_positional_constructions_follow_the_field_order() -> None:
    """``_Interp.run_simple`` builds each Command and ``parse_curl`` each Request with
    positional arguments (cheaper per command): a field added, removed or moved would
    shift every value after it without an error, so the field order is pinned here."""
    from dataclasses import fields

    from monsearch.views.http_extract import extract_requests
    from monsearch.views.request import Request

    assert [f.name for f in fields(command.Command)] == [
        "argv", "raw", "stdin", "stdin_file", "stdout_file", "append", "repeat",
        "repeat_known", "background", "piped_from", "pipes_to", "env", "output", "cwd",
    ]  # fmt: skip
    assert [f.name for f in fields(Request)] == [
        "method", "url", "client", "headers", "body", "form", "files", "repeat",
        "repeat_known", "auth_user", "auth_password", "write_out", "include_headers",
        "background", "query_extra",
    ]  # fmt: skip
    # And the values land where they belong, on a command that sets most of them.
    text = f"cd /srv && K=v curl -s -i -w '%{{http_code}}' -X PUT -H 'X-A: 1' -d q {URL} &"
    cmds, written = run_script(text)
    cmd = cmds[-1]
    assert (cmd.argv[0], cmd.raw, cmd.repeat, cmd.background, cmd.env, cmd.cwd) == (
        "curl",
        text.split("&& ", 1)[1].rstrip(" &"),
        1,
        True,
        {"K": "v"},
        "/srv",
    )
    (req,) = extract_requests(cmds, written.get, written, lambda _r: None)
    assert (req.method, req.url, req.client, req.headers["x-a"], req.body, req.repeat) == (
        "PUT",
        URL,
        "curl",
        "1",
        "q",
        1,
    )
    assert (req.write_out, req.include_headers, req.background) == ("%{http_code}", True, True)
