"""Three-way merge of topic files by record identity (block IDs), not by line.

Each side (base, local, remote) is read as ``{block id: version}`` where a
version is the paragraph's text and its place (file, heading chain). Per
record: changed on one side → that side; created on either → kept; deleted
on one side and unchanged on the other → deleted; deleted on one side and
changed on the other → the change is kept (and reported); changed
differently on both → a conflict: the winner (later evidence time, then the
lexically greater commit id) keeps the ID, the loser's text is kept as a new
record right after it, with its own ID and a link back. Files are rebuilt
from the side that changed them, so headings and order follow that side.

A topic file one side moved or renamed (gone there, and every record it
still has there in one file neither the base nor the other side has) is
read at its new path on the base and the other side too, so what the other
side did to it under its old name lands in the moved file rather than
making it again.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

from ..topics.ids import new_block_id
from ..topics.model import Blank, Block, Definition, Heading, Paragraph, TopicDoc, parse_topic, strip_trailing_citations
from ..transaction.structured_markdown import (direct_region, ensure_chain, rebase_body, rebase_moved_file,
                                               separate_blocks)


@dataclass(frozen=True)
class Version:
    """One record as one side has it."""

    file: str
    chain: tuple[str, ...]
    text: str  # the paragraph's lines, IDs included
    time: str  # the latest evidence time it cites ("" if none)

    @property
    def place(self) -> tuple[str, tuple[str, ...]]:
        return self.file, self.chain


@dataclass
class Side:
    """Every record of one tree, the parsed files, and record order per file."""

    texts: dict[str, str]
    docs: dict[str, TopicDoc] = field(default_factory=dict)
    records: dict[str, Version] = field(default_factory=dict)
    order: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def read(cls, texts: dict[str, str]) -> "Side":
        side = cls(texts)
        for rel, text in sorted(texts.items()):
            doc = parse_topic(text, rel)
            side.docs[rel] = doc
            defs = doc.definitions()
            ids = []
            for chain, paragraph in doc.records_with_headings():
                if paragraph.identity is None:
                    continue
                times = [defs[c].time or "" for c in paragraph.citations if c in defs]
                side.records[paragraph.identity] = Version(rel, chain, paragraph.text, max(times, default=""))
                ids.append(paragraph.identity)
            side.order[rel] = ids
        return side

    def renamed(self, moves: dict[str, str]) -> "Side":
        """This side with each file ``old`` of ``moves`` at its ``new`` path, its relative links rewritten."""
        if not moves.keys() & self.texts.keys():
            return self
        return Side.read({moves.get(rel, rel): rebase_moved_file(text, rel, moves[rel]) if rel in moves else text
                          for rel, text in self.texts.items()})

    def definition(self, label: str, rel: str) -> tuple[str, Definition] | None:
        doc = self.docs.get(rel)
        if doc is not None and label in doc.definitions():
            return rel, doc.definitions()[label]
        return None


@dataclass
class Outcome:
    """The resolution of every record and what was reported."""

    final: dict[str, Version] = field(default_factory=dict)
    origin: dict[str, str] = field(default_factory=dict)  # id -> "local" | "remote" (whose place it takes)
    after: dict[str, str] = field(default_factory=dict)  # conflict copy id -> the record it follows
    conflicts: list[dict] = field(default_factory=list)


def moved_files(base: Side, side: Side) -> dict[str, str]:
    """``{old: new}`` of the topic files ``side`` moved or renamed: ``old`` is gone from it, and every record of
    ``old`` it still has is in one file ``new`` (:func:`merge` takes it as a move when neither the base nor the
    other side has ``new``: records gathered into a topic that was there are moved records, not a moved file)."""
    out: dict[str, str] = {}
    for old in sorted(base.texts.keys() - side.texts.keys()):
        homes = {side.records[i].file for i in base.order.get(old, []) if i in side.records}
        if len(homes) == 1:
            out[old] = homes.pop()
    return out


def merge(base: Side, local: Side, remote: Side, local_commit: str, remote_commit: str
          ) -> tuple[Outcome, dict[str, str | None]]:
    """Every record's resolution and the merged text of every topic file that differs from the local tree (None:
    delete), a file one side moved taken as moved on all three."""
    moves: dict[str, str | None] = {}
    for mover, other in ((local, remote), (remote, local)):
        for old, new in moved_files(base, mover).items():
            if new not in other.texts and new not in base.texts and moves.setdefault(old, new) != new:
                moves[old] = None  # moved to two places: each record's place is settled as any other's
    moved = {old: new for old, new in moves.items() if new is not None}
    on_disk = local.texts
    base, local, remote = base.renamed(moved), local.renamed(moved), remote.renamed(moved)
    outcome = resolve(base, local, remote, local_commit, remote_commit)
    changes = merge_topics(base, local, remote, outcome)
    if local.texts is not on_disk:  # the local tree was read moved: the changes are against its files as they are
        merged = {rel: text for rel, text in {**local.texts, **changes}.items() if text is not None}
        changes = {rel: merged.get(rel) for rel in sorted(merged.keys() | on_disk.keys())
                   if merged.get(rel) != on_disk.get(rel)}
    return outcome, changes


def _winner(local: Version, remote: Version, local_commit: str, remote_commit: str) -> str:
    if local.time != remote.time:
        return "local" if local.time > remote.time else "remote"
    return "local" if local_commit > remote_commit else "remote"


def _copy_text(loser: Version, winner_id: str, place_file: str, taken: set[str], old_file: str) -> tuple[str, str]:
    """The loser's paragraph as a new record linking back to the winner."""
    paragraph = parse_topic(rebase_body(loser.text, old_file, place_file), place_file).blocks[0]
    assert isinstance(paragraph, Paragraph)
    content = strip_trailing_citations(paragraph.body)
    citations = paragraph.body[len(content):]
    link = f"[{winner_id}]({posixpath.basename(place_file)}#^{winner_id})"
    body = f"{content} (the other side of a sync conflict over {link}){citations}"
    new_id = new_block_id(place_file, body, taken)
    return new_id, f"{body} ^{new_id}"


def resolve(base: Side, local: Side, remote: Side, local_commit: str, remote_commit: str) -> Outcome:
    """Decide the final version and place of every record."""
    out = Outcome()
    taken = set(base.records) | set(local.records) | set(remote.records)
    local_bodies = {_body(v.text) for v in local.records.values()}
    for memory_id in sorted(set(local.records) | set(remote.records)):
        b, l, r = base.records.get(memory_id), local.records.get(memory_id), remote.records.get(memory_id)
        if l is not None and r is not None:
            if l == r:
                out.final[memory_id], out.origin[memory_id] = l, "local"
                continue
            text_changed = (b is None or b.text != l.text, b is None or b.text != r.text)
            place_changed = (b is None or b.place != l.place, b is None or b.place != r.place)
            conflict = l.text != r.text and all(text_changed)
            who = _winner(l, r, local_commit, remote_commit) if conflict else ("remote" if text_changed[1] and l.text != r.text else "local")
            text = (l if who == "local" else r).text if l.text != r.text else l.text
            if l.place == r.place or not place_changed[1]:
                place_side = "local"
            elif not place_changed[0]:
                place_side = "remote"
            else:
                place_side = _winner(l, r, local_commit, remote_commit)
            placed = l if place_side == "local" else r
            text = rebase_body(text, (l if who == "local" else r).file, placed.file)
            out.final[memory_id] = Version(placed.file, placed.chain, text, (l if who == "local" else r).time)
            out.origin[memory_id] = place_side
            if conflict:
                loser = r if who == "local" else l
                copy_id, copy_text = _copy_text(loser, memory_id, placed.file, taken, loser.file)
                if _body(copy_text) in local_bodies:  # this conflict was merged before (a crash before commit)
                    continue
                taken.add(copy_id)
                out.final[copy_id] = Version(placed.file, placed.chain, copy_text, loser.time)
                out.origin[copy_id] = place_side
                out.after[copy_id] = memory_id
                out.conflicts.append({"memory_id": memory_id, "kept": who, "other_memory_id": copy_id,
                                      "reason": "changed on both sides",
                                      "commits": {"local": local_commit, "remote": remote_commit}})
            continue
        present, side = (l, "local") if l is not None else (r, "remote")
        assert present is not None  # the ID was read from one of the two sides
        if b is None:
            out.final[memory_id], out.origin[memory_id] = present, side  # created on one side
        elif b != present:  # deleted on one side, changed on the other: the change is kept
            out.final[memory_id], out.origin[memory_id] = present, side
            out.conflicts.append({"memory_id": memory_id, "kept": side, "other_memory_id": None,
                                  "reason": "deleted on the other side, changed on this one",
                                  "commits": {"local": local_commit, "remote": remote_commit}})
        # else: deleted on the other side and unchanged here → deleted
    return out


def _body(text: str) -> str:
    paragraph = parse_topic(text, "x.md").blocks[0]
    return paragraph.body if isinstance(paragraph, Paragraph) else text


def merge_topics(base: Side, local: Side, remote: Side, outcome: Outcome) -> dict[str, str | None]:
    """The merged text of every topic file that differs from the local tree (None: delete)."""
    sides = {"local": local, "remote": remote}
    by_file: dict[str, list[str]] = {}
    for memory_id, version in outcome.final.items():
        by_file.setdefault(version.file, []).append(memory_id)
    files = set(local.texts) | set(remote.texts)
    changes: dict[str, str | None] = {}
    for rel in sorted(files):
        b, l = base.texts.get(rel), local.texts.get(rel)
        skeleton_side = "remote" if l == b else "local"
        skeleton = sides[skeleton_side].texts.get(rel)
        if skeleton is None and skeleton_side == "local" and l is None:
            skeleton = None
        wanted = {i: outcome.final[i] for i in by_file.get(rel, [])}
        text = _rebuild(rel, skeleton, wanted, outcome, sides, base)
        if text is None:
            if l is not None:
                changes[rel] = None
        elif text != l:
            changes[rel] = text
    return changes


def _rebuild(rel: str, skeleton: str | None, wanted: dict[str, Version], outcome: Outcome,
             sides: dict[str, Side], base: Side) -> str | None:
    if not wanted:
        return None
    doc = parse_topic(skeleton or "", rel)
    dirty = False
    kept: list = []
    present: set[str] = set()
    chains = _chain_list(doc)
    for index, block in enumerate(doc.blocks):
        if isinstance(block, Paragraph) and block.identity is not None:
            memory_id = block.identity
            version = wanted.get(memory_id)
            if version is None or version.chain != chains[index]:
                dirty = True
                continue
            if block.text != version.text:
                block = parse_topic(version.text, rel).blocks[0]
                dirty = True
            present.add(memory_id)
        kept.append(block)
    doc.blocks = kept
    missing = [i for i in wanted if i not in present]
    if missing:
        dirty = True
        for memory_id in _insertion_order(missing, outcome, sides):
            _insert(doc, memory_id, wanted[memory_id], outcome, sides)
    if not dirty:
        return skeleton
    _fix_definitions(doc, rel, sides, base)
    _tidy(doc)
    return doc.render()


def _chain_list(doc: TopicDoc) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    stack: list[tuple[int, str]] = []  # (level, title)
    for block in doc.blocks:
        if isinstance(block, Heading):
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            stack.append((block.level, block.title))
        out.append(tuple(t for _, t in stack))
    return out


def _insertion_order(missing: list[str], outcome: Outcome, sides: dict[str, Side]) -> list[str]:
    def key(memory_id: str) -> tuple:
        anchor = outcome.after.get(memory_id, memory_id)
        side = sides[outcome.origin[memory_id]]
        version = outcome.final[memory_id]
        order = side.order.get(version.file, [])
        return (order.index(anchor) if anchor in order else len(order), memory_id in outcome.after, memory_id)
    return sorted(missing, key=key)


def _insert(doc: TopicDoc, memory_id: str, version: Version, outcome: Outcome, sides: dict[str, Side]) -> None:
    paragraph = parse_topic(version.text, doc.path).blocks[0]
    positions = {b.identity: i for i, b in enumerate(doc.blocks) if isinstance(b, Paragraph) and b.identity}
    chains = _chain_list(doc)
    anchor = outcome.after.get(memory_id)
    if anchor is None:
        order = sides[outcome.origin[memory_id]].order.get(version.file, [])
        earlier = order[: order.index(memory_id)] if memory_id in order else []
        anchor = next((i for i in reversed(earlier) if i in positions and chains[positions[i]] == version.chain), None)
    if anchor is not None and anchor in positions:
        doc.blocks.insert(positions[anchor] + 1, paragraph)
        return
    heading = ensure_chain(doc, version.chain)
    if heading < 0:
        end = next((i for i, b in enumerate(doc.blocks) if isinstance(b, Heading)), len(doc.blocks))
    else:
        _start, end = direct_region(doc, heading)
    while end > 0 and isinstance(doc.blocks[end - 1], (Definition, Blank)) and end - 1 > heading:
        end -= 1
    doc.blocks.insert(end, paragraph)


def _fix_definitions(doc: TopicDoc, rel: str, sides: dict[str, Side], base: Side) -> None:
    """Every cited label defined once here (carried from wherever it was defined), none unused."""
    cited = [c for p in doc.paragraphs() for c in p.citations]
    have = doc.definitions()
    doc.blocks = [b for b in doc.blocks if not (isinstance(b, Definition) and b.label not in cited)]
    for label in dict.fromkeys(cited):
        if label in have:
            continue
        found = None
        for side in (sides["local"], sides["remote"], base):
            found = side.definition(label, rel) or next(
                (side.definition(label, other) for other in side.docs if side.definition(label, other)), None)
            if found:
                break
        if found is None:
            continue  # the transaction's validation names the undefined citation
        source_file, definition = found
        text = rebase_body(definition.text, source_file, rel)
        doc.blocks.append(parse_topic(text, rel).blocks[0])
        have = doc.definitions()


def _tidy(doc: TopicDoc) -> None:
    blocks: list[Block] = []
    for block in doc.blocks:
        if isinstance(block, Blank) and (not blocks or isinstance(blocks[-1], Blank)):
            continue
        blocks.append(block)
    while blocks and isinstance(blocks[-1], Blank):
        blocks.pop()
    doc.blocks = blocks
    separate_blocks(doc)
    doc.trailing_newline = True
