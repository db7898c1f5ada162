"""BM25 (Okapi) over topic records: an inverted index updated per topic file.

Okapi BM25 with k1=1.5, b=0.75 and Lucene's idf ``log(1 + (N - df + 0.5) /
(df + 0.5))``: always positive, so a record matching a query term never
scores zero or below, however common the term (the classic Okapi idf is
negative for terms in more than half the records, and a small workspace
showed users scores like -0.048). Only records holding a query term are
scored, via postings.

Layout: corpus statistics (record count, total length) and one
packed postings array per term are global; everything else about a topic
file is in its :class:`FileSegment`. :meth:`SearchIndex.refresh` compares
every topic file's signature ``(mtime_ns, size, inode)`` with its segment's
and re-indexes only files that moved: their run in each touched postings
array is cut out and replaced, the statistics adjusted.

Trust: a record is ``pending`` if any source it cites is pending or does not
resolve (the rule of ``RecordInfo.trust_state``). Trust states live in the
source archives, so every archive a record cites is tracked by signature
too: promoting a source pending → trusted re-reads that archive alone.
Archives and anchors no longer cited stay in the table (harmless) until the
index is rebuilt from scratch.
"""

from __future__ import annotations

import gc
import heapq
import marshal
import math
import os
import threading
from array import array
from bisect import bisect_left
from contextlib import contextmanager
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, NamedTuple

from ..workspace.scan import topic_files
from .postings import Postings
from .segment import FILE_SHIFT, POS_MASK, POS_SHIFT, TF_MASK, Doc, FileSegment, Signature, SourceRef, build_segment

if TYPE_CHECKING:
    from .dense import DenseLayout

K1 = 1.5
B = 0.75
_DOC_SHIFT = FILE_SHIFT - POS_SHIFT  # doc key = posting >> 16 = file id << 24 | position

Resolved = dict[str, "tuple[str, str] | None"]  # anchor → (source id, trust state) | None


class RefreshReport:
    """What one :meth:`SearchIndex.refresh` did (tests and benchmarks read it)."""

    __slots__ = ("indexed", "removed", "archives_read", "loaded_from_disk", "watched")

    def __init__(self, watched: bool = False) -> None:
        self.indexed: list[str] = []
        self.removed: list[str] = []
        self.archives_read: list[str] = []
        self.loaded_from_disk = False
        self.watched = watched  # a running file watch vouched for the index (search/cache.py)

    @property
    def changed(self) -> bool:
        """Whether the index differs from before (and should be saved)."""
        return bool(self.indexed or self.removed or self.archives_read)

    def __repr__(self) -> str:
        return (f"RefreshReport(indexed={self.indexed}, removed={self.removed}, "
                f"archives_read={self.archives_read}, loaded_from_disk={self.loaded_from_disk})")


class Match(NamedTuple):
    """One scored record, before it becomes a public ``SearchHit``."""

    score: float
    topic: str
    doc: Doc
    sources: list
    trust_state: str


def scan_topics(root: Path) -> dict[str, Signature]:
    """Signature of every topic file, by memory-root-relative path: the very files ``TopicCache`` lists
    (:func:`~openprogram_memory.workspace.scan.topic_files`), one ``lstat`` each, no sorting."""
    return topic_files(root)


@contextmanager
def _gc_paused(pause: bool) -> Iterator[None]:
    """Hold the cyclic GC while building many acyclic objects (halves a full build)."""
    was_enabled = gc.isenabled()
    if pause and was_enabled:
        gc.disable()
    try:
        yield
    finally:
        if pause and was_enabled:
            gc.enable()


def _is_archive_path(rel: str) -> bool:
    return rel.startswith("sources/") and rel.endswith(".md")


class SearchIndex:
    """The BM25 index of one memory root; see the module docstring."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.lock = threading.RLock()
        self.paths: list[str | None] = []
        self.files: list[FileSegment | None] = []
        self.fid_of: dict[str, int] = {}
        self.postings = Postings()  # term → array('Q') bytes, sorted
        self.n_docs = 0
        self.total_len = 0
        self.sources: dict[str, tuple[Signature | None, bytes]] = {}  # archive → (sig, marshal of Resolved)
        self.files_indexed = 0  # cumulative: topic files tokenized by this instance
        self._free: list[int] = []
        self._resolved: dict[str, Resolved] = {}
        self._norms: dict[int, list[float]] = {}
        self.clean_token: object = None  # the file watch's token at the last refresh (search/cache.py)
        # topic files left out (not text) and those indexed as their last committed version (an edit outside the
        # product breaks a record rule): {path: why}, found when each was last read. Kept with the index, so a
        # search answered from it still warns while the file on disk is as it was
        self.unreadable: dict[str, str] = {}
        self.invalid: dict[str, str] = {}
        self._layout: DenseLayout | None = None  # search/dense.py, built on first use after a change

    # -- plain-value state, for the on-disk cache ---------------------------

    def to_state(self) -> tuple:
        """Everything but the root and counters, as marshal-able values."""
        files = [f.to_tuple() if f is not None else None for f in self.files]
        return (self.paths, files, self.postings.to_state(), self.n_docs, self.total_len, self.sources,
                self.unreadable, self.invalid)

    @classmethod
    def from_state(cls, root: Path, state: tuple) -> "SearchIndex":
        """An index from :meth:`to_state` output (nothing is re-tokenized)."""
        index = cls(root)
        paths, files, postings, n_docs, total_len, sources, unreadable, invalid = state
        index.paths = list(paths)
        index.files = [FileSegment.from_tuple(f) if f is not None else None for f in files]
        index.fid_of = {rel: fid for fid, rel in enumerate(index.paths) if rel is not None}
        index._free = [fid for fid, rel in enumerate(index.paths) if rel is None]
        index.postings, index.sources = Postings(postings), sources
        index.n_docs, index.total_len = n_docs, total_len
        index.unreadable, index.invalid = dict(unreadable), dict(invalid)
        return index

    # -- corpus maintenance -------------------------------------------------

    def _live(self, fid: int) -> tuple[str, FileSegment]:
        """Path and segment of an occupied slot (freed slots hold ``None``)."""
        path, segment = self.paths[fid], self.files[fid]
        assert path is not None and segment is not None, f"slot {fid} is free"
        return path, segment

    def _apply(self, changes: dict[str, tuple[FileSegment, dict[str, list[int]]] | None]) -> None:
        """Replace (or drop, for ``None``) the segments of the given files."""
        touched: dict[str, dict[int, list[int]]] = {}
        for rel in changes:  # take old postings out first: freed ids may be reused below
            fid = self.fid_of.get(rel)
            if fid is None:
                continue
            old = self._live(fid)[1]
            self.n_docs -= old.count
            self.total_len -= old.length
            for term in old.terms():
                touched.setdefault(term, {})[fid] = []
            if changes[rel] is None:
                del self.fid_of[rel]
                self.paths[fid] = self.files[fid] = None
                self._free.append(fid)
        for rel, new in changes.items():
            if new is None:
                continue
            segment, postings = new
            fid = self.fid_of.get(rel)
            if fid is None:
                fid = self._free.pop() if self._free else len(self.paths)
                if fid == len(self.paths):
                    self.paths.append(None)
                    self.files.append(None)
                self.fid_of[rel] = fid
            self.paths[fid], self.files[fid] = rel, segment
            self.n_docs += segment.count
            self.total_len += segment.length
            base = fid << FILE_SHIFT
            for term, values in postings.items():
                touched.setdefault(term, {})[fid] = [base | v for v in values]
        for term, by_fid in touched.items():
            self._merge(term, by_fid)
        self._norms.clear()  # avgdl moved: every length norm is stale
        self._layout = None

    def _merge(self, term: str, by_fid: dict[int, list[int]]) -> None:
        """Swap the runs of the given files in one term's postings."""
        old = self.postings.get(term)
        fids = sorted(by_fid)
        if old is None:
            values = [v for fid in fids for v in by_fid[fid]]
            if values:
                self.postings[term] = array("Q", values).tobytes()
            return
        view = memoryview(old).cast("Q")
        pieces, cursor = [], 0
        for fid in fids:
            lo = bisect_left(view, fid << FILE_SHIFT, cursor)
            hi = bisect_left(view, (fid + 1) << FILE_SHIFT, lo)
            pieces.append(old[cursor * 8 : lo * 8])
            if by_fid[fid]:
                pieces.append(array("Q", by_fid[fid]).tobytes())
            cursor = hi
        pieces.append(old[cursor * 8 :])
        view.release()
        blob = b"".join(pieces)
        if blob:
            self.postings[term] = blob
        else:
            del self.postings[term]

    # -- refresh ------------------------------------------------------------

    def refresh(self) -> RefreshReport:
        """Bring the index up to date with the files on disk."""
        report = RefreshReport()
        from ..workspace.caches import held_files

        held = held_files(self.root)
        current = scan_topics(self.root)
        for rel in held:  # a removal held back: the file's last commit is served, under no signature of its own
            current.setdefault(rel, (0, 0, 0))
        changes: dict[str, tuple[FileSegment, dict[str, list[int]]] | None] = {}
        for rel in self.fid_of:
            if rel not in current:
                changes[rel] = None
                report.removed.append(rel)
        for gone in [rel for rel in [*self.unreadable, *self.invalid] if rel not in current]:
            self.unreadable.pop(gone, None)
            self.invalid.pop(gone, None)
        fid_of, live = self.fid_of, self._live
        # a file held back from adoption, or no longer, keeps its bytes: read it again when that changes (a held
        # file's problem names its rule first, "[rule] …"; a record rule's its line, "line N: …"); so does one
        # held back for citing a message the archive does not hold, which the next import may archive
        again = {rel for rel in held if self.invalid.get(rel) != held[rel]} | {
            rel for rel, why in self.invalid.items()
            if (why.startswith("[") and rel not in held) or "[unknown-source]" in why}
        stale = [rel for rel, sig in current.items()
                 if rel not in fid_of or rel in again or live(fid_of[rel])[1].sig != sig]
        new_refs: set[tuple[str, str]] = set()
        with _gc_paused(len(stale) > 8):
            if stale:
                from ..workspace.caches import topic_cache  # parsing is needed only here

                cache = topic_cache(self.root)
                summaries = {}
                for rel in sorted(stale):
                    summary = cache.summary(rel)
                    for kept, found in ((self.unreadable, cache.unreadable), (self.invalid, cache.invalid)):
                        if rel in found:
                            kept[rel] = found[rel]
                        else:
                            kept.pop(rel, None)
                    if summary is None:  # vanished or unreadable since the scan
                        if rel in fid_of:
                            changes[rel] = None
                            report.removed.append(rel)
                        continue
                    summaries[rel] = summary
                for rel, problem in self._pasted_copies(summaries, held).items():
                    self.invalid[rel] = problem  # held back as an adoption would: its last commit is served
                    served = cache.last_committed(rel)  # (a file never committed, a copy of a whole file: none)
                    if served is not None:
                        summaries[rel] = served
                        continue
                    del summaries[rel]
                    if rel in fid_of:
                        changes[rel] = None
                        report.removed.append(rel)
                for rel, summary in summaries.items():
                    segment, postings = build_segment(current[rel], rel, summary.records)
                    changes[rel] = (segment, postings)
                    new_refs |= segment.refs()
                    report.indexed.append(rel)
                self.files_indexed += len(report.indexed)
            if changes:
                self._apply(changes)
            report.archives_read = self._refresh_sources(new_refs)
        return report

    def _pasted_copies(self, summaries: dict, held: dict[str, str]) -> dict[str, str]:
        """``{path: problem}`` of the topic files just read (none held back by the last adoption) that are copies
        of another (:func:`~..workspace.copies.pasted_copies`): held back, as an adoption would hold them, before
        any command has opened the workspace. Asked of a file the index reads for the first time, and of one it
        knows that now holds a block ID its indexed version did not (a record pasted into it); a file that did not
        move is not read, so a search of an unchanged workspace pays nothing for it."""
        def took_ids(rel: str, ids: list[str]) -> bool:
            fid = self.fid_of.get(rel)
            if fid is None:
                return True
            known = {doc.memory_id for doc in self._live(fid)[1].docs()}
            return any(block_id not in known for block_id in ids)

        fresh = {rel: summary.ids for rel, summary in summaries.items()
                 if rel not in held and took_ids(rel, summary.ids)}
        if not fresh:
            return {}
        from ..workspace.copies import pasted_copies

        # the other files the index holds, as it holds them; not one gone from disk (its removal is in this refresh:
        # "mv bikes.md cycling.md" is a move, and cycling.md no copy of a file that is not there)
        others = [rel for rel in self.fid_of
                  if rel not in summaries and os.path.lexists(os.path.join(self.root, rel))]

        def indexed():  # (decodes every segment: a cold process pays for it only here)
            for rel in others:
                yield rel, (doc.memory_id for doc in self._live(self.fid_of[rel])[1].docs())

        in_hand = ((rel, summary.ids) for rel, summary in summaries.items() if rel not in fresh)
        return pasted_copies(self.root, fresh, in_hand, indexed if others else None)

    def _archive_sig(self, archive: str) -> Signature | None:
        if not _is_archive_path(archive):
            return None
        try:
            st = os.stat(os.path.join(self.root, archive), follow_symlinks=False)
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def resolved(self, archive: str) -> Resolved:
        """Cited anchors of one archive → ``(source id, trust state)`` or ``None``."""
        table = self._resolved.get(archive)
        if table is None:
            entry = self.sources.get(archive)
            table = self._resolved[archive] = marshal.loads(entry[1]) if entry else {}
        return table

    def _refresh_sources(self, new_refs: set[tuple[str, str]]) -> list[str]:
        """Re-resolve archives whose signature moved, and anchors never seen."""
        wanted: dict[str, set[str]] = {}
        for archive, anchor in new_refs:
            wanted.setdefault(archive, set()).add(anchor)
        read: list[str] = []
        for archive in list(self.sources.keys() | wanted.keys()):
            sig = self._archive_sig(archive)
            entry = self.sources.get(archive)
            unchanged = entry is not None and entry[0] == sig
            if unchanged and archive not in wanted:
                continue
            known = self.resolved(archive)
            missing = wanted.get(archive, set()) - known.keys()
            if unchanged and not missing:
                continue
            from ..workspace.caches import topic_cache

            # one parse per archive (as SourceCache.lookup would resolve each anchor)
            frames = topic_cache(self.root).sources.archive(archive)[1] if _is_archive_path(archive) else {}
            table: Resolved = {}
            for anchor in sorted(known.keys() | missing):
                message = frames.get(anchor) if anchor else None
                table[anchor] = (message.source_id, message.trust_state) if message else None
            self.sources[archive] = (sig, marshal.dumps(table))
            self._resolved[archive] = table
            read.append(archive)
        return read

    # -- scoring ------------------------------------------------------------

    def idf(self, term: str) -> float:
        """Lucene's idf, log(1 + (N-df+.5)/(df+.5)) — always > 0 for a term that occurs; 0 if unseen."""
        blob = self.postings.get(term)
        return self._idf(len(blob) >> 3) if blob else 0.0

    def _idf(self, df: int) -> float:
        return math.log1p((self.n_docs - df + 0.5) / (df + 0.5))

    def _norm(self, fid: int) -> list[float]:
        avgdl = self.total_len / self.n_docs
        norm = self._norms[fid] = [K1 * (1 - B + B * dl / avgdl) for dl in self._live(fid)[1].lens()]
        return norm

    def _plan(self, terms: list[str]) -> list[tuple[bytes, float]]:
        """``(postings, weight)`` per distinct query term, rarest first.

        ``weight`` = qtf · idf · (k1 + 1) bounds what the term can add to any
        record's score (tf / (tf + norm) < 1). Full and pruned scoring add a
        record's term contributions in this one order, so their sums are
        bit-identical.
        """
        counts: dict[str, int] = {}
        for term in terms:
            counts[term] = counts.get(term, 0) + 1
        plan = []
        for term, qtf in counts.items():
            blob = self.postings.get(term)
            if blob:
                df = len(blob) >> 3
                plan.append((df, term, blob, qtf * self._idf(df) * (K1 + 1)))
        plan.sort(key=itemgetter(0, 1))
        return [(blob, weight) for _df, _term, blob, weight in plan]

    def _accumulate(self, scores: dict[int, float], blob: bytes, weight: float) -> None:
        """Add one term's contribution to every record holding it."""
        get, norms = scores.get, self._norms
        last, norm = -1, []
        for value in memoryview(blob).cast("Q"):
            fid = value >> FILE_SHIFT
            if fid != last:
                norm = norms.get(fid) or self._norm(fid)
                last = fid
            tf = value & TF_MASK
            key = value >> POS_SHIFT
            scores[key] = get(key, 0.0) + weight * tf / (tf + norm[key & POS_MASK])

    def scores(self, terms: list[str]) -> dict[int, float]:
        """BM25 score of every record holding a query term, by doc key."""
        scores: dict[int, float] = {}
        for blob, weight in self._plan(terms):
            self._accumulate(scores, blob, weight)
        return scores

    def best_scores(self, terms: list[str], want: int) -> tuple[dict[int, float], bool]:
        """Exact scores of a set of records holding the ``want`` best, and whether it is every match.

        MaxScore: terms are taken rarest first; once the bounds of the terms
        left cannot lift a record not yet seen to the ``want``-th best score
        so far (theta), no new record is admitted, and the remaining terms
        are looked up only for records that can still reach theta. Every
        record returned has its full score, equal bit for bit to
        :meth:`scores`; a record left out scores strictly below the
        ``want``-th returned one, so ties are never cut.
        """
        plan = self._plan(terms)
        rest = [0.0] * (len(plan) + 1)  # rest[i]: bound of what terms i.. can add
        for i in range(len(plan) - 1, -1, -1):
            rest[i] = rest[i + 1] + plan[i][1]
        scores: dict[int, float] = {}
        for i, (blob, weight) in enumerate(plan):
            if len(scores) >= want:
                theta = heapq.nlargest(want, scores.values())[-1]
                if rest[i] < theta:
                    return self._finish(scores, plan[i:], rest[i:], theta, want), False
            self._accumulate(scores, blob, weight)
        return scores, True

    def _finish(self, scores: dict[int, float], plan: list[tuple[bytes, float]], rest: list[float],
                theta: float, want: int) -> dict[int, float]:
        """Add the remaining terms to the records that can still reach ``theta``; drop the rest."""
        alive = [key for key, score in scores.items() if score + rest[0] >= theta]
        norms = self._norms
        for j, (blob, weight) in enumerate(plan):
            view = memoryview(blob).cast("Q")
            size = len(view)
            if len(alive) * 24 < size:  # a few records: binary search each in the postings
                for key in alive:
                    at = bisect_left(view, key << POS_SHIFT)
                    if at < size and view[at] >> POS_SHIFT == key:
                        tf = view[at] & TF_MASK
                        fid = key >> _DOC_SHIFT
                        norm = norms.get(fid) or self._norm(fid)
                        scores[key] = scores[key] + weight * tf / (tf + norm[key & POS_MASK])
            else:  # many: one pass over the postings
                wanted = set(alive)
                last, norm = -1, []
                for value in view:
                    key = value >> POS_SHIFT
                    if key in wanted:
                        fid = value >> FILE_SHIFT
                        if fid != last:
                            norm = norms.get(fid) or self._norm(fid)
                            last = fid
                        tf = value & TF_MASK
                        scores[key] = scores[key] + weight * tf / (tf + norm[key & POS_MASK])
            view.release()
            theta = max(theta, heapq.nlargest(want, (scores[key] for key in alive))[-1])
            alive = [key for key in alive if scores[key] + rest[j + 1] >= theta]
        return {key: scores[key] for key in alive}

    def trust_state(self, refs: tuple[SourceRef, ...]) -> str:
        """``pending`` if any cited source is pending or unresolvable."""
        for archive, anchor, _label in refs:
            resolved = self.resolved(archive).get(anchor)
            if resolved is None or resolved[1] != "trusted":
                return "pending"
        return "trusted"

    def source_list(self, refs: tuple[SourceRef, ...]) -> list[dict[str, str]]:
        """``[{source, label}]`` of the refs that resolve (as ``RecordInfo.sources``)."""
        out = []
        for archive, anchor, label in refs:
            resolved = self.resolved(archive).get(anchor)
            if resolved is not None:
                out.append({"source": resolved[0], "label": label})
        return out

    def _match(self, key: int, score: float) -> Match:
        fid = key >> _DOC_SHIFT
        path, segment = self._live(fid)
        doc = segment.docs()[key & POS_MASK]
        return Match(score, path, doc, self.source_list(doc.refs), self.trust_state(doc.refs))

    def _order(self, item: tuple[int, float]) -> tuple[float, str, int]:
        key, score = item
        return (-score, self._live(key >> _DOC_SHIFT)[0], key & POS_MASK)

    def top(self, terms: list[str], k: int, *, include_pending: bool = False, dense: bool = False) -> list[Match]:
        """The ``k`` best records, highest score first; ties by topic, position.

        Without ``include_pending`` a record citing any pending source is
        skipped before counting, so ``k`` trusted records come back if there
        are that many. ``dense``: score with numpy over every record
        (:mod:`.dense`) — the same matches, the same scores bit for bit.
        """
        if k <= 0 or not self.n_docs:
            return []
        if dense:
            return self._top_dense(terms, k, include_pending)
        want = k + 8
        while True:
            scored, complete = self.best_scores(terms, want)
            items = scored.items()
            best = heapq.nlargest(want, items, key=itemgetter(1))
            matches = self._first(best, k, include_pending)
            if complete and want >= len(items):
                return matches
            # Exact only if nothing left out could tie with or beat the last pick.
            if len(matches) == k and matches[-1].score > best[-1][1]:
                return matches
            want *= 4

    def _top_dense(self, terms: list[str], k: int, include_pending: bool) -> list[Match]:
        try:
            from .dense import DenseLayout
        except ImportError:  # numpy missing: the pure-Python scoring gives the same matches
            return self.top(terms, k, include_pending=include_pending)
        if self._layout is None:
            self._layout = DenseLayout(self.files, self.total_len / self.n_docs, K1, B)
            self.postings.decode_all()  # once per process (a no-op after): no query of its life waits for one
        scores = self._layout.scores(self._plan(terms))
        want = k + 8
        while True:
            # every record tied with the last one picked is in: the pick is exact
            picked, complete = self._layout.best(scores, want)
            matches = self._first(picked, k, include_pending)
            if complete or len(matches) == k:
                return matches
            want *= 4

    def _first(self, scored: list[tuple[int, float]], k: int, include_pending: bool) -> list[Match]:
        """The first ``k`` of ``scored`` (sorted here: score, topic, position) that may be shown."""
        scored.sort(key=self._order)
        matches: list[Match] = []
        for key, score in scored:
            match = self._match(key, score)
            if include_pending or match.trust_state == "trusted":
                matches.append(match)
                if len(matches) == k:
                    break
        return matches
