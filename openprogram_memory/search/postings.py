"""Postings by term, stored in hash shards that are decoded only when a term in them is asked for.

A cold search (one fresh process per prompt, as in the Claude Code hook)
looks up a dozen terms of tens of thousands; unmarshalling the whole
``term → postings`` dict cost more than scoring. :class:`Postings` keeps
``SHARDS`` marshalled dicts keyed by ``crc32(term) % SHARDS`` and decodes a
shard on first use. Shards never touched are written back byte for byte.
"""

from __future__ import annotations

import marshal
import zlib
from typing import Iterator

SHARDS = 256


def shard_of(term: str) -> int:
    """The shard a term lives in (stable across processes, unlike ``hash``)."""
    return zlib.crc32(term.encode("utf-8", "surrogatepass")) % SHARDS


class Postings:
    """A ``dict[str, bytes]``-like map of term → packed postings, decoded per shard."""

    __slots__ = ("_raw", "_shards")

    def __init__(self, raw: list[bytes] | None = None) -> None:
        if raw is not None and len(raw) != SHARDS:
            raise ValueError(f"expected {SHARDS} postings shards, got {len(raw)}")
        self._raw: list[bytes | None] = list(raw) if raw is not None else [None] * SHARDS
        self._shards: list[dict[str, bytes] | None] = [None] * SHARDS
        if raw is None:
            self._shards = [{} for _ in range(SHARDS)]

    def _shard(self, term: str) -> dict[str, bytes]:
        number = shard_of(term)
        shard = self._shards[number]
        if shard is None:
            raw = self._raw[number]
            loaded = marshal.loads(raw) if raw else {}
            if not isinstance(loaded, dict):
                raise ValueError("postings shard is not a dict")
            shard = self._shards[number] = loaded
        return shard

    def _all(self) -> Iterator[dict[str, bytes]]:
        for number in range(SHARDS):
            if self._shards[number] is None:
                raw = self._raw[number]
                self._shards[number] = marshal.loads(raw) if raw else {}
            shard = self._shards[number]
            assert shard is not None
            yield shard

    def decode_all(self) -> None:
        """Decode every shard now (a long-lived process: its queries then never wait for a decode)."""
        for _shard in self._all():
            pass

    def get(self, term: str) -> bytes | None:
        """The packed postings of ``term``, or ``None``."""
        return self._shard(term).get(term)

    def __getitem__(self, term: str) -> bytes:
        return self._shard(term)[term]

    def __contains__(self, term: object) -> bool:
        return isinstance(term, str) and term in self._shard(term)

    def __setitem__(self, term: str, blob: bytes) -> None:
        number = shard_of(term)
        self._shard(term)[term] = blob
        self._raw[number] = None  # re-encoded when saved

    def __delitem__(self, term: str) -> None:
        number = shard_of(term)
        del self._shard(term)[term]
        self._raw[number] = None

    def __iter__(self) -> Iterator[str]:
        for shard in self._all():
            yield from shard

    def __len__(self) -> int:
        return sum(len(shard) for shard in self._all())

    def values(self) -> Iterator[bytes]:
        """Every packed postings blob (decodes every shard)."""
        for shard in self._all():
            yield from shard.values()

    def to_state(self) -> list[bytes]:
        """One marshal blob per shard; shards never changed keep their bytes."""
        out = []
        for number in range(SHARDS):
            raw = self._raw[number]
            if raw is None:
                shard = self._shards[number]
                raw = self._raw[number] = marshal.dumps(shard if shard is not None else {})
            out.append(raw)
        return out
