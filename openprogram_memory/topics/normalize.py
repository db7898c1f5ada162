"""Normalization and the strict topic rules (architecture §2.1).

Normalization runs on every changed topic file before validation, the same
way for every write path:

1. source handles (``provider/thread/message`` or ``source:…``) in evidence
   definitions become relative links into the archive; a missing
   ``Time:`` is taken from the cited message's date;
2. local footnote labels (``[^e1]``, ``[^note]``) become ``e-<10 hex>``
   derived from time + sources (+ keywords, when the file already uses that
   id with other keywords: each record keeps its own label);
3. block IDs the writer invented (not in the baseline) are stripped;
4. evidence-bearing paragraphs without an ID get one;
5. then the strict rules are checked (uncited substantive text is rejected
   here, before any pruning), and only then are empty headings and topics
   pruned.
"""

from __future__ import annotations

import calendar
import posixpath
import re
from dataclasses import dataclass
from typing import Callable, Container

from ..failures import FailureCode, MemoryFailure
from ..sources.archive import SourceMessage, archive_relpath_for
from .ids import EVIDENCE_ID_RE, evidence_id, keyword_evidence_id, new_block_id
from .model import (
    CITATION_RE,
    Blank,
    Code,
    Definition,
    Heading,
    Paragraph,
    SourceLink,
    TopicDoc,
    follows_frontmatter,
)

# Looks up a source id in the archive (None if it is not archived).
SourceLookup = Callable[[str], SourceMessage | None]
# Resolves (archive relpath, anchor) to a message (None if absent).
AnchorLookup = Callable[[str, str], SourceMessage | None]

_TIME_RE = re.compile(r"^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?$")
_HANDLE_RE = re.compile(r"^(?:source:)?([^/#\s()]+/[^/#\s()]+/[^/#\s()]+)$")


# The one qualifier a footnote time may carry: the record was kept from a branch the person
# abandoned by rewinding (architecture §15); the date before it is what every reader of times uses.
ABANDONED_QUALIFIER = " (abandoned branch)"


def time_date(value: str | None) -> str | None:
    """The date part of a footnote time (the time without its qualifier)."""
    if value is not None and value.endswith(ABANDONED_QUALIFIER):
        return value[: -len(ABANDONED_QUALIFIER)]
    return value


def valid_time(value: str | None) -> bool:
    """``YYYY``, ``YYYY-MM``, a real ``YYYY-MM-DD`` calendar date, or ``undated``; optionally qualified
    as from an abandoned branch (``2026-08-09 (abandoned branch)``)."""
    value = time_date(value)
    if value == "undated":
        return True
    if not value:
        return False
    match = _TIME_RE.match(value)
    if not match:
        return False
    year, month, day = match.group(1), match.group(2), match.group(3)
    if month is not None and not 1 <= int(month) <= 12:
        return False
    if day is not None:
        last = calendar.monthrange(int(year), int(month))[1]
        if not 1 <= int(day) <= last:
            return False
    return True


def _fail(path: str, line: int, rule: str, message: str, code: FailureCode = FailureCode.INVALID_TOPIC_FORMAT) -> MemoryFailure:
    return MemoryFailure(code, f"{path}:{line}: {message}", details={"file": path, "line": line, "rule": rule})


def relative_link(from_file: str, archive_rel: str, anchor: str) -> str:
    return posixpath.relpath(archive_rel, posixpath.dirname(from_file)) + "#" + anchor


@dataclass
class NormalizeContext:
    """What normalization needs to know about the rest of the workspace."""

    baseline_ids: Container[str]  # every ID before the edit
    taken_ids: set[str]  # IDs handed out by this edit (grows); baseline IDs are taken too
    lookup_source: SourceLookup
    lookup_anchor: AnchorLookup


def _resolve_definition_sources(doc: TopicDoc, definition: Definition, ctx: NormalizeContext) -> list[str]:
    """Turn handles into links; return the resolved source ids (in order)."""
    resolved: list[str] = []
    links: list[SourceLink] = []
    for link in definition.sources:
        handle = _HANDLE_RE.match(link.target)
        if handle and "#" not in link.target and not link.target.endswith(".md"):
            source_id = handle.group(1)
            message = ctx.lookup_source(source_id)
            if message is None:
                raise _fail(doc.path, definition.line, "missing-source",
                            f"evidence [^{definition.label}] cites {source_id!r}, which is not in the source archive",
                            FailureCode.MISSING_SOURCE)
            links.append(SourceLink(link.label, relative_link(doc.path, archive_relpath_for(source_id), message.anchor)))
            resolved.append(source_id)
            continue
        links.append(link)
        target_path, _, anchor = link.target.partition("#")
        archive_rel = posixpath.normpath(posixpath.join(posixpath.dirname(doc.path), target_path))
        message = ctx.lookup_anchor(archive_rel, anchor) if anchor else None
        if message is not None:
            resolved.append(message.source_id)
    if links != definition.sources:
        definition.sources = links
        definition.lines = []  # re-rendered below
    if definition.time is None and resolved:
        messages = [ctx.lookup_source(s) for s in resolved]
        dates = sorted(m.date for m in messages if m is not None and m.date != "undated")
        definition.time = dates[-1] if dates else "undated"
        definition.lines = []
    return resolved


class _Taken:
    """Membership in the baseline IDs or the IDs this edit handed out."""

    def __init__(self, ctx: "NormalizeContext") -> None:
        self.ctx = ctx

    def __contains__(self, block_id: object) -> bool:
        return block_id in self.ctx.taken_ids or block_id in self.ctx.baseline_ids


def _is_local(label: str) -> bool:
    """A label the writer chose (``e1``, ``note``), as opposed to a derived or legacy id."""
    return not (EVIDENCE_ID_RE.match(label) or label.startswith("mem_"))


def _keywords(definition: Definition) -> tuple[str, ...]:
    return tuple(link.label for link in definition.sources)


def normalize_doc(doc: TopicDoc, ctx: NormalizeContext) -> None:
    """Normalize ``doc`` in place (steps 1–4). Raises only for missing sources."""
    renames = _rename_definitions(doc, ctx)
    # merge definitions that now share a label (same time + sources)
    seen: set[str] = set()
    kept_blocks = []
    for block in doc.blocks:
        if isinstance(block, Definition) and block.label in seen and block.label in renames.values():
            continue
        if isinstance(block, Definition):
            seen.add(block.label)
        kept_blocks.append(block)
    doc.blocks = kept_blocks

    for paragraph in doc.paragraphs():
        body = paragraph.body
        if renames:
            body = CITATION_RE.sub(lambda m: f"[^{renames.get(m.group(1), m.group(1))}]", body)
        kept = [i for i in paragraph.ids if i in ctx.baseline_ids]
        if not kept and CITATION_RE.search(body):
            new_id = new_block_id(doc.path, body.strip(), _Taken(ctx))
            ctx.taken_ids.add(new_id)
            kept = [new_id]
        if body != paragraph.body or kept != paragraph.ids:
            paragraph.set(body.rstrip() if kept else body, kept)


def _rename_definitions(doc: TopicDoc, ctx: NormalizeContext) -> dict[str, str]:
    """Resolve every definition's sources and give local labels their ``e-…`` id; ``{old label: new}``."""
    definitions = [b for b in doc.blocks if isinstance(b, Definition)]
    renames: dict[str, str] = {}
    # label → its keywords, for every definition that keeps its label: a local
    # definition whose derived id is taken by other keywords gets a qualified id
    keywords: dict[str, tuple[str, ...]] = {d.label: _keywords(d) for d in definitions if not _is_local(d.label)}
    for definition in definitions:
        if not definition.sources:
            continue
        source_ids = _resolve_definition_sources(doc, definition, ctx)
        label = definition.label
        if _is_local(label) and source_ids and definition.time and valid_time(definition.time):
            new_label = evidence_id(definition.time, source_ids)
            own = _keywords(definition)
            if keywords.setdefault(new_label, own) != own:
                new_label = keyword_evidence_id(definition.time, [
                    (link.label, posixpath.normpath(posixpath.join(posixpath.dirname(doc.path), link.target)))
                    for link in definition.sources])
                keywords.setdefault(new_label, own)
            renames[label] = new_label
            definition.label = new_label
            definition.lines = []
        if not definition.lines:
            definition.set(definition.label, definition.time or "undated", definition.sources)
    return renames


def prune_empty(doc: TopicDoc) -> None:
    """Remove headings whose section holds no record, and collapse blank runs."""
    blocks = doc.blocks
    keep = [True] * len(blocks)
    for index, block in enumerate(blocks):
        if not isinstance(block, Heading):
            continue
        has_content = False
        for later in blocks[index + 1:]:
            if isinstance(later, Heading) and later.level <= block.level:
                break
            if isinstance(later, (Paragraph, Code)):
                has_content = True
                break
        keep[index] = has_content
    pruned = [b for b, k in zip(blocks, keep) if k]
    # collapse blank runs, and drop leading/trailing blanks
    out: list = []
    for block in pruned:
        if isinstance(block, Blank) and not (out and follows_frontmatter(out[-1], block)):
            if not out or isinstance(out[-1], Blank):
                continue
            block = Blank(lines=[""], line=block.line)
        out.append(block)
    while out and isinstance(out[-1], Blank):
        out.pop()
    doc.blocks = out


def has_records(doc: TopicDoc) -> bool:
    return any(isinstance(b, (Paragraph, Code)) for b in doc.blocks)
