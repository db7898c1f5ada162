"""The bundled session store, written markers and transcript importers (architecture §4)."""

from .markers import (
    MARKER_KEY,
    PendingWalk,
    is_memory_input,
    is_runtime_scheduled,
    live_tips,
    mark_written,
    pending_turns,
    pending_walk,
)
from .store import Node, SessionInfo, SessionStore

__all__ = [
    "MARKER_KEY",
    "Node",
    "PendingWalk",
    "SessionInfo",
    "SessionStore",
    "is_memory_input",
    "is_runtime_scheduled",
    "live_tips",
    "mark_written",
    "pending_turns",
    "pending_walk",
]
