"""Fixtures for the Anthropic writer tests: replayed HTTP, no network, a real workspace."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator

import httpx2
import pytest
from anthropic_helpers import MESSAGES
from anthropic_replay import ReplayTransport

from openprogram_memory.config import load_settings
from openprogram_memory.sources.archive import SourceMessage
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
    ws = MemoryWorkspace.open(load_settings(tmp_path / "state"), create=True)
    ws.archive([SourceMessage("openprogram/s1/u1", "Dana", "user-1", "2026-08-09T10:00:00+08:00", "I run a bike shop.")])
    ws.write_topic("topics/people/dana.md",
                   "# Dana\n\nDana runs a bike shop.[^e1]\n\n[^e1]: Time: `2026-08-09`; Sources: [bike shop](openprogram/s1/u1)\n")
    ws.archive(MESSAGES)
    return ws
