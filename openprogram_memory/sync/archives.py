"""Union of two versions of one append-only, content-addressed archive file.

Frames are identified by source id (content addressed: the same id always
carries the same bytes). The union keeps the frames both sides share in
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
    return parsed.frames


def union(rel: str, local: bytes | None, remote: bytes | None) -> bytes | None:
    """The merged bytes of archive ``rel``; the local bytes when nothing is added."""
    if remote is None or remote == local:
        return local
    if local is None:
        return remote
    mine, theirs = _frames(rel, local), _frames(rel, remote)
    mine_ids = {m.source_id: m for m in mine}
    theirs_ids = {m.source_id: m for m in theirs}
    for source_id in mine_ids.keys() & theirs_ids.keys():
        if mine_ids[source_id].frame() != theirs_ids[source_id].frame():
            raise MemoryFailure(FailureCode.APPEND_ONLY_REQUIRED,
                                f"{rel}: {source_id} is archived with different content on the two machines",
                                details={"file": rel, "source_id": source_id})
    if theirs_ids.keys() <= mine_ids.keys():
        return local
    if mine_ids.keys() <= theirs_ids.keys():
        return remote
    shared = 0
    while shared < min(len(mine), len(theirs)) and mine[shared].source_id == theirs[shared].source_id:
        shared += 1
    rest = {m.source_id: m for m in mine[shared:] + theirs[shared:]}
    tail = sorted(rest.values(), key=lambda m: (m.timestamp, m.source_id))
    return (HEADER + "\n\n" + "".join(m.frame() for m in mine[:shared] + tail)).encode("utf-8")
