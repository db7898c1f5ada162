"""Writer tests: a fresh fake writer, settings, workspace and session store per test."""

from __future__ import annotations

import pytest

from openprogram_memory.sessions.store import SessionStore

from .helpers import reset_fake, settings, workspace


@pytest.fixture
def rules_only(monkeypatch):
    """The corpus-trained classifier silenced (every sentence "none" to it): what the rules alone read."""
    from openprogram_memory.writer import learned

    monkeypatch.setattr(learned, "probabilities", lambda sentence: {"none": 1.0})


@pytest.fixture
def fake():
    return reset_fake()


@pytest.fixture
def cfg(_isolated_state):
    return settings()


@pytest.fixture
def ws(cfg):
    return workspace(cfg)


@pytest.fixture
def store(cfg):
    return SessionStore(cfg.sessions_dir)
