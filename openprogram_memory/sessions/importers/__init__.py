"""Transcript importers, one module per client (architecture §4.4).

``import_paths(store, "claude-code", paths)`` is the one entry the CLI
(``openprogram memory import FORMAT PATH…``) calls. Every file is read and
its format checked before anything is written: a file that looks like
another format (a codex rollout given to ``claude-code``) is
``INVALID_ARGUMENT`` naming the format it looks like, and the store is
left untouched.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable

from ...failures import FailureCode, MemoryFailure
from ..store import SessionStore
from . import claude_code, codex, pi
from .common import SKIP_REASONS, ImportResult, TranscriptFile, TranscriptFormat, check_format, expand_paths, \
    read_transcript

Importer = Callable[[SessionStore, list[TranscriptFile]], ImportResult]

FORMATS: dict[str, tuple[TranscriptFormat, Importer]] = {
    "claude-code": (claude_code.FORMAT, claude_code.import_claude_code),
    "pi": (pi.FORMAT, pi.import_pi),
    "codex": (codex.FORMAT, codex.import_codex),
}


def import_paths(store: SessionStore, fmt: str, paths: Iterable[str | Path]) -> ImportResult:
    """Import ``paths`` (files, or directories searched for ``*.jsonl``) in format ``fmt``.

    Unknown formats, unreadable paths and files of another format are
    ``INVALID_ARGUMENT``, raised before anything is imported.
    """
    entry = FORMATS.get(fmt)
    if entry is None:
        raise MemoryFailure(
            FailureCode.INVALID_ARGUMENT,
            f"unknown transcript format {fmt!r}; known formats: {', '.join(FORMATS)}",
            details={"format": fmt},
        )
    paths = list(paths)
    if not paths:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, "no transcript path given")
    wanted, importer = entry
    files = expand_paths(paths)
    if fmt == "claude-code":  # a transcript's sub-agents live in files of their own beside it
        files = claude_code.with_subagent_files(files)
    transcripts = [read_transcript(path) for path in files]
    known = [format_ for format_, _ in FORMATS.values()]
    for transcript in transcripts:
        check_format(transcript, wanted, known)
    return importer(store, transcripts)


__all__ = ["FORMATS", "ImportResult", "SKIP_REASONS", "import_paths"]
