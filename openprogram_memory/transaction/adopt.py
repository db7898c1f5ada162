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
    """The candidates that keep every rule of a hand edit, against the tree as it is served."""
    from . import validate

    tree = ws.tree()
    invalid = getattr(ws.cache, "invalid", {})
    linked = {topic for summary in tree.files.values() for _record, topic, _block_id in summary.outbound}
    out = []
    for rel in candidates:
        if rel in invalid or rel in ws.cache.unreadable:
            continue  # breaks a record rule: served from its last commit, named by status
        if rel not in tree.files:
            if not (ws.root / rel).exists() and rel not in linked:
                out.append(rel)  # removed, and nothing links into it
            continue
        problems = list(validate.duplicate_id_violations(tree, [rel]))
        problems += [v for v in validate.dangling_link_violations(tree) if v.file == rel]
        if not problems and not _ids_others_need(ws, tree, rel):
            out.append(rel)
    return out


def _ids_others_need(ws: "Workspace", tree, rel: str) -> bool:
    """Whether the edit removed a block ID that another file links to (that file would dangle)."""
    ids = set(tree.files[rel].ids)
    return any(topic == rel and block_id not in ids
               for other, summary in tree.files.items() if other != rel
               for _record, topic, block_id in summary.outbound)


def adopt_out_of_band(ws: "Workspace") -> list[str]:
    """Commit the valid out-of-band topic edits and rebuild the views they change; what was done, as notes.

    Takes the workspace write lock (the caller must not hold it). Never raises: a failure to commit is a
    note, and the files stay on disk, served and reported as they are. Records removed in the editor count
    as the person's deletes: no writer or backfill writes them back.
    """
    from ..workspace.state import note_person_deletes, write_lock
    from .engine import EDIT_LOCK_TIMEOUT, Policy, TxResult, staged_edit
    from .history import commit_paths

    try:
        with write_lock(ws.layout, EDIT_LOCK_TIMEOUT):
            candidates = changed_topics(ws)
            paths = adoptable(ws, candidates) if candidates else []
            if not paths:
                return []
            deleted = _deleted_records(ws, paths)
            commit = commit_paths(ws.root, paths, MESSAGE + ": " + ", ".join(paths[:10]))
        if commit is None:
            return []  # touched, not changed: the index is in step again
        note_person_deletes(ws.layout, TxResult(revision="", deleted_ids=sorted(deleted),
                                                deleted_sources=sorted({s for v in deleted.values() for s in v}),
                                                memory_committed=True))
        staged_edit(ws, lambda staging: None, policy=Policy.MODEL, force_views=True,
                    message="memory: rebuild derived views after a hand edit outside the product")
    except MemoryFailure as failure:
        return [f"could not adopt the hand edit(s) made outside the product: {failure.message}"]
    return [f"adopted hand edit(s) outside the product: {', '.join(paths[:10])}"
            + (f" and {len(paths) - 10} more" if len(paths) > 10 else "")]


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
