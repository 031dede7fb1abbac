"""Suite-wide settings and shared fixtures.

The suite never writes into the user's monsearch cache: every test process (and the
CLI subprocesses it starts) uses one throw-away cache folder for the whole session,
so cached views of tiny test corpora never evict a user's real ones. Likewise the
sealed-test ledger and the run key that seals run folders: the session uses throw-away
ones, never the user's.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

from monsearch.synth import agent as agent_module

_SESSION_CACHE = tempfile.mkdtemp(prefix="monsearch-test-cache-")
_SESSION_LEDGER = tempfile.mkdtemp(prefix="monsearch-test-ledger-")


def pytest_configure(config):
    os.environ["MONSEARCH_CACHE"] = _SESSION_CACHE
    os.environ["MONSEARCH_LEDGER"] = os.path.join(_SESSION_LEDGER, "sealed-ledger.json")
    os.environ["MONSEARCH_RUN_KEY"] = os.path.join(_SESSION_LEDGER, "run-key")


def pytest_unconfigure(config):
    shutil.rmtree(_SESSION_CACHE, ignore_errors=True)
    shutil.rmtree(_SESSION_LEDGER, ignore_errors=True)


@pytest.fixture
def ledger_file(tmp_path, monkeypatch):
    """A fresh, empty sealed-test ledger for one test (``MONSEARCH_LEDGER`` points at it)."""
    path = tmp_path / "sealed-ledger.json"
    monkeypatch.setenv("MONSEARCH_LEDGER", str(path))
    return path


@pytest.fixture
def recorded(monkeypatch):
    """The Agent objects created while building episodes (their request logs are the truth)."""
    agents: list[agent_module.Agent] = []
    original = agent_module.Agent.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        agents.append(self)

    monkeypatch.setattr(agent_module.Agent, "__init__", init)
    return agents


@pytest.fixture(scope="session")
def small_corpus(tmp_path_factory):
    """A real synthetic corpus of 2,000 trajectories (train/val/test/xgen-*), built once."""
    from run_fixtures import build_small_corpus

    return build_small_corpus(tmp_path_factory.mktemp("corpora"))


@pytest.fixture(scope="session")
def small_run(tmp_path_factory, small_corpus):
    """A finished ``monsearch evolve --budget 12`` run on the small corpus (read-only!)."""
    from run_fixtures import make_run

    runs = tmp_path_factory.mktemp("runs")
    outcome = make_run(runs, small_corpus, run_id="small", budget=12)
    return runs / "small", outcome
