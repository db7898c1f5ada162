"""The record rules of one topic file, as pure functions: a document in, violations out.

Every prose paragraph is a record (an ID, citations, text before them and
none after); every evidence definition is defined once, used, dated and
links a frame that is in the archive (architecture §2.1). The tree rules
(IDs across files, links, what an edit may drop) are in
:mod:`openprogram_memory.transaction.validate`, which re-exports these:
that module is the one list of rules (``RULES``). These live on this floor
because the caches of the installed tree apply them too: a topic file
edited by hand into breaking one is served from its last valid version.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping

from ..failures import FailureCode, MemoryFailure
from .model import CITATION_RE, Definition, TopicDoc
from .normalize import valid_time
from .wikilinks import only_wikilinks

AnchorLookup = Callable[[str, str], Any]

RECORD_RULES = (
    "duplicate-definition", "uncited-text", "missing-block-id", "no-text-before-citation", "text-after-citation",
    "undefined-citation", "unused-definition", "malformed-definition", "bad-date", "empty-label",
    "bad-source-target", "symlinked-source", "unknown-source",
)


@dataclass(frozen=True)
class Violation:
    """One broken rule: where, which, and what a person reads."""

    file: str | None
    line: int | None
    rule: str
    message: str
    code: FailureCode = FailureCode.INVALID_TOPIC_FORMAT
    details: Mapping[str, Any] = field(default_factory=dict)

    def failure(self) -> MemoryFailure:
        return MemoryFailure(self.code, self.message, details={"rule": self.rule, **self.details})


def _violation(path: str, line: int, rule: str, message: str,
               code: FailureCode = FailureCode.INVALID_TOPIC_FORMAT, **details: Any) -> Violation:
    """A rule broken at ``path:line`` (the message names the place, as every record rule's does)."""
    return Violation(path, line, rule, f"{path}:{line}: {message}", code, {"file": path, "line": line, **details})


def raise_first(violations: Iterable[Violation]) -> None:
    """Raise the first violation as its failure; return when there is none."""
    for violation in violations:
        raise violation.failure()


# -- one topic file -----------------------------------------------------------------------
def record_violations(doc: TopicDoc, lookup_anchor: AnchorLookup,
                      is_symlink: Callable[[str], bool]) -> Iterator[Violation]:
    """The strict record rules of one normalized (or hand-written) document, in file order per rule group."""
    definitions: dict[str, Definition] = {}
    duplicates = []
    for block in doc.blocks:
        if isinstance(block, Definition):
            if block.label in definitions:
                duplicates.append(block)
            definitions.setdefault(block.label, block)
    for block in duplicates:
        yield _violation(doc.path, block.line, "duplicate-definition", f"evidence [^{block.label}] is defined twice")
    used: set[str] = set()
    yield from _paragraph_violations(doc, definitions, used)
    for label, definition in definitions.items():
        if label not in used:
            yield _violation(doc.path, definition.line, "unused-definition",
                             f"evidence [^{label}] is defined but never cited")
        yield from _definition_violations(doc, label, definition, lookup_anchor, is_symlink)


def ids_unique_in_file(doc: TopicDoc) -> Iterator[Violation]:
    """One block ID twice in one file (or an alias equal to another record's ID) would make ``get`` answer with
    either. A rule of the file alone, so a hand edit that breaks it is served from its last commit like one that
    breaks a record rule; across files it is a tree rule (``transaction.validate.duplicate_id_violations``)."""
    seen: dict[str, int] = {}
    for paragraph in doc.paragraphs():
        for block_id in paragraph.ids:
            if block_id in seen:
                yield Violation(doc.path, paragraph.line, "duplicate-id",
                                f"{doc.path}:{paragraph.line}: block ID ^{block_id} is already used at line "
                                f"{seen[block_id]}; memory IDs are unique",
                                details={"file": doc.path, "line": paragraph.line, "block_id": block_id})
            seen[block_id] = paragraph.line


def check_strict(doc: TopicDoc, lookup_anchor: AnchorLookup, is_symlink: Callable[[str], bool]) -> None:
    """The strict record rules; the first violation raises (``INVALID_TOPIC_FORMAT`` or ``MISSING_SOURCE``)."""
    raise_first(record_violations(doc, lookup_anchor, is_symlink))


def _paragraph_violations(doc: TopicDoc, definitions: Mapping[str, Definition], used: set[str]) -> Iterator[Violation]:
    """Every prose paragraph is a record: an ID, citations, text before them and none after."""
    for paragraph in doc.paragraphs():
        line, citations = paragraph.line, paragraph.citations
        if not paragraph.ids:
            if not citations and only_wikilinks(paragraph):
                continue  # a view of other records (an embed): its links are checked as links
            if not citations:
                yield _violation(doc.path, line, "uncited-text", "text without a citation: every record needs "
                                 "evidence ([^e…] with a source) and a ^block-id")
                continue
            yield _violation(doc.path, line, "missing-block-id", "paragraph does not end in a ^block-id")
            used.update(citations)  # (its evidence is cited still: one edit, one problem named)
            continue
        if not citations:
            yield _violation(doc.path, line, "uncited-text", f"record ^{paragraph.identity} has no citation")
            continue
        first = CITATION_RE.search(paragraph.body)
        if first is not None and not paragraph.body[: first.start()].strip():
            yield _violation(doc.path, line, "no-text-before-citation",
                             f"record ^{paragraph.identity} has no text before its citation")
        last = list(CITATION_RE.finditer(paragraph.body))[-1]
        if paragraph.body[last.end():].strip():
            yield _violation(doc.path, line, "text-after-citation", f"record ^{paragraph.identity} has text after "
                             "its last citation (citations end a record)")
        for label in citations:
            if label not in definitions:
                yield _violation(doc.path, line, "undefined-citation", f"citation [^{label}] is not defined in this file")
            used.add(label)


def _from_here(rel: str, target_path: str, anchor: str) -> str:
    """The link as it reads from ``rel``'s folder when it names an archive relative to another folder (a record
    moved by hand to a deeper or shallower topic file keeps its ``../sources/…``): the fix a person can type."""
    tail = posixpath.normpath(target_path)
    while tail.startswith("../"):
        tail = tail[3:]
    if not tail.startswith("sources/") or not anchor.startswith("source-"):
        return ""
    here = posixpath.relpath(tail, posixpath.dirname(rel) or ".")
    return f" from {rel}, whose folder needs '{here}#{anchor}'" if here != target_path else ""


def _definition_violations(doc: TopicDoc, label: str, definition: Definition, lookup_anchor: AnchorLookup,
                           is_symlink: Callable[[str], bool]) -> Iterator[Violation]:
    """An evidence definition is well formed, dated, and every source link finds its archived frame."""
    line = definition.line
    if not definition.well_formed:
        yield _violation(doc.path, line, "malformed-definition",
                         f"evidence [^{label}] must read: Time: `YYYY[-MM[-DD]]|undated`; Sources: [label](link)")
        return
    if not valid_time(definition.time):
        yield _violation(doc.path, line, "bad-date", f"evidence [^{label}] has an invalid date {definition.time!r}")
    for link in definition.sources:
        if not link.label.strip():
            yield _violation(doc.path, line, "empty-label", f"evidence [^{label}] has a source with an empty label")
        target_path, _, anchor = link.target.partition("#")
        archive_rel = posixpath.normpath(posixpath.join(posixpath.dirname(doc.path), target_path))
        if not archive_rel.startswith("sources/") or not anchor.startswith("source-"):
            yield _violation(doc.path, line, "bad-source-target",
                             f"evidence [^{label}] links {link.target!r}, which is not a source-archive anchor"
                             + _from_here(doc.path, target_path, anchor))
        elif is_symlink(archive_rel):
            yield _violation(doc.path, line, "symlinked-source",
                             f"evidence [^{label}] links through a symlink: {archive_rel}")
        elif lookup_anchor(archive_rel, anchor) is None:
            yield _violation(doc.path, line, "unknown-source", f"evidence [^{label}] links {link.target!r}, which is "
                             "not in the source archive", FailureCode.MISSING_SOURCE, target=f"{archive_rel}#{anchor}")
