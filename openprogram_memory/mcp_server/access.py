"""The workspace an MCP call works on, re-resolved for every call.

Settings are re-read per call, keeping the flag-level overrides the server
was started with, so ``memory config set memory.backend none`` refuses the
next call at once and a workspace created by ``memory init`` after the
agent connected is found without a restart. The server never creates a
workspace: a missing one is a clear ``MEMORY_NOT_FOUND`` naming the fix.
"""

from __future__ import annotations

from pathlib import Path

from ..config import Settings, load_settings
from ..failures import FailureCode, MemoryFailure


class WorkspaceAccess:
    """Opens the workspace of one state directory on demand."""

    def __init__(self, settings: Settings) -> None:
        self.state_dir: Path = settings.state_dir
        self.watch_files = False  # set by the long-running server: searches then skip per-query file checks
        self._overrides = {key: settings.values[key] for key, origin in settings.origin.items() if origin == "flag"}

    def settings(self) -> Settings:
        """The effective settings now; MEMORY_DISABLED when memory is off."""
        settings = load_settings(self.state_dir, self._overrides)
        if not settings.enabled:
            raise MemoryFailure(FailureCode.MEMORY_DISABLED,
                                "memory is disabled (memory.backend=none); set memory.backend=files to use it")
        return settings

    def workspace(self):
        """The existing workspace; MEMORY_NOT_FOUND (with the fix) when there is none."""
        from ..memory import MemoryWorkspace
        from ..workspace import watch

        ws = MemoryWorkspace.open(self.settings())  # create=False: refuses with the init hint
        if self.watch_files:  # the serving process (stdio.serve): also a workspace made after it started
            watch.start(ws.root)  # (idempotent)
        return ws
