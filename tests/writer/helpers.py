"""A fake writer registered like a real backend, and builders for sessions and settings."""

from __future__ import annotations

from collections import deque
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

from openprogram_memory.config import Settings, load_settings
from openprogram_memory.failures import MemoryFailure
from openprogram_memory.sessions.markers import MARKER_KEY
from openprogram_memory.sessions.store import SessionStore
from openprogram_memory.writer.backend import NOTHING_DURABLE, WriterRequest, WriterRun
from openprogram_memory.writer.backends import register_backend
from openprogram_memory.memory import MemoryWorkspace

T0 = datetime(2026, 8, 9, 10, 0, tzinfo=timezone.utc)
SOON = T0 + timedelta(minutes=30)  # within the hour: a per-turn write waits for the threshold
LATER = T0 + timedelta(hours=3)  # the newest pending turn is over an hour old

Check = Callable[[WriterRequest, Any, MemoryWorkspace], None]


class FakeWriter:
    """A writer with a queue of behaviours: each run pops one (default ``"valid"``).

    ``"valid"`` writes one record citing every turn of the batch;
    ``"invalid"`` writes uncited text; ``"nothing"`` changes nothing;
    ``"durable-none"`` changes nothing and says so for the whole batch;
    ``"raise"`` raises a plain exception; a :class:`MemoryFailure` is raised
    as it is. ``checks`` run inside every run (before the edit).
    """

    name = "fake"

    def __init__(self) -> None:
        self.queue: deque[Any] = deque()
        self.requests: list[WriterRequest] = []
        self.checks: list[Check] = []
        self.resolved = 0

    def batches(self) -> list[list[str]]:
        """Node ids each run received, in order."""
        return [[t.node_id for t in request.turns] for request in self.requests]

    def run(self, request: WriterRequest, staging, ws: MemoryWorkspace) -> WriterRun:
        self.requests.append(replace(request, turns=list(request.turns)))
        for check in self.checks:
            check(request, staging, ws)
        behaviour = self.queue.popleft() if self.queue else "valid"
        run = WriterRun(backend=self.name, rounds=1, committed=True, stop_reason="end_turn",
                        prompt="\n".join(t.text for t in request.turns))
        if isinstance(behaviour, BaseException):
            raise behaviour
        if behaviour == "raise":
            raise RuntimeError("the fake writer fell over")
        if behaviour == "nothing":
            return run
        if behaviour == "durable-none":
            run.verdict = NOTHING_DURABLE
            run.reviewed = [t.source_id for t in request.turns]
            return run
        existing = staging.read("topics/notes.md") if staging.exists("topics/notes.md") else "# Notes\n"
        if behaviour == "invalid":
            staging.write("topics/notes.md", existing + "\nAn uncited claim about the batch.\n")
            return run
        label = f"w{len(self.requests)}"
        ids = " ".join(t.node_id for t in request.turns)
        sources = ", ".join(f"[turn {t.node_id}]({t.source_id})" for t in request.turns)
        staging.write("topics/notes.md", existing + f"\nFacts from turns {ids} (run {label}).[^{label}]\n\n"
                                                    f"[^{label}]: Sources: {sources}\n")
        return run


FAKE = FakeWriter()
register_backend("fake", lambda model: _resolve_fake())


def _resolve_fake() -> FakeWriter:
    FAKE.resolved += 1
    return FAKE


def reset_fake() -> FakeWriter:
    """A clean queue and history on the one registered fake."""
    FAKE.queue.clear()
    FAKE.requests.clear()
    FAKE.checks.clear()
    FAKE.resolved = 0
    return FAKE


def settings(state: Path | None = None, *, trigger: int = 8000, model: str = "fake", enabled: bool = True,
             idle: int = 1800) -> Settings:
    """Settings with the fake writer; ``trigger`` may be any number (the config allows 8000/16000/32000)."""
    base = load_settings(state)
    merged = dict(base.values)
    merged.update({"memory.writer.model": model, "memory.writer.trigger_tokens": trigger,
                   "memory.writer.enabled": enabled, "memory.watcher.idle_seconds": idle})
    return Settings(base.state_dir, merged, base.origin, base.warnings)


def workspace(cfg: Settings) -> MemoryWorkspace:
    return MemoryWorkspace.open(cfg, create=True)


def chain(store: SessionStore, session: str, names: list[str], *, parent: str | None = None,
          start: datetime = T0, texts: dict[str, str] | None = None, role_of: Callable[[int], str] | None = None) -> list[str]:
    """Append turns named ``names`` (alternating user/assistant) one minute apart; return their ids."""
    if not store.exists(session):
        store.create_session(session, created_at=start.isoformat())
    for index, name in enumerate(names):
        role = role_of(index) if role_of else ("user" if index % 2 == 0 else "assistant")
        text = (texts or {}).get(name, f"{name} says something worth keeping")
        store.append(session, role, text, parent=parent, node_id=name,
                     created_at=(start + timedelta(minutes=index)).isoformat())
        parent = None
    return names


def marked(store: SessionStore, session: str, ws: MemoryWorkspace) -> set[str]:
    """Node ids of ``session`` marked written for ``ws``."""
    return {node_id for node_id in store.parent_map(session)
            if store.get_node(session, node_id).metadata.get(MARKER_KEY) == ws.workspace_id}


def failure_of(fn: Callable[[], Any]) -> MemoryFailure:
    try:
        fn()
    except MemoryFailure as failure:
        return failure
    raise AssertionError("expected a MemoryFailure")
