"""``memory sync``: fetch, merge by record identity, install, push (retry on a moved remote).

The write lock is held only while the merge is computed and installed
(through the one transaction, as a two-parent commit); fetch and push run
without it. The remote's ``main`` carries ``memory/`` only: topics, the
source archive and the derived views. Conversations (the session store)
and written markers live outside it and stay per machine.
"""

from __future__ import annotations

import json
import re
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any, Callable, ContextManager

from ..config import write_config_value
from ..failures import FailureCode, MemoryFailure
from ..topics.model import decode_topic
from ..transaction.engine import Policy, staged_edit
from ..transaction.history import commit_paths, head_id
from ..workspace.layout import RECENT, SOURCES, TIMELINE, TOPICS
from ..workspace.state import REVISIONS, write_lock
from . import transport
from .archives import union
from .records import Side, merge

if TYPE_CHECKING:
    from ..memory import MemoryWorkspace

ATTEMPTS = 3
LOCK_TIMEOUT = 5.0
_USAGE = {FailureCode.READ_ONLY_PATH, FailureCode.PATH_OUTSIDE_WORKSPACE, FailureCode.INVALID_ARGUMENT}


def sync(ws: "MemoryWorkspace", remote: str | None = None, *, attempts: int = ATTEMPTS,
         before_push=None, installing: Callable[[], ContextManager[Callable[[], bool]]] | None = None,
         ) -> dict[str, Any]:
    """Merge with the remote and push the result; the JSON result of ``memory sync``.

    ``before_push`` (tests) runs after each local install, before the push.
    ``installing`` (the CLI: Ctrl-C deferred) is entered when a merge begins to be installed and held to the
    end: what it yields says whether a stop was asked, and then the sync stops once the merge is installed and
    committed, before the push (``"interrupted": true``, and ``"push_skipped": true`` when there was something to
    push: a rerun pushes it). Before it, nothing is changed.
    """
    if remote is not None and not remote.strip():
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT,
                            "--remote is blank: give the git URL or path of the shared repository, or leave "
                            "--remote out to use memory.sync.remote")
    url = (remote or ws.settings["memory.sync.remote"] or "").strip()
    if not url:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT,
                            "no sync remote: run `openprogram memory sync --remote URL` once "
                            "(or set memory.sync.remote)")
    out: dict[str, Any] = {"ok": True, "remote": url, "fetched": False, "pushed": False, "merged": False,
                           "conflicts": []}
    with ExitStack() as held:
        stop_asked: list[Callable[[], bool]] = []

        def begin_install() -> None:
            if installing is not None and not stop_asked:
                stop_asked.append(held.enter_context(installing()))

        for _attempt in range(attempts):
            if stop_asked and stop_asked[0]():
                out["push_skipped"] = True  # (a retry after a rejected push: what the last attempt installed stays)
                break
            remote_head = transport.fetch(ws.root, url, lambda: write_lock(ws.layout, LOCK_TIMEOUT))
            if remote and remote != ws.settings["memory.sync.remote"]:
                write_config_value(ws.settings.state_dir, "memory.sync.remote", remote)
            step = integrate(ws, remote_head, begin_install)
            out["fetched"] |= step["fetched"]
            out["merged"] |= step["merged"]
            out["conflicts"].extend(c for c in step["conflicts"] if c not in out["conflicts"])
            if stop_asked and stop_asked[0]():
                if head_id(ws.root) != remote_head:  # (a fast-forward to the remote leaves nothing to push)
                    out["push_skipped"] = True
                break
            if before_push is not None:
                before_push()
            local_head = head_id(ws.root)
            try:
                if local_head is not None:
                    out["pushed"] |= transport.push(ws.root, url, remote_head, local_head)
                break
            except transport.PushRejected:
                continue
        else:
            raise MemoryFailure(FailureCode.CONCURRENT_UPDATE,
                                f"the remote moved during each of {attempts} sync attempts; run sync again",
                                retryable=True, details={"remote": url})
        if stop_asked and stop_asked[0]():
            out["interrupted"] = True
    out["revision"] = REVISIONS.revision(ws.root)
    out["commit"] = head_id(ws.root)
    unsynced = not_synced(ws)
    if unsynced:
        out["warnings"] = unsynced
    return out


def not_synced(ws: "MemoryWorkspace") -> list[str]:
    """The warnings ``status`` gives of topic files left out of memory or held back (an edit made outside the
    product that breaks a rule), each marked as not synced: what is in no commit never reaches the remote, which
    has the file's last committed version, while the sync itself succeeds."""
    ws.tree()  # (the snapshot names them)
    return [f"not synced: {warning}" for warning in ws.unreadable_warnings()]


def integrate(ws: "MemoryWorkspace", remote_head: str | None,
              begin_install: Callable[[], None] | None = None) -> dict[str, Any]:
    """Bring the fetched commit into the local tree (under the write lock); ``begin_install`` is called once
    there is something to merge, before the transaction that installs it begins."""
    report: dict[str, Any] = {"fetched": False, "merged": False, "conflicts": []}
    if remote_head is None:
        return report
    repo = _repo(ws)
    local_head = head_id(ws.root)
    if local_head == remote_head or (local_head and _is_ancestor(repo, remote_head, local_head)):
        return report
    report["fetched"] = True
    if begin_install is not None:
        begin_install()
    state: dict[str, Any] = {}

    def edit(staging) -> None:
        # Recomputed under the lock: a writer may have committed since the fetch.
        head = head_id(ws.root)
        state["local"] = head
        try:
            plan = plan_merge(repo, head, remote_head)
        except MemoryFailure as failure:
            raise _as_data_error(failure) from None
        state.update(plan)
        try:
            for rel, text in plan["topics"].items():
                if text is None:
                    if staging.exists(rel):
                        staging.delete(rel)
                else:
                    staging.write(rel, text)
        except MemoryFailure as failure:
            raise _as_data_error(failure) from None
        staging.known_ids.update(plan["ids"])
        for rel, data in plan["archives"].items():
            staging.replace_archive(rel, data)

    def order(runtime, result) -> None:
        _merge_order(runtime, state.get("remote_numbers", {}), state.get("remote_days", []),
                     state.get("fast_forward", False), result.block_ids)

    try:
        # every view rendered again (force_views): the order changed for records the merge did not touch, and
        # a view rendered with the old order would be stale (`memory check`) and differ from the other machine's
        staged_edit(ws, edit, policy=Policy.MODEL, lock_timeout=LOCK_TIMEOUT, runtime_update=order,
                    message=f"memory: sync merge of {remote_head[:12]}", merge_parent=remote_head,
                    force_views=True,
                    # the merge writes whole files: one a person left invalid by hand would lose the typed text
                    held=("the remote's", "then run `openprogram memory sync` again"))
    except MemoryFailure as failure:
        if failure.code in (FailureCode.INVALID_TOPIC_FORMAT, FailureCode.APPEND_ONLY_REQUIRED,
                            FailureCode.MISSING_SOURCE):
            failure.message = f"the merge with the remote was rejected, nothing installed: {failure.message}"
        raise
    with write_lock(ws.layout, LOCK_TIMEOUT):
        head = head_id(ws.root)
        if head != remote_head and not _is_ancestor(repo, remote_head, head):
            # Nothing to install (the remote's changes were here already): still
            # record the merge, so the remote's history is part of ours.
            commit_paths(ws.root, [], f"memory: sync merge of {remote_head[:12]}", merge_parent=remote_head)
    report["merged"] = True
    report["conflicts"] = state.get("conflicts", [])
    return report


def plan_merge(repo, local: str | None, remote: str) -> dict[str, Any]:
    """The topic and archive changes that merge ``remote`` into ``local``."""
    from dulwich.graph import find_merge_base

    bases = find_merge_base(repo, [local.encode(), remote.encode()]) if local else []
    base = bases[0].decode() if bases else None
    fast_forward = local is None or base == local
    paths = _changed_paths(repo, base, local, remote)
    read = {name: _read(repo, commit, paths) for name, commit in (("base", base), ("local", local),
                                                                   ("remote", remote))}
    topics = {name: {p: decode_topic(d) for p, d in files.items() if p.startswith(TOPICS + "/")}
              for name, files in read.items()}
    sides = {name: Side.read(texts) for name, texts in topics.items()}
    outcome, topic_changes = merge(sides["base"], sides["local"], sides["remote"], local or "", remote)
    archives = {}
    for rel in sorted(p for p in paths if p.startswith(SOURCES + "/")):
        merged = union(rel, read["local"].get(rel), read["remote"].get(rel))
        if merged is not None and merged != read["local"].get(rel):
            archives[rel] = merged
    return {"topics": topic_changes, "archives": archives, "ids": set(outcome.final), "conflicts": outcome.conflicts,
            "fast_forward": fast_forward, "remote_numbers": _recent_numbers(repo, remote),
            "remote_days": _timeline_days(repo, remote) if fast_forward else []}


def _changed_paths(repo, base: str | None, local: str | None, remote: str) -> set[str]:
    """Paths under topics/ and sources/ that differ between the base and either side."""
    from dulwich.diff_tree import tree_changes

    store = repo.object_store
    base_tree = store[base.encode()].tree if base else None
    out: set[str] = set()
    for commit in (local, remote):
        if commit is None:
            continue
        for change in tree_changes(store, base_tree, store[commit.encode()].tree):
            for entry in (change.old, change.new):
                if entry is not None and entry.path is not None:
                    path = entry.path.decode("utf-8")
                    if path.startswith((TOPICS + "/", SOURCES + "/")):
                        out.add(path)
    return out


def _read(repo, commit: str | None, paths: set[str]) -> dict[str, bytes]:
    from dulwich.object_store import tree_lookup_path

    if commit is None:
        return {}
    store = repo.object_store
    tree = store[commit.encode()].tree
    out: dict[str, bytes] = {}
    for path in paths:
        try:
            _mode, sha = tree_lookup_path(store.__getitem__, tree, path.encode("utf-8"))
        except KeyError:
            continue
        obj = store[sha]
        if obj.type_name == b"blob":
            out[path] = obj.data
    return out


def _recent_numbers(repo, commit: str) -> dict[str, int]:
    """``{memory_id: created_order}`` from the commit's recent_events.jsonl."""
    data = _read(repo, commit, {RECENT}).get(RECENT, b"")
    out: dict[str, int] = {}
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            item = json.loads(line)
            out[str(item["memory_id"])] = int(item["created_order"])
        except (ValueError, KeyError, TypeError):
            continue
    return out


_TIMELINE_ID = re.compile(r"#\^([0-9a-f]{8})\)\)$", re.MULTILINE)


def _timeline_days(repo, commit: str) -> list[list[str]]:
    """The memory IDs of each day file of the commit's timeline, in the order the file lists them."""
    from dulwich.object_store import iter_tree_contents

    store = repo.object_store
    days = []
    for entry in iter_tree_contents(store, store[commit.encode()].tree):
        if entry.path.startswith(TIMELINE.encode() + b"/") and entry.path.endswith(b".md"):
            days.append(_TIMELINE_ID.findall(store[entry.sha].data.decode("utf-8", "replace")))
    return days


def _merge_order(runtime, remote_numbers: dict[str, int], remote_days: list[list[str]], fast_forward: bool,
                 created: list[str]) -> None:
    """Creation order after a sync, so both machines render the same views.

    Fast-forward (the tree becomes the remote's): the order the remote's
    views were rendered with, as far as they show it — the numbers its
    recent view lists, and each timeline day's order for the records below
    them (numbered under the lowest listed) — so the views rendered here are
    the remote's byte for byte and the sync adds no commit. Merge: the
    records new here keep the slots the transaction gave them, in the
    remote's order (the other machine then fast-forwards to the merge).
    Orders are merged, never reset.
    """
    order = runtime.created_order
    if fast_forward:
        listed = {i: n for i, n in remote_numbers.items() if i in order and n >= 0}
        rest = [i for i in order if i not in listed]  # oldest first
        position = {memory_id: slot for slot, memory_id in enumerate(rest)}
        for day in remote_days:
            ids = [i for i in day if i in position]
            for slot, memory_id in zip(sorted(position[i] for i in ids), ids):
                rest[slot] = memory_id
        start = max(0, min(listed.values(), default=len(rest)) - len(rest))
        numbers = {**{memory_id: start + k for k, memory_id in enumerate(rest)}, **listed}
        runtime.created_order = dict(sorted(numbers.items(), key=lambda item: item[1]))
        return
    fresh = [i for i in created if i in order]
    slots = sorted(order[i] for i in fresh)
    for memory_id in fresh:
        del order[memory_id]
    ranked = sorted(fresh, key=lambda i: (remote_numbers.get(i, 1 << 60), slots[fresh.index(i)]))
    for slot, memory_id in zip(slots, ranked):
        order[memory_id] = slot
    runtime.created_order = dict(sorted(order.items(), key=lambda item: item[1]))


def _as_data_error(failure: MemoryFailure) -> MemoryFailure:
    if failure.code in _USAGE:
        return MemoryFailure(FailureCode.INVALID_TOPIC_FORMAT,
                             f"the remote tree is not a valid memory tree: {failure.message}",
                             details={**failure.details, "rule": "remote-tree"})
    return failure


def _repo(ws: "MemoryWorkspace"):
    from dulwich.repo import Repo

    return Repo(str(ws.root))


def _is_ancestor(repo, ancestor: str, descendant: str | None) -> bool:
    from dulwich.graph import can_fast_forward

    if descendant is None:
        return False
    return can_fast_forward(repo, ancestor.encode(), descendant.encode())
