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

from typing import TYPE_CHECKING

from ..failures import MemoryFailure
from .gitindex import index_key, read_stats

if TYPE_CHECKING:
    from .host import Workspace
    from .result import TxResult

MESSAGE = "memory: hand edit outside the product"


def changed_topics(ws: "Workspace", on_disk: dict[str, tuple[int, int, int]] | None = None) -> list[str] | None:
    """Topic files whose bytes may differ from their last commit (stat against the git index), new ones and
    removed ones; None when the index cannot be read (nothing is known, so nothing is adopted)."""
    from ..workspace.scan import topic_files

    committed = read_stats(ws.layout.git)
    if committed is None:
        return None
    on_disk = topic_files(ws.root) if on_disk is None else on_disk
    changed = [rel for rel, sig in on_disk.items() if committed.get(rel) != index_key(sig)]
    removed = [rel for rel in committed if rel.startswith("topics/") and rel.endswith(".md") and rel not in on_disk]
    return sorted(changed + removed)


def adoptable(ws: "Workspace", candidates: list[str]) -> list[str]:
    """The candidates that keep every rule of a hand edit, judged together as the one commit that adopts them.

    Each is checked against the tree HEAD holds after that commit: the candidates left out keep their committed
    version there. So a rename (a removed file and a new one holding its IDs) goes in whole or not at all: the new
    file alone would leave one ID in two files of HEAD, and the removal alone dangles the links into it."""
    tree = ws.tree()
    invalid = getattr(ws.cache, "invalid", {})
    chosen = {rel for rel in candidates if rel not in invalid and rel not in ws.cache.unreadable
              and (rel in tree.files or not (ws.root / rel).exists())}  # else breaks a record rule: named by status
    while True:
        after = committed_tree(ws, tree, [rel for rel in candidates if rel not in chosen])
        blocked = {rel for rel in chosen if _breaks_tree_rule(after, rel)}
        if not blocked:
            return sorted(chosen)
        chosen -= blocked  # (a file left out is held as committed, which may block another: look again)


def _breaks_tree_rule(tree, rel: str) -> bool:
    """Whether ``rel`` as ``tree`` holds it (absent: removed) uses an ID twice, links nowhere, or leaves a link
    of another file dangling."""
    from . import validate

    if rel in tree.files:
        if any(validate.duplicate_id_violations(tree, [rel])):
            return True
        if any(v.file == rel for v in validate.dangling_link_violations(tree)):
            return True
    ids = set(tree.files[rel].ids) if rel in tree.files else set()
    return any(topic == rel and block_id not in ids
               for other, summary in tree.files.items() if other != rel
               for _record, topic, block_id in summary.outbound) or (
        rel not in tree.files and any(topic == rel for summary in tree.files.values()
                                      for topic, _line in summary.file_link_targets))


def rebuild_views(ws: "Workspace", message: str = "memory: rebuild derived views") -> "TxResult":
    """Render every derived view again (``memory rebuild``, a repair, after an adoption) and commit what changed,
    from :func:`valid_tree`: never from text that breaks a rule, so the views match the topics HEAD holds."""
    from .engine import Policy, staged_edit

    return staged_edit(ws, lambda staging: None, policy=Policy.MODEL, message=message, force_views=True,
                       views_from=lambda tree: valid_tree(ws, tree))


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
            paths = adoptable(ws, candidates) if candidates else []
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
        rebuild_views(ws, "memory: rebuild derived views after a hand edit outside the product")
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
