"""What ``memory status`` tells of the tree — counts, the core render's figures, files left out — from the
manifest when every topic file is as the manifest recorded it, else from the tree (architecture §2.5).

The cold ``status`` of a large workspace then costs a stat pass over
``topics/`` and one read of ``.scriptorium/manifest.sqlite``: no parsing,
no tree cache loaded. Transactions record what they installed
(:func:`record_install`); a full read records everything
(:func:`tree_facts` when the manifest did not answer).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..workspace.layout import CORE_TOPIC
from ..workspace.manifest import Manifest, TopicRow, file_sha256, topic_row
from ..workspace.scan import Signature, signature, topic_files

if TYPE_CHECKING:
    from ..workspace.caches import TopicCache, TreeState
    from ..workspace.scan import TreeScan
    from .derived import CoreRender


@dataclass
class TreeFacts:
    topics: int
    records: int
    core_tokens: int
    core_budget: int
    core_excluded: list[str]
    unreadable: dict[str, str] = field(default_factory=dict)  # path → why it cannot be read
    invalid: dict[str, str] = field(default_factory=dict)  # path → the rule an out-of-band edit breaks
    from_manifest: bool = False


# The manifest's memo of the last status that read the tree: its facts and revision, with the signature of every
# memory file (runtime.json too) and of the git index then. A status that finds the very same signatures answers
# from it: no topic row read, no git index read (architecture §2.5).
STATUS_MEMO = "status"


def status_key(root: Path, tree_scan: "TreeScan") -> str | None:
    """What a status memo holds for: every memory file's signature and the git index's; None while any file is
    within the timestamp tick of its last change (an edit then may keep its signature)."""
    from ..workspace.manifest import RACY_NS
    from ..workspace.state import revision_files, signatures_key

    files = revision_files(root, tree_scan)
    settled = time.time_ns() - RACY_NS  # (is_racy, inlined: this runs over every file)
    if any(entry[1][0] >= settled for entry in files.values()):
        return None
    index = signature(root / ".git" / "index")
    return f"{signatures_key(files)} {index}"


def memo_facts(root: Path, key: str | None, budget: int) -> tuple[TreeFacts, str] | None:
    """The facts and revision of the status memo when it holds for ``key`` and ``budget``, else None."""
    memo = Manifest(root).meta(STATUS_MEMO) if key is not None else None
    if not isinstance(memo, dict) or memo.get("key") != key or memo.get("budget") != budget:
        return None
    try:
        return TreeFacts(**memo["facts"]), str(memo["revision"])
    except (KeyError, TypeError):
        return None


def remember_facts(root: Path, key: str | None, budget: int, facts: TreeFacts, revision: str) -> None:
    """Keep what a status found for the next one that finds the same signatures."""
    if key is not None:
        Manifest(root).put_meta(STATUS_MEMO, {"key": key, "budget": budget, "facts": asdict(facts),
                                              "revision": revision})


def _core_meta(root: Path, tree: "TreeState", core: "CoreRender", core_sha: str | None) -> dict[str, Any]:
    """The core render's figures with what they depend on: core's bytes, the budget, the archives it cites."""
    summary = tree.files.get(CORE_TOPIC)
    archives = sorted(summary.archives) if summary is not None else []
    return {"sha256": core_sha, "budget": core.budget, "tokens": core.tokens, "excluded": core.excluded,
            "archives": {rel: signature(root / rel) for rel in archives}}


def _core_from_meta(root: Path, meta: Any, rows: dict[str, TopicRow], budget: int) -> dict[str, Any] | None:
    if not isinstance(meta, dict) or meta.get("budget") != budget:
        return None
    row = rows.get(CORE_TOPIC)
    if meta.get("sha256") != (row.sha256 if row is not None else None):
        return None
    archives = meta.get("archives")
    if not isinstance(archives, dict):
        return None
    for rel, sig in archives.items():
        current = signature(root / rel)
        if (list(current) if current else None) != sig:
            return None
    return meta


def _from_manifest(root: Path, budget: int, scanned: dict[str, Signature]) -> TreeFacts | None:
    manifest = Manifest(root)
    rows = manifest.current_topics(scanned)
    if rows is None or any(row.problem_kind == "invalid" for row in rows.values()):
        return None  # an invalid file is served from its last commit: read the tree
    core = _core_from_meta(root, manifest.meta("core"), rows, budget)
    if core is None:
        return None
    served = [row for row in rows.values() if row.records is not None]
    return TreeFacts(topics=len(served), records=sum(row.records or 0 for row in served),
                     core_tokens=core["tokens"], core_budget=budget, core_excluded=list(core["excluded"]),
                     unreadable={row.path: row.problem or "" for row in rows.values()
                                 if row.problem_kind == "unreadable"},
                     from_manifest=True)


def tree_facts(root: Path, load_cache: Callable[[], "TopicCache"], budget: int,
               scanned: dict[str, Signature] | None = None) -> TreeFacts:
    """Status figures of the installed tree: the manifest's when it is current, else read (and recorded).
    ``load_cache`` gives the tree cache (only called when the manifest cannot answer); ``scanned``: the topic
    files' signatures if the caller has just scanned them."""
    scanned = topic_files(root) if scanned is None else scanned
    found = _from_manifest(root, budget, scanned)
    if found is not None:
        return found
    from .derived import render_core

    cache = load_cache()
    tree = cache.snapshot()
    core = render_core(tree, budget)
    rows = []
    for rel, sig in scanned.items():
        summary = tree.files.get(rel)
        problem = (("unreadable", cache.unreadable[rel]) if rel in cache.unreadable
                   else ("invalid", cache.invalid[rel]) if rel in cache.invalid else None)
        rows.append(topic_row(root, rel, sig, None, len(summary.records) if summary is not None else None, problem))
    core_sha = next((row.sha256 for row in rows if row.path == CORE_TOPIC), None)
    Manifest(root).put_topics(rows, replace_all=True, meta={"core": _core_meta(root, tree, core, core_sha)})
    return TreeFacts(topics=len(tree.files), records=sum(len(s.records) for s in tree.files.values()),
                     core_tokens=core.tokens, core_budget=core.budget, core_excluded=core.excluded,
                     unreadable=dict(cache.unreadable), invalid=dict(cache.invalid))


def record_install(root: Path, tree: "TreeState", topic_bytes: dict[str, bytes | None],
                   core: "CoreRender | None") -> None:
    """After a transaction installed ``topic_bytes``: their rows, and the core render it made."""
    rows, gone = [], []
    for rel, data in topic_bytes.items():
        sig = signature(root / rel)
        summary = tree.files.get(rel)
        if data is None or sig is None or summary is None:
            gone.append(rel)
        else:
            rows.append(topic_row(root, rel, sig, data, len(summary.records)))
    if CORE_TOPIC in topic_bytes:
        core_sha = next((row.sha256 for row in rows if row.path == CORE_TOPIC), None)
    else:
        core_sha = file_sha256(root / CORE_TOPIC)
    Manifest(root).put_topics(rows, gone, meta={"core": _core_meta(root, tree, core, core_sha)} if core else None)
