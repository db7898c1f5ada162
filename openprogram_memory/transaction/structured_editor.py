"""Rendering validated structured operations into topic Markdown.

:class:`TopicEditor` applies a :class:`~.structured_request.Request`'s
operations, in order, to the parsed topic documents of one staging copy.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Mapping

from ..failures import FailureCode
from ..sources.archive import SourceMessage, archive_relpath_for, make_source_id, split_source_id
from ..topics.ids import evidence_id, keyword_evidence_id, source_anchor
from ..topics.model import CITATION_RE, RECORD_LINK_RE, Definition, Paragraph, TopicDoc, parse_topic
from ..topics.normalize import has_records
from ..topics.wikilinks import WikilinkIndex, rewrite_wikilinks
from ..workspace.caches import TreeState
from .staging import Staging
from .structured_markdown import (
    Evidence,
    chain_of,
    detach_definition,
    direct_region,
    drop_unused_definitions,
    ensure_chain,
    link_path,
    rebase_body,
    separate_blocks,
)
from .structured_request import NEW_SOURCE_PREFIX, Destination, Op, Request, SourceRef, invalid_request

if TYPE_CHECKING:
    from .host import Workspace

# An archive file of API sources (``api-<day>-<shard>``) takes new sources until it holds this many bytes, then
# the thread goes on in ``…-p2``, ``…-p3``: an append rewrites, hashes and commits at most this much.
ARCHIVE_PART_BYTES = 64 * 1024


class _Locations:
    """Where each block ID is as an edit goes: the tree's ID index, overlaid with this edit's moves and
    deletes (a one-record change costs that record, not a copy of every ID of the workspace)."""

    def __init__(self, index: Mapping[str, list[str]]) -> None:
        self.index = index
        self.moved: dict[str, str] = {}
        self.gone: set[str] = set()

    def origin(self, memory_id: str) -> str | None:
        files = self.index.get(memory_id)
        return files[0] if files else None

    def get(self, memory_id: str) -> str | None:
        if memory_id in self.moved:
            return self.moved[memory_id]
        return None if memory_id in self.gone else self.origin(memory_id)

    def __setitem__(self, memory_id: str, rel: str) -> None:
        self.moved[memory_id] = rel
        self.gone.discard(memory_id)

    def pop(self, memory_id: str, default: str | None = None) -> str | None:
        found = self.get(memory_id)
        self.moved.pop(memory_id, None)
        self.gone.add(memory_id)
        return found if found is not None else default

    def relocated(self) -> dict[str, str]:
        """IDs now in another file than the one they started in."""
        return {i: rel for i, rel in self.moved.items() if self.origin(i) != rel}


@dataclass
class _Leaving:
    """Paragraphs moved out of one file and not taken out yet: the file is filtered once, when it is next read
    (a split of a big topic into many parts costs one pass over it, not one per part), and the definitions only
    they cited are dropped then (``labels``). ``definitions``: the file's, read once for all those moves."""

    paragraphs: list[Paragraph] = field(default_factory=list)
    labels: set[str] = field(default_factory=set)
    definitions: dict[str, Definition] | None = None


class TopicEditor:
    """Applies validated operations to parsed topic documents of one staging copy."""

    def __init__(self, staging: Staging, tree: TreeState, ws: "Workspace") -> None:
        self.staging = staging
        self.tree = tree
        self.ws = ws
        self.docs: dict[str, TopicDoc] = {}
        self.touched: set[str] = set()
        self.where = _Locations(tree.id_files())
        self.deleted: set[str] = set()
        self.deleted_by: dict[str, int] = {}
        self.new_source_ids: dict[str, str] = {}
        self.new_sources: dict[str, SourceMessage] = {}
        self.merged: dict[str, str] = {}  # an ID a merge made an alias → the identity of the record that kept it
        self._paragraph_of: dict[str, dict[str, Paragraph]] = {}  # per file read: block ID → its paragraph
        self._leaving: dict[str, _Leaving] = {}

    # -- documents ------------------------------------------------------
    def doc(self, rel: str) -> TopicDoc:
        """The parsed document of ``rel`` as edited so far (empty if it does not exist yet)."""
        leaving = self._leaving.pop(rel, None)
        if leaving is not None:  # the moves out of it, taken out in one pass
            doc = self.docs[rel]
            gone = {id(paragraph) for paragraph in leaving.paragraphs}
            doc.blocks = [block for block in doc.blocks if id(block) not in gone]
            drop_unused_definitions(doc, leaving.labels)
        return self._parsed(rel)

    def _parsed(self, rel: str) -> TopicDoc:
        """``rel``'s document, still holding the paragraphs moved out of it (:class:`_Leaving`)."""
        if rel not in self.docs:
            text = self.staging.read(rel) if self.staging.exists(rel) else ""
            self.docs[rel] = parse_topic(text, rel)
        return self.docs[rel]

    def _paragraphs(self, rel: str) -> dict[str, Paragraph]:
        """``rel``'s block IDs → their paragraphs, built on the first look-up in ``rel`` (before anything moves out
        of it). An ID that leaves ``rel`` may stay in it: :attr:`where` no longer sends a look-up there, and what
        comes into ``rel`` is indexed on arrival (:meth:`_index`)."""
        if rel not in self._paragraph_of:
            index: dict[str, Paragraph] = {}
            for paragraph in self._parsed(rel).paragraphs():
                for memory_id in paragraph.ids:
                    index.setdefault(memory_id, paragraph)
            self._paragraph_of[rel] = index
        return self._paragraph_of[rel]

    def _index(self, rel: str, paragraph: Paragraph) -> None:
        """``paragraph`` (with its IDs as they are now) is in ``rel``."""
        index = self._paragraph_of.get(rel)
        if index is not None:  # else built from the file when first looked up in
            index.update(dict.fromkeys(paragraph.ids, paragraph))

    def locate(self, memory_id: str, index: int, *, leaving: bool = False) -> tuple[str, TopicDoc, Paragraph]:
        """Where ``memory_id`` is now: ``(topic, document, paragraph)``; MEMORY_NOT_FOUND if nowhere.

        ``leaving``: the document may still hold paragraphs moved out of it (a move reads it so).
        """
        rel = self.where.get(memory_id)
        if rel is None:
            if memory_id in self.deleted_by:
                raise invalid_request(f"^{memory_id} was deleted by changes[{self.deleted_by[memory_id]}]", index,
                                      FailureCode.MEMORY_NOT_FOUND, memory_id=memory_id)
            raise invalid_request(f"no record with block ID ^{memory_id}", index, FailureCode.MEMORY_NOT_FOUND,
                                  memory_id=memory_id)
        doc = self._parsed(rel) if leaving else self.doc(rel)
        paragraph = self._paragraphs(rel).get(memory_id)
        if paragraph is None:
            raise invalid_request(f"no record with block ID ^{memory_id}", index, FailureCode.MEMORY_NOT_FOUND,
                                  memory_id=memory_id)
        return rel, doc, paragraph

    # -- the operations ------------------------------------------------
    def apply(self, request: Request) -> None:
        """Apply every operation in order, fix links to moved records, write touched topics."""
        self.new_sources = request.new_sources
        for op in request.ops:
            getattr(self, "_" + op.kind)(op)
        for rel in list(self._leaving):
            self.doc(rel)
        self._rewrite_links()
        for rel in sorted(self.touched):
            doc = self.docs[rel]
            separate_blocks(doc)
            self.staging.write(rel, doc.render())

    def _create_record(self, op: Op) -> None:
        dest = _destination(op)
        doc = self.doc(dest.topic)
        label = self._write_evidence(doc, op)
        paragraph = Paragraph(lines=[], body="", ids=[])
        paragraph.set(f"{op.content}[^{label}]", [])
        at = self._insertion_index(doc, dest, op.index, frozenset())
        doc.blocks[at:at] = [paragraph]
        self.touched.add(dest.topic)

    def _update_record(self, op: Op) -> None:
        rel, doc, paragraph = self.locate(_named_id(op), op.index)
        old = set(paragraph.citations)
        label = self._write_evidence(doc, op, own=paragraph)
        paragraph.set(f"{op.content}[^{label}]", paragraph.ids)
        drop_unused_definitions(doc, old - {label})
        self.touched.add(rel)

    def _delete_record(self, op: Op) -> None:
        named = _named_id(op)
        rel, doc, paragraph = self.locate(named, op.index)
        if len(paragraph.ids) > 1 and named != paragraph.identity:
            gone = [named]  # an alias: the merged record stays
            paragraph.set(paragraph.body, [i for i in paragraph.ids if i != named])
        else:
            gone = list(paragraph.ids)
            doc.blocks.remove(paragraph)
            drop_unused_definitions(doc, set(paragraph.citations))
        for memory_id in gone:
            self.where.pop(memory_id, None)
            self.deleted.add(memory_id)
            self.deleted_by[memory_id] = op.index
        self.touched.add(rel)

    def _move_records(self, op: Op) -> None:
        dest = _destination(op)
        moving = self._whole_paragraphs(op)
        if dest.anchor is not None and dest.anchor in op.memory_ids:
            raise invalid_request(f"anchor ^{dest.anchor} is itself being moved", op.index)
        detached = []
        for rel, doc, paragraph in moving:
            pending = self._leaving.setdefault(rel, _Leaving())
            if pending.definitions is None:
                pending.definitions = doc.definitions()
            held = pending.definitions
            evidence = [detach_definition(held[label], rel) for label in dict.fromkeys(paragraph.citations)
                        if label in held]
            detached.append((rel, paragraph, evidence))
            pending.paragraphs.append(paragraph)
            self.touched.add(rel)
        target = self.doc(dest.topic)  # a move within one file: out of it first
        for rel, paragraph, evidence in detached:
            renames = {item.label: self._adopt_evidence(target, item, op.index) for item in evidence}
            body = rebase_body(rename_citations(paragraph.body, renames), rel, dest.topic)
            if body != paragraph.body:
                paragraph.set(body, paragraph.ids)
            for memory_id in paragraph.ids:
                self.where[memory_id] = dest.topic
        at = self._insertion_index(target, dest, op.index, frozenset(op.memory_ids))
        target.blocks[at:at] = [paragraph for _, paragraph, _ in detached]
        for rel, paragraph, evidence in detached:  # by the labels they had in their old file, when it is next read
            self._index(dest.topic, paragraph)
            self._leaving.setdefault(rel, _Leaving()).labels.update(item.label for item in evidence)
        self.touched.add(dest.topic)

    def _merge_records(self, op: Op) -> None:
        """Organizer only: the first ID's paragraph absorbs the others as aliases."""
        keep_rel, keep_doc, keep = self.locate(op.memory_ids[0], op.index)
        ids = list(keep.ids[:-1])
        citations = list(keep.citations)
        for memory_id in op.memory_ids[1:]:
            rel, doc, paragraph = self.locate(memory_id, op.index)
            if paragraph is keep:
                raise invalid_request(f"^{memory_id} is already part of the kept record", op.index)
            definitions = doc.definitions()
            for label in dict.fromkeys(paragraph.citations):
                cited = label
                if label in definitions:
                    cited = self._adopt_evidence(keep_doc, detach_definition(definitions[label], rel), op.index)
                if cited not in citations:
                    citations.append(cited)
            doc.blocks.remove(paragraph)
            drop_unused_definitions(doc, set(paragraph.citations) - (set(citations) if doc is keep_doc else set()))
            ids.extend(paragraph.ids)
            for alias in paragraph.ids:
                self.where[alias] = keep_rel
                self.merged[alias] = keep.ids[-1]
            self.touched.add(rel)
        ids.append(keep.ids[-1])
        extra = "".join(f"[^{label}]" for label in citations if label not in keep.citations)
        keep.set(keep.body + extra, ids)
        self._index(keep_rel, keep)
        self.touched.add(keep_rel)

    def _whole_paragraphs(self, op: Op) -> list[tuple[str, TopicDoc, Paragraph]]:
        """The paragraphs a move names; a merged paragraph must be named whole, in order."""
        out: list[tuple[str, TopicDoc, Paragraph]] = []
        i = 0
        ids = op.memory_ids
        while i < len(ids):
            rel, doc, paragraph = self.locate(ids[i], op.index, leaving=True)
            run = list(ids[i:i + len(paragraph.ids)])
            if run != paragraph.ids:
                raise invalid_request(
                    f"^{ids[i]} shares a paragraph with other IDs; move all of them together, consecutively, "
                    f"in paragraph order: {' '.join('^' + x for x in paragraph.ids)}", op.index)
            out.append((rel, doc, paragraph))
            i += len(paragraph.ids)
        return out

    # -- evidence ------------------------------------------------------
    def _write_evidence(self, doc: TopicDoc, op: Op, *, own: Paragraph | None = None) -> str:
        """Define the evidence of ``op`` (time, sources, keywords) in ``doc``; return its label.

        ``own`` is the record being updated: a definition only it cites takes
        the new keywords in place (its id stays). A definition other records
        cite keeps its keywords, and ``op`` gets a footnote of its own.
        """
        source_ids = []
        links = []
        for ref in op.sources:
            source_id = self._resolve_source(ref, op.index)
            source_ids.append(source_id)
            links.append((ref.label, archive_relpath_for(source_id) + "#" + source_anchor(source_id)))
        evidence = Evidence(evidence_id(op.time, source_ids), op.time, tuple(links))
        existing = doc.definitions().get(evidence.label)
        if (own is not None and existing is not None and not _cited_by_others(doc, evidence.label, own)
                and detach_definition(existing, doc.path).meaning == evidence.meaning):
            if [s.label for s in existing.sources] != [text for text, _ in evidence.links]:
                existing.set(existing.label, existing.time or "undated", evidence.links_for(doc.path))
            return evidence.label
        return self._adopt_evidence(doc, evidence, op.index)

    def _resolve_source(self, ref: SourceRef, index: int) -> str:
        if ref.source.startswith(NEW_SOURCE_PREFIX):
            message = self.new_sources[ref.source] = self._placed(self.new_sources[ref.source])
            self.staging.add_source(message)
            self.new_source_ids[ref.source] = message.source_id
            return message.source_id
        if self.ws.cache.sources.lookup(archive_relpath_for(ref.source), source_anchor(ref.source)) is None:
            raise invalid_request(f"source {ref.source!r} is not in the source archive", index,
                                  FailureCode.MISSING_SOURCE, source=ref.source)
        return ref.source

    def _placed(self, message: SourceMessage) -> SourceMessage:
        """``message`` in the first part of its thread that already holds it or still has room
        (:data:`ARCHIVE_PART_BYTES`): however many sources a day brings, no archive file grows without bound,
        so appending costs the appended frames. The same words said the same day keep their source."""
        provider, thread, name = split_source_id(message.source_id)
        part, placed = 1, message
        while True:
            rel = archive_relpath_for(placed.source_id)
            if self.ws.cache.sources.lookup(rel, source_anchor(placed.source_id)) is not None:
                return placed  # archived before: the same source
            try:
                size = os.stat(self.ws.root / rel).st_size
            except OSError:
                size = 0
            if size < ARCHIVE_PART_BYTES:
                return placed
            part += 1
            placed = replace(message, source_id=make_source_id(provider, f"{thread}-p{part}", name))

    def _adopt_evidence(self, doc: TopicDoc, evidence: Evidence, index: int) -> str:
        """Make ``evidence`` defined in ``doc``; return the label to cite it by.

        The same label with another time or sources is refused. The same
        label with the same meaning but other keywords is not reused (that
        would silently change another record's keywords): the evidence gets
        a keyword-qualified id instead.
        """
        existing = doc.definitions().get(evidence.label)
        if existing is not None:
            current = detach_definition(existing, doc.path)
            if current.meaning == evidence.meaning and sorted(current.links) != sorted(evidence.links):
                evidence = Evidence(keyword_evidence_id(evidence.time, evidence.links), evidence.time, evidence.links)
                existing = doc.definitions().get(evidence.label)
                if existing is not None:
                    current = detach_definition(existing, doc.path)
        if existing is not None:
            if current.meaning != evidence.meaning or sorted(current.links) != sorted(evidence.links):
                raise invalid_request(
                    f"evidence [^{evidence.label}] already exists in {doc.path} with a different time or sources",
                    index, evidence=evidence.label, file=doc.path)
            return evidence.label
        definition = Definition(lines=[], label=evidence.label)
        definition.set(evidence.label, evidence.time or "undated", evidence.links_for(doc.path))
        doc.blocks.append(definition)
        self.touched.add(doc.path)
        return evidence.label

    # -- places --------------------------------------------------------
    def _insertion_index(self, doc: TopicDoc, dest: Destination, index: int, moving: frozenset[str]) -> int:
        if dest.position in ("before", "after"):
            assert dest.anchor is not None  # the request parser requires one for before/after
            rel, anchor_doc, anchor = self.locate(dest.anchor, index)
            if anchor.ids and set(anchor.ids) & moving:
                raise invalid_request(f"anchor ^{dest.anchor} is itself being moved", index)
            if rel != dest.topic or chain_of(doc, anchor) != dest.headings:
                raise invalid_request(
                    f"anchor ^{dest.anchor} is not under {' > '.join(dest.headings) or '(no heading)'} in {dest.topic}",
                    index, anchor=dest.anchor)
            at = doc.blocks.index(anchor)
            return at if dest.position == "before" else at + 1
        start, end = direct_region(doc, ensure_chain(doc, dest.headings))
        if dest.position == "start":
            return start
        last = start
        for i in range(start, end):
            if isinstance(doc.blocks[i], Paragraph) or doc.blocks[i].kind == "code":
                last = i + 1
        return last

    # -- links ---------------------------------------------------------
    def _rewrite_links(self) -> None:
        """Point every link at a moved record to its new file (a wikilink at a merged one to the record kept)."""
        relocated = self.where.relocated()
        if relocated or self.merged:
            self._rewrite_wikilinks(relocated)
        if not relocated:
            return
        files = set(self.touched)
        files.update(r.topic for r in self.tree.records() if any(block_id in relocated for _, block_id in r.links))
        for rel in sorted(files):
            if rel not in self.touched and not self.staging.exists(rel):
                continue
            doc = self.doc(rel)
            for paragraph in doc.paragraphs():
                def fix(match: re.Match[str], rel: str = rel) -> str:
                    block_id = match.group(3)
                    if block_id not in relocated:
                        return match.group(0)
                    return f"[{match.group(1)}]({link_path(relocated[block_id], rel)}#^{block_id})"

                body = RECORD_LINK_RE.sub(fix, paragraph.body)
                if body != paragraph.body:
                    paragraph.set(body, paragraph.ids)
                    self.touched.add(rel)

    def _rewrite_wikilinks(self, relocated: dict[str, str]) -> None:
        """Point every Obsidian wikilink at a moved or merged record to where it is now, in the link's own form (at
        a note all of whose records moved to one file, to that file), and keep a moved record's own wikilinks on
        their targets: a move the product makes must not leave one dangling (the edit would be refused), and
        Obsidian rewrites them alike when it renames a note."""
        moves = {}
        for memory_id in relocated.keys() | self.merged.keys():
            kept = memory_id
            while kept in self.merged:  # merged into a record that a later change merged again
                kept = self.merged[kept]
            origin, now = self.where.origin(memory_id), self.where.get(memory_id)
            if origin is not None and now is not None:
                moves[memory_id] = (origin, now, kept)
        gone = {rel for rel in self.touched if not has_records(self.docs[rel])}
        renamed: dict[str, str] = {}  # a file emptied into one other file was renamed: links to the note follow it
        for rel in gone & self.tree.files.keys():
            homes = {self.where.get(memory_id) for memory_id in self.tree.files[rel].ids}
            home = homes.pop() if len(homes) == 1 else None
            if home is not None:
                renamed[rel] = home
        before = WikilinkIndex(self.tree.files)
        after = WikilinkIndex((self.tree.files.keys() | self.touched) - gone)
        files = self.touched | {rel for rel, summary in self.tree.files.items() if any(
            block_id in moves or (renamed and before.resolve(note, rel) in renamed)
            for note, block_id, _line in summary.wikilink_targets)}
        for rel in sorted(files):
            if rel not in self.touched and not self.staging.exists(rel):
                continue
            for paragraph in self.doc(rel).paragraphs():
                written_in = (self.where.origin(paragraph.identity) if paragraph.identity else None) or rel
                body = rewrite_wikilinks(paragraph.body, before, after, written_in, rel, moves, renamed)
                if body != paragraph.body:
                    paragraph.set(body, paragraph.ids)
                    self.touched.add(rel)


def _cited_by_others(doc: TopicDoc, label: str, own: Paragraph) -> bool:
    return any(label in paragraph.citations for paragraph in doc.paragraphs() if paragraph is not own)


def rename_citations(body: str, renames: dict[str, str]) -> str:
    """``body`` with ``[^old]`` citations renamed per ``renames``."""
    if all(old == new for old, new in renames.items()):
        return body
    return CITATION_RE.sub(lambda m: f"[^{renames.get(m.group(1), m.group(1))}]", body)


def _named_id(op: Op) -> str:
    """The ID an update or delete names (the request parser guarantees one)."""
    assert op.memory_id is not None
    return op.memory_id


def _destination(op: Op) -> Destination:
    """Where a create or move goes (the request parser guarantees one)."""
    assert op.destination is not None
    return op.destination
