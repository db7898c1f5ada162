"""Shared pieces of the Anthropic writer tests (a module, not conftest: test files import it)."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from anthropic_replay import ReplayTransport

from openprogram_memory.config import load_settings
from openprogram_memory.memory import MemoryWorkspace
from openprogram_memory.sources.archive import SourceMessage
from openprogram_memory.writer.anthropic_backend import AnthropicWriter
from openprogram_memory.writer.backend import BatchTurn

MODEL = "claude-x"
API_KEY = "sk-ant-test-not-a-real-key"

MESSAGES = [
    SourceMessage("openprogram/s2/u1", "Dana", "user-1", "2026-08-11T09:00:00+08:00",
                  "For the record: our billing service runs on FastAPI."),
    SourceMessage("openprogram/s2/a1", "assistant", "assistant", "2026-08-11T09:00:05+08:00",
                  "Noted, FastAPI for billing.", speaker_kind="assistant"),
]


def writer_for(transport: ReplayTransport, **kwargs) -> AnthropicWriter:
    """The real backend, talking to ``transport`` instead of the network."""
    kwargs.setdefault("api_key", API_KEY)
    return AnthropicWriter(MODEL, http_client=transport.client(), **kwargs)


def batch_turns() -> list[BatchTurn]:
    """The archived batch as the writer sees it."""
    return [
        BatchTurn(m.source_id, m.source_id.rsplit("/", 1)[1], "user" if m.speaker_kind == "user" else "assistant",
                  m.speaker, m.timestamp, m.text)
        for m in MESSAGES
    ]


def dana_workspace(state: Path, batch: Sequence[SourceMessage]) -> MemoryWorkspace:
    """A fresh workspace with one existing topic (Dana's) and ``batch`` archived."""
    ws = MemoryWorkspace.open(load_settings(state), create=True)
    ws.archive([SourceMessage("openprogram/s1/u1", "Dana", "user-1", "2026-08-09T10:00:00+08:00", "I run a bike shop.")])
    ws.write_topic("topics/people/dana.md",
                   "# Dana\n\nDana runs a bike shop.[^e1]\n\n[^e1]: Time: `2026-08-09`; Sources: [bike shop](openprogram/s1/u1)\n")
    ws.archive(list(batch))
    return ws
