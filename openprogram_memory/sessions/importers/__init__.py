"""Transcript importers, one module per client (architecture §4.4).

``import_paths(store, "claude-code", paths)`` is the one entry the CLI
(``openprogram memory import FORMAT PATH…``) calls. Every file is read and
its format checked before anything is written: a file named on the
command line that looks like another format (a codex rollout given to
``claude-code``) is ``INVALID_ARGUMENT`` naming the format it looks like,
and the store is left untouched. A file found in a directory that cannot be
imported is skipped (the result names it and why), so one stray file does
not stop the import of ``~/.claude/projects``; only when every file found
is skipped does the import fail.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterable, NoReturn

from ...failures import FailureCode, MemoryFailure
from ...fsutil import shell_args
from ..store import SessionStore
from . import claude_code, codex, pi
from .common import EMPTY_RESULT, SKIP_REASONS, ImportResult, TranscriptFile, TranscriptFormat, check_format, \
    expand_paths, read_transcript

Importer = Callable[[SessionStore, list[TranscriptFile]], ImportResult]

FORMATS: dict[str, tuple[TranscriptFormat, Importer]] = {
    "claude-code": (claude_code.FORMAT, claude_code.import_claude_code),
    "pi": (pi.FORMAT, pi.import_pi),
    "codex": (codex.FORMAT, codex.import_codex),
}


def import_paths(store: SessionStore, fmt: str, paths: Iterable[str | Path],
                 progress: Callable[[int, int], None] | None = None,
                 should_stop: Callable[[], bool] | None = None) -> ImportResult:
    """Import ``paths`` (files, or directories searched for ``*.jsonl``) in format ``fmt``.

    Unknown formats, unreadable paths and files of another format are
    ``INVALID_ARGUMENT``, raised before anything is imported. The files are
    then imported a group at a time (a transcript with its sub-agent files;
    a codex fork after its parent): ``progress(done, total)`` after each,
    and ``should_stop()`` (Ctrl-C) ends the import between two groups — the
    result says ``interrupted``; importing again adds only what is missing.
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
    named = {Path(raw).expanduser() for raw in paths if not Path(raw).expanduser().is_dir()}
    known = [format_ for format_, _ in FORMATS.values()]
    transcripts: list[TranscriptFile] = []
    skipped_files: list[dict[str, str]] = []
    looks_like: set[str | None] = set()
    for path in files:
        try:
            transcript = read_transcript(path)
            check_format(transcript, wanted, known)
        except MemoryFailure as failure:
            if path in named:  # the person named this very file: refuse, before anything is imported
                raise
            skipped_files.append({"path": str(path), "reason": failure.message})
            looks_like.add(failure.details.get("looks_like"))
            continue
        transcripts.append(transcript)
    if skipped_files and not transcripts:
        _refuse_all(wanted, paths, skipped_files, looks_like)
    groups = _groups(fmt, transcripts)
    result = replace(EMPTY_RESULT, skipped_files=skipped_files)
    for done, group in enumerate(groups, 1):
        if should_stop is not None and should_stop():
            return replace(result, interrupted=True, remaining=sum(len(g) for g in groups[done - 1:]))
        result = replace(result + importer(store, group), skipped_files=skipped_files)
        if progress is not None:
            progress(done, len(groups))
    return result


def _refuse_all(wanted: TranscriptFormat, paths: list[str | Path], skipped_files: list[dict[str, str]],
                looks_like: set[str | None]) -> NoReturn:
    """Nothing found is ``wanted``: INVALID_ARGUMENT. A folder of another format's files (codex rollouts given to
    ``claude-code``) is said once, with the count and the one command to run; the files are in ``skipped_files``."""
    name = next(iter(looks_like)) if len(looks_like) == 1 else None
    if name is None:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT,
                            f"nothing imported: none of the {len(skipped_files)} file(s) found is "
                            f"{wanted.description}", details={"skipped_files": skipped_files})
    other = FORMATS[name][0]
    count = len(skipped_files)
    given = [skipped_files[0]["path"]] if count == 1 else [str(Path(p).expanduser()) for p in paths]
    where = " ".join(given)
    found = where if count == 1 else f"each of the {count} files found in {where}"
    raise MemoryFailure(FailureCode.INVALID_ARGUMENT,
                        f"nothing imported: {found} looks like {other.description}, not {wanted.description}; "
                        f"run `openprogram memory import {other.name} {shell_args(*given)}`",
                        details={"looks_like": other.name, "skipped_files": skipped_files})


def _groups(fmt: str, transcripts: list[TranscriptFile]) -> list[list[TranscriptFile]]:
    """The transcripts in the units they must be imported in, in order: a codex fork after its parent;
    Claude Code files that share a session (a resumed conversation, a sub-agent's own file) together."""
    if fmt == "codex":
        return [[t] for t in codex.parents_first(transcripts)]
    if fmt != "claude-code":
        return [[t] for t in transcripts]
    group_of: dict[str, int] = {}  # session id → the group holding it
    groups: list[list[TranscriptFile]] = []
    for transcript in transcripts:
        sessions = {line["sessionId"] for _, line in transcript.lines if isinstance(line.get("sessionId"), str)}
        joined = sorted({group_of[s] for s in sessions if s in group_of})
        if not joined:
            groups.append([transcript])
            target = len(groups) - 1
        else:
            target = joined[0]
            for other in joined[1:]:  # this file links two groups: they become one
                groups[target].extend(groups[other])
                groups[other] = []
                group_of.update({s: target for s, g in group_of.items() if g == other})
            groups[target].append(transcript)
        group_of.update({s: target for s in sessions})
    order = {id(t): n for n, t in enumerate(transcripts)}  # within a group, the files keep the order given
    return [sorted(group, key=lambda t: order[id(t)]) for group in groups if group]


__all__ = ["FORMATS", "ImportResult", "SKIP_REASONS", "import_paths"]
