"""``reorganize``: the organizer (``memory sleep``) as one transaction (architecture §7).

A *planner* looks at the topic tree and returns memory_changes; the
organizer applies them with :func:`run_request` — the same validation,
derived views, install and git commit as every other change — under the
STRUCTURED policy, so an organize can merge and move but never lose a
block ID. Planning happens inside the transaction, under the write lock,
against exactly the tree the engine validates against.

Planners are the seam for offline organizers: ``Planner(tree,
created_order) -> memory_changes``. ``rules`` is built in; others register
with :func:`register_planner` under a name or a ``provider:`` prefix. A model
(``anthropic:<model>``) organizes through the writer's tool loop instead
(:mod:`.model`). Without ``--model`` the organizer follows
``memory.writer.model`` when that model can organize, else ``rules``.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..failures import FailureCode, MemoryFailure
from ..transaction.engine import TxResult
from ..transaction.ledger import needs_recovery
from ..transaction.structured import MERGE, MOVE, Request, parse_request, run_request, unchanged_result
from ..workspace.caches import TreeState
from ..workspace.layout import RUNTIME, check_topic_path
from ..workspace.manifest import Manifest, file_sha256, is_racy
from ..workspace import watch
from ..workspace.scan import Signature, signature
from ..workspace.state import RuntimeState, revision_files, signatures_key
from .model import TOOL_LOOP_PREFIXES, is_model_organizer, organize_with_model
from .planner import plan_rules, topic_fingerprint

# the rules organizer's version, bumped when it plans what an older one left alone (2: a section split before
# goes to its file, twins like walter.md + walter-2.md become one): the records below are kept per version, so a
# tree an older organizer left tidy is planned once more in full
RULES_VERSION = 2
# the manifest's record of the topic files as the last rules organize left them (architecture §2.5)
ORGANIZED = f"organized.{RULES_VERSION}"
# … and of every memory file's signature then: a sleep that finds them all unchanged plans nothing
ORGANIZED_AT = f"organized_at.{RULES_VERSION}"
# root → ((watch token, runtime.json's signature), revision) of a tree found organized
_VOUCHED: dict[Path, tuple[tuple[watch.Token | None, Signature | None], str]] = {}

if TYPE_CHECKING:
    from ..memory import MemoryWorkspace

Planner = Callable[[TreeState, dict[str, int]], list[dict[str, Any]]]
ORGANIZE_LOCK_TIMEOUT = 5.0
PLANNERS: dict[str, Planner] = {"rules": plan_rules}


def register_planner(name: str, planner: Planner) -> None:
    """Make ``planner`` answer ``model=name`` (or every ``name…`` model if it ends in ``:``)."""
    PLANNERS[name] = planner


def resolve_planner(model: str | None) -> tuple[str, Planner | None]:
    """``(name, planner)`` for ``model`` (None → ``rules``); planner None for a model organizer.

    INVALID_ARGUMENT if nothing can organize with ``model``.
    """
    name = (model or "rules").strip()
    if name in PLANNERS:
        return name, PLANNERS[name]
    prefix = name.split(":", 1)[0] + ":"
    if ":" in name and prefix in PLANNERS:
        return name, PLANNERS[prefix]
    if is_model_organizer(name):
        return name, None
    raise MemoryFailure(
        FailureCode.INVALID_ARGUMENT,
        f"no organizer for model {name!r}; use rules or anthropic:<model> "
        f"(known: {', '.join(sorted(PLANNERS))}, {', '.join(p + '<model>' for p in TOOL_LOOP_PREFIXES)})",
    )


def default_model(ws: "MemoryWorkspace") -> str:
    """The organizer ``sleep`` uses without ``--model``: the writer's model if it can organize, else rules."""
    model = str(ws.settings["memory.writer.model"])
    try:
        resolve_planner(model)
    except MemoryFailure:
        return "rules"
    return model


def reorganize(ws: "MemoryWorkspace", model: str | None = None, *, now: datetime | None = None,
               lock_timeout: float = ORGANIZE_LOCK_TIMEOUT, full: bool = False) -> dict[str, Any]:
    """Organize the topics now with ``model`` (see :func:`default_model`); return what changed.

    Rewrites ``topics/`` only (never sources, never session markers). The
    report names the files the transaction *changed*; ``merged``/``moved``/
    ``reordered`` count records, ``actions`` say what was done and why.
    ``runtime.json`` gets ``last_global_at``/``last_local_at`` and zeroed
    counters; a run that finds nothing to do and nothing to reset changes
    no byte (same revision).
    """
    name, planner = resolve_planner(model or default_model(ws))
    moment = now or datetime.now(timezone.utc)
    stamp = moment.isoformat(timespec="seconds")
    planned: dict[str, Any] = {}

    def stamp_runtime(state: RuntimeState, _result: TxResult) -> None:
        state.batches_since_organize = 0
        state.tokens_since_organize = 0
        state.writes_since_global = 0
        state.last_global_at = stamp
        state.last_local_at = stamp

    incremental = planner is plan_rules and not full
    if incremental:
        revision = _still_organized(ws)
        if revision is not None:  # the memory files (runtime.json too) are as the last organize left them
            return _report(unchanged_result(revision), name, {})  # (the keys of a request that changed nothing)
    runtime = RuntimeState.load(ws.layout)
    needs_stamp = bool(runtime.batches_since_organize or runtime.tokens_since_organize
                       or runtime.writes_since_global or runtime.last_global_at is None)
    if planner is None:
        return organize_with_model(ws, name, now=moment, lock_timeout=lock_timeout,
                                   runtime_update=stamp_runtime, stamp=needs_stamp)
    organized = Manifest(ws.root).meta(ORGANIZED) if incremental else None

    def plan(tree: TreeState) -> Request:
        created_order = RuntimeState.load(ws.layout).created_order
        if isinstance(organized, dict):  # what changed since the last organize (pairs of the rest were compared)
            changed = {rel for rel, summary in tree.files.items() if organized.get(rel) != topic_fingerprint(summary)}
            # nothing changed since the organize that left this tree: it is tidy (a second run changes nothing)
            changes = plan_rules(tree, created_order, changed) if changed or organized.keys() != tree.files.keys() \
                else []
        else:
            changes = planner(tree, created_order)
        planned.update(changes=changes, tree=tree)
        return parse_request(changes, None, internal=True)
    result = run_request(ws, plan, message=f"memory: organize ({name})", lock_timeout=lock_timeout,
                         runtime_update=stamp_runtime, stamp=needs_stamp)
    organized_tree = result.tree if result.tree is not None else planned.get("tree")
    if planner is plan_rules and organized_tree is not None:  # a cache: lost, the next sleep compares everything
        fingerprints = {rel: topic_fingerprint(summary) for rel, summary in organized_tree.files.items()}
        if fingerprints != organized:
            Manifest(ws.root).put_meta(ORGANIZED, fingerprints)
        if result.scan is not None:
            _remember_organized(ws, result)
    return _report(result, name, planned, ws)


def _report(result: TxResult, name: str, planned: dict[str, Any], ws: "MemoryWorkspace | None" = None
            ) -> dict[str, Any]:
    report: dict[str, Any] = {key: value for key, value in result.to_json().items()
                              if key not in ("block_ids", "evidence_ids")}
    report.update({"model": name, "derived_files": result.derived_files})
    report.update(summarize_changes(planned.get("changes", []), planned.get("tree")))
    report["new_topics"] = sorted(f for f in result.changed_files
                                  if ws is not None and planned.get("tree") is not None
                                  and f not in planned["tree"].files and (ws.root / f).exists())
    return report


def _remember_organized(ws: "MemoryWorkspace", result: TxResult) -> None:
    """Keep the signatures of every memory file as this organize left them (architecture §7): a later sleep
    that finds the same signatures, and nothing written since, has nothing to organize. Files written within
    the timestamp tick are kept by content too (an edit in the same tick keeps a file's signature)."""
    files = revision_files(ws.root, result.scan)
    now = time.time_ns()
    racy = {rel: file_sha256(path) for rel, (path, sig, _link) in files.items() if is_racy(sig, now)}
    Manifest(ws.root).put_meta(ORGANIZED_AT, {"key": signatures_key(files), "revision": result.revision,
                                              "racy": racy})


def _still_organized(ws: "MemoryWorkspace") -> str | None:
    """The revision when every memory file is as the last organize left it (one stat pass; hashes only the
    files that were racy then), else None. Never when an interrupted transaction waits for recovery.

    In a process that watches the root (``memory serve``, ``memory mcp``) a check that found the tree
    organized holds until the watch's token moves (architecture §9): no stat pass."""
    root = ws.root.resolve()
    # read before the check: an event during it makes the next sleep check again (runtime.json is not watched)
    seen = (watch.token(root), signature(ws.root / RUNTIME))
    vouched = _VOUCHED.get(root)
    if seen[0] is not None and vouched is not None and vouched[0] == seen:
        return vouched[1]
    known = Manifest(ws.root).meta(ORGANIZED_AT)
    if not isinstance(known, dict) or not isinstance(known.get("racy"), dict) or needs_recovery(ws):
        return None
    files = revision_files(ws.root)
    if signatures_key(files) != known.get("key"):
        return None
    now = time.time_ns()
    for rel, sha in known["racy"].items():
        if rel not in files or file_sha256(files[rel][0]) != sha:
            return None
    settled = {rel for rel in known["racy"] if not is_racy(files[rel][1], now)}
    if settled:  # checked by content once more after their tick: by signature from now on
        known["racy"] = {rel: sha for rel, sha in known["racy"].items() if rel not in settled}
        Manifest(ws.root).put_meta(ORGANIZED_AT, known)  # (moves the token: the next sleep checks once more)
    elif seen[0] is not None:
        _VOUCHED[root] = (seen, str(known.get("revision")))
    return str(known.get("revision"))


def _topic(path: str) -> str:
    try:
        return check_topic_path(path)
    except MemoryFailure:
        return path


def summarize_changes(changes: list[dict[str, Any]], tree: TreeState | None) -> dict[str, Any]:
    """Counts and a readable list of what a plan does."""
    merged = sum(len(c.get("memory_ids", [])) - 1 for c in changes if c.get("op") == MERGE)
    by_id = tree.by_id if tree is not None and changes else {}  # the whole tree's ID table: only for a plan
    absorbed = {alias for c in changes if c.get("op") == MERGE for memory_id in c.get("memory_ids", [])[1:]
                if memory_id in by_id for alias in by_id[memory_id].ids}
    final: dict[str, str] = {}  # record identity -> topic it ends in
    for change in changes:
        if change.get("op") == MOVE:
            for memory_id in change.get("memory_ids", []):
                record = by_id.get(memory_id)
                if record is not None and record.memory_id == memory_id and memory_id not in absorbed:
                    final[memory_id] = _topic(change["destination"]["topic_path"])
    moved = sum(1 for identity, topic in final.items() if by_id[identity].topic != topic)
    actions = [{k: v for k, v in change.items() if k in ("op", "memory_ids", "destination", "reason")}
               for change in changes]
    return {"merged": merged, "moved": moved, "reordered": len(final) - moved, "actions": actions}
