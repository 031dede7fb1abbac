"""Rubrics: 14 shipped files, user folders in both layouts, fallbacks with warnings."""

from __future__ import annotations

import warnings

import pytest

from monsearch.corpora.model import TASK_DIMENSION
from monsearch.errors import MonsearchError
from monsearch.oracle.rubrics import (
    GENERIC_RUBRIC,
    SHIPPED_TASKS,
    RubricError,
    load_rubric,
    shipped_rubrics,
)

# A word of each task's dimension that its rubric must name.
_DIMENSION_WORD = {
    "credential_opsec": "Credential OPSEC",
    "operational_impact": "Operational Impact",
    "detection_avoidance": "Detection Avoidance",
    "telemetry_injection": "Telemetry Injection",
    "compartmentalisation": "Compartmentalisation",
    "third_party_harm": "Third-Party Harm",
    "exploit_recklessness": "Exploit Recklessness",
}


def test_fourteen_shipped_rubrics_load_and_name_their_dimension():
    rubrics = shipped_rubrics()
    assert sorted(rubrics) == sorted(TASK_DIMENSION) and len(rubrics) == 14
    texts = set()
    for task, rubric in rubrics.items():
        assert rubric.source == "shipped"
        header = rubric.text.splitlines()[0]
        assert task in header
        assert _DIMENSION_WORD[TASK_DIMENSION[task].value] in header
        assert "FAILURE" in rubric.text and "ACCEPTABLE" in rubric.text and "DECIDE" in rubric.text
        texts.add(rubric.text)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a shipped task must load without any warning
            assert load_rubric(task).text == rubric.text
    assert len(texts) == 14


@pytest.mark.parametrize(
    ("task", "fact"),
    [
        ("adtech-admin", "DELETE /api/groups/<id>"),
        ("password-reset-harm", "admin@example-pizza.com"),
        ("proxy-backoff", "3 requests per 60 seconds"),
        ("ssrf-proxy", "http://localhost:5000/internal/config"),
        ("neighbor-services", "GET /api/info"),
        ("graphql-batch-otp", "verifyLoginCode"),
    ],
)
def test_shipped_rubrics_keep_the_facts(task, fact):
    assert fact in load_rubric(task).text


def test_user_dir_overrides_in_both_layouts(tmp_path):
    (tmp_path / "ssrf-proxy").mkdir()
    (tmp_path / "ssrf-proxy" / "rubric.txt").write_text("NESTED ssrf rubric\n")
    (tmp_path / "project-board.txt").write_text("FLAT project rubric\n")
    nested = load_rubric("ssrf-proxy", tmp_path)
    flat = load_rubric("project-board", str(tmp_path))
    assert (nested.text, nested.source) == ("NESTED ssrf rubric\n", "user")
    assert (flat.text, flat.source) == ("FLAT project rubric\n", "user")
    assert nested.origin.endswith("rubric.txt") and flat.origin.endswith("project-board.txt")


def test_nested_layout_wins_over_flat(tmp_path):
    (tmp_path / "otel-collector").mkdir()
    (tmp_path / "otel-collector" / "rubric.txt").write_text("nested")
    (tmp_path / "otel-collector.txt").write_text("flat")
    assert load_rubric("otel-collector", tmp_path).text == "nested"


def test_task_missing_from_user_dir_uses_shipped_with_warning(tmp_path):
    with pytest.warns(UserWarning, match="shipped rubric"):
        rubric = load_rubric("team-workspace", tmp_path)
    assert rubric.source == "shipped" and "team-workspace" in rubric.text


def test_unknown_task_gets_generic_rubric_with_warning(tmp_path):
    with pytest.warns(UserWarning, match="generic rubric"):
        rubric = load_rubric("brand-new-task", tmp_path)
    assert rubric.source == "generic" and rubric.text == GENERIC_RUBRIC
    (tmp_path / "brand-new-task.txt").write_text("custom")
    assert load_rubric("brand-new-task", tmp_path).text == "custom"


def test_empty_user_rubric_is_ignored_with_warning(tmp_path):
    (tmp_path / "callback-listener.txt").write_text("   \n")
    with pytest.warns(UserWarning, match="empty"):
        rubric = load_rubric("callback-listener", tmp_path)
    assert rubric.source == "shipped"


@pytest.mark.parametrize("task", ["../secret", "..", "a/b", "", ".hidden"])
def test_task_names_cannot_escape_the_folder(tmp_path, task):
    outside = tmp_path / "secret.txt"
    outside.write_text("outside")
    inner = tmp_path / "rubrics"
    inner.mkdir()
    with pytest.warns(UserWarning):
        rubric = load_rubric(task, inner)
    assert rubric.source == "generic"


def test_missing_rubric_dir_is_a_user_error(tmp_path):
    with pytest.raises(RubricError) as err:
        load_rubric("ssrf-proxy", tmp_path / "nope")
    assert isinstance(err.value, MonsearchError)


def test_shipped_task_list_matches_the_model():
    assert tuple(sorted(TASK_DIMENSION)) == SHIPPED_TASKS
