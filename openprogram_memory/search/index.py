"""BM25 (Okapi) over topic records: an inverted index built per topic file.

Scores are exactly those of ``rank_bm25.BM25Okapi`` (k1=1.5, b=0.75,
epsilon=0.25: a term in more than half the records gets the idf floor
``epsilon × mean idf``), but only records that contain a query term are
scored, through postings, instead of every record.

Corpus statistics are global (record count, mean length, document
frequency of each term, mean idf); postings live in one :class:`Segment`
per topic file. :meth:`SearchIndex.refresh` compares every topic file's
signature ``(mtime_ns, size, inode)`` with the segment's and re-indexes only
the files that moved; the statistics are adjusted by subtracting the old
segment and adding the new one.

Trust: a record is ``pending`` if any source it cites is pending or does not
resolve (the rule of ``RecordInfo.trust_state``). Trust states live in the
source archives, so every archive a record cites is tracked by signature
too: promoting a source pending → trusted re-reads that archive alone.
"""

from __future__ import annotations

import heapq
import math
import threading
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path

from ..workspace.tree import SourceCache, signature, topic_cache
from .segment import Doc, Segment, Signature, SourceRef, build_segment

K1 = 1.5
B = 0.75
EPSILON = 0.25
_LOCAL_BITS = 20  # doc key = file id << 20 | record position in the file

# archive relpath → (signature, anchor → (source id, trust state) | None)
SourceTable = dict[str, tuple[Signature | None, dict[str, tuple[str, str] | None]]]


@dataclass
class RefreshReport:
    """What one :meth:`SearchIndex.refresh` did (tests and benchmarks read it)."""

    indexed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    archives_read: list[str] = field(default_factory=list)
    loaded_from_disk: bool = False

    @property
    def changed(self) -> bool:
        return bool(self.indexed or self.removed or self.archives_read)


@dataclass(frozen=True)
class Match:
    """One scored record, before it becomes a public ``SearchHit``."""

    score: float
    topic: str
    doc: Doc
    sources: list[dict[str, str]]
    trust_state: str


def _is_archive_path(rel: str) -> bool:
    return rel.startswith("sources/") and rel.endswith(".md")


class SearchIndex:
    """The BM25 index of one memory root; see the module docstring."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.lock = threading.RLock()
        self.paths: list[str | None] = []
        self.segments: list[Segment | None] = []
        self.fid_of: dict[str, int] = {}
        self.df: dict[str, int] = {}
        self.where: dict[str, list[int]] = {}  # term → ids of files holding it
        self.n_docs = 0
        self.total_len = 0
        self.avg_idf = 0.0
        self.sources: SourceTable = {}
        self.files_indexed = 0  # cumulative: how many topic files were tokenized
        self._free: list[int] = []
        self._norms: dict[int, list[float]] = {}

    # -- plain-value state, for the on-disk cache ---------------------------

    def to_state(self) -> tuple:
        """Everything but the root and counters, as marshal-able values."""
        segments = [s.to_tuple() if s is not None else None for s in self.segments]
        return (self.paths, segments, self.df, self.where, self.n_docs, self.total_len, self.avg_idf, self.sources)

    @classmethod
    def from_state(cls, root: Path, state: tuple) -> "SearchIndex":
        """Rebuild an index from :meth:`to_state` output (no re-tokenizing)."""
        index = cls(root)
        paths, segments, df, where, n_docs, total_len, avg_idf, sources = state
        index.paths = list(paths)
        index.segments = [Segment.from_tuple(s) if s is not None else None for s in segments]
        index.fid_of = {rel: fid for fid, rel in enumerate(index.paths) if rel is not None}
        index._free = [fid for fid, rel in enumerate(index.paths) if rel is None]
        index.df, index.where = df, where
        index.n_docs, index.total_len, index.avg_idf = n_docs, total_len, avg_idf
        index.sources = sources
        return index

    # -- corpus maintenance -------------------------------------------------

    def _put(self, rel: str, segment: Segment) -> None:
        fid = self.fid_of.get(rel)
        if fid is not None:
            self._unlink(fid)
        elif self._free:
            fid = self._free.pop()
        else:
            fid = len(self.paths)
            self.paths.append(None)
            self.segments.append(None)
        self.paths[fid], self.segments[fid], self.fid_of[rel] = rel, segment, fid
        self.n_docs += len(segment.lens)
        self.total_len += segment.length
        df, where = self.df, self.where
        for term, postings in segment.postings.items():
            df[term] = df.get(term, 0) + len(postings) // 2
            where.setdefault(term, []).append(fid)

    def _unlink(self, fid: int) -> None:
        segment = self.segments[fid]
        if segment is None:
            return
        self.n_docs -= len(segment.lens)
        self.total_len -= segment.length
        for term, postings in segment.postings.items():
            left = self.df[term] - len(postings) // 2
            files = self.where[term]
            files.remove(fid)
            if left:
                self.df[term] = left
            else:
                del self.df[term], self.where[term]
        self.segments[fid] = None

    def _drop(self, rel: str) -> None:
        fid = self.fid_of.pop(rel)
        self._unlink(fid)
        self.paths[fid] = None
        self._free.append(fid)

    def _restat(self) -> None:
        """Mean idf after the corpus changed (rank_bm25 averages raw idfs)."""
        n = self.n_docs
        log = math.log
        total = sum(log(n - df + 0.5) - log(df + 0.5) for df in self.df.values())
        self.avg_idf = total / len(self.df) if self.df else 0.0
        self._norms.clear()

    # -- refresh ------------------------------------------------------------

    def refresh(self) -> RefreshReport:
        """Bring the index up to date with the files on disk."""
        report = RefreshReport()
        cache = topic_cache(self.root)
        current = {rel: signature(self.root / rel) for rel in cache.list_topic_paths()}
        for rel in [r for r in self.fid_of if current.get(r) is None]:
            self._drop(rel)
            report.removed.append(rel)
        for rel, sig in current.items():
            fid = self.fid_of.get(rel)
            if sig is None or (fid is not None and self.segments[fid].sig == sig):
                continue
            summary = cache.summary(rel)
            if summary is None:  # vanished or unreadable since the scan
                if fid is not None:
                    self._drop(rel)
                    report.removed.append(rel)
                continue
            self._put(rel, build_segment(sig, rel, summary.records))
            self.files_indexed += 1
            report.indexed.append(rel)
        topics_moved = bool(report.indexed or report.removed)
        if topics_moved:
            self._restat()
        report.archives_read = self._refresh_sources(cache.sources, topics_moved)
        return report

    def _refresh_sources(self, sources: SourceCache, topics_moved: bool) -> list[str]:
        """Re-resolve the cited anchors of archives whose signature moved."""
        if topics_moved:
            needed: dict[str, set[str]] = {}
            for segment in self.segments:
                if segment is not None:
                    for archive, anchors in segment.archives.items():
                        needed.setdefault(archive, set()).update(anchors)
            for gone in self.sources.keys() - needed.keys():
                del self.sources[gone]
        else:
            needed = {archive: set(entry[1]) for archive, entry in self.sources.items()}
        read: list[str] = []
        for archive, anchors in needed.items():
            valid = _is_archive_path(archive)
            sig = signature(self.root / archive) if valid else None
            entry = self.sources.get(archive)
            if entry is not None and entry[0] == sig and anchors <= entry[1].keys():
                continue
            resolved: dict[str, tuple[str, str] | None] = {}
            for anchor in sorted(anchors):
                message = sources.lookup(archive, anchor) if valid and anchor else None
                resolved[anchor] = (message.source_id, message.trust_state) if message else None
            self.sources[archive] = (sig, resolved)
            read.append(archive)
        return read

    # -- scoring ------------------------------------------------------------

    def idf(self, term: str) -> float:
        """rank_bm25's idf: log((N-df+.5)/(df+.5)), floored at ε·mean when negative."""
        df = self.df.get(term)
        if not df:
            return 0.0
        value = math.log(self.n_docs - df + 0.5) - math.log(df + 0.5)
        return EPSILON * self.avg_idf if value < 0 else value

    def _norm(self, fid: int) -> list[float]:
        norm = self._norms.get(fid)
        if norm is None:
            avgdl = self.total_len / self.n_docs
            norm = self._norms[fid] = [K1 * (1 - B + B * dl / avgdl) for dl in self.segments[fid].lens]
        return norm

    def scores(self, terms: list[str]) -> dict[int, float]:
        """BM25 score of every record holding a query term, by doc key."""
        counts: dict[str, int] = {}
        for term in terms:
            counts[term] = counts.get(term, 0) + 1
        scores: dict[int, float] = {}
        get = scores.get
        for term, qtf in counts.items():
            files = self.where.get(term)
            if not files:
                continue
            weight = qtf * self.idf(term) * (K1 + 1)
            for fid in files:
                postings = self.segments[fid].postings[term]
                norm = self._norm(fid)
                base = fid << _LOCAL_BITS
                for local, tf in zip(postings[::2], postings[1::2]):
                    key = base | local
                    scores[key] = get(key, 0.0) + weight * tf / (tf + norm[local])
        return scores

    def trust_state(self, refs: tuple[SourceRef, ...]) -> str:
        """``pending`` if any cited source is pending or unresolvable."""
        for archive, anchor, _label in refs:
            entry = self.sources.get(archive)
            resolved = entry[1].get(anchor) if entry else None
            if resolved is None or resolved[1] != "trusted":
                return "pending"
        return "trusted"

    def source_list(self, refs: tuple[SourceRef, ...]) -> list[dict[str, str]]:
        """``[{source, label}]`` of the refs that resolve (as ``RecordInfo.sources``)."""
        out = []
        for archive, anchor, label in refs:
            entry = self.sources.get(archive)
            resolved = entry[1].get(anchor) if entry else None
            if resolved is not None:
                out.append({"source": resolved[0], "label": label})
        return out

    def _match(self, key: int, score: float) -> Match:
        fid, local = key >> _LOCAL_BITS, key & ((1 << _LOCAL_BITS) - 1)
        doc = self.segments[fid].docs()[local]
        return Match(score, self.paths[fid], doc, self.source_list(doc.refs), self.trust_state(doc.refs))

    def _order(self, item: tuple[int, float]) -> tuple[float, str, int]:
        key, score = item
        return (-score, self.paths[key >> _LOCAL_BITS], key & ((1 << _LOCAL_BITS) - 1))

    def top(self, terms: list[str], k: int, *, include_pending: bool = False) -> list[Match]:
        """The ``k`` best records, highest score first; ties by topic, position.

        Without ``include_pending`` a record citing any pending source is
        skipped before counting, so ``k`` trusted records come back if there
        are that many.
        """
        if k <= 0 or not self.n_docs:
            return []
        items = list(self.scores(terms).items())
        want = k + 8
        while True:
            best = heapq.nlargest(want, items, key=itemgetter(1))
            if len(best) == want:  # take every record tied with the last one too
                floor = best[-1][1]
                best = [item for item in items if item[1] >= floor]
            best.sort(key=self._order)
            matches = []
            for key, score in best:
                match = self._match(key, score)
                if include_pending or match.trust_state == "trusted":
                    matches.append(match)
                    if len(matches) == k:
                        return matches
            if len(best) >= len(items):
                return matches
            want *= 4
