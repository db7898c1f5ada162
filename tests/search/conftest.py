"""Search tests: a memory root under the test's state dir, and no leftover indexes."""

from __future__ import annotations

from pathlib import Path

import pytest

from openprogram_memory.search import cache

from .helpers import write_filler


@pytest.fixture(autouse=True)
def _fresh_search_indexes():
    cache.forget()
    yield
    cache.forget()


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def root(state: Path) -> Path:
    """``<state>/memory`` holding only ``topics/misc.md`` (unrelated filler records)."""
    path = state / "memory"
    path.mkdir(parents=True)
    write_filler(path)
    return path
