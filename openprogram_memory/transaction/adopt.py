"""Edits made outside the product, adopted into history (architecture §15).

People edit topic files in vim, VS Code or Obsidian and sync them with other
tools. Every open of the workspace compares each topic file's ``lstat`` with
the git index (which every commit of ours keeps in step): a file that moved
was edited outside the product. One that keeps every rule is committed as
"hand edit outside the product" — the hand-edit policy of a transaction: no
record rule broken, no block ID that another file links to removed, no ID
used twice — and the derived views are rebuilt through the transaction. One
that breaks a rule is left as it is: the caches serve its last committed
version and ``status`` / ``memory check`` name the problem.
"""

from __future__ import annotations

import itertools
import posixpath
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from ..failures import MemoryFailure
from .moves import changed_topic_files, ids_on_disk

if TYPE_CHECKING:
    from .host import Workspace
    from .result import TxResult

MESSAGE = "memory: hand edit outside the product"


def changed_topics(ws: "Workspace", on_disk: dict[str, tuple[int, int, int]] | None = None) -> list[str] | None:
    """Topic files whose bytes may differ from their last commit (stat against the git index), new ones and
    removed ones; None when the index cannot be read (nothing is known, so nothing is adopted)."""
    return changed_topic_files(ws.root, on_disk)


def adoptable(ws: "Workspace", candidates: list[str]) -> list[str]:
    """The candidates that keep every rule of a hand edit, judged together as the one commit that adopts them."""
    return judge(ws, candidates)[0]


def judge(ws: "Workspace", candidates: list[str]) -> tuple[list[str], dict[str, str]]:
    """The candidates that keep every rule of a hand edit, judged together as the one commit that adopts them,
    and ``{path: problem}`` of those held back by a rule of the tree (a record rule is the cache's to name).

    Each is checked against the tree HEAD holds after that commit: the candidates left out keep their committed
    version there. So a rename (a removed file and a new one holding its IDs) goes in whole or not at all: the new
    file alone would leave one ID in two files of HEAD, and the removal alone dangles the links into it. And no
    block ID is lost (architecture §3 step 5): a record moved to a file that is held back is not adopted as a
    delete from the file it left — both stay served from their last commit until the new home is fixed."""
    tree = on_disk_tree(ws)
    held_now = getattr(ws.cache, "held", {})
    invalid = {rel: problem for rel, problem in getattr(ws.cache, "invalid", {}).items() if rel not in held_now}
    chosen = {rel for rel in candidates if rel not in invalid and rel not in ws.cache.unreadable
              and (rel in tree.files or not (ws.root / rel).exists())}  # else breaks a record rule: named by status
    before = committed_tree(ws, tree, candidates)
    held: dict[str, str] = {}
    while True:
        after = committed_tree(ws, tree, [rel for rel in candidates if rel not in chosen])
        left_out = {rel: invalid.get(rel) or held.get(rel) or ws.cache.unreadable.get(rel, "")
                    for rel in candidates if rel not in chosen}
        blocked = {rel: problem for rel in chosen
                   if (problem := _tree_rule_problem(after, rel, before)
                       or _moved_out(ws, tree, before, after, rel, left_out))}
        if not blocked:
            return sorted(chosen), _renames(ws, tree, before, after, held)
        held.update(blocked)
        chosen -= set(blocked)  # (a file left out is held as committed, which may block another: look again)


def _tree_rule_problem(tree, rel: str, before) -> str | None:
    """What ``rel`` as ``tree`` holds it (absent: removed) breaks: an ID used twice, a link to nowhere, or a link
    of another file left dangling; None when nothing. An ID used twice is the fault of the file that took it: one
    that held it at its last commit (``before``) is not to blame while another file took it since — a record
    pasted into another topic with its block ID holds back the copy, never the original."""
    from . import validate

    if rel in tree.files:
        for violation in itertools.chain(validate.duplicate_id_violations(tree, [rel]),
                                         (v for v in validate.dangling_link_violations(tree) if v.file == rel)):
            if violation.rule == "duplicate-id" and _kept_while_copied(tree, before, rel, violation.details):
                continue
            if violation.rule == "duplicate-id" and (copied := _copied_from(tree, before, rel, violation.details)):
                return copied
            return f"[{violation.rule}] {violation.message.removeprefix(f'{rel}:{violation.line}: ')}"
    ids = set(tree.files[rel].ids) if rel in tree.files else set()
    for other, summary in sorted(tree.files.items()):
        if other == rel:
            continue
        for _record, topic, block_id in summary.outbound:
            if topic == rel and block_id not in ids:
                return f"[dangling-link] {other} links {rel}#^{block_id}, which this edit removes"
        if rel not in tree.files and any(topic == rel for topic, _line in summary.file_link_targets):
            return f"[dangling-link] {other} links {rel}, which this edit removes"
    for violation in validate.dangling_link_violations(tree):
        if violation.file != rel and _names(violation.details.get("note"), rel):
            return f"[dangling-link] {violation.file} links [[{violation.details['note']}]], which this edit breaks"
    return None


def _kept_while_copied(tree, before, rel: str, details: Mapping[str, Any]) -> bool:
    """Whether the block ID of a ``duplicate-id`` violation of ``rel`` (``details``) was ``rel``'s at its last
    commit, and another file that holds it now did not hold it then: that file took it, ``rel`` only kept it."""
    block_id = details.get("block_id")
    if block_id is None or details.get("line") is not None or not _held_in(before, rel, block_id):
        return False  # (a line: twice in this very file)
    return any(not _held_in(before, other, block_id) for other in tree.id_files().get(block_id, ()) if other != rel)


def _copied_from(tree, before, rel: str, details: Mapping[str, Any]) -> str | None:
    """The problem of ``rel`` when it took a block ID another file held at its last commit (a record pasted with
    its ID), naming that file and the fix (:mod:`~..workspace.copies`, which a search asks too); None for any
    other ID used twice."""
    from ..workspace.copies import copied_problem, original_of

    block_id = details.get("block_id")
    if block_id is None or details.get("line") is not None:
        return None
    original = original_of(rel, tree.id_files().get(block_id, ()), lambda other: _held_in(before, other, block_id))
    return None if original is None else copied_problem(block_id, original)


def _held_in(tree, rel: str, block_id: str) -> bool:
    return rel in tree.files and block_id in tree.files[rel].ids


def _renames(ws: "Workspace", tree, before, after, held: dict[str, str]) -> dict[str, str]:
    """``held`` with each rename made outside the product that a link holds back said as one: a removed file whose
    block IDs are now in a new file, while another file still links the old name (an editor that does not update
    links: Obsidian's default). Held alone, each half names the other (the old file dangles the link, the new one
    holds an ID twice); ``status`` then speaks of the file by the name it has on disk now."""
    from ..workspace.caches import renamed_problem

    out = dict(held)
    for old in sorted(held):
        if old not in before.files or (ws.root / old).exists():
            continue
        ids = set(before.files[old].ids)
        new = next((rel for rel in sorted(held) if rel != old and (ws.root / rel).exists()
                    and ids & _disk_ids(ws, tree, rel)), None)
        link = _link_into(after, old, ids, skip=(old, new)) if new else None
        if new and link:
            out[old] = renamed_problem("to", new, *link)
            out[new] = renamed_problem("from", old, *link)
    return out


def _link_into(tree, rel: str, ids: set[str], skip: tuple[str | None, ...]) -> tuple[str, str] | None:
    """The first file of ``tree`` (but ``skip``) that links ``rel`` or one of its ``ids``: (that file, the link's
    target as it reads, ``rel`` or ``rel#^id``)."""
    for other, summary in sorted(tree.files.items()):
        if other in skip:
            continue
        for _record, topic, block_id in summary.outbound:
            if topic == rel and block_id in ids:
                return other, f"{rel}#^{block_id}"
        if any(topic == rel for topic, _line in summary.file_link_targets):
            return other, rel
    return None


def _names(note: str | None, rel: str) -> bool:
    """Whether a dangling wikilink's note (None: not a wikilink) is ``rel`` by name: the file it broke, kept or
    removed (a wikilink names a note, so a removed target leaves nothing to resolve to)."""
    return note is not None and posixpath.basename(note).lower() == posixpath.basename(rel).lower().removesuffix(".md")


def _moved_out(ws: "Workspace", tree, before, after, rel: str, left_out: dict[str, str]) -> str | None:
    """Why ``rel`` may not be adopted when records it held moved to a file held back (``left_out``: path → its
    problem): adopting the leaving half alone would lose their IDs. None when no ID went there."""
    gone = (set(before.files[rel].ids) if rel in before.files else set()) - (
        set(after.files[rel].ids) if rel in after.files else set())
    for other, problem in sorted(left_out.items()):
        moved = sorted(gone & _disk_ids(ws, tree, other)) if gone else []
        if moved:
            return (f"[lost-block-id] {', '.join('^' + i for i in moved[:5])}{_MOVED_TO}{other}, which is not "
                    f"adopted ({problem or 'it breaks a rule'}): fix {other} and both are adopted together")
    return None


_MOVED_TO = " moved to "


def moved_from(ws: "Workspace", rel: str) -> list[str]:
    """The files held back because records they held moved to ``rel`` (taking ``rel`` back alone loses them)."""
    return sorted(other for other, problem in getattr(ws.cache, "held", {}).items()
                  if problem.startswith("[lost-block-id] ") and f"{_MOVED_TO}{rel}, " in problem)


def _disk_ids(ws: "Workspace", tree, rel: str) -> set[str]:
    """The block IDs the file ``rel`` holds on disk, valid or not (none when it is gone or not text)."""
    if rel in tree.files and rel not in getattr(ws.cache, "invalid", {}):
        return set(tree.files[rel].ids)
    return ids_on_disk(ws.root, rel)


def on_disk_tree(ws: "Workspace"):
    """The tree as the files are on disk: what is served, with every file served from its last commit as it is
    (one held back from adoption by a rule of the tree, or one that breaks a record rule): what judging them and
    ``memory check`` read. A file that breaks a record rule can still break a rule of the tree (a link to
    nowhere, an ID another file holds); check names those with its record rules, in the same run."""
    from ..topics.model import decode_topic
    from ..workspace.caches import summarize

    tree = ws.tree()
    served_as_committed = set(getattr(ws.cache, "held", {})) | set(getattr(ws.cache, "invalid", {}))
    if not served_as_committed:
        return tree
    texts: dict[str, str | None] = {}
    for rel in sorted(served_as_committed):
        try:
            texts[rel] = decode_topic((ws.root / rel).read_bytes())
        except FileNotFoundError:
            texts[rel] = None
        except (OSError, UnicodeDecodeError):
            continue  # (not text any more: the cache names it)
    return tree.with_files({rel: None if text is None else summarize(rel, text, ws.cache.sources)
                            for rel, text in texts.items()})


def rebuild_views(ws: "Workspace", message: str = "memory: rebuild derived views",
                  deleted: Iterable[str] = ()) -> "TxResult":
    """Render every derived view again (``memory rebuild``, a repair, after an adoption) and commit what changed,
    from :func:`valid_tree`: never from text that breaks a rule, so the views match the topics HEAD holds.

    ``deleted``: records a hand edit just removed; they leave the creation order, as a transaction's deletes
    do (a stale one there would take a number a sync gives the records that remain)."""
    from ..workspace.state import VIEWS_VERSION
    from .engine import Policy, staged_edit

    def rendered_now(state, _result) -> None:
        state.views_version = VIEWS_VERSION  # (every view rendered by this version)
        for block_id in deleted:
            state.created_order.pop(block_id, None)

    return staged_edit(ws, lambda staging: None, policy=Policy.MODEL, message=message, force_views=True,
                       views_from=lambda tree: valid_tree(ws, tree), runtime_update=rendered_now)


def upgrade_views(ws: "Workspace") -> list[str]:
    """Render every derived view again when an older version rendered them (the runtime state's views version is
    behind :data:`~..workspace.state.VIEWS_VERSION`), so an upgrade needs no ``memory rebuild``: what was done, as
    notes. Never raises: a failure (the workspace busy) is a note, and the next open tries again."""
    from ..workspace.state import VIEWS_VERSION, RuntimeState

    if RuntimeState.load_counters(ws.layout).views_version >= VIEWS_VERSION:
        return []
    try:
        result = rebuild_views(ws, "memory: rebuild derived views rendered by an older version")
    except MemoryFailure as failure:
        return [f"could not render the derived views of an older version again: {failure.message}"]
    return [f"rendered the derived views of an older version again: {', '.join(result.derived_files)}"
            ] if result.derived_files else []


def valid_tree(ws: "Workspace", tree):
    """What the derived views render from: ``tree`` with every topic file changed outside the product that cannot
    be adopted (it breaks a rule, alone or with the other changes) as its last commit holds it. Text that was
    never validated never reaches a view; a view rebuilt from this matches the topics HEAD holds."""
    candidates = changed_topics(ws) or []
    adopted = set(adoptable(ws, candidates)) if candidates else set()
    return committed_tree(ws, tree, [rel for rel in candidates if rel not in adopted])


def committed_tree(ws: "Workspace", tree, held: list[str]):
    """``tree`` with each of ``held`` as its last commit holds it (gone when never committed): what HEAD serves of
    files whose edits are not adopted (a file breaking a record rule is served so already)."""
    from ..workspace.caches import committed_text, summarize

    if not held:
        return tree
    texts = {rel: committed_text(ws.root, rel) for rel in held}
    return tree.with_files({rel: None if text is None else summarize(rel, text, ws.cache.sources)
                            for rel, text in texts.items()})


def adopt_out_of_band(ws: "Workspace") -> list[str]:
    """Commit the valid out-of-band topic edits and rebuild the views they change; what was done, as notes.

    Takes the workspace write lock (the caller must not hold it). Never raises: a failure to commit is a
    note, and the files stay on disk, served and reported as they are. Records removed in the editor count
    as the person's deletes: no writer or backfill writes them back.
    """
    from ..workspace.state import note_person_deletes, write_lock
    from .engine import EDIT_LOCK_TIMEOUT, TxResult
    from .history import commit_paths, differing_paths

    try:
        with write_lock(ws.layout, EDIT_LOCK_TIMEOUT):
            candidates = changed_topics(ws)
            paths, held = judge(ws, candidates) if candidates else ([], {})
            if candidates is not None and hasattr(ws.cache, "hold"):
                ws.cache.hold(held)  # served from their last commit, named by status and check
            if not paths:
                return []
            changed = differing_paths(ws.root, paths)  # the stat says which may differ, the bytes which do
            deleted = _deleted_records(ws, changed)
            # all of them: a touched file's index entry is brought in step, and only the changed ones are named
            commit = commit_paths(ws.root, paths, MESSAGE + ": " + ", ".join(changed[:10]))
        if commit is None:
            return []  # touched, not changed: the index is in step again
        note_person_deletes(ws.layout, TxResult(revision="", deleted_ids=sorted(deleted),
                                                deleted_sources=sorted({s for v in deleted.values() for s in v}),
                                                memory_committed=True))
        rebuild_views(ws, "memory: rebuild derived views after a hand edit outside the product", deleted)
    except MemoryFailure as failure:
        return [f"could not adopt the hand edit(s) made outside the product: {failure.message}"]
    return [f"adopted hand edit(s) outside the product: {', '.join(changed[:10])}"
            + (f" and {len(changed) - 10} more" if len(changed) > 10 else "")]


def _deleted_records(ws: "Workspace", paths: list[str]) -> dict[str, list[str]]:
    """``{block id: sources}`` of the records the committed versions of ``paths`` hold and the files no longer do."""
    from ..workspace.caches import committed_text, summarize

    tree = ws.tree()
    now = {i for rel in paths if rel in tree.files for i in tree.files[rel].ids}
    out: dict[str, list[str]] = {}
    for rel in paths:
        text = committed_text(ws.root, rel)
        if text is None:
            continue
        for record in summarize(rel, text, ws.cache.sources).records:
            if not any(i in now for i in record.ids):
                out[record.memory_id] = list(record.source_ids)
    return out
