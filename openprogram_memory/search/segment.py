"""One topic file's slice of the search index.

A segment holds everything the index needs from one topic file, in plain
values that ``marshal`` stores fast: per-record token counts (document
lengths), postings ``term → [local doc, tf, local doc, tf, …]`` and the
records themselves as one encoded blob, decoded only when a hit lands in
the file (a cold query touches a handful of files, not all of them).

A changed file is re-indexed alone by building a new segment for it.
"""

from __future__ import annotations

import marshal
import re
import sys
from typing import Iterable, NamedTuple

from ..workspace.tree import RecordInfo
from .tokenize import tokenize

Signature = tuple[int, int, int]
# (archive relpath, anchor, label) — how evidence names one source.
SourceRef = tuple[str, str, str]

_CITATION_RE = re.compile(r"\[\^[^\]\s]+\]")
_LINK_RE = re.compile(r"\[([^\]]*)\]\([^)\s]*\)")


class Doc(NamedTuple):
    """A record as stored in the index (what a hit reports)."""

    memory_id: str
    headings: tuple[str, ...]
    content: str
    refs: tuple[SourceRef, ...]


def document_text(topic: str, headings: Iterable[str], content: str) -> str:
    """The searchable text of a record: prose, topic path words, heading chain.

    Link targets and citation markers are dropped (``[text](a.md#^id)`` is
    searched as ``text``) so file names and ids do not pollute the terms.
    """
    prose = _LINK_RE.sub(r"\1", _CITATION_RE.sub(" ", content))
    path = topic.removeprefix("topics/").removesuffix(".md")
    return "\n".join([prose, path, *headings])


def _pack(values: list[int]) -> bytes | tuple[int, ...]:
    """Postings as bytes when every value fits in one, else a tuple."""
    return bytes(values) if max(values) < 256 else tuple(values)


class Segment:
    """Index data of one topic file; ``to_tuple``/``from_tuple`` for the cache."""

    __slots__ = ("sig", "lens", "length", "postings", "docs_blob", "archives", "_docs")

    def __init__(
        self,
        sig: Signature,
        lens: list[int],
        postings: dict[str, bytes | tuple[int, ...]],
        docs_blob: bytes,
        archives: dict[str, tuple[str, ...]],
    ) -> None:
        self.sig = tuple(sig)
        self.lens = lens
        self.length = sum(lens)
        self.postings = postings
        self.docs_blob = docs_blob
        self.archives = archives  # archive relpath → anchors the records cite
        self._docs: list[Doc] | None = None

    def docs(self) -> list[Doc]:
        """The records of the file, decoded once."""
        if self._docs is None:
            self._docs = [Doc(*row) for row in marshal.loads(self.docs_blob)]
        return self._docs

    def doc_count(self, term: str) -> int:
        """How many records of this file contain ``term``."""
        return len(self.postings[term]) // 2

    def to_tuple(self) -> tuple:
        return (self.sig, self.lens, self.postings, self.docs_blob, self.archives)

    @classmethod
    def from_tuple(cls, row: tuple) -> "Segment":
        sig, lens, postings, docs_blob, archives = row
        return cls(tuple(sig), list(lens), postings, docs_blob, archives)


def record_refs(record: RecordInfo) -> tuple[SourceRef, ...]:
    """Every source reference of a record, in citation order."""
    return tuple(
        (ref.archive or "", ref.anchor or "", ref.label) for ev in record.evidence for ref in ev.refs
    )


def build_segment(sig: Signature, topic: str, records: Iterable[RecordInfo]) -> Segment:
    """Tokenize the records of one topic file into a segment."""
    lens: list[int] = []
    flat: dict[str, list[int]] = {}
    rows: list[tuple] = []
    archives: dict[str, set[str]] = {}
    intern = sys.intern  # shared term objects: smaller cache, faster load
    for local, record in enumerate(records):
        terms = tokenize(document_text(topic, record.headings, record.content))
        lens.append(len(terms))
        counts: dict[str, int] = {}
        for term in terms:
            counts[term] = counts.get(term, 0) + 1
        for term, tf in counts.items():
            flat.setdefault(intern(term), []).extend((local, tf))
        refs = record_refs(record)
        for archive, anchor, _label in refs:
            archives.setdefault(archive, set()).add(anchor)
        rows.append((record.memory_id, tuple(record.headings), record.content, refs))
    return Segment(
        sig,
        lens,
        {term: _pack(values) for term, values in flat.items()},
        marshal.dumps(rows),
        {archive: tuple(sorted(anchors)) for archive, anchors in archives.items()},
    )
