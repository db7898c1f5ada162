"""One topic file's share of the search index.

A :class:`FileSegment` keeps what the index needs from one topic file in a
few plain values that ``marshal`` stores and loads fast: the signature, the
token count of every record (BM25 document length) and one encoded blob
with the file's terms and records, decoded only when the file is changed or
a hit lands in it (a cold query touches a handful of files, not all).

Postings are global (see :mod:`.index`): one packed ``array('Q')`` per term
whose values are ``file id << 40 | record position << 16 | tf``, sorted, so
one file's postings are a contiguous run that can be swapped alone.
"""

from __future__ import annotations

import marshal
import re
import sys
from array import array
from collections import Counter
from typing import Iterable, NamedTuple

from ..workspace.scan import Signature
from .tokenize import tokenize

# (archive relpath, anchor, label) — how evidence names one source.
SourceRef = tuple[str, str, str]

FILE_SHIFT = 40  # posting value = file id << 40 | position << 16 | tf
POS_SHIFT = 16
POS_MASK = (1 << 24) - 1
TF_MASK = (1 << 16) - 1  # a term repeated > 65,535 times in one record counts 65,535

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


class FileSegment:
    """Index data of one topic file; ``to_tuple``/``from_tuple`` for the cache."""

    __slots__ = ("sig", "lens_blob", "length", "blob", "_lens", "_payload")

    def __init__(self, sig: Signature, lens_blob: bytes, length: int, blob: bytes) -> None:
        self.sig = tuple(sig)
        self.lens_blob = lens_blob  # array('I') of record token counts
        self.length = length  # their sum
        self.blob = blob  # marshal of (terms, rows)
        self._lens: array | None = None
        self._payload: tuple | None = None

    @property
    def count(self) -> int:
        """Number of records in the file."""
        return len(self.lens_blob) // 4

    def lens(self) -> array:
        """Token count of each record, in file order."""
        if self._lens is None:
            self._lens = array("I", self.lens_blob)
        return self._lens

    def _decoded(self) -> tuple:
        if self._payload is None:
            terms, rows = marshal.loads(self.blob)
            self._payload = (terms, [Doc(*row) for row in rows])
        return self._payload

    def terms(self) -> tuple[str, ...]:
        """Every distinct term of the file (to take its postings out again)."""
        return self._decoded()[0]

    def docs(self) -> list[Doc]:
        """The records of the file, in file order."""
        return self._decoded()[1]

    def refs(self) -> set[tuple[str, str]]:
        """``(archive, anchor)`` of every source the file's records cite."""
        return {(archive, anchor) for doc in self.docs() for archive, anchor, _ in doc.refs}

    def to_tuple(self) -> tuple:
        """Plain values for the cache (see :meth:`from_tuple`)."""
        return (self.sig, self.lens_blob, self.length, self.blob)

    @classmethod
    def from_tuple(cls, row: tuple) -> "FileSegment":
        """The segment stored by :meth:`to_tuple`."""
        return cls(*row)


def record_refs(record) -> tuple[SourceRef, ...]:
    """Every source reference of a ``RecordInfo``, in citation order."""
    return tuple((ref.archive or "", ref.anchor or "", ref.label) for ev in record.evidence for ref in ev.refs)


def build_segment(sig: Signature, topic: str, records: Iterable) -> tuple[FileSegment, dict[str, list[int]]]:
    """Tokenize the ``RecordInfo``s of one topic file.

    Returns the segment and its postings ``term → [position << 16 | tf]``
    (the index adds the file id).
    """
    lens = array("I")
    postings: dict[str, list[int]] = {}
    rows: list[tuple] = []
    intern = sys.intern  # shared term objects: smaller cache, faster load
    for position, record in enumerate(records):
        terms = tokenize(document_text(topic, record.headings, record.content))
        lens.append(len(terms))
        base = position << POS_SHIFT
        for term, tf in Counter(terms).items():
            values = postings.get(term)
            if values is None:
                values = postings[intern(term)] = []
            values.append(base | (tf if tf < TF_MASK else TF_MASK))
        rows.append((record.memory_id, tuple(record.headings), record.content, record_refs(record)))
    term_list = tuple(postings)
    segment = FileSegment(sig, lens.tobytes(), sum(lens), marshal.dumps((term_list, rows)))
    segment._payload = (term_list, [Doc(*row) for row in rows])
    return segment, postings
