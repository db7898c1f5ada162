"""Transcript importers, one module per client (SPEC §4.4).

``import_paths(store, "claude-code", paths)`` is the one entry the CLI
(``openprogram memory import FORMAT PATH…``) calls.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable

from ...failures import FailureCode, MemoryFailure
from ..store import SessionStore
from .claude_code import import_claude_code
from .codex import import_codex
from .common import ImportResult, expand_paths
from .pi import import_pi

Importer = Callable[[SessionStore, Iterable["str | Path"]], ImportResult]

FORMATS: dict[str, Importer] = {
    "claude-code": import_claude_code,
    "pi": import_pi,
    "codex": import_codex,
}


def import_paths(store: SessionStore, fmt: str, paths: Iterable[str | Path]) -> ImportResult:
    """Import ``paths`` in format ``fmt``; unknown formats and unreadable paths are ``INVALID_ARGUMENT``."""
    importer = FORMATS.get(fmt)
    if importer is None:
        raise MemoryFailure(
            FailureCode.INVALID_ARGUMENT,
            f"unknown transcript format {fmt!r}; known formats: {', '.join(FORMATS)}",
            details={"format": fmt},
        )
    paths = list(paths)
    if not paths:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, "no transcript path given")
    expand_paths(paths)  # every path must be readable before anything is imported
    return importer(store, paths)


__all__ = ["FORMATS", "ImportResult", "import_claude_code", "import_codex", "import_paths", "import_pi"]
