"""Every record and tree rule, as pure functions: a document or a tree in, violations out.

The transaction (:mod:`.engine`) raises the first violation of what it is
about to install; ``memory check`` (:mod:`.check`) lists every violation of
the installed tree. A rule's name (:data:`RULES`) is the ``rule`` field of
the failure a person or a program sees (``INVALID_TOPIC_FORMAT``, or
``MISSING_SOURCE`` / ``INVALID_ARGUMENT`` where said). To change a record
rule of one file, change :mod:`openprogram_memory.topics.rules` (re-exported here; the caches apply it
too); a tree rule, change it here (architecture §2.1, §3 step 5).
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping

from ..failures import FailureCode
from ..topics.rules import RECORD_RULES, Violation, check_strict, ids_unique_in_file, raise_first, record_violations
from ..topics.wikilinks import WikilinkIndex
from ..workspace.layout import SOURCES, TIMELINE
from .result import Policy

__all__ = ["RULES", "Violation", "check_strict", "raise_first", "record_violations", "duplicate_id_violations",
           "ids_unique_in_file", "unique_in_file", "lost_id_violations", "delete_needs_base_violations",
           "dangling_link_violations"]
if TYPE_CHECKING:
    from ..workspace.caches import FileSummary, RecordInfo, TreeState

RULES = RECORD_RULES + (
    # the tree, against what was installed before (architecture §3 step 5)
    "symlink", "duplicate-id", "lost-block-id", "delete-needs-base-revision", "dangling-link", "append-only",
)


def _tree_violation(rule: str, message: str, code: FailureCode = FailureCode.INVALID_TOPIC_FORMAT,
                    **details: Any) -> Violation:
    return Violation(details.get("file"), details.get("line"), rule, message, code, details)


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
    return ids_unique_in_file(summary.doc)


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


def dangling_link_violations(tree: "TreeState", baseline: "TreeState | None" = None,
                             changed: set[str] | None = None) -> Iterator[Violation]:
    """Links that do not resolve: all of them, or (against ``baseline``) those an edit of ``changed`` is answerable for.

    A link some other file already left dangling (a hand edit outside the
    product) blocks only the edits that write that file: `memory check`
    names it, and every unrelated change still goes through. Against a
    baseline this costs the edit, not the tree: an unchanged file's link can
    only break when its target left a changed file, so only the links of
    changed files are read — and, when a changed file lost a block ID, the
    links that pointed at it.
    """
    id_files = tree.id_files()
    before = baseline.files if baseline is not None else {}
    whole = not before
    changed = changed or set()
    vanished = {(rel, i) for rel in changed if rel in before for i in before[rel].ids
                if rel not in id_files.get(i, ())}
    removed = {rel for rel in changed if rel in before and rel not in tree.files}
    # a wikilink names a note, so a file added (a shorter path for the name) can break one as a removal can
    added_or_removed = removed or any(rel not in before for rel in changed if rel in tree.files)
    wikilinks = _WikilinkCheck(tree, baseline if not whole else None)
    for path, summary in tree.files.items():
        own = whole or path in changed
        if summary.wikilink_targets and (own or vanished or added_or_removed):
            yield from wikilinks.violations(path, summary.wikilink_targets, own)
        if not own and not vanished:
            continue
        for topic, line in summary.file_link_targets:  # a link to a whole file: the file must exist
            if topic not in tree.files and (own or topic in removed):
                yield _tree_violation("dangling-link", f"{path}:{line}: link to {topic} does not resolve (no such "
                                      "topic file)", file=path, line=line, target=topic)
        for topic, block_id, line, _id in summary.link_targets:
            if topic in id_files.get(block_id, ()) or (not own and (topic, block_id) not in vanished):
                continue
            yield _tree_violation("dangling-link", f"{path}:{line}: link to {topic}#^{block_id} does not "
                                  "resolve (links must point at an existing block ID in that file)",
                                  file=path, line=line, target=topic, block_id=block_id)


class _WikilinkCheck:
    """The wikilinks (``[[people#^id]]``) of one tree that do not resolve; the names are indexed on first use.

    A wikilink is resolved by note name as Obsidian resolves it (:mod:`openprogram_memory.topics.wikilinks`).
    Against a baseline, one of a file the edit does not write is the edit's only when it resolved before.
    """

    def __init__(self, tree: "TreeState", baseline: "TreeState | None") -> None:
        self.tree, self.baseline = tree, baseline
        self._indexes: dict[int, WikilinkIndex] = {}

    def _target(self, tree: "TreeState", note: str, path: str) -> str | None:
        index = self._indexes.get(id(tree))
        if index is None:
            index = self._indexes[id(tree)] = WikilinkIndex(tree.files)
        return index.resolve(note, path)

    def _resolves(self, tree: "TreeState", note: str, block_id: str | None, path: str) -> bool:
        topic = self._target(tree, note, path)
        return topic is not None and (block_id is None or block_id in tree.files[topic].ids)

    def violations(self, path: str, targets: list[tuple[str, str | None, int]], own: bool) -> Iterator[Violation]:
        for note, block_id, line in targets:
            if self._resolves(self.tree, note, block_id, path):
                continue
            topic = self._target(self.tree, note, path)
            if topic is None and note.lower().startswith(_OUTSIDE_TOPICS):
                continue  # a vault opened at the memory directory links to the archive or the timeline: no records
            if not own and (self.baseline is None or not self._resolves(self.baseline, note, block_id, path)):
                continue  # it dangled before this edit: named by `memory check`, not this edit's to answer for
            written = f"[[{note}#^{block_id}]]" if block_id else f"[[{note}]]"
            if topic is None:
                yield _tree_violation("dangling-link", f"{path}:{line}: link to {written} does not resolve (no "
                                      "such topic file)", file=path, line=line, note=note)
            else:
                yield _tree_violation("dangling-link", f"{path}:{line}: link to {written} ({topic}) does not "
                                      "resolve (links must point at an existing block ID in that file)",
                                      file=path, line=line, target=topic, block_id=block_id, note=note)


_OUTSIDE_TOPICS = (SOURCES + "/", TIMELINE + "/")
