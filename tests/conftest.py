"""Every test runs against its own state directory, with no memory env vars."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in list(os.environ):
        if name.startswith("OPENPROGRAM_MEMORY_") or name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
            monkeypatch.delenv(name, raising=False)
    state = tmp_path / "state"
    monkeypatch.setenv("OPENPROGRAM_STATE", str(state))
    monkeypatch.setenv("EDITOR", "false")
    return state
