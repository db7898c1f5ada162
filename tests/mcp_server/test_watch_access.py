"""The MCP server's workspace access starts the file watch only in the serving process — also for a workspace
made after the server started; in-process callers (tests, the Python API) never get a watch thread."""

from __future__ import annotations

from pathlib import Path

from openprogram_memory.config import load_settings
from openprogram_memory.mcp_server.access import WorkspaceAccess
from openprogram_memory.memory import MemoryWorkspace
from openprogram_memory.workspace import watch


def test_the_serving_process_watches_a_workspace_made_after_it_started(tmp_path: Path):
    state = tmp_path / "state"
    access = WorkspaceAccess(load_settings(state))
    access.watch_files = True  # what stdio.serve sets
    assert watch.start(state / "memory") is None  # no workspace yet: nothing to watch
    MemoryWorkspace.open(load_settings(state), create=True)  # `memory init` while the server runs
    try:
        ws = access.workspace()
        assert ws.root.resolve() in watch._WATCHES
    finally:
        watch.stop()


def test_in_process_access_starts_no_watch(tmp_path: Path):
    state = tmp_path / "state"
    MemoryWorkspace.open(load_settings(state), create=True)
    ws = WorkspaceAccess(load_settings(state)).workspace()
    assert ws.root.resolve() not in watch._WATCHES
