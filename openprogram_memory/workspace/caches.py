"""A parsed view of the topic tree, cached by file signature.

Parsing every topic on every transaction would make a one-record edit cost
as much as the whole workspace. Parsed files are kept per process, keyed by
``(mtime_ns, size, inode)``; only files whose signature moved are parsed
again. Source archives are cached the same way.
"""

from __future__ import annotations

import functools
import gc
import itertools
import os
import pickle
import posixpath
import re
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from collections.abc import Iterator, Mapping
from typing import Any, Callable, Collection, Iterable, Protocol

from ..fsutil import shell_args
from ..sources.archive import ArchiveFile, ParsedArchive, SourceMessage
from ..topics.model import TopicDoc, decode_topic, file_links, not_utf8, parse_topic, record_links
from ..topics.normalize import time_date
from ..topics.rules import Violation, ids_unique_in_file, record_violations
from ..topics.wikilinks import wikilinks
from .scan import Signature, TreeScan, closed_folder, scan, signature, topic_files



@dataclass(frozen=True)
class EvidenceRef:
    """One resolved source of an evidence definition."""

    label: str
    target: str
    archive: str | None  # memory-root-relative archive path
    anchor: str | None
    source: SourceMessage | None

    @property
    def source_id(self) -> str | None:
        return self.source.source_id if self.source else None


@dataclass(frozen=True)
class Evidence:
    label: str
    time: str | None
    refs: tuple[EvidenceRef, ...]


@dataclass(frozen=True)
class RecordInfo:
    """A record as every reader sees it (search, views, get)."""

    memory_id: str
    ids: tuple[str, ...]
    topic: str
    headings: tuple[str, ...]
    content: str
    line: int
    evidence: tuple[Evidence, ...]
    links: tuple[tuple[str, str], ...]  # (topic path, block id)

    @property
    def time(self) -> str | None:
        """The latest date its evidence names (without a qualifier), ``undated``, or None."""
        times = [time_date(e.time) or "" for e in self.evidence if e.time]
        dated = sorted(t for t in times if t != "undated")
        return dated[-1] if dated else (times[0] if times else None)

    @property
    def source_ids(self) -> list[str]:
        seen: list[str] = []
        for ev in self.evidence:
            for ref in ev.refs:
                if ref.source_id and ref.source_id not in seen:
                    seen.append(ref.source_id)
        return seen

    @property
    def sources(self) -> list[dict[str, str]]:
        out: list[dict[str, str]] = []
        for ev in self.evidence:
            for ref in ev.refs:
                if ref.source_id:
                    out.append({"source": ref.source_id, "label": ref.label})
        return out

    @property
    def trust_state(self) -> str:
        """``pending`` if any source is pending (or unresolvable), else trusted."""
        for ev in self.evidence:
            for ref in ev.refs:
                if ref.source is None or ref.source.trust_state != "trusted":
                    return "pending"
        return "trusted"


@dataclass
class FileSummary:
    """One parsed topic file; derived per-file data is computed once and kept."""

    path: str
    doc: TopicDoc
    records: list[RecordInfo] = field(default_factory=list)

    @functools.cached_property
    def ids(self) -> list[str]:
        return [i for r in self.records for i in r.ids]

    @functools.cached_property
    def archives(self) -> frozenset[str]:
        """Archive files this topic's evidence resolves against."""
        return frozenset(ref.archive for r in self.records for ev in r.evidence for ref in ev.refs if ref.archive)

    @functools.cached_property
    def unresolved_archives(self) -> frozenset[str]:
        """Archives that a citation of this file names but where it found no frame (yet)."""
        return frozenset(ref.archive for r in self.records for ev in r.evidence for ref in ev.refs
                         if ref.archive and ref.source is None)

    @functools.cached_property
    def by_id(self) -> dict[str, RecordInfo]:
        """Every block ID (aliases too) of this file → its record."""
        return {i: r for r in self.records for i in r.ids}

    @functools.cached_property
    def outbound(self) -> list[tuple[RecordInfo, str, str]]:
        """``(record, target topic, target block id)`` for every record link."""
        return [(r, topic, block_id) for r in self.records for topic, block_id in r.links]

    @functools.cached_property
    def link_targets(self) -> list[tuple[str, str, int, str]]:
        """``(target topic, target block id, line and ID of the linking record)`` for every record link:
        what the tree-wide link check and relations view read of every file, without the records."""
        return [(topic, block_id, r.line, r.memory_id) for r in self.records for topic, block_id in r.links]

    @functools.cached_property
    def file_link_targets(self) -> list[tuple[str, int]]:
        """``(target topic, line)`` for every link of a record to a whole topic file (``[text](other.md)``)."""
        return [(topic, paragraph.line) for paragraph in self.doc.paragraphs() for target in file_links(paragraph)
                if (topic := resolve_relative(self.path, target)).startswith("topics/")]

    @functools.cached_property
    def wikilink_targets(self) -> list[tuple[str, str | None, int]]:
        """``(note as written, block id or None, line)`` for every Obsidian wikilink of a record (resolved against
        the tree, by name: :class:`~openprogram_memory.topics.wikilinks.WikilinkIndex`)."""
        return [(note, block_id, paragraph.line) for paragraph in self.doc.paragraphs()
                for note, block_id in wikilinks(paragraph)]

    # -- in the tree cache: the parse and the records stay packed until asked for ---------------------
    # A cold process unpickles the whole tree's summaries (at 10,000 records ~140 ms, most of it the
    # parsed documents and records); a transaction reads those of the files it touches. Derived values
    # holding records are recomputed on use; IDs, cited archives and eager index keys (``_token_sets``…)
    # are kept.

    def __getstate__(self) -> dict:
        for name in _KEPT:
            getattr(self, name)  # small values every snapshot reads: stored beside the packed records
        state = {key: value for key, value in self.__dict__.items() if key not in _DERIVED and key != "_packed"}
        packed = self.__dict__.get("_packed", {})
        for name in _PACKED:
            state[name] = pickle.dumps(state[name], protocol=pickle.HIGHEST_PROTOCOL) if name in state \
                else packed[name]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__["_packed"] = {name: state.pop(name) for name in _PACKED}
        self.__dict__.update(state)

    def __getattr__(self, name: str):  # only for attributes not (yet) in __dict__
        packed = self.__dict__.get("_packed")
        if name in _PACKED and packed is not None:
            with _UNPACK_LOCK:
                if name not in self.__dict__:
                    self.__dict__[name] = pickle.loads(packed.pop(name))
                return self.__dict__[name]
        raise AttributeError(name)


_PACKED = ("doc", "records")
_KEPT = ("ids", "archives", "unresolved_archives", "link_targets", "file_link_targets", "wikilink_targets")
_DERIVED = frozenset(name for name, value in vars(FileSummary).items()
                     if isinstance(value, functools.cached_property) and name not in _KEPT)  # they hold records
_UNPACK_LOCK = threading.Lock()


def resolve_relative(from_file: str, target: str) -> str:
    """Memory-root-relative path of ``target`` written inside ``from_file``."""
    if not target:
        return from_file
    return posixpath.normpath(posixpath.join(posixpath.dirname(from_file), target))


_DISK_HEADER = ("openprogram-memory tree cache", 12)  # 2: archives as (signature, ParsedArchive); 3: module renamed; 4: served versions; 5: trust frames; 6: eager index keys; 7: parse and records packed per file; 8: archives packed; 9: file links kept; 10: the writer's slotted key eager; 11: the token index key eager; 12: wikilinks kept


class SourceCache:
    """Archive files parsed once per signature; an appended archive parses only what was appended."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._cache: dict[str, tuple[Signature | None, ParsedArchive]] = {}
        self._lock = threading.Lock()

    def archive(self, rel: str, check: bool = True) -> tuple[ArchiveFile, dict[str, SourceMessage]]:
        """A parsed archive; ``check=False`` trusts the cache without a stat."""
        hit = self._cache.get(rel)
        if not check and hit is not None:
            return hit[1].archive, hit[1].by_anchor
        path = self.root / rel
        sig = signature(path)
        if hit and hit[0] == sig and sig is not None:
            return hit[1].archive, hit[1].by_anchor
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            data = b""
        except OSError:
            return ArchiveFile(damaged=True), {}
        parsed = hit[1].extend(data) if hit else ParsedArchive.of(data)
        with self._lock:
            self._cache[rel] = (sig, parsed)
        return parsed.archive, parsed.by_anchor

    def parse_bytes(self, rel: str, data: bytes) -> ArchiveFile:
        """The parse of ``data`` (an archive's current bytes), from the cached parse where it extends it."""
        hit = self._cache.get(rel)
        return (hit[1].extend(data) if hit else ParsedArchive.of(data)).archive

    def entries(self) -> dict[str, tuple]:
        with self._lock:
            return dict(self._cache)

    def seed(self, entries: dict[str, tuple]) -> None:
        """Take saved parses; a stale one is dropped by the next signature check."""
        with self._lock:
            for rel, entry in entries.items():
                self._cache.setdefault(rel, entry)

    def scan(self) -> dict[str, Signature]:
        """Every file under ``sources/`` with its signature, in one directory scan."""
        return {rel: sig for rel, _link, sig in scan(self.root, "sources")}

    def stale_archives(self, current: dict[str, Signature] | None = None) -> tuple[set[str], set[str]]:
        """Archives whose file changed since they were parsed, re-parsed (the appended part only).

        Returns ``(stale, appended)``: ``appended`` are the stale archives
        that only grew by whole frames, every frame parsed before unchanged.
        """
        current = self.scan() if current is None else current
        with self._lock:
            items = list(self._cache.items())
        stale = {rel for rel, (sig, _parsed) in items if current.get(rel) != sig}
        appended = set()
        for rel in stale:
            if rel in current:
                self.archive(rel)
                hit = self._cache.get(rel)
                if hit is not None and hit[1].extends:
                    appended.add(rel)
            else:
                with self._lock:
                    self._cache.pop(rel, None)
        return stale, appended

    def lookup(self, rel: str, anchor: str, check: bool = True) -> SourceMessage | None:
        if not rel.startswith("sources/") or not rel.endswith(".md"):
            return None
        return self.archive(rel, check)[1].get(anchor)

    def all_sources(self) -> list[tuple[str, SourceMessage]]:
        out: list[tuple[str, SourceMessage]] = []
        base = self.root / "sources"
        if not base.is_dir():
            return out
        for dirpath, _dirs, files in os.walk(base):
            for name in sorted(files):
                if name.endswith(".md"):
                    rel = os.path.relpath(os.path.join(dirpath, name), self.root).replace(os.sep, "/")
                    out.extend((rel, frame) for frame in self.archive(rel)[0].current())
        return out


class SourceLookup(Protocol):
    """What :func:`summarize` reads of an archive (the installed one, or one with staged additions)."""

    def lookup(self, rel: str, anchor: str, check: bool = True) -> SourceMessage | None: ...


def summarize(path: str, text: str, sources: SourceLookup) -> FileSummary:
    """Parse one topic file and resolve its evidence and links."""
    doc = parse_topic(text, path)
    definitions = doc.definitions()
    summary = FileSummary(path=path, doc=doc)
    checked: set[str] = set()  # stat each archive once per file, not once per citation

    def lookup(archive: str, anchor: str) -> SourceMessage | None:
        first = archive not in checked
        checked.add(archive)
        return sources.lookup(archive, anchor, first)

    for headings, paragraph in doc.records_with_headings():
        if not paragraph.ids:
            continue
        evidence: list[Evidence] = []
        for label in dict.fromkeys(paragraph.citations):
            definition = definitions.get(label)
            if definition is None:
                continue
            refs = []
            for link in definition.sources:
                target_path, _, anchor = link.target.partition("#")
                archive = resolve_relative(path, target_path) if target_path else None
                source = lookup(archive, anchor) if archive and anchor else None
                refs.append(EvidenceRef(link.label, link.target, archive, anchor or None, source))
            evidence.append(Evidence(label, definition.time, tuple(refs)))
        links = tuple(
            (resolve_relative(path, target) if target else path, block_id)
            for target, block_id in record_links(paragraph)
        )
        summary.records.append(
            RecordInfo(
                memory_id=paragraph.ids[-1],
                ids=tuple(paragraph.ids),
                topic=path,
                headings=headings,
                content=paragraph.content,
                line=paragraph.line,
                evidence=tuple(evidence),
                links=links,
            )
        )
    return with_eager_keys(summary)


def _reresolved_record(record: RecordInfo, sources: SourceLookup, archives: Collection[str]) -> RecordInfo:
    evidence = []
    for ev in record.evidence:
        refs = tuple(replace(ref, source=sources.lookup(ref.archive, ref.anchor))
                     if ref.archive and ref.archive in archives and ref.anchor else ref for ref in ev.refs)
        evidence.append(ev if refs == ev.refs else replace(ev, refs=refs))
    return replace(record, evidence=tuple(evidence))


def reresolved(summary: FileSummary, sources: SourceLookup, archives: Collection[str]) -> FileSummary | None:
    """``summary`` with its citations into ``archives`` looked up again (a trust frame there, a sync union);
    None when every citation finds the very same frame."""
    if not summary.archives & set(archives):
        return None
    records = [_reresolved_record(record, sources, archives) for record in summary.records]
    if records == summary.records:
        return None
    return FileSummary(path=summary.path, doc=summary.doc, records=records)


class TopicCache:
    """Process-wide cache of installed topic files for one workspace root."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.sources = SourceCache(root)
        self._files: dict[str, tuple[Signature, FileSummary]] = {}
        self._last: TreeState | None = None
        # (topic signatures, source signatures) ``_last`` was made from: a snapshot that scans the same is it
        self._last_scan: tuple[dict[str, Signature], dict[str, Signature]] | None = None
        self._lock = threading.Lock()
        self._disk_loaded = False
        self._pinned = threading.local()
        self.parsed = 0  # files parsed by this process (cache misses)
        # topic files that cannot be read as UTF-8 text: left out of memory, reported by name
        self.unreadable: dict[str, str] = {}
        # topic files whose text breaks a record rule (an edit outside the product): {path: first problem};
        # their last committed version is served instead
        self.invalid: dict[str, str] = {}
        # topic files that keep the record rules but whose edit outside the product breaks a rule of the tree
        # (a link, an ID used twice or lost): {path: problem}, judged by each adoption; served as invalid ones
        # (kept in .scriptorium/held.json, so a process that reads without opening the workspace, say a search,
        # serves them so too)
        self.held: dict[str, str] = held_files(root)

    # -- the on-disk copy, for cold processes ---------------------------
    @property
    def disk_path(self) -> Path:
        return self.root / ".scriptorium" / "tree-cache.pickle"

    def _load_disk(self) -> None:
        """Seed the cache from the last saved copy; entries still pass the signature check.

        A pickle under ``.scriptorium/`` (mode 0600, the user's own state) is
        only ever written by this module; any error means it is ignored.
        """
        self._disk_loaded = True
        enabled = gc.isenabled()
        gc.disable()  # unpickling many small objects triggers needless collections
        try:
            with open(self.disk_path, "rb") as handle:
                header, files, archives = pickle.load(handle)
        except Exception:
            if enabled:
                gc.enable()
            return
        # The parsed tree lives as long as the process: moved out of the collector's reach, the next
        # collections do not walk its ~10^5-10^6 objects again (about 100 ms at 10,000 records).
        gc.freeze()
        if enabled:
            gc.enable()
        if header != _DISK_HEADER:
            return
        with self._lock:
            for rel, entry in files.items():
                self._files.setdefault(rel, entry)
        self.sources.seed(archives)

    def _save_disk(self) -> None:
        from ..fsutil import atomic_write_bytes

        for load in _EAGER_LOADERS:
            load()
        with self._lock:
            files = dict(self._files)
        for _sig, summary in files.values():
            with_eager_keys(summary)  # parsed before its key's module was loaded here, or kept from a save without it
        payload = pickle.dumps((_DISK_HEADER, files, self.sources.entries()), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            atomic_write_bytes(self.disk_path, payload, fsync=False)
        except OSError:
            pass

    def list_topic_paths(self) -> list[str]:
        return sorted(self._scan_topics())

    def _scan_topics(self) -> dict[str, Signature]:
        """Every topic file with its signature, in one directory scan."""
        return topic_files(self.root)

    def summary(self, rel: str, sig: Signature | None = None) -> FileSummary | None:
        if sig is not None:
            hit = self._files.get(rel)
            if hit is not None and hit[0] == sig:
                return hit[1]
        path = self.root / rel
        sig = sig or signature(path)
        if sig is None and closed_folder(self.root, rel) is None:  # (else: there, in a folder that cannot be opened)
            return self._held_removed(rel)
        with self._lock:
            hit = self._files.get(rel)
            if hit and hit[0] == sig:
                return hit[1]
        try:
            if os.path.islink(path):  # (one that leads out of the workspace is never listed)
                self.unreadable[rel] = f"{SYMLINK} (to {os.readlink(path)})"
                return self.last_committed(rel)
            data = path.read_bytes()
            text = decode_topic(data)
        except UnicodeDecodeError as exc:
            self.unreadable[rel] = not_utf8(data, exc)[0]
            return self.last_committed(rel)  # (a byte of another encoding typed into a committed file)
        except FileNotFoundError:
            return self._held_removed(rel)  # (removed since the scan)
        except OSError as exc:
            self.unreadable[rel] = unreadable_reason(self.root, rel, exc)
            return self.last_committed(rel)
        self.unreadable.pop(rel, None)
        summary = self._served(rel, text)
        if summary is None or rel in self.invalid or sig is None:
            return summary  # not cached: read (and reported) again by every snapshot until the file is fixed
        with self._lock:
            self._files[rel] = (sig, summary)
            self.parsed += 1
        return summary

    def _served(self, rel: str, text: str) -> FileSummary | None:
        """The summary search, recall and the views use: of the file as it is on disk, or — when an edit made
        outside the product breaks a record rule — of its last committed version (architecture §15): text
        that was never validated never reaches an agent. None when there is no valid version to serve."""
        summary = summarize(rel, text, self.sources)
        committed_version = functools.cache(lambda: committed_text(self.root, rel))
        broken = self._first_violation(summary, committed_version)
        problem = broken or self.held.get(rel)
        if problem is None:
            self.invalid.pop(rel, None)
            return summary
        if not broken and committed_version() == text:  # held, but as committed now (checked out
            # again): nothing held back
            self.invalid.pop(rel, None)
            return summary
        self.invalid[rel] = problem
        return self.last_committed(rel, text, committed_version)

    def last_committed(self, rel: str, on_disk: str | None = None,
                       read: Callable[[], str | None] | None = None) -> FileSummary | None:
        """What is served of a file that cannot be read (permission denied, on it or a folder above it) or breaks
        a record rule (``on_disk``: its text): its last committed version, if there is one, other than that text,
        that keeps the rules; None when there is nothing valid to serve. ``read``: the caller's read of that
        version, when it has one (git is read once)."""
        committed = read() if read is not None else committed_text(self.root, rel)
        if committed is None or committed == on_disk:
            return None
        last = summarize(rel, committed, self.sources)
        return last if self._first_violation(last) is None else None

    def hold(self, problems: dict[str, str]) -> None:
        """Serve the files of ``problems`` from their last commit (and name them as invalid) until an adoption
        judges them again: an edit that was not adopted never reaches an agent, the file alone valid or not."""
        with self._lock:
            if problems == self.held:
                return
            for rel in set(self.held) | set(problems):
                self._files.pop(rel, None)
                self.invalid.pop(rel, None)
            self.held = dict(problems)
            self._last = self._last_scan = None
        from ..fsutil import atomic_write_json

        try:
            if problems:
                atomic_write_json(self.root / HELD, problems, fsync=False)
            else:
                (self.root / HELD).unlink(missing_ok=True)
        except OSError:
            pass  # (this process serves them so still; the next open judges again)

    def _held_removed(self, rel: str) -> FileSummary | None:
        """A file removed outside the product whose removal was held back (a link still needs it): its last
        commit, served until the removal is adopted. None for any other file that is not there."""
        committed = committed_text(self.root, rel) if rel in self.held else None
        if committed is None:
            return None
        self.invalid[rel] = self.held[rel]
        return summarize(rel, committed, self.sources)

    def _first_violation(self, summary: FileSummary, committed: Callable[[], str | None] | None = None
                         ) -> str | None:
        """The first record rule the file breaks, as status shows it.

        A citation whose message is not in the archive breaks one only where an edit outside the product made it
        (``committed``: the file's last committed text, read only then): a typo in an anchor, an archive file that
        is not there, a message no import has archived yet — held back like any invalid edit, and adopted once
        the archive holds the message. A citation the committed version makes too (its frame gone from the
        archive, or not there yet) is not one, nor in the committed version itself (``committed`` None), nor where
        no commit can be read to tell an edit from (a git HEAD missing or damaged): its record counts as pending,
        never automatic context, and ``memory check`` names it.
        """
        pending: set[str] | None = None  # the committed version's citations of nothing: archive#anchor
        for violation in itertools.chain(self._record_violations(summary.doc), ids_unique_in_file(summary.doc)):
            if violation.rule == "unknown-source":
                if committed is None:
                    continue
                if pending is None:
                    text = committed()
                    if text is None and not has_history(self.root):
                        committed = None  # no commit to tell an edit from: every such citation counts as pending
                        continue
                    pending = set() if text is None else {
                        str(v.details["target"]) for v in self._record_violations(parse_topic(text, summary.path))
                        if v.rule == "unknown-source"}
                if violation.details.get("target") in pending:
                    continue
            return f"line {violation.line}: [{violation.rule}] {violation.message.split(': ', 1)[-1]}"
        return None

    def _record_violations(self, doc: TopicDoc) -> Iterator[Violation]:
        """The record rules ``doc`` breaks, against the installed archive."""
        return record_violations(doc, self.sources.lookup, lambda target: os.path.islink(self.root / target))

    def adopt(self, tree: "TreeState", changed: list[str], scan: TreeScan) -> None:
        """After an install: take the installed tree as the cached state.

        The changed files' summaries are stored under their new signatures,
        so the next snapshot parses nothing and reuses every index. ``scan``:
        the transaction's stat pass with what it wrote looked at again — the
        next snapshot that finds the same signatures is this tree as it is.
        What it installed (written, or a removal made outside taken in) is no longer held back.
        """
        held = {rel: problem for rel, problem in self.held.items() if rel not in changed}
        if held != self.held:
            self.hold(held)
        with self._lock:
            for rel in changed:
                self.unreadable.pop(rel, None)  # what a transaction installed it has validated
                self.invalid.pop(rel, None)
                summary = tree.files.get(rel)
                sig = signature(self.root / rel)
                if summary is None or sig is None:
                    self._files.pop(rel, None)
                else:
                    self._files[rel] = (sig, summary)
            self._last = tree
            self._last_scan = (scan.topics(), scan.under("sources"))

    def _resolves_the_same(self, summary: FileSummary, stale: set[str]) -> bool:
        """Whether every citation of ``summary`` into a changed archive still finds the very same frame.

        Archives are append-only: an append leaves every cited frame as it
        was, so a topic citing a busy thread is not parsed again for frames
        it does not cite; a promotion or a newly resolvable anchor is a change.
        """
        frames: dict[str, dict[str, SourceMessage]] = {}
        for record in summary.records:
            for evidence in record.evidence:
                for ref in evidence.refs:
                    if ref.archive not in stale or not ref.anchor or not ref.archive.endswith(".md"):
                        continue  # (stale holds only files under sources/; lookup reads only *.md there)
                    anchors = frames.get(ref.archive)
                    if anchors is None:
                        anchors = frames[ref.archive] = self.sources.archive(ref.archive, False)[1]
                    found = anchors.get(ref.anchor)
                    if found is not ref.source and found != ref.source:  # same object: an appended-to archive
                        return False
        return True

    def pin(self, tree: "TreeState | None") -> "TreeState | None":
        """While a transaction holds the write lock, its thread's snapshots are its baseline (the installed
        tree cannot change under the lock): one stat pass per transaction, not one per reader inside it.
        Returns what was pinned before (to put back)."""
        before = getattr(self._pinned, "tree", None)
        self._pinned.tree = tree
        return before

    def snapshot(self, tree_scan: TreeScan | None = None) -> "TreeState":
        """The installed tree, parsing only files whose signature moved. ``tree_scan``: a stat pass the
        caller has just made (the transaction's), instead of a new one."""
        pinned = getattr(self._pinned, "tree", None)
        if pinned is not None:
            return pinned
        if not self._disk_loaded:
            self._load_disk()
        parsed_before = self.parsed
        source_sigs = self.sources.scan() if tree_scan is None else tree_scan.under("sources")
        scanned = self._scan_topics() if tree_scan is None else tree_scan.topics()
        with self._lock:
            last, last_scan = self._last, self._last_scan
        if last is not None and last_scan == (scanned, source_sigs):
            last.source_sigs = source_sigs  # (equal to what it was made from)
            return last  # nothing moved since: the same tree, no file looked up again
        stale, appended = self.sources.stale_archives(source_sigs)
        if stale:  # a source was appended or promoted: re-resolve the topics whose cited frames changed
            rewritten = stale - appended
            with self._lock:
                cached = list(self._files.items())
            # an append leaves every frame a topic found where it was: only a citation that found nothing may move
            moved = [rel for rel, (_sig, summary) in cached
                     if (summary.archives & rewritten and not self._resolves_the_same(summary, rewritten))
                     or (summary.unresolved_archives & appended and not self._resolves_the_same(summary, appended))]
            with self._lock:
                for rel in moved:
                    self._files.pop(rel, None)
        files = {}
        for gone in [rel for rel in [*self.unreadable, *self.invalid] if rel not in scanned]:
            self.unreadable.pop(gone, None)
            self.invalid.pop(gone, None)
        for rel, sig in sorted(scanned.items()):
            summary = self.summary(rel, sig)
            if summary is not None:
                files[rel] = summary
        for rel in [rel for rel in self.held if rel not in scanned]:
            summary = self._held_removed(rel)
            if summary is not None:
                files[rel] = summary
        # Reuse the previous snapshot's ID index, updated for changed files only.
        with self._lock:
            previous = self._last
        if previous is not None:
            old_files = previous.files
            changed_old = [old_files[p] for p in old_files if files.get(p) is not old_files[p]]
            changed_new = [files[p] for p in files if old_files.get(p) is not files[p]]
            tree = TreeState(files, _indexes=previous.updated_indexes(changed_old, changed_new))
        else:
            tree = TreeState(files)
        tree.source_sigs = source_sigs
        with self._lock:
            self._last, self._last_scan = tree, (scanned, source_sigs)
        # A cold process that had to parse much saves the cache for the next one.
        if self.parsed - parsed_before >= max(50, len(files) // 10) and self.disk_path.parent.is_dir():
            self._save_disk()
        return tree


@dataclass
class TreeState:
    """Topic files of one tree (installed, or installed + staged)."""

    files: dict[str, FileSummary]
    _indexes: dict[str, Mapping[str, list[str]]] = field(default_factory=dict)
    source_sigs: dict[str, Signature] | None = None  # sources/ as scanned with this snapshot
    _by_id: dict[str, RecordInfo] | None = None
    # views worked out for this tree (by name), and — for a tree made by with_files — the views of the tree it
    # was made from with the file summaries it replaced and those that replaced them (not that tree itself)
    views: dict[str, Any] = field(default_factory=dict)
    derived_from: tuple[dict[str, Any], list[FileSummary], list[FileSummary]] | None = None

    def records(self) -> list[RecordInfo]:
        return [r for path in sorted(self.files) for r in self.files[path].records]

    @property
    def by_id(self) -> dict[str, RecordInfo]:
        """Every block ID → record (builds a full map; prefer :meth:`find`)."""
        if self._by_id is None:
            index: dict[str, RecordInfo] = {}
            for path in sorted(self.files):
                for record in self.files[path].records:
                    for block_id in record.ids:
                        index.setdefault(block_id, record)
            self._by_id = index
        return self._by_id

    def find(self, block_id: str) -> RecordInfo | None:
        """The record carrying ``block_id``, through the ID index."""
        for path in self.id_files().get(block_id, ()):
            summary = self.files.get(path)
            if summary is not None and block_id in summary.by_id:
                return summary.by_id[block_id]
        return None

    def index(self, name: str) -> Mapping[str, list[str]]:
        """``key → [files]`` for a registered per-file key function. Do not mutate.

        Built once, then carried from tree to tree and updated only for the
        files that changed (see :func:`register_index`).
        """
        found = self._indexes.get(name)
        if found is None:
            keys_of = INDEX_KEYS[name]
            found = {}
            for path in sorted(self.files):
                for key in keys_of(self.files[path]):
                    found.setdefault(key, []).append(path)
            self._indexes[name] = found
        return found

    def id_files(self) -> Mapping[str, list[str]]:
        """Every block ID with the files it appears in (duplicates show)."""
        return self.index("ids")

    def updated_indexes(self, removed: list["FileSummary"], added: list["FileSummary"]
                        ) -> dict[str, Mapping[str, list[str]]]:
        return {name: update_index(index, INDEX_KEYS[name], removed, added) for name, index in self._indexes.items()}

    def with_files(self, replaced: dict[str, "FileSummary | None"]) -> "TreeState":
        """A new tree with some files replaced (None = removed), indexes updated."""
        files = dict(self.files)
        old = [files[p] for p in replaced if p in files]
        for path, summary in replaced.items():
            if summary is None:
                files.pop(path, None)
            else:
                files[path] = summary
        new = [s for s in replaced.values() if s is not None]
        self.id_files()
        return TreeState(files, _indexes=self.updated_indexes(old, new), derived_from=(self.views, old, new))


KeyFunction = Callable[["FileSummary"], Iterable[str]]
INDEX_KEYS: dict[str, KeyFunction] = {"ids": lambda summary: summary.ids}


# key functions computed when a file is parsed, so their per-file work is saved with the parse (the tree cache):
# a cold process that builds the index then reads it instead of computing it for every file
EAGER_KEYS: dict[str, KeyFunction] = {}


# what loads the modules registering eager keys that a process may not have imported when it saves the tree cache
# (a hook's worker parses the tree before its write imports the writer): see register_eager_loader
_EAGER_LOADERS: list[Callable[[], None]] = []


def register_index(name: str, keys_of: KeyFunction, eager: bool = False) -> None:
    """Register a per-file key function whose index trees keep incrementally (``eager``: run at parse)."""
    INDEX_KEYS[name] = keys_of
    if eager:
        EAGER_KEYS[name] = keys_of


def register_eager_loader(load: Callable[[], None]) -> None:
    """Have every save of the tree cache call ``load()`` first: it imports modules that register eager keys.

    A save then carries every eager key, whichever path parsed the tree and whatever it had imported by then;
    a key missing from the saved parse would be computed again, over every record, by each cold process.
    """
    if load not in _EAGER_LOADERS:
        _EAGER_LOADERS.append(load)


def with_eager_keys(summary: "FileSummary") -> "FileSummary":
    """``summary`` with every eager key computed on it (each key function keeps its result on the summary, so a
    key already there costs nothing): at parse, and for a parse about to be saved."""
    for keys_of in EAGER_KEYS.values():
        keys_of(summary)
    return summary


_ABSENT: list[str] = []  # (a sentinel: no key maps to this very list)


class LayeredIndex(Mapping[str, list[str]]):
    """A tree's index as the shared index of an earlier tree (never changed) and this tree's own changes over
    it (``None``: the key is gone): a one-file transaction costs its keys, not a copy of every block ID."""

    __slots__ = ("_base", "_over")

    def __init__(self, base: Mapping[str, list[str]], over: dict[str, list[str] | None]) -> None:
        self._base, self._over = base, over

    def __getitem__(self, key: str) -> list[str]:
        hit = self._over.get(key, _ABSENT)
        if hit is _ABSENT:
            return self._base[key]
        if hit is None:
            raise KeyError(key)
        return hit

    def get(self, key: str, default=None):  # type: ignore[override]
        hit = self._over.get(key, _ABSENT)
        if hit is _ABSENT:
            return self._base.get(key, default)
        return default if hit is None else hit

    def __contains__(self, key: object) -> bool:
        hit = self._over.get(key, _ABSENT)  # type: ignore[call-overload]
        return key in self._base if hit is _ABSENT else hit is not None

    def __iter__(self) -> Iterator[str]:
        over = self._over
        yield from (key for key in self._base if key not in over)
        yield from (key for key, paths in over.items() if paths is not None)

    def __len__(self) -> int:
        base = self._base
        return len(base) + sum((paths is not None) - (key in base) for key, paths in self._over.items())


def update_index(index: Mapping[str, list[str]], keys_of: KeyFunction, removed: list[FileSummary],
                 added: list[FileSummary]) -> Mapping[str, list[str]]:
    """``index`` without ``removed`` files' keys and with ``added``'s; ``index`` itself is left as it is.

    The changes go over ``index``'s base (a :class:`LayeredIndex`); once they outgrow an eighth of it they are
    folded into a new plain dict (so a long run of transactions costs each one its own keys, on average)."""
    base, over = (index._base, dict(index._over)) if isinstance(index, LayeredIndex) else (index, {})
    view = LayeredIndex(base, over)
    for summary in removed:
        for key in keys_of(summary):
            over[key] = [p for p in view.get(key, ()) if p != summary.path] or None
    for summary in added:
        for key in keys_of(summary):
            over[key] = sorted({*view.get(key, ()), summary.path})
    if len(over) > max(256, len(base) // 8):
        return dict(view.items())
    return view


_CACHES: dict[Path, TopicCache] = {}
_CACHES_LOCK = threading.Lock()


def topic_cache(root: Path) -> TopicCache:
    """The process-wide cache for a workspace root."""
    key = root.resolve()
    with _CACHES_LOCK:
        cache = _CACHES.get(key)
        if cache is None:
            cache = _CACHES[key] = TopicCache(key)
        return cache


HELD = ".scriptorium/held.json"


def held_files(root: Path) -> dict[str, str]:
    """The topic files the last adoption held back by a rule of the tree: ``{path: problem}``."""
    from ..fsutil import read_json

    held = read_json(root / HELD, {})
    return {rel: problem for rel, problem in held.items() if isinstance(problem, str)} if isinstance(held, dict) else {}


def left_out_warnings(root: Path, unreadable: dict[str, str], invalid: dict[str, str],
                      fix_of: Callable[[str, str], str | None] | None = None) -> list[str]:
    """What status, search, recall and the core say of topic files left out of memory (not text) or served from
    their last committed version (an edit made outside the product breaks a record rule, a deletion or a rename
    is held back because another file still needs the old file), and how to fix them (:func:`left_out_fix`, or
    ``fix_of(file, rule)`` where it has one: a move made outside the product, as ``memory check`` words it).
    A rename is named by the file as it is on disk now; the old name only as what it was renamed from."""
    out = unreadable_warnings(root, unreadable)
    for rel, problem in sorted(invalid.items()):
        renamed = _RENAMED.match(problem)
        if renamed and renamed["way"] == "to" and renamed["other"] in invalid:
            continue  # said under the name it has now
        fix = held_fix(root, rel, problem, fix_of)
        if renamed and renamed["way"] == "from":
            out.append(f"{rel} was renamed from {renamed['other']} outside the product, but {renamed['linker']} "
                       f"still links {renamed['target']}: held back; search, recall and the core use the last "
                       f"committed version of {renamed['other']} until it is fixed — {fix}")
        elif not (root / rel).exists():
            out.append(f"{rel} {problem}: deleted outside the product and held back; search, recall and the core "
                       f"use its last committed version until it is fixed — {fix}")
        elif committed_text(root, rel) is None:  # (made outside the product: there is no version to serve)
            out.append(f"{rel} {problem}: made outside the product and not valid; left out of memory (search, "
                       f"recall, core) until it is fixed — {fix}")
        else:
            out.append(f"{rel} {problem}: edited outside the product and not valid; search, recall and the core "
                       f"use its last committed version until it is fixed — {fix}")
    return out


def unreadable_warnings(root: Path, unreadable: dict[str, str]) -> list[str]:
    """What status, search, recall and the core say of topic files that cannot be read as text (``{path:
    reason}``): what is served of them and the fix (:func:`unreadable_problem`); the files of a folder that
    cannot be opened once, under the folder's name."""
    out, named = [], set()
    for rel, reason in sorted(unreadable.items()):
        name, message, fix = unreadable_problem(root, rel, reason)
        if name not in named:
            named.add(name)
            out.append(f"{name}{'/' if name != rel else ''} {message} — {fix}")
    return out


def unreadable_problem(root: Path, rel: str, reason: str) -> tuple[str, str, str]:
    """``(what to name, what is wrong and what is served instead, the fix)`` for topic file ``rel`` that cannot
    be read as text for ``reason``: a file in a folder that cannot be opened is named by the folder."""
    closed = _CLOSED.match(reason)
    if closed:
        return (closed["folder"], f"cannot be opened ({closed['why']}): the topic files in it cannot be read; "
                "search, recall and the core use their last committed version until it is fixed",
                unreadable_fix(root, rel, reason))
    served = committed_text(root, rel) is not None
    return (rel, f"{reason}: " + ("search, recall and the core use its last committed version" if served
                                  else "left out of memory (search, recall, core)") + " until fixed",
            unreadable_fix(root, rel, reason))


def unreadable_fix(root: Path, rel: str, reason: str) -> str:
    """What makes topic file ``rel`` readable text again, for the ``reason`` it is not (:func:`unreadable_reason`,
    not valid UTF-8, a symlink): the one wording status, search and ``memory check`` give. Never a command that
    changes nothing: a checkout leaves the mode as it is, and ``memory edit`` opens UTF-8 text only."""
    path = shell_args(root / rel)
    closed = _CLOSED.match(reason)
    if closed:
        return f"let yourself open the folder again: `chmod u+rwx {shell_args(root / closed['folder'])}`"
    if reason.startswith("cannot be read"):
        return f"let yourself read and write it again: `chmod u+rw {path}`"
    if reason.startswith(SYMLINK):
        return (f"replace the link with a real file (`cp --remove-destination \"$(readlink -f {path})\" {path}`), "
                f"or remove it (`rm {path}`)")
    new = shell_args(f"{root / rel}.new")
    resave = f"re-save it as UTF-8 (e.g. `iconv -f latin1 -t utf-8 {path} > {new} && mv {new} {path}`)"
    if committed_text(root, rel) is None:
        return f"{resave}, or remove it (`rm {path}`): it was never committed"
    return f"{resave}, or take the committed version back with `{checkout_command(root, rel)}`"


def checkout_command(root: Path, *rels: str) -> str:
    """The shell command that takes the committed versions of ``rels`` back in the memory directory ``root``."""
    return f"git -C {shell_args(root)} checkout -- {shell_args(*rels)}"


def edit_command(rel: str) -> str:
    """The command that opens topic file ``rel`` for a person to correct it."""
    return f"openprogram memory edit {shell_args(rel)}"


_RULE = re.compile(r"\[([a-z-]+)\]")  # the rule a held-back problem names ("line 7: [uncited-text] …")
SYMLINK = "is a symlink"  # how a topic file that is a link, not a file, is named (memory check's [symlink])
# :func:`unreadable_reason` of a file in a folder that cannot be opened
_CLOSED = re.compile(r"cannot be read: its folder (?P<folder>.+) cannot be opened \((?P<why>[^)]*)\)$")


def held_fix(root: Path, rel: str, problem: str, fix_of: Callable[[str, str], str | None] | None) -> str:
    """What fixes topic file ``rel`` held back for ``problem``: ``fix_of(file, rule)`` where it has one (a move made
    outside the product, as ``memory check`` words it: :func:`~..transaction.moves.move_fixes`), else
    :func:`left_out_fix`. The one wording ``status``, search and a refused write or sync give."""
    rule = _RULE.search(problem)
    return (fix_of(rel, rule[1]) if fix_of is not None and rule else None) or left_out_fix(root, rel, problem)


def left_out_fix(root: Path, rel: str, problem: str) -> str:
    """What fixes topic file ``rel`` while ``problem`` keeps it from being adopted: the one wording ``status``'s
    warning and a refused ``memory write`` or ``memory sync`` give, and ``memory check`` gives for that file.
    A file renamed outside the product: the links that still name the old file; one deleted: its committed
    version back, or the files that still need it (:func:`deleted_fix`); else the file itself."""
    renamed = _RENAMED.match(problem)
    if renamed and renamed["way"] == "from":
        block_id = renamed["target"].partition("#^")[2]
        return moved_link_fix(renamed["linker"], f"{rel}#^{block_id}" if block_id else rel)
    if not (root / rel).exists():
        return deleted_fix(root, rel)
    return f"`openprogram memory check` names it; correct it with `{edit_command(rel)}`"


def deleted_fix(root: Path, rel: str) -> str:
    """The fix for topic file ``rel`` deleted outside the product while another file still needs it (the deletion
    is held back): there is no file left to edit, so the fix is its committed version, or the files that need it."""
    return (f"`{checkout_command(root, rel)}` takes the committed version back; or correct the problem(s) "
            "`openprogram memory check` names in the files that still need it")


def moved_link_fix(rel: str, moved: str) -> str:
    """The fix for a link of ``rel`` whose target went to ``moved`` (``path`` or ``path#^id``; renamed or moved
    in an editor that does not update links): the link, written relative to ``rel`` as it must read now."""
    here = posixpath.relpath(moved, posixpath.dirname(rel) or ".")
    return f"update the link to `{here}` with `{edit_command(rel)}`"


# A rename outside the product held back because a link still names the old file (adopt.judge words it, status
# reads it back): "from" is the new file's problem, naming the old one; "to" the old file's, naming the new one.
_RENAMED = re.compile(r"\[dangling-link\] renamed (?P<way>from|to) (?P<other>.+?) outside the product; "
                      r"(?P<linker>.+?) still links (?P<target>\S+)$")


def renamed_problem(way: str, other: str, linker: str, target: str) -> str:
    """The held-back problem of one half of a rename outside the product (:data:`_RENAMED`): ``way`` "from" for the
    new file (``other``: the old path), "to" for the old one (``other``: the new path); ``linker`` still links
    ``target`` (the old path, or ``old#^id``)."""
    return f"[dangling-link] renamed {way} {other} outside the product; {linker} still links {target}"


def unreadable_reason(root: Path, rel: str, exc: OSError) -> str:
    """Why topic file ``rel`` cannot be read (``exc``), naming the folder above it that refuses to open, if one
    does (``chmod 000`` on a folder hides every file in it): what status, search and check say of it."""
    why = exc.strerror or type(exc).__name__
    folder = closed_folder(root, rel)
    return f"cannot be read: its folder {folder} cannot be opened ({why})" if folder else f"cannot be read ({why})"


def has_history(root: Path) -> bool:
    """Whether ``root`` has a last commit to read (a workspace whose git HEAD is missing or damaged has none)."""
    try:
        from dulwich.repo import Repo

        repo = Repo(str(root))
        repo[repo.head()]
        return True
    except Exception:  # noqa: BLE001 - any failure means there is no committed version to read
        return False


def committed_text(root: Path, rel: str) -> str | None:
    """``rel`` as the last commit holds it, or None (not committed, no history, damaged history)."""
    try:
        from dulwich.object_store import tree_lookup_path
        from dulwich.repo import Repo

        repo = Repo(str(root))
        commit = repo[repo.head()]
        _mode, sha = tree_lookup_path(repo.__getitem__, commit.tree, rel.encode("utf-8"))
        return decode_topic(repo[sha].data)
    except Exception:  # noqa: BLE001 - any failure means there is no committed version to serve
        return None
