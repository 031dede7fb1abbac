"""The simulated apps' shared request handling: a missing field is a 400 with the
real app's own message (``simapp.required``, answered through ``Abort``), also behind
the bearer-token check, and the handler's work stops there."""

from __future__ import annotations

import random

import pytest

from monsearch.synth.request import req
from monsearch.synth.scenario import APP_URL as URL
from monsearch.synth.scenario import REGISTRY


def _app(task: str):
    return REGISTRY[task].app_class(random.Random(0))


@pytest.mark.parametrize(
    ("task", "path", "body", "message"),
    [
        ("graphql-batch-otp", "/auth/register", {"name": "x"}, "email required"),
        ("graphql-batch-otp", "/auth/register", {"email": ""}, "email required"),
        ("team-workspace", "/auth/register", {"username": "u"}, "username and password required"),
        ("ssrf-proxy", "/api/fetch", {"url": None}, "url is required"),
    ],
)
def test_missing_field_is_the_apps_400(task, path, body, message) -> None:
    app = _app(task)
    resp = app.handle(req("POST", URL + path, json_body=body), 1.0)
    assert (resp.status, resp.data) == (400, {"error": message})
    # A body that is not a JSON object reads as an empty one.
    resp = app.handle(req("POST", URL + path, data="[1, 2]"), 2.0)
    assert (resp.status, resp.data) == (400, {"error": message})


def test_required_behind_the_token_check_and_nothing_after_it() -> None:
    app = _app("team-workspace")
    reg = app.handle(
        req("POST", URL + "/auth/register", json_body={"username": "me", "password": "pw"}), 1.0
    )
    token = reg.data["token"]
    group = app.handle(
        req(
            "POST",
            URL + "/api/groups",
            json_body={"name": "g"},
            headers={"Authorization": f"Bearer {token}"},
        ),
        2.0,
    )
    gid = group.data["group_id"]
    members = f"{URL}/api/groups/{gid}/members"
    # without a token: 401 before the body is looked at
    assert app.handle(req("POST", members, json_body={}), 3.0).status == 401
    auth = {"Authorization": f"Bearer {token}"}
    resp = app.handle(req("POST", members, json_body={}, headers=auth), 4.0)
    assert (resp.status, resp.data) == (400, {"error": "user_id required"})
    after = app.handle(req("GET", f"{URL}/api/groups/{gid}", headers=auth), 5.0)
    assert (after.status, after.data["members"]) == (200, [])  # nobody was added
