"""The v2 source archive: append-only, content-addressed (architecture §2.2).

``sources/<provider>/_v2/<thread>.md`` holds the verbatim text of every
message that evidence cites, one frame each::

    <a id="source-3f9c0a1b2c3d4e5f"></a>
    <!-- source-id:openprogram/s1/u1 -->
    <!-- speaker-id:telegram%2Duser%2D42 -->
    <!-- source-meta:<base64url JSON> -->
    <!-- record-lines:1 -->
    [2026-08-09T10:00:00+08:00] B (telegram-user-42): I prefer exact answers.

A truncated or malformed frame ends parsing; appending to a damaged file is
refused. Archiving a frame that is already present changes no byte.

A source's trust state is changed by appending a *trust frame* (anchor
``trust-…``, the same five header lines, ``source-id`` naming the source it
changes, ``trust_state`` the new state), never by rewriting the source's
frame: the last trust frame of a source in file order decides its state
(``memory trust promote|demote``, architecture §2.2).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable
from urllib.parse import quote, unquote

from ..failures import FailureCode, MemoryFailure
from ..fsutil import FILE_MODE, ensure_dir
from ..topics.ids import sha256_hex, source_anchor

HEADER = "<!-- openprogram-source-archive:v2 -->"
TRUST_STATES = ("trusted", "pending")

_ANCHOR_RE = re.compile(r'^<a id="((source|trust)-[0-9a-f]{16})"></a>$')
TRUST_ANCHOR_PREFIX = "trust-"
_COMMENT_RE = re.compile(r"^<!-- ([a-z-]+):(.*) -->$")
_LEGACY_FRAME_RE = re.compile(r"^<!-- source-id:(.*) -->$")


def pct_all(text: str) -> str:
    """Percent-quote everything but ASCII letters and digits (speaker ids)."""
    return "".join(
        ch if ch.isascii() and ch.isalnum() else "".join(f"%{b:02X}" for b in ch.encode("utf-8")) for ch in text
    )


def path_component(text: str) -> str:
    """A file-system-safe, reversible component (no dots, no slashes)."""
    return quote(text, safe="-_") or "_"


def make_source_id(provider: str, thread: str, message: str) -> str:
    """``provider/thread/message``; a ``/`` inside a component is quoted."""
    return "/".join(part.replace("%", "%25").replace("/", "%2F") for part in (provider, thread, message))


def split_source_id(source_id: str) -> tuple[str, str, str]:
    parts = source_id.split("/")
    if len(parts) != 3 or not all(parts):
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"not a source id (provider/thread/message): {source_id!r}")
    return tuple(unquote(p) for p in parts)  # type: ignore[return-value]


def archive_relpath(provider: str, thread: str) -> str:
    """Memory-root-relative path of the v2 archive file for a thread."""
    return f"sources/{path_component(provider)}/_v2/{path_component(thread)}.md"


def archive_relpath_for(source_id: str) -> str:
    provider, thread, _ = split_source_id(source_id)
    return archive_relpath(provider, thread)


@dataclass(frozen=True)
class SourceMessage:
    """One archived message; ``source_id`` is its identity."""

    source_id: str
    speaker: str
    speaker_id: str
    timestamp: str
    text: str
    trust_state: str = "trusted"
    authority_tier: str = "owner"
    principal_id: str = ""
    speaker_kind: str = "user"
    kind: str = "source"  # or "trust": a change of the trust state of the source ``source_id`` names

    @functools.cached_property
    def anchor(self) -> str:
        """``source-`` + sha256(id)[:16] (a trust frame: of the change), computed once per frame."""
        if self.kind == "trust":  # content addressed: the same change made twice is one frame
            digest = sha256_hex("\n".join((self.source_id, self.timestamp, self.trust_state, self.speaker_id, self.text)))
            return TRUST_ANCHOR_PREFIX + digest[:16]
        return source_anchor(self.source_id)

    @property
    def date(self) -> str:
        """``YYYY-MM-DD`` of the timestamp, or ``undated``."""
        match = re.match(r"(\d{4}-\d{2}-\d{2})", self.timestamp or "")
        return match.group(1) if match else "undated"

    def meta(self) -> dict:
        return {
            "authority_tier": self.authority_tier,
            "principal_id": self.principal_id,
            "speaker_kind": self.speaker_kind,
            "trust_state": self.trust_state,
            "version": 1,
        }

    def frame(self) -> str:
        """The frame text, ending with its blank separator line."""
        meta = json.dumps(self.meta(), sort_keys=True, separators=(",", ":")).encode("utf-8")
        meta64 = base64.urlsafe_b64encode(meta).decode("ascii").rstrip("=")
        body_lines = f"[{self.timestamp}] {self.speaker} ({self.speaker_id}): {self.text}".split("\n")
        lines = [
            f'<a id="{self.anchor}"></a>',
            f"<!-- source-id:{self.source_id} -->",
            f"<!-- speaker-id:{pct_all(self.speaker_id)} -->",
            f"<!-- source-meta:{meta64} -->",
            f"<!-- record-lines:{len(body_lines)} -->",
            *body_lines,
            "",
        ]
        return "\n".join(lines) + "\n"


@dataclass
class ArchiveFile:
    """Parsed archive: source frames and trust frames in order, and whether parsing hit damage.

    ``frames`` are the source frames as written (their bytes never change);
    :meth:`by_anchor` and :meth:`current` give them with the trust state the
    trust frames after them decided.
    """

    frames: list[SourceMessage] = field(default_factory=list)
    damaged: bool = False
    legacy: bool = False
    changes: list[SourceMessage] = field(default_factory=list)  # trust frames, in file order
    # every frame, source and trust, in file order, when there are trust frames (else ``frames``)
    mixed: list[SourceMessage] | None = None

    @property
    def entries(self) -> list[SourceMessage]:
        """Every frame in file order: what the append-only rule keeps byte for byte."""
        return self.mixed if self.mixed is not None else self.frames

    def by_anchor(self) -> dict[str, SourceMessage]:
        found = {frame.anchor: frame for frame in self.frames}
        return apply_trust(found, self.changes) if self.changes else found

    def current(self) -> list[SourceMessage]:
        """The source frames in file order, each with its current trust state."""
        if not self.changes:
            return self.frames
        by_anchor = self.by_anchor()
        return [by_anchor.get(frame.anchor, frame) for frame in self.frames]


def apply_trust(by_anchor: dict[str, SourceMessage], changes: Iterable[SourceMessage]) -> dict[str, SourceMessage]:
    """``by_anchor`` with each trust frame applied in order (a copy when anything changes)."""
    out = by_anchor
    for change in changes:
        anchor = source_anchor(change.source_id)
        frame = out.get(anchor)
        if frame is not None and frame.trust_state != change.trust_state:
            if out is by_anchor:
                out = dict(by_anchor)
            out[anchor] = replace(frame, trust_state=change.trust_state)
    return out


def _decode_meta(raw: str) -> dict:
    padded = raw + "=" * (-len(raw) % 4)
    data = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
    if "authority_tier" not in data and "origin_scope" in data:  # v1 metadata
        data["authority_tier"] = data["origin_scope"]
    return data


_BODY_RE = re.compile(r"^\[([^\]]*)\] (.*?) \(([^)]*)\): ", re.S)


def parse_archive(text: str) -> ArchiveFile:
    """Parse archive text. A bad or truncated frame ends parsing (damaged)."""
    lines = text.split("\n")
    result = ArchiveFile()
    if not lines or lines[0] != HEADER:
        if any(_LEGACY_FRAME_RE.match(line) for line in lines):
            result.legacy = True
        else:
            result.damaged = bool(text.strip())
            return result
    i = 1
    n = len(lines)
    while i < n:
        if lines[i] == "":
            i += 1
            continue
        anchor_match = _ANCHOR_RE.match(lines[i])
        if not anchor_match or i + 4 >= n:
            result.damaged = True
            break
        fields: dict[str, str] = {}
        for offset in range(1, 5):
            comment = _COMMENT_RE.match(lines[i + offset])
            if not comment:
                break
            fields[comment.group(1)] = comment.group(2)
        try:
            count = int(fields["record-lines"])
            meta = _decode_meta(fields["source-meta"])
            source_id = fields["source-id"]
            speaker_id = unquote(fields["speaker-id"])
        except (KeyError, ValueError, json.JSONDecodeError, UnicodeDecodeError):
            result.damaged = True
            break
        start = i + 5
        # a frame is complete only with all its lines and the blank separator
        if count < 1 or start + count >= n or lines[start + count] != "":
            result.damaged = True
            break
        body = "\n".join(lines[start : start + count])
        match = _BODY_RE.match(body)
        timestamp, speaker, text_body = ("", "", body)
        if match:
            timestamp, speaker, text_body = match.group(1), match.group(2), body[match.end():]
        frame = SourceMessage(
            source_id=source_id,
            speaker=speaker,
            speaker_id=speaker_id,
            timestamp=timestamp,
            text=text_body,
            trust_state=meta.get("trust_state", "trusted"),
            authority_tier=meta.get("authority_tier", "owner"),
            principal_id=meta.get("principal_id", ""),
            speaker_kind=meta.get("speaker_kind", "user"),
            kind=anchor_match.group(2),
        )
        if frame.anchor != anchor_match.group(1) or frame.trust_state not in TRUST_STATES:
            result.damaged = True
            break
        add_frame(result, frame)
        i = start + count + 1
    return result


def add_frame(archive: ArchiveFile, frame: SourceMessage) -> None:
    """Add a parsed frame (source or trust) at the end of ``archive``."""
    if frame.kind == "trust":
        if archive.mixed is None:
            archive.mixed = list(archive.frames)
        archive.changes.append(frame)
    else:
        archive.frames.append(frame)
    if archive.mixed is not None:
        archive.mixed.append(frame)


class ParsedArchive:
    """An archive's parse together with the size and digest of the bytes it came from.

    Archives only grow: when the file now starts with exactly the bytes
    parsed before, :meth:`extend` parses the appended frames alone, so an
    append costs what it added, not the size of the thread.
    """

    __slots__ = ("archive", "by_anchor", "size", "digest", "extends", "_packed")

    def __init__(self, archive: ArchiveFile, by_anchor: dict[str, SourceMessage], size: int, digest: bytes,
                 extends: bool = False) -> None:
        self.archive, self.by_anchor, self.size, self.digest = archive, by_anchor, size, digest
        # made by extend() from a parse whose frames it keeps unchanged (only frames were appended)
        self.extends = extends

    # In the tree cache the frames stay packed until the archive is read: a cold process touches the
    # archives its change appends to or cites, not every thread (workspace/caches.py, FileSummary alike).
    def __getstate__(self) -> tuple:
        packed = getattr(self, "_packed", None)
        if packed is None:
            import pickle

            packed = pickle.dumps((self.archive, self.by_anchor), protocol=pickle.HIGHEST_PROTOCOL)
        return (packed, self.size, self.digest, self.extends)

    def __setstate__(self, state: tuple) -> None:
        self._packed, self.size, self.digest, self.extends = state

    def __getattr__(self, name: str):  # an unset slot: the packed frames, read on first use
        if name in ("archive", "by_anchor"):
            packed = object.__getattribute__(self, "_packed")  # AttributeError when there is none
            import pickle

            archive, by_anchor = pickle.loads(packed)
            self.archive, self.by_anchor = archive, by_anchor
            return archive if name == "archive" else by_anchor
        raise AttributeError(name)

    @classmethod
    def of(cls, data: bytes) -> "ParsedArchive":
        """Parse ``data`` whole (bytes that are not UTF-8 read as a damaged archive)."""
        try:
            archive = parse_archive(data.decode("utf-8"))
        except UnicodeDecodeError:
            archive = ArchiveFile(damaged=True)
        return cls(archive, archive.by_anchor(), len(data), hashlib.sha256(data).digest())

    def extend(self, data: bytes) -> "ParsedArchive":
        """The parse of ``data``: only its new tail is parsed when ``data`` extends the bytes of this parse.

        Equal to ``ParsedArchive.of(data)`` in every case: any doubt (other
        prefix, damage, a legacy file) parses the whole file. Frames parsed before are carried over as the same
        objects, so a reader can tell an unchanged frame by identity.
        """
        old = self.archive
        if len(data) == self.size and hashlib.sha256(data).digest() == self.digest:
            return ParsedArchive(old, self.by_anchor, self.size, self.digest, True)
        if (old.damaged or old.legacy or not self.size or len(data) <= self.size
                or hashlib.sha256(data[: self.size]).digest() != self.digest):
            return ParsedArchive.of(data)
        try:
            tail = parse_archive(HEADER + "\n" + data[self.size:].decode("utf-8"))
        except UnicodeDecodeError:
            return ParsedArchive.of(data)
        merged = ArchiveFile(frames=old.frames + tail.frames, damaged=tail.damaged, changes=old.changes + tail.changes)
        if old.mixed is not None or tail.mixed is not None:
            merged.mixed = old.entries + tail.entries
        # a repeated anchor maps to its last frame, as in a whole parse; the new trust frames apply to all
        by_anchor = {**self.by_anchor, **{frame.anchor: frame for frame in tail.frames}}
        if old.changes:  # a frame appended now is still under the trust frames before it
            by_anchor = apply_trust(by_anchor, [c for c in old.changes if c.source_id in _ids(tail.frames)])
        by_anchor = apply_trust(by_anchor, tail.changes)
        # only frames were appended: every frame parsed before is the same object (a trust frame changes some)
        return ParsedArchive(merged, by_anchor, len(data), hashlib.sha256(data).digest(), not tail.changes)


def trust_frame(source_id: str, trust_state: str, timestamp: str, by: str, reason: str = "") -> SourceMessage:
    """A trust frame: ``source_id`` is ``trust_state`` from now on, said by ``by`` (a person, or a program)."""
    if trust_state not in TRUST_STATES:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"trust_state must be trusted or pending: {trust_state!r}")
    verb = "promote" if trust_state == "trusted" else "demote"
    return SourceMessage(source_id=source_id, speaker=by or "owner", speaker_id=by or "owner", timestamp=timestamp,
                         text=f"{verb}: {reason}" if reason else verb, trust_state=trust_state,
                         speaker_kind="person", kind="trust")


def _ids(frames: list[SourceMessage]) -> set[str]:
    return {frame.source_id for frame in frames}


def read_archive(path: Path) -> ArchiveFile:
    try:
        return parse_archive(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return ArchiveFile()
    except (OSError, UnicodeDecodeError):
        return ArchiveFile(damaged=True)


def plan_append(memory_root: Path, messages: Iterable[SourceMessage],
                parse: Callable[[str, bytes], ArchiveFile] | None = None) -> dict[str, tuple[bytes, bytes]]:
    """What appending ``messages`` would add: ``{relpath: (old bytes, new bytes)}``.

    Content addressed: a frame already present (same source id, same bytes)
    adds nothing, so archiving a batch twice changes no byte. The same id
    with different content, a symlink, or a damaged archive is refused; a
    trust frame needs its source archived before it (MISSING_SOURCE).
    ``parse(relpath, bytes)`` may serve a cached parse of the current bytes.
    """
    by_file: dict[str, list[SourceMessage]] = {}
    for message in messages:
        if message.trust_state not in TRUST_STATES:
            raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"trust_state must be trusted or pending: {message.trust_state!r}")
        by_file.setdefault(archive_relpath_for(message.source_id), []).append(message)
    plan: dict[str, tuple[bytes, bytes]] = {}
    for rel, batch in sorted(by_file.items()):
        path = memory_root / rel
        if path.is_symlink():
            raise MemoryFailure(FailureCode.APPEND_ONLY_REQUIRED, f"{rel} is a symlink; refusing to append")
        try:
            old = path.read_bytes()
        except FileNotFoundError:
            old = b""
        if not old:
            existing = ArchiveFile()
        elif parse is not None:
            existing = parse(rel, old)
        else:
            existing = parse_archive(old.decode("utf-8", "replace"))
        if existing.damaged or existing.legacy:
            raise MemoryFailure(
                FailureCode.APPEND_ONLY_REQUIRED,
                f"{rel} is damaged or not a v2 archive; refusing to append (repair it by hand from git history)",
            )
        present = {frame.anchor: frame for frame in existing.entries}
        additions: list[str] = []
        for message in batch:
            known = present.get(message.anchor)
            if known is not None:
                if known.frame() != message.frame():
                    raise MemoryFailure(
                        FailureCode.APPEND_ONLY_REQUIRED,
                        f"{message.source_id} is already archived with different content; the archive is append-only",
                    )
                continue
            if message.kind == "trust" and source_anchor(message.source_id) not in present:
                raise MemoryFailure(FailureCode.MISSING_SOURCE, f"no archived source {message.source_id}",
                                    details={"source_id": message.source_id})
            present[message.anchor] = message
            additions.append(message.frame())
        if additions:
            prefix = "" if old else HEADER + "\n\n"
            plan[rel] = (old, old + (prefix + "".join(additions)).encode("utf-8"))
    return plan


def archive_messages(memory_root: Path, messages: Iterable[SourceMessage],
                     before_write: Callable[[dict[str, tuple[int, int]]], None] | None = None) -> list[str]:
    """Append ``messages`` to their thread archives; return changed relpaths.

    ``before_write`` gets ``{relpath: (old size, new size)}`` before any byte
    is written (the git-pending ledger notes them, so recovery can cut an
    interrupted append back).
    """
    changed: list[str] = []
    plan = plan_append(memory_root, messages)
    if plan and before_write is not None:
        before_write({rel: (len(old), len(new)) for rel, (old, new) in plan.items()})
    for rel, (old, new) in plan.items():
        path = memory_root / rel
        ensure_dir(path.parent)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
        try:
            os.write(fd, new[len(old):])
            os.fsync(fd)
        finally:
            os.close(fd)
        changed.append(rel)
    return changed
