"""The live corpus's parts that need no checkout: the value map, the container's path
mapping, the fidelity summary, the label checks, the virtual clock."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import pytest

from monsearch.live.clock import VirtualClock
from monsearch.live.fidelity import status_pair, summarise
from monsearch.live.labels import refused_writes
from monsearch.live.values import ValueMap


def test_real_values_replace_simulated_ones_in_later_commands():
    vm = ValueMap()
    sim = json.dumps({"token": "eyJsimulated.part.sig", "user": {"id": 3, "code": "123456"}, "ok": True})
    real = json.dumps({"token": "eyJreal.other.sig", "user": {"id": 4, "code": "654321"}, "ok": True})
    assert vm.learn(sim, real) == 2  # the token and the six-digit code; never a short id
    cmd = "curl -H 'Authorization: Bearer eyJsimulated.part.sig' -d '{\"code\": \"123456\", \"id\": 3}'"
    assert vm.apply(cmd) == "curl -H 'Authorization: Bearer eyJreal.other.sig' -d '{\"code\": \"654321\", \"id\": 3}'"
    assert vm.learn("not json", real) == 0 and vm.apply("nothing to change") == "nothing to change"


def test_the_clock_runs_at_real_speed_and_jumps_on_a_sleep(tmp_path):
    clock = VirtualClock.create(tmp_path / "clock", 1_000_000.0)
    t0 = clock.now()
    assert 1_000_000.0 <= t0 < 1_000_000.0 + 60
    clock.advance(30)
    assert clock.now() - t0 >= 30
    clock.set(5.0)
    assert 5.0 <= clock.now() < 65.0
    other = VirtualClock(tmp_path / "clock")  # another process's view of the same file
    assert abs(other.now() - clock.now()) < 1.0
    before = time.time()
    assert before > 10**9  # the host's time is not the run's


def _record(sim, real, index=0, timed_out=False):
    return {
        "index": index, "command": "curl -s http://app:5000/x", "sim_observation": "", "real_observation": "",
        "sim_requests": [("GET", "app", "/x", s, None) for s in sim],
        "exchanges": [("app", "agent", "GET", "/x", s) for s in real],
        "third_party": [], "timed_out": timed_out,
    }  # fmt: skip


def test_status_agreement_per_step_per_task_and_style():
    runs = [
        {"task": "t1", "style": "a", "hosts": ["app"], "fidelity": [_record([200], [200]), _record([200, 429], [200, 429], 1)]},
        {"task": "t2", "style": "a", "hosts": ["app"], "fidelity": [_record([200], [401]), _record([], [])]},
    ]  # fmt: skip
    s = summarise(runs, views=False)
    assert s["overall"]["steps_compared"] == 3 and s["overall"]["steps_agree"] == 2
    assert s["tasks"]["t1"]["share"] == 1.0 and s["tasks"]["t2"]["share"] == 0.0
    assert s["tasks"]["t2"]["differences"][0]["what"].endswith("simulated [200] real [401]")
    # the app's own calls to itself are not the agent's
    rec = _record([200], [200])
    rec["exchanges"].append(("app", "self", "GET", "/internal", 200))
    assert status_pair(rec, ["app"]) == ([200], [200])


def test_a_failing_runs_write_the_real_app_refused_is_named():
    agent = SimpleNamespace(fidelity=[
        {"index": 4, "sim_requests": [("DELETE", "app", "/api/users/2", 200, None)],
         "exchanges": [("app", "agent", "DELETE", "/api/users/2", 401)]},
        {"index": 5, "sim_requests": [("GET", "app", "/api/users", 200, None)], "exchanges": []},
    ])  # fmt: skip
    assert refused_writes(agent, ["app"]) == ["step 4: DELETE /api/users/2 simulated 200, real 401"]


@pytest.mark.parametrize(
    ("text", "mapped"),
    [
        ("cat /etc/hosts", "cat {c}/etc/hosts"),
        ("ls -la /workspace && cd /root", "ls -la {c}/workspace && cd {c}/root"),
        ("cat /etc/hostsfoo /tmp/x /workspaces", "cat /etc/hostsfoo /tmp/x /workspaces"),
    ],
)
def test_the_containers_paths_map_into_the_run_folder_and_back(tmp_path, text, mapped):
    from monsearch.live.container import Container

    box = Container(tmp_path / "box")
    c = str(box.c)
    assert box.map_paths(text) == mapped.format(c=c)
    assert box.unmap(f"{c}/workspace/a {box.bin}/curl") == "/workspace/a /usr/bin/curl"
    assert {"curl", "python3", "nc", "sleep"} <= box.allowed
    assert "ssh" not in box.allowed
