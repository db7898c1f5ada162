"""Build memory roots for search tests by writing topic files directly.

Records are written in the exact format of architecture §2.1 (citation, block ID,
evidence definition linking into a v2 archive), and their sources are
archived with ``archive_messages`` — no workspace engine needed.
"""

from __future__ import annotations

import dataclasses

import os
from dataclasses import dataclass
from pathlib import Path

from openprogram_memory.sources.archive import SourceMessage, archive_messages, archive_relpath_for, parse_archive
from openprogram_memory.topics.ids import evidence_id, new_block_id, source_anchor


@dataclass
class Rec:
    """One record to write: its prose, its (single) source and where it goes."""

    content: str
    source_id: str
    headings: tuple[str, ...] = ()
    label: str = "note"
    time: str = "2026-08-09"
    trust_state: str = "trusted"
    source_text: str | None = None


def archive_source(root: Path, rec: Rec) -> None:
    """Archive the message a record cites (idempotent)."""
    archive_messages(
        root,
        [
            SourceMessage(
                source_id=rec.source_id,
                speaker="B",
                speaker_id="user-1",
                timestamp=f"{rec.time}T10:00:00+08:00",
                text=rec.source_text or f"(message {rec.source_id})",
                trust_state=rec.trust_state,
            )
        ],
    )


def topic_text(root: Path, rel: str, records: list[Rec], title: str | None = None) -> tuple[str, list[str]]:
    """The topic file text and the block IDs of its records, in order."""
    lines: list[str] = []
    if title:
        lines += [f"# {title}", ""]
    base = 2 if title else 1
    previous: tuple[str, ...] = ()
    taken: set[str] = set()
    ids: list[str] = []
    definitions: dict[str, str] = {}
    for rec in records:
        if rec.headings != previous:
            common = 0
            while common < min(len(previous), len(rec.headings)) and previous[common] == rec.headings[common]:
                common += 1
            for depth in range(common, len(rec.headings)):
                lines += [f"{'#' * (base + depth)} {rec.headings[depth]}", ""]
            previous = rec.headings
        label = evidence_id(rec.time, [rec.source_id])
        block_id = new_block_id(rel, rec.content, taken)
        taken.add(block_id)
        ids.append(block_id)
        lines += [f"{rec.content}[^{label}] ^{block_id}", ""]
        archive = root / archive_relpath_for(rec.source_id)
        link = os.path.relpath(archive, (root / rel).parent).replace(os.sep, "/")
        definitions[label] = (
            f"[^{label}]: Time: `{rec.time}`; Sources: [{rec.label}]({link}#{source_anchor(rec.source_id)})"
        )
    lines += list(definitions.values())
    return "\n".join(lines) + "\n", ids


def write_topic(root: Path, rel: str, records: list[Rec], title: str | None = None) -> list[str]:
    """Archive the sources, write ``<root>/<rel>``; return the block IDs."""
    for rec in records:
        archive_source(root, rec)
    text, ids = topic_text(root, rel, records, title)
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)  # a new inode, as the transaction installs files
    return ids


FILLER = [
    Rec(text, f"openprogram/filler/u{i}", ("Misc",))
    for i, text in enumerate([
        "The weather in March was mostly rainy.",
        "Lunch on Fridays is usually soup.",
        "The printer on the second floor jams often.",
        "Backups run every night at two.",
        "The office plant needs water weekly.",
        "Train tickets are cheaper before nine.",
        "The cafe closes early on Sundays.",
        "Meeting notes go into the shared folder.",
    ])
]


def write_filler(root: Path) -> None:
    """Unrelated records, so BM25 idf behaves as in a real workspace (not N=2)."""
    write_topic(root, "topics/misc.md", FILLER)


def set_trust(root: Path, source_id: str, trust_state: str) -> None:
    """Rewrite one archived frame's trust state (how promotion looks on disk)."""
    path = root / archive_relpath_for(source_id)
    text = path.read_text(encoding="utf-8")
    frames = {frame.source_id: frame for frame in parse_archive(text).frames}
    old = frames[source_id]
    new = dataclasses.replace(old, trust_state=trust_state)
    path.write_text(text.replace(old.frame(), new.frame()), encoding="utf-8")


class HeldWatch:
    """A running file watch whose next report has not come yet: its generation stays put, and its journal
    of paths cannot vouch for a stat pass (a transaction makes a full one)."""

    live = True
    generation = 7

    def vouching(self) -> bool:
        return True

    def position(self) -> int:
        return 0

    def since(self, position: int) -> None:
        return None

    def stop(self, wait: float = 1.0) -> None:
        pass
