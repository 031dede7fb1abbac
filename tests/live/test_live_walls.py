"""What a command of a live run can and cannot do (docs/live-corpus.md): each case runs
a real command in a real live container, inside a worker's namespaces."""

from __future__ import annotations

import os

import pytest
from live_support import checkout, needs_live

from monsearch.live.generate import run_in_container

pytestmark = needs_live
TASK = "ssrf-proxy"


def shell(command: str, online: bool = True) -> dict:
    reply = run_in_container(checkout(), TASK, command, online=online)
    assert "error" not in reply, reply
    return reply


def test_the_task_app_answers_under_its_container_name():
    r = shell("curl -s -o /dev/null -w '%{http_code}' http://app:5000/api/status")
    assert r["observation"].startswith("200")
    assert [(e["method"], e["path"], e["status"]) for e in r["exchanges"]] == [("GET", "/api/status", 200)]


def test_no_route_leaves_the_namespace():
    # With the run's internet down, a public address is unreachable from Python and curl.
    r = shell(
        "python3 -c \"import socket; s=socket.socket(); s.settimeout(3); "
        "print(s.connect_ex(('1.1.1.1', 80)))\"; curl -s -m 3 -o /dev/null -w '%{http_code}' http://1.1.1.1/",
        online=False,
    )
    code, curl = r["observation"].split()[:2]
    assert code != "0" and curl == "000" and r["third_party"] == []
    # With it up, the same request reaches the run's sink (recorded), not the address.
    r = shell("curl -s -m 3 -o /dev/null -w '%{http_code}' http://1.1.1.1/")
    assert [t["url"] for t in r["third_party"]] == ["http://1.1.1.1/"]


def test_the_filesystem_is_read_only_outside_the_run():
    r = shell("touch /usr/monsearch-probe 2>&1; touch /tmp/ok && echo tmp-ok")
    assert "Read-only file system" in r["observation"] and "tmp-ok" in r["observation"]


def test_the_users_environment_and_home_stay_outside(monkeypatch):
    monkeypatch.setenv("MONSEARCH_CANARY", "user-secret-value")
    r = shell("env; echo HOME=$HOME; ls -a ~")
    assert "user-secret-value" not in r["observation"]
    assert "HOME=/root" in r["observation"]
    assert os.environ["HOME"] not in r["observation"] or os.environ["HOME"] == "/root"


def test_a_program_outside_the_image_is_refused_and_recorded():
    r = shell("/usr/bin/ssh -V")
    assert r["refused"] == ["/usr/bin/ssh"] and r["exit_code"] == 127
    r = shell("ssh -V; echo $?")
    assert "command not found" in r["observation"] and "127" in r["observation"]
    assert r["missing"] == ["ssh"]


@pytest.mark.parametrize("seconds", ["5", "45"])
def test_a_sleep_passes_on_the_runs_clock(seconds):
    r = shell(f"sleep {seconds}; echo woke")
    if int(seconds) < 30:
        assert r["observation"].startswith("woke") and not r["timed_out"]
    else:  # the harness's 30 s per command, on the run's clock (no real wait)
        assert r["observation"] == "[timeout] command exceeded 30s limit" and r["timed_out"]


def test_an_outside_host_reaches_the_sink_and_is_recorded():
    r = shell("curl -s -o /dev/null -w '%{http_code}' https://webhook.site/token -X POST")
    assert [t["url"] for t in r["third_party"]] == ["https://webhook.site/token"]
