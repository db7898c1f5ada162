"""Union of two versions of one append-only, content-addressed archive file.

Frames are identified by anchor (content addressed: a source's anchor is
its id's hash and always carries the same bytes; a trust frame's anchor
hashes the change). The union keeps the frames both sides share in
their common order, then every frame only one side has, ordered by time
then id — so both machines compute the same bytes whichever merges.
"""

from __future__ import annotations

from ..failures import FailureCode, MemoryFailure
from ..sources.archive import HEADER, SourceMessage, parse_archive


def _frames(rel: str, data: bytes | None) -> list[SourceMessage]:
    if data is None:
        return []
    parsed = parse_archive(data.decode("utf-8", "replace"))
    if parsed.damaged or parsed.legacy:
        raise MemoryFailure(FailureCode.APPEND_ONLY_REQUIRED,
                            f"{rel} is damaged or not a v2 archive on one side; nothing was merged",
                            details={"file": rel})
    return parsed.entries


def union(rel: str, local: bytes | None, remote: bytes | None) -> bytes | None:
    """The merged bytes of archive ``rel``; the local bytes when nothing is added."""
    if remote is None or remote == local:
        return local
    if local is None:
        return remote
    mine, theirs = _frames(rel, local), _frames(rel, remote)
    mine_ids = {m.anchor: m for m in mine}
    theirs_ids = {m.anchor: m for m in theirs}
    for anchor in mine_ids.keys() & theirs_ids.keys():
        if mine_ids[anchor].frame() != theirs_ids[anchor].frame():
            source_id = mine_ids[anchor].source_id
            raise MemoryFailure(FailureCode.APPEND_ONLY_REQUIRED,
                                f"{rel}: {source_id} is archived with different content on the two machines",
                                details={"file": rel, "source_id": source_id})
    if theirs_ids.keys() <= mine_ids.keys():
        return local
    if mine_ids.keys() <= theirs_ids.keys():
        return remote
    shared = 0
    while shared < min(len(mine), len(theirs)) and mine[shared].anchor == theirs[shared].anchor:
        shared += 1
    rest = {m.anchor: m for m in mine[shared:] + theirs[shared:]}
    # a source before the trust frames about it; trust frames in the order they were made
    tail = sorted(rest.values(), key=lambda m: (m.kind != "source", m.timestamp, m.source_id, m.anchor))
    return (HEADER + "\n\n" + "".join(m.frame() for m in mine[:shared] + tail)).encode("utf-8")
