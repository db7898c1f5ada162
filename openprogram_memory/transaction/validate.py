"""Every record and tree rule in one place, as pure functions: a document or a tree in, violations out.

The transaction (:mod:`.engine`) raises the first violation of what it is
about to install; ``memory check`` (:mod:`.check`) lists every violation of
the installed tree. A rule's name (:data:`RULES`) is the ``rule`` field of
the failure a person or a program sees (``INVALID_TOPIC_FORMAT``, or
``MISSING_SOURCE`` / ``INVALID_ARGUMENT`` where said). To change a record
rule, change it here (architecture §2.1, §3 step 5).
"""

from __future__ import annotations

import difflib
import posixpath
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping

from ..failures import FailureCode, MemoryFailure
from ..topics.model import CITATION_RE, Definition, TopicDoc
from ..topics.normalize import valid_time
from .result import Policy

if TYPE_CHECKING:
    from ..workspace.caches import FileSummary, RecordInfo, TreeState

AnchorLookup = Callable[[str, str], Any]

RULES = (
    # one topic file (architecture §2.1)
    "duplicate-definition", "uncited-text", "missing-block-id", "no-text-before-citation", "text-after-citation",
    "undefined-citation", "unused-definition", "malformed-definition", "bad-date", "empty-label",
    "bad-source-target", "symlinked-source", "unknown-source",
    # the tree, against what was installed before (architecture §3 step 5)
    "symlink", "duplicate-id", "lost-block-id", "delete-needs-base-revision", "dangling-link", "append-only",
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
               code: FailureCode = FailureCode.INVALID_TOPIC_FORMAT) -> Violation:
    """A rule broken at ``path:line`` (the message names the place, as every record rule's does)."""
    return Violation(path, line, rule, f"{path}:{line}: {message}", code, {"file": path, "line": line})


def _tree_violation(rule: str, message: str, code: FailureCode = FailureCode.INVALID_TOPIC_FORMAT,
                    **details: Any) -> Violation:
    return Violation(details.get("file"), details.get("line"), rule, message, code, details)


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


def check_strict(doc: TopicDoc, lookup_anchor: AnchorLookup, is_symlink: Callable[[str], bool]) -> None:
    """The strict record rules; the first violation raises (``INVALID_TOPIC_FORMAT`` or ``MISSING_SOURCE``)."""
    raise_first(record_violations(doc, lookup_anchor, is_symlink))


def _paragraph_violations(doc: TopicDoc, definitions: Mapping[str, Definition], used: set[str]) -> Iterator[Violation]:
    """Every prose paragraph is a record: an ID, citations, text before them and none after."""
    for paragraph in doc.paragraphs():
        line, citations = paragraph.line, paragraph.citations
        if not paragraph.ids:
            if not citations:
                yield _violation(doc.path, line, "uncited-text", "text without a citation: every record needs "
                                 "evidence ([^e…] with a source) and a ^block-id")
                continue
            yield _violation(doc.path, line, "missing-block-id", "paragraph does not end in a ^block-id")
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
                             f"evidence [^{label}] links {link.target!r}, which is not a source-archive anchor")
        elif is_symlink(archive_rel):
            yield _violation(doc.path, line, "symlinked-source",
                             f"evidence [^{label}] links through a symlink: {archive_rel}")
        elif lookup_anchor(archive_rel, anchor) is None:
            yield _violation(doc.path, line, "unknown-source", f"evidence [^{label}] links {link.target!r}, which is "
                             "not in the source archive", FailureCode.MISSING_SOURCE)


# -- the tree -----------------------------------------------------------------------------
def duplicate_id_violations(tree: "TreeState", files: Iterable[str]) -> Iterator[Violation]:
    """One block ID names one record: unique within each of ``files`` and across the whole tree."""
    id_files = tree.id_files()
    for rel in files:
        summary = tree.files.get(rel)
        if summary is None:
            continue
        yield from unique_in_file(summary)
        for block_id in summary.ids:
            if len(id_files[block_id]) > 1:
                where = id_files[block_id]
                yield _tree_violation("duplicate-id", f"block ID ^{block_id} appears in {' and '.join(where)}; "
                                      "memory IDs are unique across the tree", file=rel, block_id=block_id)


def unique_in_file(summary: "FileSummary") -> Iterator[Violation]:
    """Twice in one file (or an alias equal to another record's ID) would make ``get`` answer with either."""
    seen: dict[str, int] = {}
    for record in summary.records:
        for block_id in record.ids:
            if block_id in seen:
                yield _tree_violation("duplicate-id", f"{summary.path}:{record.line}: block ID ^{block_id} is already "
                                      f"used at line {seen[block_id]}; memory IDs are unique", file=summary.path,
                                      line=record.line, block_id=block_id)
            seen[block_id] = record.line


def lost_id_violations(policy: Policy, lost: list[str], allowed: frozenset[str], baseline: "TreeState",
                       new_tree: "TreeState", changed: Mapping[str, bytes | None]) -> Iterator[Violation]:
    """IDs that existed before the edit survive it, as strictly as ``policy`` says (architecture §3 step 5)."""
    by_id: dict[str, RecordInfo] = {}
    for block_id in lost:
        found = baseline.find(block_id)
        assert found is not None  # lost IDs are read from the baseline
        by_id[block_id] = found
    if policy is Policy.HAND:
        deleted_files = {rel for rel, data in changed.items() if data is None}
        for block_id in lost:
            record = by_id[block_id]
            if record.topic not in deleted_files:
                yield _tree_violation(
                    "lost-block-id", f"{record.topic}:{record.line}: block ID ^{block_id} was removed; a hand edit "
                    "keeps every block ID (put it back at the end of its paragraph, or delete the whole file)",
                    file=record.topic, line=record.line, block_id=block_id)
        return
    if policy is Policy.STRUCTURED:
        for block_id in [i for i in lost if i not in allowed][:1]:
            record = by_id[block_id]
            yield _tree_violation("lost-block-id", f"block ID ^{block_id} ({record.topic}) would vanish but no "
                                  "delete_record names it", file=record.topic, block_id=block_id)
        return
    yield from _rewritten_without_id(lost, by_id, baseline, new_tree, changed)


def _rewritten_without_id(lost: list[str], by_id: Mapping[str, "RecordInfo"], baseline: "TreeState",
                          new_tree: "TreeState", changed: Mapping[str, bytes | None]) -> Iterator[Violation]:
    """MODEL policy: records may go, but an ID may not silently vanish from a record that still exists."""
    known = baseline.id_files()
    fresh = [r for rel in changed if rel in new_tree.files for r in new_tree.files[rel].records
             if not any(i in known for i in r.ids)]
    for block_id in lost:
        old = by_id[block_id]
        for candidate in fresh:
            if difflib.SequenceMatcher(None, old.content, candidate.content).ratio() >= 0.8:
                yield _tree_violation(
                    "lost-block-id", f"{candidate.topic}:{candidate.line}: this record looks like ^{block_id} from "
                    f"{old.topic} rewritten without its block ID; keep ^{block_id} at the end of the paragraph",
                    file=candidate.topic, line=candidate.line, block_id=block_id)


def delete_needs_base_violations(lost: list[str], has_base: bool) -> Iterator[Violation]:
    """Removing records by whole file or patch needs the revision they were read at (architecture §15)."""
    if lost and not has_base:
        shown = ", ".join("^" + i for i in lost[:20]) + (" …" if len(lost) > 20 else "")
        yield Violation(None, None, "delete-needs-base-revision",
                        f"this change removes record(s) {shown}; removing records by whole file or patch needs the "
                        "base_revision you read them at (a stale read must not delete what it never saw)",
                        FailureCode.INVALID_ARGUMENT, {"deleted_ids": lost})


def dangling(tree: "TreeState") -> set[tuple[str, str, str]]:
    """``(from file, to file, block id)`` of every link that does not resolve."""
    id_files = tree.id_files()
    return {(record.topic, topic, block_id) for summary in tree.files.values()
            for record, topic, block_id in summary.outbound if topic not in id_files.get(block_id, ())}


def dangling_link_violations(tree: "TreeState", baseline: "TreeState | None" = None,
                             changed: set[str] | None = None) -> Iterator[Violation]:
    """Links that do not resolve: all of them, or (against ``baseline``) those an edit of ``changed`` is answerable for.

    A link some other file already left dangling (a hand edit outside the
    product) blocks only the edits that write that file: `memory check`
    names it, and every unrelated change still goes through.
    """
    id_files = tree.id_files()
    before = dangling(baseline) if baseline is not None and baseline.files else set()
    for summary in tree.files.values():
        for record, topic, block_id in summary.outbound:
            if topic in id_files.get(block_id, ()) or (
                    record.topic not in (changed or set()) and (record.topic, topic, block_id) in before):
                continue
            yield _tree_violation("dangling-link", f"{record.topic}:{record.line}: link to {topic}#^{block_id} does not "
                                  "resolve (links must point at an existing block ID in that file)",
                                  file=record.topic, line=record.line, block_id=block_id)
