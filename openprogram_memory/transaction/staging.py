"""The staging copy an edit works on.

The staging area lives in the system temp dir, named after the workspace
and the owning process (:mod:`..workspace.scratch`) so an open after a
crash reclaims it. It is copy-on-write: a file
is copied into it when the edit first writes it, and reads of untouched
files fall through to the installed workspace. That keeps the cost of an
edit proportional to what it touches (a full copy of a 10,000-record
workspace costs seconds). Only ``topics/**/*.md`` can be written:
``sources/`` and the derived views are read-only here, and a write there
fails at once with READ_ONLY_PATH, before any validation.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Iterable

from ..failures import FailureCode, MemoryFailure
from ..sources.archive import SourceMessage
from ..topics.model import decode_topic, not_utf8
from ..workspace.layout import TOPICS, check_topic_path
from ..workspace.scratch import make_scratch
from ..workspace.caches import SYMLINK, TopicCache, unreadable_reason


# Findings of a topic file that is not readable text (or not a file): no `memory edit` can open it.
NOT_TEXT = frozenset({"symlink", "encoding", "unreadable"})


def _not_text(rel: str, rule: str, reason: str) -> MemoryFailure:
    """The refusal to read topic file ``rel``: it is not readable text (``reason``, as status words it)."""
    return MemoryFailure(FailureCode.INVALID_TOPIC_FORMAT, f"{rel} {reason}",
                         details={"file": rel, "rule": rule, "problem": reason})


class Staging:
    """Copy-on-write view of the workspace for one transaction."""

    def __init__(self, root: Path, cache: TopicCache, installed: Iterable[str] | None = None) -> None:
        self.root = root
        self.cache = cache
        self.dir = make_scratch(root, "stage")
        self.changes: dict[str, str | None] = {}
        # Sources declared by this edit (new-source-*): archived with the
        # install, so a rejected edit leaves the archive untouched too.
        self.new_sources: dict[str, SourceMessage] = {}
        # ``installed``: the topic paths of the transaction's stat pass (a second directory scan of every topic
        # would cost what the workspace holds, not what the edit touches); None: scanned when first asked
        self._installed_paths: list[str] | None = None if installed is None else sorted(installed)
        # Whole archive files an edit replaces (``memory sync``'s union of
        # two archives): checked frame by frame against the installed file.
        self.archive_files: dict[str, bytes] = {}
        # Block IDs that already exist in another copy of this memory (the
        # remote a sync merges): normalization keeps them instead of
        # treating them as invented.
        self.known_ids: set[str] = set()
        # Topic files already gone from disk (removed outside the product, served from their last commit while
        # the removal is held back) whose removal goes in with this edit.
        self._gone: set[str] = set()

    # -- reading -------------------------------------------------------
    def installed_topics(self) -> list[str]:
        if self._installed_paths is None:
            self._installed_paths = self.cache.list_topic_paths()
        return self._installed_paths

    def list_topics(self) -> list[str]:
        """Topic paths as the edit currently sees them."""
        paths = set(self.installed_topics())
        for rel, content in self.changes.items():
            if content is None:
                paths.discard(rel)
            else:
                paths.add(rel)
        return sorted(paths)

    def exists(self, path: str) -> bool:
        rel = check_topic_path(path)
        if rel in self.changes:
            return self.changes[rel] is not None
        return self.installed_file(rel)

    def installed_file(self, rel: str) -> bool:
        """Whether topic file ``rel`` is installed on disk (not counting this edit's changes)."""
        try:
            return (self.root / rel).is_file()
        except OSError:  # (in a folder that cannot be opened: there if the scan found it there)
            return rel in self.installed_topics()

    def read(self, path: str) -> str:
        """Text of a topic (staged or installed); MEMORY_NOT_FOUND if absent."""
        rel = check_topic_path(path)
        if rel in self.changes:
            content = self.changes[rel]
            if content is None:
                raise MemoryFailure(FailureCode.MEMORY_NOT_FOUND, f"{rel} was deleted in this edit")
            return content
        target = self.root / rel
        try:
            if target.is_symlink():
                raise _not_text(rel, "symlink", SYMLINK)
            data = target.read_bytes()
            return decode_topic(data)
        except FileNotFoundError:
            raise MemoryFailure(FailureCode.MEMORY_NOT_FOUND, f"no topic file {rel}") from None
        except UnicodeDecodeError as exc:
            raise _not_text(rel, "encoding", not_utf8(data, exc)[0]) from None
        except OSError as exc:  # (permission denied, on the file or a folder above it)
            raise _not_text(rel, "unreadable", unreadable_reason(self.root, rel, exc)) from None

    # -- writing -------------------------------------------------------
    def write(self, path: str, content: str) -> str:
        rel = check_topic_path(path)
        if not isinstance(content, str):
            raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"content for {rel} must be text")
        if "\x00" in content:
            raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"content for {rel} contains a NUL byte; topics are text")
        try:
            content.encode("utf-8")
        except UnicodeEncodeError:
            raise MemoryFailure(FailureCode.INVALID_ARGUMENT,
                                f"content for {rel} is not valid Unicode (a lone surrogate)") from None
        self.changes[rel] = content
        target = self.dir / rel
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        target.write_text(content, encoding="utf-8")
        return rel

    def delete(self, path: str) -> str:
        rel = check_topic_path(path)
        if not self.exists(rel):
            raise MemoryFailure(FailureCode.MEMORY_NOT_FOUND, f"no topic file {rel} to delete")
        self.changes[rel] = None
        try:
            (self.dir / rel).unlink()
        except FileNotFoundError:
            pass
        return rel

    def delete_gone(self, path: str) -> str:
        """Take in the removal of ``path``, a topic file already gone from disk (moved or removed outside the
        product) that the installed tree still serves from its last commit: this edit installs it, so the tree it
        is validated against no longer has the file."""
        rel = check_topic_path(path)
        self.changes[rel] = None
        self._gone.add(rel)
        return rel

    def keep(self, path: str) -> None:
        """Drop this edit's change to ``path``: the installed file is left as it is."""
        rel = check_topic_path(path)
        self.changes.pop(rel, None)
        self._gone.discard(rel)
        (self.dir / rel).unlink(missing_ok=True)

    def move(self, src: str, dst: str) -> str:
        text = self.read(src)
        dst_rel = check_topic_path(dst)
        if self.exists(dst_rel):
            raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"{dst_rel} already exists")
        self.write(dst_rel, text)
        self.delete(src)
        return dst_rel

    def add_source(self, message: SourceMessage) -> None:
        """Declare a source to archive together with this edit."""
        self.new_sources[message.source_id] = message

    def replace_archive(self, rel: str, data: bytes) -> None:
        """Declare the new bytes of an archive file (a superset of its frames)."""
        self.archive_files[rel] = data

    def reset(self) -> None:
        """Back to the pre-edit state (used before a writer's repair run)."""
        self.changes.clear()
        self.new_sources.clear()
        self.archive_files.clear()
        self.known_ids.clear()
        self._gone.clear()
        shutil.rmtree(self.dir / TOPICS, ignore_errors=True)

    def effective_changes(self) -> dict[str, str | None]:
        """Changes that differ from the installed bytes. A file on disk held back as invalid (an edit made outside
        the product: its last commit is what is installed) is changed by any write, its own bytes too: saved
        unchanged from an editor, it is validated as any draft, not taken as "no change"."""
        out: dict[str, str | None] = {}
        for rel, content in self.changes.items():
            if content is None:
                if rel in self._gone or self.installed_file(rel):
                    out[rel] = None
                continue
            target = self.root / rel
            try:
                if decode_topic(target.read_bytes()) == content and rel not in self.cache.invalid:
                    continue
            except (OSError, UnicodeDecodeError):
                pass
            out[rel] = content
        return out

    def cleanup(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)
