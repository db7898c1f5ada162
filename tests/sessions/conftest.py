"""Every session test runs against its own temporary state directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from openprogram_memory.config import load_settings
from openprogram_memory.memory import MemoryWorkspace
from openprogram_memory.sessions.store import SessionStore

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "sessions"


@pytest.fixture(autouse=True)
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point ``OPENPROGRAM_STATE`` at a fresh temp dir for every test."""
    state = tmp_path / "state"
    monkeypatch.setenv("OPENPROGRAM_STATE", str(state))
    return state


@pytest.fixture
def workspace(state_dir: Path) -> MemoryWorkspace:
    """The workspace `memory init` makes: every CLI verb but `init` refuses a state directory without one."""
    return MemoryWorkspace.open(load_settings(), create=True)


@pytest.fixture
def store(state_dir: Path) -> SessionStore:
    """The bundled store under the test's state directory."""
    return SessionStore(load_settings().sessions_dir)


def _add_chain(store: SessionStore, session_id: str, prefix: str, count: int, parent: str | None = None,
               start: int = 1) -> list[str]:
    """Append ``count`` alternating user/assistant turns named ``<prefix><n>``; return their ids."""
    ids = []
    for number in range(start, start + count):
        role = "user" if number % 2 else "assistant"
        node = store.append(session_id, role, f"{prefix}{number} says something durable", parent=parent,
                            node_id=f"{prefix}{number}")
        parent = None
        ids.append(node.id)
    return ids


@pytest.fixture
def add_chain():
    """``add_chain(store, session, prefix, count, parent=None, start=1)`` → ids of the new turns."""
    return _add_chain
