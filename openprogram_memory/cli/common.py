"""Options and helpers every CLI verb shares."""

from __future__ import annotations

from typing import Any, Optional

import typer

from ..config import Settings, load_settings
from ..failures import FailureCode, MemoryFailure

StateOption = typer.Option(None, "--state", help="State directory (default: $OPENPROGRAM_STATE or ~/.openprogram).")
JsonOption = typer.Option(False, "--json", help="Print one JSON object for programs.")


def memory_settings(state: Optional[str], overrides: dict[str, Any] | None = None) -> Settings:
    """Effective settings for a ``memory`` verb; refuses when memory is off.

    ``memory.backend=none`` refuses every memory verb with MEMORY_DISABLED
    before any file or directory is created.
    """
    settings = load_settings(state, overrides)
    for warning in settings.warnings:
        from .output import err_console

        err_console.print(f"[yellow]warning[/]: {warning}")
    if not settings.enabled:
        raise MemoryFailure(
            FailureCode.MEMORY_DISABLED,
            "memory is disabled (memory.backend=none); set memory.backend=files in config.toml "
            "or unset OPENPROGRAM_MEMORY_BACKEND to use it",
        )
    return settings


def open_workspace(settings: Settings, *, create: bool = False):
    """Open the workspace under ``settings.memory_dir`` (create it on ``create``)."""
    from ..workspace.api import MemoryWorkspace

    return MemoryWorkspace.open(settings, create=create)
