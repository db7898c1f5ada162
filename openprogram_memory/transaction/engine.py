"""``staged_edit``: the one transaction every change goes through (architecture §3).

lock → baseline (read from the installed tree *before* staging) → staging
copy → edit → normalize → validate → pre-install callback → atomic install
(with derived views and runtime state in the same unit) → git commit.
A rejected edit changes no byte of the workspace and not its revision.
"""

from __future__ import annotations

import hashlib
import itertools
import os
from typing import Any, Callable, Iterable, Mapping

from ..failures import FailureCode, MemoryFailure
from ..fsutil import atomic_write_json, read_json
from ..topics.model import encode_topic, parse_topic
from ..topics.normalize import NormalizeContext, has_records, normalize_doc, prune_empty
from ..topics.ids import source_anchor
from ..sources.archive import SourceMessage, archive_relpath_for, parse_archive, plan_append
from ..views.derived import derived_views, timeline_entries
from ..workspace.layout import RUNTIME, TIMELINE, is_derived
from ..workspace.state import EDIT_LOCK_TIMEOUT, REVISIONS, WRITER_LOCK_TIMEOUT, RuntimeState, write_lock
from ..views.facts import record_install
from ..workspace import watch
from ..workspace.scan import TreeScan, signature
from ..workspace.caches import FileSummary, SourceLookup, TreeState, reresolved, summarize
from . import gitcheck, ledger
from .ledger import needs_recovery
from .history import commit_paths, tree_differences
from .install import StepHook, install, recover
from .host import Workspace
from .result import InstallPlan, Policy, TxResult
from .staging import NOT_TEXT, Staging
from . import validate
from .update_request import check_envelope_values

__all__ = ["InstallPlan", "Policy", "TxResult", "staged_edit", "needs_recovery", "recover_workspace",
           "commit_pending", "held_failure", "MEMORY_AREAS", "EDIT_LOCK_TIMEOUT", "WRITER_LOCK_TIMEOUT"]

GIT_PENDING = ledger.GIT_PENDING
# The rule of the failure when a file the install would replace changed since the transaction's stat pass.
CHANGED_ON_DISK = "changed-on-disk"
# What a resync of a damaged ledger compares with HEAD.
MEMORY_AREAS = ("topics", "sources", "timeline", "core.md", "recent_events.jsonl", "relations.json")
# The second parent of the commit that follows a sync merge's install; kept
# on disk so a commit completed after a crash is still the two-parent merge.
GIT_MERGE_PARENT = "git-merge-parent"


def source_fingerprint(ws: Workspace, scanned: dict | None = None) -> tuple:
    """Paths and signatures of every archive file (the append-only check)."""
    sigs = ws.cache.sources.scan() if scanned is None else scanned
    return tuple(sorted(sigs.items()))


def _reject(message: str, rule: str, code: FailureCode = FailureCode.INVALID_TOPIC_FORMAT, **details: Any) -> MemoryFailure:
    return MemoryFailure(code, message, details={"rule": rule, **details})


def staged_edit(
    ws: Workspace,
    edit: Callable[[Staging], Any],
    *,
    policy: Policy,
    lock_timeout: float = 5.0,
    base_revision: str | None = None,
    allowed_deletes: frozenset[str] = frozenset(),
    message: str = "memory: edit",
    runtime_update: Callable[[RuntimeState, TxResult], None] | None = None,
    step: StepHook | None = None,
    force_views: bool = False,
    deletes_need_base: bool = False,
    merge_parent: str | None = None,
    stamp: bool = False,
    views_from: Callable[[TreeState], TreeState] | None = None,
    held: tuple[str, str] | None = None,
) -> TxResult:
    """Run ``edit`` on a staging copy and install the result whole, or nothing.

    ``force_views`` rebuilds every derived view (and installs even when no topic changed); ``stamp`` only installs
    even when no topic changed (the runtime update has something to record), with the views the edit touched;
    ``views_from`` maps the installed tree to the one the views render (``adopt.rebuild_views``).
    ``deletes_need_base``: a caller-written whole file or patch may remove records only against the
    ``base_revision`` it read, so a stale read never deletes what it did not see. ``merge_parent`` (``memory
    sync``) makes the commit a two-parent merge. ``held`` (whose change, what next): a change to a topic file a
    person left invalid or unreadable, whose bytes are in no commit, is refused (:func:`held_failure`).
    """
    check_envelope_values(base_revision, message)
    with write_lock(ws.layout, lock_timeout):
        recover_workspace(ws)
        # the one stat pass of this transaction (architecture §2.5)
        tree_scan = watch.tree_scan(ws.root, keep=True, auto_watch=ws.settings["memory.fs_watch"])
        before = REVISIONS.revision(ws.root, tree_scan) if base_revision is not None else None
        if base_revision is not None and base_revision != before:
            raise MemoryFailure(
                FailureCode.CONCURRENT_UPDATE,
                f"memory changed since revision {base_revision} (now {before}); reload and retry",
                retryable=True,
                details={"revision": before},
            )
        baseline = ws.cache.snapshot(tree_scan)  # before the copy, never after it
        fingerprint = source_fingerprint(ws, baseline.source_sigs)
        staging = Staging(ws.root, ws.cache, tree_scan.topics())
        outer = ws.cache.pin(baseline)
        try:
            outcome, left_alone = _edited(ws, staging, edit, held)
            result = _validate_and_install(
                ws, staging, baseline, fingerprint, before, policy, allowed_deletes, message, runtime_update, step,
                force_views, deletes_need_base, merge_parent, tree_scan, stamp, views_from,
            )
            result.extra.update(outcome if isinstance(outcome, dict) else {})
            result.extra.update({"warnings": [*result.extra.get("warnings", []), *left_alone]} if left_alone else {})
            if result.scan is not None:  # (last: this transaction's own commit is behind it)
                watch.installed(ws.root, tree_scan, result.scan)
            return result
        finally:
            ws.cache.pin(outer)
            staging.cleanup()


def _validate_and_install(
    ws: Workspace,
    staging: Staging,
    baseline: TreeState,
    fingerprint: tuple,
    before: str | None,
    policy: Policy,
    allowed_deletes: frozenset[str],
    message: str,
    runtime_update: Callable[[RuntimeState, TxResult], None] | None,
    step: StepHook | None,
    force_views: bool,
    deletes_need_base: bool,
    merge_parent: str | None,
    tree_scan: TreeScan,
    stamp: bool = False,
    views_from: Callable[[TreeState], TreeState] | None = None,
) -> TxResult:
    """Normalize and validate the staged edit against ``baseline``, then install it whole and commit."""
    changes = staging.effective_changes()
    archives = check_archive_union(ws, staging.archive_files)
    if not changes and not archives and not force_views and not stamp:
        return TxResult(revision=before or REVISIONS.revision(ws.root, tree_scan), scan=tree_scan)
    topic_bytes, new_tree = _stage_topics(ws, staging, baseline, changes, archives)
    if source_fingerprint(ws) != fingerprint:
        raise _reject("the source archive changed during the edit; sources/ is append-only",
                      "append-only", FailureCode.APPEND_ONLY_REQUIRED)
    new_ids = new_tree.id_files()
    old_changed_ids = {i for rel in topic_bytes if rel in baseline.files for i in baseline.files[rel].ids}
    lost = sorted(i for i in old_changed_ids if i not in new_ids)
    validate.raise_first(itertools.chain(
        validate.duplicate_id_violations(new_tree, topic_bytes),
        validate.lost_id_violations(policy, lost, allowed_deletes, baseline, new_tree, topic_bytes),
        validate.delete_needs_base_violations(lost, before is not None or not deletes_need_base),
        validate.dangling_link_violations(new_tree, baseline, set(topic_bytes))))
    result = _tx_result(baseline, new_tree, topic_bytes, lost, before)
    runtime = _runtime_after(ws, baseline, new_tree, topic_bytes, lost)
    if runtime_update is not None:
        runtime_update(runtime, result)
    files = _files_to_install(ws, staging, baseline, new_tree, topic_bytes, archives, runtime, result, force_views,
                              views_from)
    if not files:
        result.revision = before or REVISIONS.revision(ws.root, tree_scan)
        result.scan = tree_scan
        return result  # a rebuild that found every view current
    plan = InstallPlan(files=files, changed_topics=result.changed_files, baseline_revision=before)
    if ws.pre_install is not None:
        ws.pre_install(plan)  # a failure here means no install
    _install(ws, tree_scan, files, merge_parent, step)
    runtime.remember(ws.layout)
    # the revision and the next snapshot: this transaction's stat pass, with what it wrote looked at again
    result.scan = tree_scan.updated(files)
    ws.cache.adopt(new_tree, list(topic_bytes), result.scan)
    result.tree = new_tree
    record_install(ws.root, new_tree, topic_bytes, result.core)  # the manifest: what status counts from
    result.memory_committed = True
    _git_commit(ws, message, result)
    result.revision = REVISIONS.revision(ws.root, result.scan)
    return result


def _edited(ws: Workspace, staging: Staging, edit: Callable[[Staging], Any],
            held: tuple[str, str] | None) -> tuple[Any, list[str]]:
    """What ``edit`` on ``staging`` returns, and warnings of the held-back files it left alone; with ``held``
    (whose change, what next), refused (:func:`held_failure`) when it would change, remove or create a topic file
    a person left invalid or unreadable. A write of such a file that gives it its last committed version (what
    memory serves of it: a restore to a revision where it was the same) changes nothing memory holds, only the
    person's bytes: it is dropped, the file is left alone, and the warning says so."""
    outcome = edit(staging)
    if held is None:
        return outcome, []
    from ..workspace.caches import committed_text

    changes = staging.effective_changes()
    as_committed = {rel for rel, content in changes.items() if content is not None
                    and _held_problem(ws, rel) is not None and content == committed_text(ws.root, rel)}
    left_alone = sorted(rel for rel in as_committed if staging.installed_file(rel))  # (one deleted by hand, whose
    # deletion is held back, has no bytes of the person's to keep: it is written back, as the restore asks)
    for rel in left_alone:
        staging.keep(rel)
    refusal = held_failure(ws, [rel for rel in changes if rel not in as_committed], whose=held[0], then=held[1])
    if refusal is not None:
        raise refusal
    return outcome, _left_alone_warnings(ws, left_alone, held[0])


def _held_problem(ws: Workspace, rel: str, rejection: MemoryFailure | None = None) -> tuple[str, str, str] | None:
    """``(problem, why no change to it can be installed, fix)`` of topic file ``rel`` when a person left it invalid
    by hand or it cannot be read as text, or it would be made in a folder that cannot be opened; None when none
    of these (:func:`held_failure`)."""
    from ..workspace.caches import held_fix, unreadable_fix, unreadable_reason
    from .moves import move_fixes

    unreadable = ws.cache.unreadable.get(rel) or (
        rejection.details.get("problem") if rejection is not None and rejection.details.get("file") == rel
        and rejection.details.get("rule") in NOT_TEXT else None)
    if unreadable is None and rel not in ws.cache.invalid:
        try:
            os.stat(ws.root / rel, follow_symlinks=False)
        except PermissionError as exc:  # (a file to create in a folder that cannot be opened)
            unreadable = unreadable_reason(ws.root, rel, exc)
        except OSError:
            pass
    if unreadable is not None:  # (permission denied, not UTF-8: no change can be made to what cannot be read)
        return (unreadable, f"{rel} {unreadable}: no change to it can be installed",
                unreadable_fix(ws.root, rel, unreadable))
    problem = ws.cache.invalid.get(rel)
    if problem is not None:
        return (problem, f"{rel} {problem}: the file was edited outside the product and is not valid, so no change "
                "to it can be installed", held_fix(ws.root, rel, problem, move_fixes(ws)))
    return None


def _left_alone_warnings(ws: Workspace, rels: list[str], whose: str) -> list[str]:
    """One warning per held-back file (per folder, for one that cannot be opened) that ``whose`` edit left alone,
    in the words of ``status``, and that it was left alone."""
    from ..workspace.caches import unreadable_problem

    out, named = [], set()
    for rel in rels:
        found = _held_problem(ws, rel)
        assert found is not None
        problem, _why, fix = found
        name, message, _fix = (unreadable_problem(ws.root, rel, problem) if rel in ws.cache.unreadable
                               else (rel, problem, fix))
        if name in named:
            continue
        named.add(name)
        if name != rel:
            out.append(f"{name}/ {message}; left alone: {whose} edit changes no file in it — {fix}")
        else:
            out.append(f"{rel} {problem}; left alone: {whose} edit does not change it — {fix}")
    return out


def held_failure(ws: Workspace, rels: Iterable[object], *, whose: str, then: str,
                 rejection: MemoryFailure | None = None) -> MemoryFailure | None:
    """The refusal of a change to topic files ``rels`` when a person left one invalid by hand, or it cannot be read
    as text (permission denied, not UTF-8, a symlink: the fix is a ``chmod``, a re-save, a real file); None when
    none is.

    A topic edited outside the product that breaks a record rule (a paragraph typed without a citation) is never
    installed, and one that is not text is left out: its bytes are in no commit, so no change to that file may be
    installed either (a write or a removal could only "fix" or overwrite the person's text).
    ``WRITER_PRECONDITION_FAILED``, not retryable (exit 65): running it again changes nothing until the person fixes
    the file, so a cron job must not retry it as it retries a busy workspace (75). The message names every such
    file, its line and the fix ``status`` gives (:func:`~..workspace.caches.left_out_fix`); the first run after
    the fix goes through. ``whose`` names the refused change ("the writer's"), ``then`` what happens next;
    ``rejection``, the failure of a read that named an unreadable file the cache still holds. Judged on the cache
    as the transaction's baseline read it.
    """
    found: list[tuple[str, str, str, str]] = []  # (file, problem, why, fix)
    for rel in sorted({rel for rel in rels if isinstance(rel, str)}):
        held = _held_problem(ws, rel, rejection)
        if held is not None:
            found.append((rel, *held))
    if not found:
        return None
    if len(found) == 1:
        [(rel, problem, why, fix)] = found
        message = f"{why} (this is not {whose} edit) — {fix}; {then}"
    else:
        message = (f"{len(found)} topic files were left invalid or unreadable outside the product (this is not "
                   f"{whose} edit): " + "; ".join(f"{why} — {fix}" for _rel, _problem, why, fix in found)
                   + f"; {then}")
    details: dict[str, Any] = {"file": found[0][0], "problem": found[0][1],
                               "files": {rel: problem for rel, problem, _why, _fix in found}}
    if rejection is not None:
        details["rejection"] = rejection.to_json()
    return MemoryFailure(FailureCode.WRITER_PRECONDITION_FAILED, message, retryable=False, details=details)


def _install(ws: Workspace, tree_scan: TreeScan, files: dict[str, bytes | None], merge_parent: str | None,
             step: StepHook | None) -> None:
    """Install ``files`` whole (noted as pending for git first), if none changed since ``tree_scan``."""
    _unchanged_since_scan(ws, tree_scan, files)
    note_git_pending(ws, [rel for rel in files if rel != RUNTIME])
    if merge_parent is not None:
        _note_merge_parent(ws, merge_parent, files)
    install(ws.layout, files, step or (lambda _s: None))


def _unchanged_since_scan(ws: Workspace, tree_scan: TreeScan, files: dict[str, bytes | None]) -> None:
    """Every memory file the install is about to replace or remove is as this transaction's stat pass found it.

    A file changed since (by hand, by another tool; or before the pass, where a file watch had not reported
    it yet) was read as it was, so installing would overwrite the change: fail with nothing written, and make
    the next pass a full one (a retry sees the file as it is)."""
    for rel in files:
        if rel.startswith(".scriptorium/"):
            continue  # (this process's own state, read fresh under the lock)
        seen = tree_scan.files.get(rel)
        now = signature(ws.layout.path(rel))
        if now != (seen[1] if seen is not None else None):
            watch.forget_pass(ws.root)
            raise MemoryFailure(
                FailureCode.CONCURRENT_UPDATE,
                f"{rel} changed on disk while this change was being made; nothing was written; retry",
                retryable=True, details={"file": rel, "rule": CHANGED_ON_DISK})


def _stage_topics(ws: Workspace, staging: Staging, baseline: TreeState, changes: dict[str, str | None],
                  archives: dict[str, list]) -> tuple[dict[str, bytes | None], TreeState]:
    """Each changed topic normalized and held to the record rules: its new bytes, and the tree it makes."""
    sources = OverlaySources(ws.cache.sources, {**staging.new_sources,
                                                **{m.source_id: m for batch in archives.values() for m in batch}})
    baseline_ids = baseline.id_files()
    ctx = NormalizeContext(
        baseline_ids=_KnownIds(baseline_ids, staging.known_ids) if staging.known_ids else baseline_ids,
        taken_ids=set(),
        lookup_source=lambda sid: sources.lookup(archive_relpath_for(sid), source_anchor(sid)) if "/" in sid else None,
        lookup_anchor=sources.lookup,
    )
    replaced: dict[str, FileSummary | None] = {}
    topic_bytes: dict[str, bytes | None] = {}
    for rel, content in sorted(changes.items()):
        if _has_symlink(ws, rel):
            raise _reject(f"{rel} is a symlink; topic files must be regular files", "symlink", file=rel)
        doc = None if content is None else parse_topic(content, rel)
        if doc is not None:
            normalize_doc(doc, ctx)
            validate.check_strict(doc, sources.lookup, lambda target: _has_symlink(ws, target))
            prune_empty(doc)
        if doc is None or not has_records(doc):  # deleted, or emptied: the file goes
            replaced[rel] = None
            if content is None or (ws.root / rel).exists():
                topic_bytes[rel] = None
            continue
        text = doc.render()
        replaced[rel] = summarize(rel, text, sources)
        topic_bytes[rel] = encode_topic(text, _read_bytes(ws.root / rel))
    for rel, summary in baseline.files.items() if archives else ():
        # a trust frame (or a sync union) changes what an unchanged topic's citations find: the core render,
        # search and every view read the new trust state from the tree this edit installs
        again = None if rel in replaced else reresolved(summary, sources, archives)
        if again is not None:
            replaced[rel] = again
    return topic_bytes, baseline.with_files(replaced)


def _tx_result(baseline: TreeState, new_tree: TreeState, topic_bytes: dict[str, bytes | None], lost: list[str],
               before: str | None) -> TxResult:
    """What the transaction reports: files, new block and evidence IDs, deletions and what they cited."""
    new_files, baseline_ids = new_tree.files, baseline.id_files()
    changed = [rel for rel in sorted(topic_bytes) if rel in new_files]
    old_labels = {d for rel in topic_bytes if rel in baseline.files for d in baseline.files[rel].doc.definitions()}
    new_labels = [d for rel in changed for d in new_files[rel].doc.definitions()]
    return TxResult(
        revision=before or "",
        changed_files=sorted(topic_bytes),
        block_ids=[i for rel in changed for i in new_files[rel].ids if i not in baseline_ids],
        evidence_ids=sorted({label for label in new_labels if label not in old_labels}),
        deleted_ids=lost,
        deleted_sources=sorted({source for i in lost if (gone := baseline.find(i)) is not None
                                for source in gone.source_ids}),
    )


def _runtime_after(ws: Workspace, baseline: TreeState, new_tree: TreeState, topic_bytes: dict[str, bytes | None],
                   lost: list[str]) -> RuntimeState:
    """runtime.json as it installs with this edit: creation order without the deleted, with the new."""
    runtime = RuntimeState.load(ws.layout)
    for block_id in lost:
        runtime.created_order.pop(block_id, None)
    new_ids = new_tree.id_files()
    if not runtime.created_order and baseline.id_files():
        runtime.assign_order([i for r in baseline.records() for i in r.ids if i in new_ids])
    runtime.assign_order([r.memory_id for rel in sorted(topic_bytes) if rel in new_tree.files
                          for r in new_tree.files[rel].records])
    return runtime


def _files_to_install(ws: Workspace, staging: Staging, baseline: TreeState, new_tree: TreeState,
                      topic_bytes: dict[str, bytes | None], archives: dict[str, list], runtime: RuntimeState,
                      result: TxResult, force_views: bool,
                      views_from: Callable[[TreeState], TreeState] | None = None) -> dict[str, bytes | None]:
    """Topics, the derived views they change, archive appends and replacements, runtime.json: one unit."""
    days = None if force_views else {entry[0] for rel in topic_bytes for tree in (baseline, new_tree)
                                     if rel in tree.files for entry in timeline_entries(tree.files[rel])}
    shown = new_tree if views_from is None else views_from(new_tree)
    views, result.core = derived_views(shown, runtime.created_order, ws.settings["memory.core.budget_tokens"],
                                       ws.settings["memory.recent.limit"], days)
    files = dict(topic_bytes)
    files.update(_changed_views(ws, views, full=days is None))
    cited = {sid for rel in topic_bytes if rel in new_tree.files for r in new_tree.files[rel].records
             for sid in r.source_ids}
    appended = plan_append(ws.root, [m for sid, m in staging.new_sources.items() if sid in cited],
                           ws.cache.sources.parse_bytes)
    if set(appended) & set(archives):
        raise _reject("an edit cannot both append to and replace one archive file", "append-only",
                      FailureCode.APPEND_ONLY_REQUIRED)
    files.update({rel: new for rel, (_old, new) in appended.items()})
    files.update({rel: staging.archive_files[rel] for rel in archives})
    result.derived_files = sorted(rel for rel in files if is_derived(rel))
    runtime_bytes = runtime.to_text().encode("utf-8")  # (the order's encoding is kept: this costs what it added)
    if _read_bytes(ws.layout.path(RUNTIME)) != runtime_bytes:
        files[RUNTIME] = runtime_bytes
    return files


def check_archive_union(ws: Workspace, archive_files: dict[str, bytes]) -> dict[str, list]:
    """Archive files an edit replaces whole (``memory sync``'s union).

    The append-only rule at the frame level: the new file parses whole as a
    v2 archive and holds every installed frame byte for byte (frames may be
    added and ordered differently, none may change or vanish). Returns the
    frames of each file that differs from the installed one.
    """
    out: dict[str, list] = {}
    for rel, data in sorted(archive_files.items()):
        if not rel.startswith("sources/") or not rel.endswith(".md") or ".." in rel.split("/") or _has_symlink(ws, rel):
            raise _reject(f"{rel} is not an archive path", "append-only", FailureCode.APPEND_ONLY_REQUIRED, file=rel)
        old = _read_bytes(ws.layout.path(rel))
        if old == data:
            continue
        try:
            new = parse_archive(data.decode("utf-8"))
        except UnicodeDecodeError:
            new = None
        if new is None or new.damaged or new.legacy or not new.frames:
            raise _reject(f"{rel}: the new archive does not parse as a whole v2 archive", "append-only",
                          FailureCode.APPEND_ONLY_REQUIRED, file=rel)
        frames = {m.anchor: m.frame() for m in new.entries}
        if len(frames) != len(new.entries):
            raise _reject(f"{rel}: a source id appears twice", "append-only", FailureCode.APPEND_ONLY_REQUIRED, file=rel)
        orphan = next((m.source_id for m in new.changes if source_anchor(m.source_id) not in frames), None)
        if orphan is not None:
            raise _reject(f"{rel}: a trust frame names {orphan}, which this archive does not hold", "append-only",
                          FailureCode.MISSING_SOURCE, file=rel, source_id=orphan)
        installed = parse_archive(old.decode("utf-8", "replace")).entries if old else []
        for message in installed:
            if frames.get(message.anchor) != message.frame():
                raise _reject(f"{rel}: frame {message.source_id} would change or vanish; sources/ is append-only",
                              "append-only", FailureCode.APPEND_ONLY_REQUIRED, file=rel, source_id=message.source_id)
        out[rel] = new.current()  # with the trust state its trust frames decide
    return out


class _KnownIds:
    """The baseline's IDs plus IDs an edit brings from another tree (sync), kept as written."""

    def __init__(self, baseline: Mapping[str, list[str]], known: set[str]) -> None:
        self.baseline, self.known = baseline, known

    def __contains__(self, block_id: object) -> bool:
        return block_id in self.baseline or block_id in self.known


class OverlaySources:
    """Installed archive plus the sources this edit declares."""

    def __init__(self, base: SourceLookup, staged: dict[str, SourceMessage]) -> None:
        self.base = base
        self.staged = {(archive_relpath_for(m.source_id), m.anchor): m for m in staged.values()}

    def lookup(self, rel: str, anchor: str, check: bool = True) -> SourceMessage | None:
        return self.staged.get((rel, anchor)) or self.base.lookup(rel, anchor, check)


def note_git_pending(ws: Workspace, paths: list[str],
                     appends: dict[str, tuple[int, int]] | None = None) -> None:
    """Note paths (and archive appends) in the git-pending ledger *before* they change."""
    ledger.note(ws.layout, paths, appends)


def _read_bytes(path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _has_symlink(ws: Workspace, rel: str) -> bool:
    path = ws.root
    for part in rel.split("/"):
        path = path / part
        if path.is_symlink():
            return True
    return False


def _changed_views(ws: Workspace, views: dict[str, str | None], full: bool) -> dict[str, bytes | None]:
    """Only the derived files whose bytes differ (and, on a full rebuild, stale days)."""
    out: dict[str, bytes | None] = {}
    timeline = ws.layout.path(TIMELINE)
    if full and timeline.is_dir():
        for dirpath, _dirs, files in os.walk(timeline):
            for name in files:
                rel = os.path.relpath(os.path.join(dirpath, name), ws.root).replace(os.sep, "/")
                views.setdefault(rel, None)
    for rel, text in views.items():
        path = ws.layout.path(rel)
        if text is None:
            if path.exists():
                out[rel] = None
            continue
        data = text.encode("utf-8")
        try:
            if path.read_bytes() == data:
                continue
        except OSError:
            pass
        out[rel] = data
    return out


def _git_commit(ws: Workspace, message: str, result: TxResult) -> list[str]:
    """Commit after install; a failure is reported, never disguised as a rollback.

    The paths were noted as pending before the install, so a commit that
    fails (or a process killed before it) is completed by the next one.
    Returns notes about repairs made on the way (dropped ledger entries, a resync).
    """
    pending = ledger.load(ws.layout)
    notes = [f"dropped unsafe path {rel} from {GIT_PENDING}" for rel in pending.dropped]
    paths = set(pending.paths)
    try:
        if pending.resync:
            paths.update(tree_differences(ws.root, MEMORY_AREAS))
            notes.append(f"{GIT_PENDING} was damaged; committed every difference between the memory tree and HEAD")
        result.commit = commit_paths(ws.root, sorted(paths), message, _installed_merge_parent(ws))
        result.git_committed = True
        ledger.clear(ws.layout)
        ws.layout.state(GIT_MERGE_PARENT).unlink(missing_ok=True)
    except MemoryFailure as failure:
        result.git_committed = False
        result.git_error = failure.message
        result.git_code = failure.code.value
    return notes


def _note_merge_parent(ws: Workspace, merge_parent: str, files: dict[str, bytes | None]) -> None:
    """Remember the merge's second parent with the digests of what the install writes."""
    digests = {rel: None if data is None else hashlib.sha256(data).hexdigest() for rel, data in files.items()}
    atomic_write_json(ws.layout.state(GIT_MERGE_PARENT), {"parent": merge_parent, "files": digests})


def _installed_merge_parent(ws: Workspace) -> str | None:
    """The noted merge parent, if the install it belongs to is on disk (not rolled back)."""
    noted = read_json(ws.layout.state(GIT_MERGE_PARENT), None)
    if not isinstance(noted, dict) or not isinstance(noted.get("parent"), str):
        return None
    for rel, digest in (noted.get("files") or {}).items():
        data = _read_bytes(ws.layout.path(rel))
        if (None if data is None else hashlib.sha256(data).hexdigest()) != digest:
            return None  # the install was rolled back: this commit must not claim the merge
    return noted["parent"]


def commit_pending(ws: Workspace, message: str) -> TxResult:
    """Commit every path noted as pending (archive appends, an interrupted commit)."""
    result = TxResult(revision="")
    _git_commit(ws, message, result)
    return result


def recover_workspace(ws: Workspace, check_index: bool = False) -> list[str]:
    """Under the write lock: finish or roll back an interrupted install, clear what a crash left in git,
    cut torn archive appends back, and commit what is pending. Returns what it did."""
    notes: list[str] = []
    if not needs_recovery(ws, check_index):
        return notes
    outcome = recover(ws.layout)
    if outcome:
        notes.append(f"an interrupted install was {outcome}")
    pending_exists = ledger.ledger_file(ws.layout).exists()
    removed = gitcheck.remove_locks(gitcheck.stale_locks(ws.layout.git, deep=pending_exists))
    if removed:
        notes.append("removed stale git lock file(s) left by a killed process: " + ", ".join(sorted(set(removed))[:5]))
    if gitcheck.index_damaged(ws.layout.git):
        gitcheck.rebuild_index(ws.root)
        notes.append("the git index was damaged; rebuilt it from HEAD")
    if pending_exists:
        pending = ledger.load(ws.layout)
        rolled = ledger.settle_appends(ws.layout, pending)
        if rolled:  # the archive cache notices the new sizes by signature
            notes.append("rolled back interrupted archive append(s): " + ", ".join(rolled))
        result = TxResult(revision="")
        notes += _git_commit(ws, "memory: commit changes left by an interrupted transaction", result)
        if result.git_error:
            notes.append(f"{result.git_code}: {result.git_error}")
    return notes
