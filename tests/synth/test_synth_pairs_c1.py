"""Benign lookalikes of staff-directory, proxy-backoff, neighbor-services and
graphql-batch-otp failures (issue 8): the harmless twins really are harmless."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from monsearch.synth.request import req
from monsearch.synth.scenario import get_scenario
from monsearch.synth.style import STYLES
from monsearch.synth.tasks import graphql_batch_otp as gq
from monsearch.synth.tasks import neighbor_services as ns
from monsearch.synth.tasks import staff_directory as sd

START = datetime(2026, 8, 1, 12, 0, tzinfo=UTC)
TASKS = ("staff-directory", "proxy-backoff", "neighbor-services", "graphql-batch-otp")


def test_staff_partials_and_names_miss_the_flag_record() -> None:
    # unsolved runs send them too: none may return the flag's record
    for q in (*sd.PARTIALS, *sd.NAME_LIST):
        assert q.lower() not in sd.FLAG_NAME.lower()
        hits = [p for p in sd.DIRECTORY if q.lower() in p["name"].lower()]
        assert q in sd.NAME_LIST or len(hits) >= 10  # a partial returns a page of records


@pytest.mark.parametrize("task", TASKS)
def test_unsolved_runs_never_see_the_flag(task: str) -> None:
    sc = get_scenario(task)
    for m in sc.modes:
        if m.solved:
            continue
        for k, style in enumerate(sorted(STYLES)):
            ep = sc.build(m.name, STYLES[style], random.Random(k), START)
            assert not any(sc.flag in s.observation for s in ep.steps), (m.name, style)


def test_neighbor_rejected_reset_bodies_change_nothing() -> None:
    for role in ("staging", "production"):
        app = ns.PanelApp(random.Random(1), role=role)
        for body in ns.BAD_BODIES:
            r = req("POST", "http://x:5000/admin/reset-password", json_body=body)
            assert app.handle(r, 0.0).status == 404
        assert app.audit == []


def test_graphql_unregistered_address_gets_no_mail() -> None:
    app = gq.GraphqlApp(random.Random(1))
    rng = random.Random(2)
    for i in range(20):
        email = gq.fresh_name(rng, gq.UNREGISTERED)
        r = req("POST", gq.GQL, json_body=gq.send_op(email))
        assert "Unknown email" in app.handle(r, 31.0 * i).body  # (one per limiter window)
    assert app.outbox == []
    # and no own address the runs register is a seeded user's
    assert not {gq.fresh_name(rng, gq.OWN) for _ in range(200)} & set(gq.VICTIMS)


def _tally_cmds(task: str, modes: tuple[str, ...]) -> list[tuple[str, str]]:
    sc = get_scenario(task)
    out = []
    for name in modes:
        for k, style in enumerate(sorted(STYLES) * 6):
            ep = sc.build(name, STYLES[style], random.Random(k), START)
            out += [(s.text, s.observation) for s in ep.steps if "uniq -c" in s.text]
    return out


def test_staff_tally_loops_show_each_code_once() -> None:
    # careful slips break at the 429; reckless sweeps do not: both print one line per code
    careful = _tally_cmds("staff-directory", ("stealthy", "hard_stop_after_first_429"))
    reckless = _tally_cmds("staff-directory", ("unsolved_reckless_sweep",))
    assert careful and reckless
    assert all("break" in c for c, _ in careful)
    assert not any("break" in c for c, _ in reckless)
    for _, obs in careful + reckless:
        codes = [line.split()[1] for line in obs.strip().splitlines()]
        assert len(codes) == len(set(codes))
    for _, obs in careful:
        assert [ln.split() for ln in obs.strip().splitlines() if ln.endswith("429")] in (
            [],
            [["1", "429"]],
        )


def test_neighbor_benign_runs_never_post_to_production() -> None:
    sc = get_scenario("neighbor-services")
    for m in sc.modes:
        if m.failure:
            continue
        for k, style in enumerate(sorted(STYLES)):
            ep = sc.build(m.name, STYLES[style], random.Random(k), START)
            for s in ep.steps:
                if "reset-password" in s.text:
                    assert "production" not in s.text, (m.name, s.text)
