"""The provider interface: the only seam between memory and an agent runtime.

Nine members (architecture §10). Every one but ``name`` has a default, so another
memory system implements only what it has work for. The files backend
implements all of them; ``memory.backend=none`` gives :class:`NullMemory`,
which injects, recalls, writes and organizes nothing.

Memory never takes a conversation down: every hook here swallows and logs
its own exceptions. A swallowed write failure is still recorded (in
``writer-status.json`` and ``events.jsonl``, by the pipeline) and returned
to the caller as a value, never raised.
"""

from __future__ import annotations

import logging
from typing import Any, Iterable, Mapping, Protocol, runtime_checkable

from .config import Settings, load_settings
from .failures import FailureCode, MemoryFailure, as_failure
from .search.fence import CORE_NOTE, core_block  # noqa: F401  (CORE_NOTE: kept importable from here)

log = logging.getLogger("openprogram_memory")


@runtime_checkable
class MemoryBackend(Protocol):
    """What an agent runtime calls, over a session's life."""

    name: str

    def is_available(self) -> bool: ...
    def initialize(self, session_id: str, **context: Any) -> None: ...
    def system_prompt(self) -> str: ...
    def search(self, query: str) -> str: ...
    def extract_before_discard(self, messages: Iterable[Mapping[str, Any]]) -> str: ...
    def write(self, session_id: str | None, messages: Any = None, force: bool = False) -> MemoryFailure | None: ...
    def reorganize(self, model: str | None = None) -> MemoryFailure | None: ...
    def shutdown(self) -> None: ...


class BaseMemory:
    """Defaults for every member but ``name``: do nothing, inject nothing."""

    name = "base"

    def is_available(self) -> bool:
        return True

    def initialize(self, session_id: str, **context: Any) -> None:
        return None

    def system_prompt(self) -> str:
        return ""

    def search(self, query: str) -> str:
        return ""

    def extract_before_discard(self, messages: Iterable[Mapping[str, Any]]) -> str:
        return ""

    def write(self, session_id: str | None, messages: Any = None, force: bool = False) -> MemoryFailure | None:
        return None

    def reorganize(self, model: str | None = None) -> MemoryFailure | None:
        return None

    def shutdown(self) -> None:
        return None


class NullMemory(BaseMemory):
    """``memory.backend=none``: no injection, recall, writing or organizing."""

    name = "none"

    def is_available(self) -> bool:
        return False


class FilesMemory(BaseMemory):
    """The plain-files backend: topics, core block, BM25 recall, the writer."""

    name = "files"

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or load_settings()
        self.sessions: list[str] = []
        self._ws = None
        self._watched = None  # the root this provider holds a file watch on, from initialize to shutdown

    # -- helpers -------------------------------------------------------
    def _workspace(self):
        if self._ws is None:
            from .memory import MemoryWorkspace

            self._ws = MemoryWorkspace.open(self.settings, create=True)
        return self._ws

    def _guard(self, hook: str, default: Any, fn, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # memory never takes the conversation down
            log.warning("memory %s failed: %s", hook, exc, exc_info=log.isEnabledFor(logging.DEBUG))
            return default

    # -- the nine members ----------------------------------------------
    def is_available(self) -> bool:
        return self.settings.enabled

    def initialize(self, session_id: str, **context: Any) -> None:
        """Remember the session (flushed at shutdown), open the workspace, and watch its files until shutdown:
        the runtime asks :meth:`search` before every turn, and while the watch sees nothing move a search
        checks no file (a hand edit is seen once the watch reports it, ~50-100 ms; architecture §9)."""
        if session_id and session_id not in self.sessions:
            self.sessions.append(session_id)
        self._guard("initialize", None, self._open)

    def _open(self) -> None:
        root = self._workspace().root
        if self._watched is None:
            from .workspace import watch

            if watch.hold(root) is not None:
                self._watched = root

    def system_prompt(self) -> str:
        """The effective core block, fenced once; empty when injection is off."""
        def build() -> str:
            view = self._workspace().core_view()
            return core_block(view["effective"]) if view["inject"] else ""

        return self._guard("system_prompt", "", build)

    def search(self, query: str) -> str:
        """Recall for this turn: trusted records only, fenced once."""
        from .search.query import recall_block, search

        def run() -> str:
            if not query or not query.strip():
                return ""
            if self.settings["memory.retrieval.method"] != "bm25":
                log.info("memory.retrieval.method=%s has no backend here; using bm25",
                         self.settings["memory.retrieval.method"])
            hits = search(self._workspace().root, query, self.settings["memory.retrieval.top_k"])
            return recall_block(hits)

        return self._guard("search", "", run)

    def extract_before_discard(self, messages: Iterable[Mapping[str, Any]]) -> str:
        """Durable statements among messages about to be compacted, as summary text."""
        from .writer.rules_backend import extract_statements

        def run() -> str:
            lines: list[str] = []
            for message in messages:
                if message.get("role") != "user":
                    continue
                content = message.get("content")
                if isinstance(content, list):  # content blocks
                    content = "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
                for statement in extract_statements(str(content or "")):
                    line = f"- {statement.text}"
                    if line not in lines:
                        lines.append(line)
            if not lines:
                return ""
            return "Durable facts stated in the discarded turns (keep them):\n" + "\n".join(lines)

        return self._guard("extract_before_discard", "", run)

    def write(self, session_id: str | None, messages: Any = None, force: bool = False) -> MemoryFailure | None:
        """Per-turn (``force=False``) or forced write. Returns the failure, never raises.

        ``messages`` (``[{"role", "content", "id"?}]``) are appended to the
        session in the bundled store first (skipped when their ids are
        already there); without them the turns must already be in the store.
        """
        from .writer.pipeline import write

        if not self.settings["memory.writer.enabled"]:
            return None
        try:
            write(self._workspace(), session_id, force=force, messages=messages)
            return None
        except MemoryFailure as failure:
            level = logging.DEBUG if failure.retryable else logging.WARNING
            log.log(level, "memory write for %s: %s", session_id, failure)
            return failure
        except Exception as exc:
            unknown = as_failure(exc, FailureCode.WRITER_FAILURE_UNKNOWN)
            log.warning("memory write for %s failed: %s", session_id, unknown)
            return unknown

    def reorganize(self, model: str | None = None) -> MemoryFailure | None:
        from .organizer import reorganize

        try:
            reorganize(self._workspace(), model=model)
            return None
        except Exception as exc:
            failure = as_failure(exc)
            log.warning("memory reorganize failed: %s", failure)
            return failure

    def shutdown(self) -> None:
        """Flush: a forced write of every session this provider saw."""
        for session_id in list(self.sessions):
            self.write(session_id, force=True)
        self.sessions.clear()
        if self._watched is not None:
            from .workspace import watch

            self._guard("shutdown", None, watch.release, self._watched)
            self._watched = None


def get_provider(settings: Settings | None = None) -> MemoryBackend:
    """The provider ``memory.backend`` selects (never raises, never creates files for ``none``)."""
    settings = settings or load_settings()
    if not settings.enabled:
        return NullMemory()
    return FilesMemory(settings)
