"""``openprogram memory mcp``: memory as a stdio MCP server for Claude Code, codex and others."""

from __future__ import annotations

from typing import Optional

import typer

from .common import StateOption, memory_settings
from .output import err_console, reporting


def register(memory_app: typer.Typer) -> None:
    """Add ``mcp`` to the ``memory`` group."""
    memory_app.command("mcp")(mcp_command)


def mcp_command(state: Optional[str] = StateOption) -> None:
    """Serve memory over MCP on stdin/stdout (tools: memory_search, memory_get,
    memory_status, memory_core, memory_update; resources: memory://core and
    memory://topics/...).

    Started by an agent, not by hand: e.g. `claude mcp add openprogram-memory
    -- openprogram memory mcp`. Refuses to start when memory is disabled
    (exit 69); without a workspace it starts and every call answers
    MEMORY_NOT_FOUND with the fix.
    """
    with reporting(False):  # stdout is the protocol: a refusal goes to stderr only
        settings = memory_settings(state)
        from ..mcp_server.access import WorkspaceAccess
        from ..mcp_server.stdio import serve

        if not settings.memory_dir.is_dir():
            err_console.print(f"[yellow]warning[/]: no memory workspace at {settings.memory_dir} yet; "
                              "run `openprogram memory init` — until then every call answers MEMORY_NOT_FOUND")
        try:
            serve(WorkspaceAccess(settings))
        except KeyboardInterrupt:
            pass
