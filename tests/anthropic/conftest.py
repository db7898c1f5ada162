"""Fixtures for the Anthropic writer tests: replayed HTTP, no network, a real workspace."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator

import httpx2
import pytest
from anthropic_helpers import MESSAGES, dana_workspace
from anthropic_replay import ReplayTransport

from openprogram_memory.memory import MemoryWorkspace


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """A real HTTP transport anywhere in these tests is a bug."""

    def refuse(self: httpx2.HTTPTransport, request: httpx2.Request) -> httpx2.Response:
        pytest.fail(f"network access attempted: {request.method} {request.url}", pytrace=False)

    monkeypatch.setattr(httpx2.HTTPTransport, "handle_request", refuse)


@pytest.fixture
def replay() -> Iterator[Callable[[str], ReplayTransport]]:
    """``replay("write_record")`` → a transport replaying fixtures/http/write_record.json.

    At teardown every recorded exchange must have been used.
    """
    made: list[ReplayTransport] = []

    def make(name: str) -> ReplayTransport:
        transport = ReplayTransport.from_fixture(name)
        made.append(transport)
        return transport

    yield make
    for transport in made:
        transport.assert_exhausted()


@pytest.fixture
def workspace(tmp_path: Path) -> MemoryWorkspace:
    """A fresh workspace with one existing topic and the batch archived."""
    return dana_workspace(tmp_path / "state", MESSAGES)
