"""Incremental import: only the lines appended to a transcript since last time.

Agents append to their transcript after every turn; re-reading a long
transcript on every turn would cost more and more. Per transcript file a
small record in ``<memory>/.scriptorium/transcripts/<digest of the path>.json``
keeps how far it was read::

    {"path", "format", "inode", "offset", "resume", "resume_line", "fingerprint", "aliases", "sessions"}

``offset`` is the end of the last complete line read. ``resume`` is where
the next read starts: the beginning of the last turn read (the last line a
person typed). A new line names a line before it as its parent — almost
always one of the current turn — and a streamed message may continue; the
importers resolve both only when those lines are in the same read, so the
last turn is read again with the new lines (its stored nodes are skipped:
the import is idempotent). Formats whose session id lives in a header line
(codex, pi) get the file's first line with every read. A partial last line
(the agent is still writing it) waits for the next call. Each turn is thus
read about twice, whatever the transcript's length. A read in which no turn
begins — a sub-agent's own file, ``<id>/subagents/agent-*``, holds sidechain
lines only, and those never begin one; a read of any other file begins at a
prompt — resumes at its last sidechain user line instead (the sub-agent's
prompt or a tool's result): no streamed message continues past it, so such
a file too is read about once, not from its start on every call. A line may also name a
line far back (Claude Code's rewind names the last line before the edited
prompt, often one folded into a streamed message or dropped): ``aliases``
keeps every dropped line's parent, so that name still resolves.

A file that is another file now — a different inode, shorter than
``offset``, or a different first line (truncated and rewritten) — is read
again from the start. That is always safe: the import is idempotent (stable
ids), so re-reading costs time, never duplicates.

A file read from its start is first checked to be of the format asked
for, as ``memory import`` checks a file it is given: a codex rollout or any
other JSON file handed over as a Claude Code transcript is refused
(``INVALID_ARGUMENT`` naming the format it looks like), not read as one
that holds nothing.

``sessions`` are the sessions the last read named: a call that finds
nothing appended still answers them (with nothing imported), so a caller
knows whose conversation the file is without reading it again.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ...failures import FailureCode, MemoryFailure
from ...fsutil import FileLock, atomic_write_json, ensure_dir, read_json
from ..store import SessionStore
from . import claude_code, codex, pi
from .common import BLANK, EMPTY_RESULT, MALFORMED_JSON, NOT_AN_OBJECT, ImportResult, TranscriptFile, \
    TranscriptFormat, check_format

STATE_DIR = "transcripts"
LOCK_TIMEOUT = 10.0


def _content_blocks(message: Any) -> Any:
    return message.get("content") if isinstance(message, dict) else None


def _claude_code_prompt(line: dict[str, Any]) -> bool:
    content = _content_blocks(line.get("message"))
    tool_result = isinstance(content, list) and any(
        isinstance(block, dict) and block.get("type") == "tool_result" for block in content)
    return line.get("type") == "user" and not line.get("isSidechain") and not tool_result


def _claude_code_agent_step(line: dict[str, Any]) -> bool:
    return line.get("type") == "user" and bool(line.get("isSidechain"))


def _codex_prompt(line: dict[str, Any]) -> bool:
    line = codex.modern(line)  # a legacy rollout's bare user message too
    payload = line.get("payload")
    payload = payload if isinstance(payload, dict) else {}
    return line.get("type") == "response_item" and payload.get("type") == "message" and payload.get("role") == "user"


def _pi_prompt(line: dict[str, Any]) -> bool:
    message = line.get("message")
    message = message if isinstance(message, dict) else {}
    return line.get("type") == "message" and message.get("role") == "user"


@dataclass(frozen=True)
class TailFormat:
    """How a transcript format is read a chunk at a time."""

    shape: TranscriptFormat  # what a line of this format looks like (another format's file is refused)
    turn_start: Callable[[dict[str, Any]], bool]  # a line a person typed: where a turn begins
    header: bool  # the session id lives in the first line
    import_lines: Callable[[SessionStore, list[TranscriptFile], dict[str, Any]], ImportResult]
    # where a read in which no turn begins resumes (a sub-agent's own file): past it no streamed message continues
    agent_step: Callable[[dict[str, Any]], bool] | None = None


TAIL_FORMATS: dict[str, TailFormat] = {
    "claude-code": TailFormat(claude_code.FORMAT, _claude_code_prompt, False, claude_code.import_claude_code,
                             _claude_code_agent_step),
    # codex is linear; aliases remember which lines of a fork repeat its parent
    "codex": TailFormat(codex.FORMAT, _codex_prompt, True, codex.import_codex),
    "pi": TailFormat(pi.FORMAT, _pi_prompt, True, pi.import_pi),
}


@dataclass(frozen=True)
class Chunk:
    """Complete lines read from ``start``: ``(number, object, start offset)``; ``end`` is past the last."""

    lines: list[tuple[int, dict[str, Any], int]]
    skipped: Counter
    end: int
    end_line: int


def read_chunk(data: bytes, start: int, first_number: int) -> Chunk:
    """The complete JSON-object lines of ``data`` (read from byte ``start``); other lines counted by reason."""
    cut = data.rfind(b"\n") + 1
    lines: list[tuple[int, dict[str, Any], int]] = []
    skipped: Counter = Counter()
    position, number = start, first_number
    for raw in data[:cut].splitlines(keepends=True):
        number += 1
        text = raw.strip()
        if not text:
            skipped[BLANK] += 1
        else:
            try:
                obj = json.loads(text.decode("utf-8", errors="replace"))
            except ValueError:
                skipped[MALFORMED_JSON] += 1
            else:
                if isinstance(obj, dict):
                    lines.append((number, obj, position))
                else:
                    skipped[NOT_AN_OBJECT] += 1
        position += len(raw)
    return Chunk(lines, skipped, start + cut, number)


def _fingerprint(first_line: bytes) -> str:
    return hashlib.sha1(first_line).hexdigest()[:16]


def state_path(state_dir: Path, path: Path) -> Path:
    """The record of how far ``path`` (absolute) was read."""
    return state_dir / (hashlib.sha1(str(path).encode()).hexdigest()[:20] + ".json")


def import_appended(store: SessionStore, fmt: str, path: str | Path, state_dir: Path) -> ImportResult:
    """Import what was appended to ``path`` since the last call (all of it the first time).

    Calls for one transcript are serialised by a lock beside its record in
    ``state_dir``. Unknown format, unreadable file, or a file read from its
    start whose lines have another format's shape (a codex rollout given as
    ``claude-code``, see :func:`~.common.check_format`) → ``INVALID_ARGUMENT``,
    nothing imported and no record kept; the lock busy for :data:`LOCK_TIMEOUT` → ``CONCURRENT_UPDATE``.
    A file no import takes (Claude Code's compaction runs,
    :func:`~.claude_code.internal_agent_file`) imports nothing.
    """
    spec = TAIL_FORMATS.get(fmt)
    if spec is None:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT,
                            f"unknown transcript format {fmt!r}; known formats: {', '.join(TAIL_FORMATS)}")
    path = Path(path).expanduser().resolve()
    if fmt == claude_code.FORMAT.name and claude_code.internal_agent_file(path):
        return EMPTY_RESULT
    record = state_path(state_dir, path)
    ensure_dir(state_dir)
    lock = FileLock(str(record) + ".lock")
    try:
        lock.acquire(LOCK_TIMEOUT)
    except TimeoutError:
        raise MemoryFailure(FailureCode.CONCURRENT_UPDATE, f"another import of {path} is running; try again",
                            retryable=True) from None
    try:
        return _import_locked(store, fmt, spec, path, record)
    finally:
        lock.release()


def _import_locked(store: SessionStore, fmt: str, spec: TailFormat, path: Path, record: Path) -> ImportResult:
    try:
        with open(path, "rb") as handle:
            stat = os.fstat(handle.fileno())
            first = handle.readline()
            entry = read_json(record, None)
            if not _still_valid(entry, fmt, stat, first):
                entry = None
            if entry is not None and stat.st_size == entry["offset"]:
                return ImportResult(_sessions(entry), 0, {})
            resume, resume_line = (entry["resume"], entry["resume_line"]) if entry else (0, 0)
            handle.seek(resume)
            data = handle.read()
    except OSError as exc:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"cannot read {path}: {exc.strerror or exc}",
                            details={"path": str(path)}) from None
    chunk = read_chunk(data, resume, resume_line)
    numbered = [(number, obj) for number, obj, _ in chunk.lines]
    if spec.header and resume > 0 and first.strip():
        header = read_chunk(first if first.endswith(b"\n") else first + b"\n", 0, 0).lines
        numbered = [(number, obj) for number, obj, _ in header] + numbered
    aliases: dict[str, Any] = dict(entry["aliases"]) if entry else {}
    transcript = TranscriptFile(path, numbered, chunk.skipped, chunk.end_line)
    if entry is None:  # read from the start: a file of another format is refused as `memory import` refuses it
        check_format(transcript, spec.shape, [tail.shape for tail in TAIL_FORMATS.values()])
    result = EMPTY_RESULT
    if numbered:
        result = spec.import_lines(store, [transcript], aliases)
    starts = [i for i, (_, obj, _) in enumerate(chunk.lines) if spec.turn_start(obj)]
    if not starts and spec.agent_step:  # a read from a prompt holds it: only a file without one gets here
        starts = [i for i, (_, obj, _) in enumerate(chunk.lines) if spec.agent_step(obj)]
    if starts:
        number, _, offset = chunk.lines[starts[-1]]
        resume, resume_line = offset, number - 1
    # else: no turn began in this read — the next one starts where this one did
    atomic_write_json(record, {"path": str(path), "format": fmt, "inode": stat.st_ino, "offset": chunk.end,
                               "resume": resume, "resume_line": resume_line,
                               "fingerprint": _fingerprint(first), "aliases": aliases,
                               "sessions": result.sessions or (_sessions(entry) if entry else [])}, fsync=False)
    return result


def _sessions(entry: dict[str, Any]) -> list[str]:
    """The sessions a record's last read named (none in a record written before they were kept)."""
    sessions = entry.get("sessions")
    return [s for s in sessions if isinstance(s, str)] if isinstance(sessions, list) else []


def _still_valid(entry: Any, fmt: str, stat: os.stat_result, first: bytes) -> bool:
    """Whether ``entry`` still describes this file (same format, inode, first line; not shorter)."""
    if not isinstance(entry, dict):
        return False
    try:
        return (entry["format"] == fmt and entry["inode"] == stat.st_ino and stat.st_size >= int(entry["offset"])
                and 0 <= int(entry["resume"]) <= int(entry["offset"]) and int(entry["resume_line"]) >= 0
                and entry["fingerprint"] == _fingerprint(first) and isinstance(entry["aliases"], dict))
    except (KeyError, TypeError, ValueError):
        return False
