"""``staged_edit``: the one transaction every change goes through (architecture §3).

lock → baseline (read from the installed tree *before* staging) → staging
copy → edit → normalize → validate → pre-install callback → atomic install
(with derived views and runtime state in the same unit) → git commit.
A rejected edit changes no byte of the workspace and not its revision.
"""

from __future__ import annotations

import difflib
import hashlib
import os
from typing import Any, Callable

from ..failures import FailureCode, MemoryFailure
from ..fsutil import atomic_write_json, read_json
from ..topics.model import parse_topic
from ..topics.normalize import NormalizeContext, check_strict, has_records, normalize_doc, prune_empty
from ..topics.ids import source_anchor
from ..sources.archive import SourceMessage, archive_relpath_for, parse_archive, plan_append
from ..views.derived import derived_views, timeline_entries
from ..workspace.layout import RUNTIME, TIMELINE, is_derived
from ..workspace.state import REVISIONS, RuntimeState, write_lock
from ..workspace.tree import FileSummary, RecordInfo, SourceLookup, TreeState, summarize
from . import gitcheck, ledger
from .history import commit_paths, tree_differences
from .install import StepHook, install, recover
from .host import Workspace
from .result import InstallPlan, Policy, TxResult
from .staging import Staging
from .update_request import check_envelope_values

__all__ = ["InstallPlan", "Policy", "TxResult", "staged_edit", "needs_recovery", "recover_workspace",
           "commit_pending", "MEMORY_AREAS", "EDIT_LOCK_TIMEOUT", "WRITER_LOCK_TIMEOUT"]

# How long a change waits for the workspace write lock: a person's edit, and the background writer
# (which gives up sooner: CONCURRENT_UPDATE, retried on its next run).
EDIT_LOCK_TIMEOUT = 5.0
WRITER_LOCK_TIMEOUT = 1.0
GIT_PENDING = ledger.GIT_PENDING
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
) -> TxResult:
    """Run ``edit`` on a staging copy and install the result whole, or nothing.

    ``deletes_need_base``: a caller-written whole file or patch may remove
    records only against the ``base_revision`` it read, so a stale read never
    deletes what it did not see. ``merge_parent`` (``memory sync``) makes the
    commit a two-parent merge.
    """
    check_envelope_values(base_revision, message)
    with write_lock(ws.layout, lock_timeout):
        recover_workspace(ws)
        before = REVISIONS.revision(ws.root) if base_revision is not None else None
        if base_revision is not None and base_revision != before:
            raise MemoryFailure(
                FailureCode.CONCURRENT_UPDATE,
                f"memory changed since revision {base_revision} (now {before}); reload and retry",
                retryable=True,
                details={"revision": before},
            )
        baseline = ws.cache.snapshot()  # before the copy, never after it
        fingerprint = source_fingerprint(ws, baseline.source_sigs)
        staging = Staging(ws.root, ws.cache)
        try:
            outcome = edit(staging)
            result = _validate_and_install(
                ws, staging, baseline, fingerprint, before, policy, allowed_deletes, message, runtime_update, step,
                force_views, deletes_need_base, merge_parent,
            )
            if isinstance(outcome, dict):
                result.extra.update(outcome)
            return result
        finally:
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
    force_views: bool = False,
    deletes_need_base: bool = False,
    merge_parent: str | None = None,
) -> TxResult:
    changes = staging.effective_changes()
    archives = check_archive_union(ws, staging.archive_files)
    if not changes and not archives and not force_views:
        return TxResult(revision=before or REVISIONS.revision(ws.root))
    sources = OverlaySources(ws.cache.sources, {**staging.new_sources,
                                                **{m.source_id: m for batch in archives.values() for m in batch}})
    baseline_ids = baseline.id_files()
    ctx = NormalizeContext(
        baseline_ids=_KnownIds(baseline_ids, staging.known_ids) if staging.known_ids else baseline_ids,
        taken_ids=set(),
        lookup_source=lambda sid: sources.lookup(archive_relpath_for(sid), source_anchor(sid)) if "/" in sid else None,
        lookup_anchor=sources.lookup,
    )
    is_symlink = lambda rel: _has_symlink(ws, rel)  # noqa: E731

    replaced: dict[str, FileSummary | None] = {}
    topic_bytes: dict[str, bytes | None] = {}
    for rel, content in sorted(changes.items()):
        if _has_symlink(ws, rel):
            raise _reject(f"{rel} is a symlink; topic files must be regular files", "symlink", file=rel)
        if content is None:
            replaced[rel] = None
            topic_bytes[rel] = None
            continue
        doc = parse_topic(content, rel)
        normalize_doc(doc, ctx)
        check_strict(doc, sources.lookup, is_symlink)
        prune_empty(doc)
        if not has_records(doc):
            replaced[rel] = None
            if (ws.root / rel).exists():
                topic_bytes[rel] = None
            continue
        text = doc.render()
        replaced[rel] = summarize(rel, text, sources)
        topic_bytes[rel] = text.encode("utf-8")
    new_tree = baseline.with_files(replaced)
    new_files = new_tree.files

    if source_fingerprint(ws) != fingerprint:
        raise _reject("the source archive changed during the edit; sources/ is append-only",
                      "append-only", FailureCode.APPEND_ONLY_REQUIRED)
    new_ids = new_tree.id_files()
    for rel in topic_bytes:
        summary = new_files.get(rel)
        _check_unique_in_file(summary)
        for block_id in summary.ids if summary else []:
            if len(new_ids[block_id]) > 1:
                where = new_ids[block_id]
                raise _reject(f"block ID ^{block_id} appears in {' and '.join(where)}; memory IDs are unique across the tree",
                              "duplicate-id", file=rel, block_id=block_id)
    old_changed_ids = {i for rel in topic_bytes if rel in baseline.files for i in baseline.files[rel].ids}
    lost = sorted(i for i in old_changed_ids if i not in new_ids)
    _check_lost_ids(policy, lost, allowed_deletes, baseline, new_tree, topic_bytes)
    if lost and deletes_need_base and before is None:
        shown = ", ".join("^" + i for i in lost[:20]) + (" …" if len(lost) > 20 else "")
        raise MemoryFailure(
            FailureCode.INVALID_ARGUMENT,
            f"this change removes record(s) {shown}; removing records by whole file or patch needs the "
            "base_revision you read them at (a stale read must not delete what it never saw)",
            details={"rule": "delete-needs-base-revision", "deleted_ids": lost})
    _check_links(new_tree, baseline, set(topic_bytes))

    created = [i for rel in sorted(topic_bytes) if rel in new_files for i in new_files[rel].ids if i not in baseline_ids]
    old_labels = {d for rel in topic_bytes if rel in baseline.files for d in baseline.files[rel].doc.definitions()}
    new_labels = [d for rel in sorted(topic_bytes) if rel in new_files for d in new_files[rel].doc.definitions()]
    result = TxResult(
        revision=before or "",
        changed_files=sorted(topic_bytes),
        block_ids=created,
        evidence_ids=sorted({label for label in new_labels if label not in old_labels}),
        deleted_ids=lost,
        deleted_sources=sorted({source for i in lost if (gone := baseline.find(i)) is not None
                                for source in gone.source_ids}),
    )

    runtime = RuntimeState.load(ws.layout)
    for block_id in lost:
        runtime.created_order.pop(block_id, None)
    if not runtime.created_order and baseline_ids:
        runtime.assign_order([i for r in baseline.records() for i in r.ids if i in new_ids])
    runtime.assign_order([r.memory_id for rel in sorted(topic_bytes) if rel in new_files
                          for r in new_files[rel].records])
    if runtime_update is not None:
        runtime_update(runtime, result)

    if force_views:
        days = None  # a rebuild renders every day
    else:
        days = {entry[0] for rel in topic_bytes for tree in (baseline, new_tree) if rel in tree.files
                for entry in timeline_entries(tree.files[rel])}
    views, core = derived_views(new_tree, runtime.created_order, ws.settings["memory.core.budget_tokens"],
                                ws.settings["memory.recent.limit"], days)
    result.core = core
    files = dict(topic_bytes)
    files.update(_changed_views(ws, views, full=days is None))
    cited = {sid for rel in topic_bytes if rel in new_files for r in new_files[rel].records for sid in r.source_ids}
    used_sources = [m for sid, m in staging.new_sources.items() if sid in cited]
    appended = plan_append(ws.root, used_sources, ws.cache.sources.parse_bytes)
    if set(appended) & set(archives):
        raise _reject("an edit cannot both append to and replace one archive file", "append-only",
                      FailureCode.APPEND_ONLY_REQUIRED)
    files.update({rel: new for rel, (_old, new) in appended.items()})
    files.update({rel: staging.archive_files[rel] for rel in archives})
    result.derived_files = sorted(rel for rel in files if is_derived(rel))
    runtime_bytes = runtime.to_text().encode("utf-8")
    if _read_bytes(ws.layout.path(RUNTIME)) != runtime_bytes:
        files[RUNTIME] = runtime_bytes
    if not files:
        result.revision = before or REVISIONS.revision(ws.root)
        return result  # a rebuild that found every view current

    plan = InstallPlan(files=files, changed_topics=result.changed_files, baseline_revision=before)
    if ws.pre_install is not None:
        ws.pre_install(plan)  # a failure here means no install
    note_git_pending(ws, [rel for rel in files if rel != RUNTIME])
    if merge_parent is not None:
        _note_merge_parent(ws, merge_parent, files)
    install(ws.layout, files, step or (lambda _s: None))
    runtime.remember(ws.layout)
    ws.cache.adopt(new_tree, list(topic_bytes))
    result.memory_committed = True
    _git_commit(ws, message, result)
    result.revision = REVISIONS.revision(ws.root)
    return result


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
        frames = {m.source_id: m.frame() for m in new.frames}
        if len(frames) != len(new.frames):
            raise _reject(f"{rel}: a source id appears twice", "append-only", FailureCode.APPEND_ONLY_REQUIRED, file=rel)
        installed = parse_archive(old.decode("utf-8", "replace")).frames if old else []
        for message in installed:
            if frames.get(message.source_id) != message.frame():
                raise _reject(f"{rel}: frame {message.source_id} would change or vanish; sources/ is append-only",
                              "append-only", FailureCode.APPEND_ONLY_REQUIRED, file=rel, source_id=message.source_id)
        out[rel] = new.frames
    return out


class _KnownIds:
    """The baseline's IDs plus IDs an edit brings from another tree (sync), kept as written."""

    def __init__(self, baseline: dict, known: set[str]) -> None:
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


def _check_unique_in_file(summary: FileSummary | None) -> None:
    """One block ID names one record: twice in a file (or an alias equal to
    another record's ID) would make ``get`` answer with either."""
    if summary is None:
        return
    seen: dict[str, int] = {}
    for record in summary.records:
        for block_id in record.ids:
            if block_id in seen:
                raise _reject(f"{summary.path}:{record.line}: block ID ^{block_id} is already used at line "
                              f"{seen[block_id]}; memory IDs are unique", "duplicate-id", file=summary.path,
                              line=record.line, block_id=block_id)
            seen[block_id] = record.line


def _check_lost_ids(policy: Policy, lost: list[str], allowed: frozenset[str], baseline: TreeState,
                    new_tree: TreeState, topic_bytes: dict[str, bytes | None]) -> None:
    if not lost:
        return
    by_id: dict[str, RecordInfo] = {}
    for block_id in lost:
        found = baseline.find(block_id)
        assert found is not None  # lost IDs are read from the baseline
        by_id[block_id] = found
    if policy is Policy.HAND:
        deleted_files = {rel for rel, data in topic_bytes.items() if data is None}
        for block_id in lost:
            record = by_id[block_id]
            if record.topic not in deleted_files:
                raise _reject(
                    f"{record.topic}:{record.line}: block ID ^{block_id} was removed; a hand edit keeps every "
                    "block ID (put it back at the end of its paragraph, or delete the whole file)",
                    "lost-block-id", file=record.topic, line=record.line, block_id=block_id)
        return
    if policy is Policy.STRUCTURED:
        extra = [i for i in lost if i not in allowed]
        if extra:
            record = by_id[extra[0]]
            raise _reject(f"block ID ^{extra[0]} ({record.topic}) would vanish but no delete_record names it",
                          "lost-block-id", file=record.topic, block_id=extra[0])
        return
    # MODEL: records may be deleted, but an ID may not silently vanish from a
    # record that still exists (rewritten without its ID).
    known = baseline.id_files()
    fresh = [r for rel in topic_bytes if rel in new_tree.files for r in new_tree.files[rel].records
             if not any(i in known for i in r.ids)]
    for block_id in lost:
        old = by_id[block_id]
        for candidate in fresh:
            ratio = difflib.SequenceMatcher(None, old.content, candidate.content).ratio()
            if ratio >= 0.8:
                raise _reject(
                    f"{candidate.topic}:{candidate.line}: this record looks like ^{block_id} from {old.topic} "
                    f"rewritten without its block ID; keep ^{block_id} at the end of the paragraph",
                    "lost-block-id", file=candidate.topic, line=candidate.line, block_id=block_id)


def _dangling(tree: TreeState) -> set[tuple[str, str, str]]:
    """``(from file, to file, block id)`` of every link that does not resolve."""
    id_files = tree.id_files()
    return {(record.topic, topic, block_id) for summary in tree.files.values()
            for record, topic, block_id in summary.outbound if topic not in id_files.get(block_id, ())}


def _check_links(tree: TreeState, baseline: TreeState, changed: set[str]) -> None:
    """Every link of a file this edit writes resolves, and no link elsewhere stops resolving because of it.

    A link some other file already left dangling (a hand edit outside the
    product) blocks only the edits that write that file: `memory check`
    and `status` name it, and every unrelated change still goes through.
    """
    id_files = tree.id_files()
    before = _dangling(baseline) if baseline.files else set()
    for summary in tree.files.values():
        for record, topic, block_id in summary.outbound:
            if topic not in id_files.get(block_id, ()) and (
                    record.topic in changed or (record.topic, topic, block_id) not in before):
                raise _reject(
                    f"{record.topic}:{record.line}: link to {topic}#^{block_id} does not resolve "
                    "(links must point at an existing block ID in that file)",
                    "dangling-link", file=record.topic, line=record.line, block_id=block_id)


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


def needs_recovery(ws: Workspace, check_index: bool = False) -> bool:
    """Signs that a process died mid-change: an install journal, a ledger, git lock files
    (and, when asked, a damaged git index: that reads the whole index, so only at open)."""
    layout = ws.layout
    return (layout.install_dir.exists() or ledger.ledger_file(layout).exists()
            or bool(gitcheck.stale_locks(layout.git)) or (check_index and gitcheck.index_damaged(layout.git)))


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
