"""``MemoryWorkspace``: the library's door to one memory workspace.

Every change goes through :func:`staged_edit`; reads go through the cached
topic tree. The CLI, the HTTP API, the writer and the organizer all call
these methods.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from .config import Settings, load_settings
from .failures import FailureCode, MemoryFailure, problem_line
from .fsutil import ensure_dir, read_json, shell_args
from .workspace.layout import CORE_RENDER, CORE_TOPIC, SCRIPTORIUM, Layout, check_topic_path, resolves_inside
from .workspace.state import (EDIT_LOCK_TIMEOUT, REVISIONS, SCHEDULED_KINDS, RuntimeState, note_person_deletes,
                              lock_if_free, read_scheduled, workspace_id, write_lock)

if TYPE_CHECKING:
    from .workspace.caches import RecordInfo, TopicCache
    from .transaction.engine import InstallPlan, Policy, TxResult
    from .transaction.staging import Staging
    from .workspace.scan import TreeScan

# The engine, git history and patch code are imported by the methods that change memory: a read-only verb
# (status, search, core) never pays for them (issue: cold CLI processes, architecture §2.5).

MAX_CHANGES = 64
MAX_CHANGES_BYTES = 512 * 1024
# What ``core show --json`` and the MCP ``memory_core`` tool answer (architecture §12.1).
CORE_JSON_KEYS = ("canonical", "rendered", "effective", "inject", "tokens", "budget", "excluded_block_ids")


def require_workspace(settings: Settings) -> None:
    """Refuse (``MEMORY_NOT_FOUND``, with the fix) a state directory that holds no workspace.

    No verb but ``init`` creates one, so a mistyped ``--state`` or
    ``OPENPROGRAM_STATE`` is an error, not a new store beside the real one.
    Two ``stat`` calls: for verbs that only need to know, such as ``import``.
    """
    if not Layout(settings.memory_dir).exists():
        raise MemoryFailure(FailureCode.MEMORY_NOT_FOUND,
                            f"no memory workspace at {settings.memory_dir}; run `openprogram memory init`")


def require_state(settings: Settings) -> None:
    """Refuse (``MEMORY_NOT_FOUND``) a state directory a verb beside memory would write in (the session store,
    ``config set``) unless it is one: it holds a workspace or, where memory is off (``memory.backend=none`` never
    makes one, yet sessions and the configuration still serve), it exists.

    Without it ``session new`` or ``config set`` under a mistyped ``--state`` made a state directory of its own.
    """
    if settings.enabled:
        require_workspace(settings)
    elif not settings.state_dir.is_dir():
        raise MemoryFailure(FailureCode.MEMORY_NOT_FOUND,
                            f"no state directory at {settings.state_dir} (memory is off); fix the path")


class MemoryWorkspace:
    """One ``<state>/memory`` workspace."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.root = settings.memory_dir
        self.layout = Layout(self.root)
        self._cache: TopicCache | None = None
        # The trusted pre-install callback: set in code on the instance only.
        self.pre_install: Callable[[InstallPlan], None] | None = None
        # What opening repaired after a crash (reported by status as warnings).
        self.recovery_notes: list[str] = []
        # what a status right after the open may count from (once): the topics' signatures, the stat pass, the
        # status memo's key and what the memo says (views/facts.py)
        self.opened_scan: "tuple[dict[str, tuple[int, int, int]], TreeScan | None, str | None, Any] | None" = None

    @property
    def cache(self) -> "TopicCache":
        """The process-wide cache of this workspace's parsed tree (loaded when first needed: status does not)."""
        if self._cache is None:
            from .workspace.caches import topic_cache

            self._cache = topic_cache(self.root)
        return self._cache

    # -- opening -------------------------------------------------------
    @classmethod
    def open(cls, settings: Settings | None = None, *, create: bool = False,
             scan_all: bool = False) -> "MemoryWorkspace":
        """Open (or with ``create``, make) the workspace; repair what a crash left, adopt edits made outside.

        ``scan_all``: stat every memory file now, not only the topics (what ``status`` reads right after:
        one stat pass serves the adoption check, the counts and the revision)."""
        settings = settings or load_settings()
        if not settings.enabled:
            raise MemoryFailure(FailureCode.MEMORY_DISABLED, "memory is disabled (memory.backend=none)")
        ws = cls(settings)
        if not ws.layout.exists():
            if not create:
                require_workspace(settings)
            ws.init()
        elif os.stat(ws.layout.git).st_mode & 0o077:  # made by an older version, or git init by hand
            os.chmod(ws.layout.git, 0o700)
        from .transaction.adopt import adopt_out_of_band, changed_topics, upgrade_views
        from .transaction.ledger import needs_recovery
        from .workspace.scan import TreeScan, topic_files
        from .workspace.scratch import reclaim

        reclaimed = reclaim(ws.root)
        if reclaimed:
            ws.recovery_notes.append(f"removed {len(reclaimed)} staging/scratch director(ies) of a killed process")
        if needs_recovery(ws, check_index=True):
            from .transaction.engine import recover_workspace

            with write_lock(ws.layout, EDIT_LOCK_TIMEOUT):
                ws.recovery_notes += recover_workspace(ws, check_index=True)
        tree_scan = TreeScan(ws.root) if scan_all else None
        scanned = tree_scan.topics() if tree_scan is not None else topic_files(ws.root)
        key = memo = None
        if tree_scan is not None:
            from .views.facts import memo_facts, status_key

            key = status_key(ws.root, tree_scan)
            memo = memo_facts(ws.root, key, ws.settings["memory.core.budget_tokens"])
        # every file and the git index as a status found them, with no topic differing from the index then: no
        # edit made outside since (else edited in vim, Obsidian, a sync tool: valid edits land in history). A file
        # held back and since checked out again differs from nothing: judging no candidate lets it go
        if memo is None and (changed_topics(ws, scanned) or ws.cache.held):
            ws.recovery_notes += adopt_out_of_band(ws)
        else:
            ws.opened_scan = (scanned, tree_scan, key, memo)
        upgraded = upgrade_views(ws)  # (views an older version rendered: rendered again, once)
        if upgraded:
            ws.recovery_notes += upgraded
            ws.opened_scan = None  # (what it scanned is behind the commit the views made)
        return ws

    def init(self) -> bool:
        """Create the layout and git repository. Returns False if it existed."""
        from .transaction import history

        existed = self.layout.exists()
        for directory in (self.root.parent, self.root, self.layout.topics, self.layout.sources, self.layout.scriptorium):
            ensure_dir(directory)
        history.init_repo(self.root)
        workspace_id(self.layout, self.settings.sessions_dir, create=not existed)
        if not (self.layout.path(".scriptorium/runtime.json")).exists():
            from .fsutil import atomic_write_text

            atomic_write_text(self.layout.path(".scriptorium/runtime.json"), RuntimeState().to_text())
        return not existed

    @property
    def workspace_id(self) -> str:
        return workspace_id(self.layout, self.settings.sessions_dir)

    def revision(self) -> str:
        return REVISIONS.revision(self.root)

    # -- the transaction -----------------------------------------------
    def edit(self, fn: Callable[[Staging], Any], *, policy: Policy, lock_timeout: float = EDIT_LOCK_TIMEOUT,
             message: str = "memory: edit", **kwargs: Any) -> TxResult:
        """Run ``fn`` on a staging copy through the one transaction."""
        from .transaction.engine import staged_edit

        return staged_edit(self, fn, policy=policy, lock_timeout=lock_timeout, message=message, **kwargs)

    def update(
        self,
        *,
        memory_changes: list[dict] | None = None,
        changes: list[dict] | None = None,
        patch: str | None = None,
        sources: list[dict] | None = None,
        base_revision: str | None = None,
        commit_message: str | None = None,
        lock_timeout: float = EDIT_LOCK_TIMEOUT,
    ) -> TxResult:
        """The unified modify interface: exactly one of the three forms."""
        from .transaction.engine import Policy, staged_edit
        from .transaction.update_request import check_envelope_values, check_json_shape

        check_envelope_values(base_revision, commit_message)
        check_json_shape([memory_changes, changes, patch, sources])
        given = [name for name, value in (("memory_changes", memory_changes), ("changes", changes), ("patch", patch))
                 if value is not None]
        if len(given) != 1:
            raise MemoryFailure(FailureCode.INVALID_ARGUMENT,
                                "give exactly one of memory_changes, changes or patch" + (f" (got {', '.join(given)})" if given else ""))
        if memory_changes is not None:
            from .transaction.structured import apply_memory_changes

            result = _once_more_if_changed_on_disk(lambda: apply_memory_changes(
                self, memory_changes, sources=sources, base_revision=base_revision, commit_message=commit_message,
                lock_timeout=lock_timeout))
            note_person_deletes(self.layout, result)  # a caller's delete (apply, HTTP, MCP) sticks
            return result
        if sources:
            raise MemoryFailure(FailureCode.INVALID_ARGUMENT, "sources[] go with memory_changes only")
        if changes is not None:
            edit = _whole_file_edit(changes)
            message = commit_message or f"memory: apply {len(changes)} file change(s)"
        else:
            assert patch is not None  # exactly one of the three was given
            edit = _patch_edit(patch)
            message = commit_message or "memory: apply patch"
        result = _once_more_if_changed_on_disk(lambda: staged_edit(
            self, edit, policy=Policy.MODEL, lock_timeout=lock_timeout, base_revision=base_revision, message=message,
            deletes_need_base=True))
        note_person_deletes(self.layout, result)
        return result

    def write_topic(self, path: str, content: str, *, base_revision: str | None = None,
                    base_digest: str | None = None, message: str | None = None) -> TxResult:
        """A hand edit of one topic file (editor, web): strictest ID policy.

        ``base_digest`` (sha256 hex of the file as it was read) is a
        compare-and-set on this file alone, checked under the write lock:
        a background write to another file does not reject the edit.

        A file moved here outside the product (the file it came from gone from disk, its block IDs here) is
        an edit of the moved file: the old file's removal goes in with it, so the edit is validated against the
        tree without it (not as one block ID in two files).
        """
        from .transaction.moves import moved_outside
        from .transaction.engine import Policy, staged_edit

        rel = check_topic_path(path)

        def edit(staging: Staging) -> None:
            if base_digest is not None and file_digest(self.root / rel) != base_digest:
                raise MemoryFailure(FailureCode.CONCURRENT_UPDATE,
                                    f"{rel} changed since you read it; reload it and apply your edit again",
                                    details={"file": rel, "digest": file_digest(self.root / rel)})
            staging.write(rel, content)
            for old, new in moved_outside(self).items():
                if new == rel:
                    staging.delete_gone(old)

        result = _once_more_if_changed_on_disk(lambda: staged_edit(
            self, edit, policy=Policy.HAND, base_revision=base_revision, message=message or f"memory: edit {rel}"))
        note_person_deletes(self.layout, result)  # a delete in the editor or the web page sticks
        return result

    def adopt_hand_edits(self) -> list[str]:
        """Commit the valid topic edits made outside the product since this workspace was opened, as every open
        does, and say what was done: a long-lived process (``memory serve``) calls it before a change of its own,
        so an edit saved in another editor meanwhile lands as its own commit, not inside that change's.
        Takes the write lock (the caller must not hold it)."""
        from .transaction.adopt import adopt_out_of_band, changed_topics

        return adopt_out_of_band(self) if changed_topics(self) else []

    def rebuild(self) -> TxResult:
        """Regenerate every derived view from the topics (and commit them)."""
        from .transaction.adopt import rebuild_views

        return rebuild_views(self)

    def restore(self, rev: str) -> TxResult:
        """Make topics as they were at ``rev`` — as a new transaction.

        Every topic file is written (or removed). A file a person left invalid by hand, or not readable text (in a
        folder that cannot be opened too), whose bytes are in no commit, is left alone where ``rev`` holds it as
        its last commit does (the answer's ``warnings`` say so); where the restore would change, remove or create
        it, the restore is refused, naming every such file (:func:`~.transaction.engine.held_failure`), until they
        are fixed.
        """
        from .transaction import history
        from .transaction.engine import Policy, staged_edit

        commit = history.resolve_rev(self.root, rev).decode()
        old = history.files_at(self.root, commit, "topics/")

        def edit(staging: Staging) -> None:
            for rel in staging.list_topics():
                if rel not in old:
                    staging.delete(rel)
            for rel, data in old.items():
                staging.write(rel, data.decode("utf-8"))

        return staged_edit(self, edit, policy=Policy.MODEL, message=f"memory: restore topics from {commit[:12]}",
                           held=("the restore's", f"then run `openprogram memory restore {shell_args(rev)}` again"))

    def archive(self, messages: list) -> list[str]:
        """Append messages to the source archive (before a writer runs) and commit them.

        Content addressed: messages already archived add nothing. A failed
        git commit is retried with the next transaction.
        """
        from .sources.archive import archive_messages
        from .transaction.engine import commit_pending, note_git_pending, recover_workspace

        with write_lock(self.layout, EDIT_LOCK_TIMEOUT):
            recover_workspace(self)
            # noted before the bytes change, so a kill mid-append is cut back or committed by recovery
            changed = archive_messages(self.root, messages,
                                       before_write=lambda sizes: note_git_pending(self, list(sizes), sizes))
            if changed:
                from .workspace import watch

                kept = watch.kept_pass(self.root)  # (before note_change marks it stale)
                watch.note_change(self.root)
                commit_pending(self, f"memory: archive {len(messages)} source message(s)")
                if kept is not None:  # the next transaction's pass: this one with the appended files looked at again
                    watch.installed(self.root, kept, kept.updated(changed))
        return changed

    def trust(self, source_ids: list[str], trust_state: str, *, by: str = "owner", reason: str = "") -> TxResult:
        """Promote (``trusted``) or demote (``pending``) archived sources: a trust frame each, one commit.

        Records citing a promoted source become searchable and may enter the
        core; a demoted one leaves automatic context. Only a person should
        call this: agents (MCP, HTTP) have no route to it.
        """
        from .transaction.trust import change_trust

        return change_trust(self, source_ids, trust_state, by=by, reason=reason)

    def sources(self, trust_state: str | None = None) -> list[dict[str, Any]]:
        """Archived sources (with their current trust state and the records citing them), by archive path;
        ``trust_state`` filters."""
        cited: dict[str, list[str]] = {}
        for record in self.records():
            for source_id in record.source_ids:
                cited.setdefault(source_id, []).append(record.memory_id)
        out = []
        for rel, message in self.cache.sources.all_sources():
            if trust_state is None or message.trust_state == trust_state:
                out.append({"source": message.source_id, "archive": rel, "trust_state": message.trust_state,
                            "speaker": message.speaker, "timestamp": message.timestamp, "text": message.text,
                            "cited_by": cited.get(message.source_id, [])})
        return out

    # -- reading -------------------------------------------------------
    def tree(self):
        return self.cache.snapshot()

    def records(self) -> list[RecordInfo]:
        return self.tree().records()

    def get(self, memory_id: str) -> dict[str, Any]:
        """The record with ``memory_id`` (an alias works too)."""
        record = self.tree().by_id.get(str(memory_id).lstrip("^"))
        if record is None:
            raise MemoryFailure(FailureCode.MEMORY_NOT_FOUND, f"no record with block ID {memory_id!r}")
        return record_json(record)

    def read_topic(self, path: str) -> str:
        rel = check_topic_path(path)
        target = self.root / rel
        if not resolves_inside(self.root, rel):
            raise MemoryFailure(FailureCode.PATH_OUTSIDE_WORKSPACE,
                                f"{rel} is a symlink that leaves the workspace; it is not read")
        from .topics.model import decode_topic, not_utf8
        from .workspace.caches import unreadable_fix, unreadable_reason

        line = None
        try:
            if not target.is_file():
                raise MemoryFailure(FailureCode.MEMORY_NOT_FOUND, f"no topic file {rel}")
            data = target.read_bytes()
            return decode_topic(data)
        except UnicodeDecodeError as exc:
            (reason, line), rule = not_utf8(data, exc), "encoding"
        except OSError as exc:  # (permission denied, on the file or a folder above it)
            reason, rule = unreadable_reason(self.root, rel, exc), "unreadable"
        fix = unreadable_fix(self.root, rel, reason)  # (the fix `memory check` gives)
        raise MemoryFailure(FailureCode.INVALID_TOPIC_FORMAT, f"{rel} {reason} — {fix}",
                            details={"file": rel, "rule": rule, "problem": reason, "fix": fix,
                                     **({"line": line} if line is not None else {})})

    def core_view(self) -> dict[str, Any]:
        """Canonical, rendered and effective core, read as one snapshot when no write holds the lock.

        A read never waits for a write (search, status and recall do not either): while one runs, this is
        the core as last installed, and ``write_in_progress`` says so."""
        from .tokens import count_tokens
        from .views.derived import render_core

        with lock_if_free(self.layout) as held:
            canonical_path = self.root / CORE_TOPIC
            canonical = canonical_path.read_text(encoding="utf-8") if canonical_path.exists() else ""
            rendered_path = self.root / CORE_RENDER
            rendered = rendered_path.read_text(encoding="utf-8") if rendered_path.exists() else ""
            budget = self.settings["memory.core.budget_tokens"]
            core = render_core(self.tree(), budget)
            stat = canonical_path.stat() if canonical_path.exists() else None
        inject = bool(self.settings["memory.core.inject"])
        effective = rendered if inject else ""
        return {
            "canonical": canonical,
            "content": canonical,
            "size": stat.st_size if stat else 0,
            "mtime": stat.st_mtime if stat else None,
            "rendered": rendered,
            "effective": effective,
            "inject": inject,
            "tokens": count_tokens(effective),
            "rendered_tokens": count_tokens(rendered),
            "canonical_tokens": count_tokens(canonical),
            "budget": budget,
            "excluded_block_ids": core.excluded,
            "pending_block_ids": core.pending,
            **({} if held else {"write_in_progress": True}),
        }

    def status(self) -> dict[str, Any]:
        """Revision, counts, writer health, core figures and warnings: from the manifest, no tree load, when
        every topic file is as the last transaction or read left it (architecture §2.5)."""
        from .views.facts import remember_facts, tree_facts

        opened, self.opened_scan = self.opened_scan, None
        scanned, tree_scan, key, memo = opened if opened is not None else (None, None, None, None)
        budget = self.settings["memory.core.budget_tokens"]
        if memo is not None:
            facts, revision = memo
        else:
            facts = tree_facts(self.root, lambda: self.cache, budget, scanned)
            revision = REVISIONS.revision(self.root, tree_scan)
            remember_facts(self.root, key, budget, facts, revision)
        runtime = RuntimeState.load_counters(self.layout)
        writer = read_json(self.layout.state("writer-status.json"), {})
        if not isinstance(writer, dict):  # a damaged status file reads as "no status yet" (architecture §2.4)
            writer = {}
        failure = writer.get("last_failure")
        warnings: list[str] = list(self.settings.warnings)
        if facts.core_excluded:
            warnings.append(
                f"{len(facts.core_excluded)} core record(s) do not fit the {facts.core_budget}-token budget and are "
                "not injected: " + ", ".join("^" + i for i in facts.core_excluded[:10])
                + " — move the ones that matter earlier in topics/core.md, or run `openprogram memory sleep`")
        if not self.settings["memory.core.inject"]:
            warnings.append("memory.core.inject=false: the injected core block is empty")
        warnings += self.opening_notes()
        warnings += self.unreadable_warnings(facts.unreadable, facts.invalid)
        scheduled = read_scheduled(self.layout)
        for kind, outcome in sorted(scheduled.items()):
            if not outcome["ok"]:
                command = outcome.get("command")
                command = command if isinstance(command, str) else f"memory {kind}"  # (recorded before it was kept)
                warnings.append(f"the last `{command}` failed at {outcome['at']}: {outcome['code']}: "
                                f"{outcome['message']}")
        last_failure = None
        if isinstance(failure, dict):
            lines = str(failure.get("message") or "").strip().splitlines()
            last_failure = {"code": failure.get("reason_code"), "retryable": failure.get("retryable"),
                            "at": failure.get("at"), "session": failure.get("session"),
                            "message": lines[0] if lines else None, "hint": failure.get("hint"),
                            "log": str(self.layout.state("events.jsonl"))}
            if writer.get("last_outcome") == "failure":  # (a later success has made it history)
                warnings.append(problem_line("the last write failed", last_failure, last_failure["log"]))
        problem = writer.get("last_hook_problem")
        if isinstance(problem, dict):  # a hook's input it could not use writes nothing: not a writer failure
            where = ", ".join(str(part) for part in (problem.get("hook_event"), problem.get("stage")) if part)
            warnings.append(problem_line(f"the last {problem.get('hook')} hook problem{f' ({where})' if where else ''}",
                                         problem, problem.get("log")))
        deferred = writer.get("last_deferred")
        deferred = deferred if isinstance(deferred, dict) else None
        warnings += self.git_warnings()
        return {
            "revision": revision,
            "workspace_id": self.workspace_id,
            "root": str(self.root),
            "topics": facts.topics,
            "records": facts.records,
            "writer": {
                "model": self.settings["memory.writer.model"],
                "last_success": writer.get("last_success_at"),
                "last_outcome": writer.get("last_outcome"),
                "last_failure": last_failure,
                # not a failure: a hook's write found the workspace busy, and its turns wait for the next write
                "last_deferred": ({key: deferred.get(key) for key in ("at", "session", "hook_event", "message", "log")}
                                  if deferred else None),
                "pending": writer.get("pending"),
            },
            "last_organize": runtime.last_global_at,
            "scheduled": {kind: scheduled.get(kind) for kind in SCHEDULED_KINDS},
            "core": {"tokens": facts.core_tokens, "budget": facts.core_budget,
                     "excluded_block_ids": facts.core_excluded, "inject": bool(self.settings["memory.core.inject"])},
            "warnings": warnings,
        }

    def opening_notes(self) -> list[str]:
        """What opening this workspace did before the command's own work, as warnings: hand edits made outside
        the product adopted as their own commit ("adopted hand edit(s) outside the product: …"), and what it
        repaired after a crash ("recovered: …")."""
        return [note if note.startswith("adopted ") else f"recovered: {note}" for note in self.recovery_notes]

    def unreadable_warnings(self, unreadable: dict[str, str] | None = None,
                            invalid: dict[str, str] | None = None) -> list[str]:
        """Topic files left out of memory (not text), or served from their last committed version because an
        edit made outside the product breaks a record rule (the cache's, after a snapshot, unless given); a file
        moved outside the product with the fix ``memory check`` gives (:func:`~.transaction.moves.move_fixes`)."""
        from .workspace.caches import left_out_warnings

        invalid = self.cache.invalid if invalid is None else invalid
        fix_of = None
        if any(not (self.root / rel).exists() for rel in invalid):  # (a move leaves its old file held back)
            from .transaction.moves import move_fixes

            fix_of = move_fixes(self)
        return left_out_warnings(self.root, self.cache.unreadable if unreadable is None else unreadable, invalid,
                                 fix_of)

    def moved_fix(self, rel: str) -> str | None:
        """Where topic file ``rel``, gone from disk, went when it was moved outside the product, as the fix
        ``memory check`` gives for it (:func:`~.transaction.moves.move_fixes`); None when it was not moved."""
        from .transaction.moves import move_fixes

        self.tree()  # (the snapshot holds the file it left back)
        return move_fixes(self)(rel, "moved")

    def held_back(self, rel: str) -> str | None:
        """The problem that keeps topic file ``rel`` as it is on disk from being served and adopted (an edit made
        outside the product that breaks a rule: its last commit is served), judged on a current snapshot; None
        when the file is served as it is."""
        self.tree()
        return self.cache.invalid.get(rel)

    def hand_edit_failure(self, rel: object, *, whose: str, then: str,
                          rejection: MemoryFailure | None = None) -> MemoryFailure | None:
        """The refusal of a change to ``rel`` when a person left that topic invalid by hand, or it cannot be read as
        text; None when it is valid: the one refusal every transaction gives
        (:func:`~.transaction.engine.held_failure`, which has the rule), here for a rejected writer pass whose
        ``rejection`` named the file."""
        from .transaction.engine import held_failure

        return held_failure(self, [rel], whose=whose, then=then, rejection=rejection)

    def git_warnings(self) -> list[str]:
        """Git damage a person should know about: history stops until it is repaired."""
        from .transaction import gitcheck, ledger

        out = []
        problem = gitcheck.head_problem(self.root)
        if problem:
            out.append(f"GIT_UNAVAILABLE: {problem}; new changes install but are not committed — "
                       + gitcheck.repair_hint(self.root))
        locks = gitcheck.stale_locks(self.layout.git)
        if locks:
            out.append("git lock file(s) present: " + ", ".join(p.name for p in locks[:5])
                       + " (removed by the next change if no git command is running)")
        if gitcheck.index_damaged(self.layout.git):
            out.append("the git index is damaged (rebuilt from HEAD by the next open)")
        if ledger.ledger_file(self.layout).exists():
            out.append(f"changes wait for a git commit (.scriptorium/{ledger.GIT_PENDING}); "
                       "the next change commits them")
        return out

    def log(self, limit: int = 50) -> list[dict[str, Any]]:
        from .transaction import history

        return [{"commit": c.id, "message": c.message, "time": c.time, "author": c.author}
                for c in history.log(self.root, limit)]

    def export(self, out: Path) -> Path:
        """A tar.gz of the workspace (history included, runtime state not)."""
        import tarfile

        out = Path(out)
        with tarfile.open(out, "w:gz") as tar:
            tar.add(self.root, arcname="memory",
                    filter=lambda info: None if info.name.split("/")[1:2] == [SCRIPTORIUM] else info)
        return out


def record_json(record: RecordInfo) -> dict[str, Any]:
    return {
        "memory_id": record.memory_id,
        "ids": list(record.ids),
        "topic": record.topic,
        "headings": list(record.headings),
        "content": record.content,
        "time": record.time,
        "sources": record.sources,
        "trust_state": record.trust_state,
    }


def _once_more_if_changed_on_disk(run: Callable[[], TxResult]) -> TxResult:
    """Run a change; if a file it would replace changed on disk since its stat pass (a person saved it a moment
    before, not yet reported by the file watch, or during the change), run it once more against the file as it
    is now (that run's pass is a full one). Only for changes that are a pure function of the files they read
    (a request, whole files, a patch): the writer's and organizer's edits report the failure instead."""
    from .transaction.engine import CHANGED_ON_DISK

    try:
        return run()
    except MemoryFailure as failure:
        if failure.details.get("rule") != CHANGED_ON_DISK:
            raise
    return run()


def _whole_file_edit(changes: list[dict]) -> Callable[[Staging], None]:
    if not isinstance(changes, list) or not changes:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, "changes must be a non-empty list")
    if len(changes) > MAX_CHANGES:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"at most {MAX_CHANGES} changes per call")
    size = sum(len(str(c.get("content") or "").encode()) for c in changes if isinstance(c, dict))
    if size > MAX_CHANGES_BYTES:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"changes exceed {MAX_CHANGES_BYTES // 1024} kB")
    parsed: list[tuple[str, str | None]] = []  # (path, content; None deletes)
    for index, change in enumerate(changes):
        if not isinstance(change, dict) or "path" not in change:
            raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"changes[{index}] needs a path")
        action = change.get("action", "write")
        rel = check_topic_path(change["path"])
        if action == "write":
            if not isinstance(change.get("content"), str):
                raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"changes[{index}] (write {rel}) needs text content")
        elif action != "delete":
            raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"changes[{index}]: action must be write or delete")
        parsed.append((rel, change["content"] if action == "write" else None))

    def edit(staging: Staging) -> None:
        for rel, content in parsed:
            if content is None:
                staging.delete(rel)
            else:
                staging.write(rel, content)

    return edit


def _patch_edit(patch: str) -> Callable[[Staging], None]:
    from .transaction.patch import apply_file_patch, parse_patch

    files = parse_patch(patch)
    for file_patch in files:
        for path in (file_patch.old_path, file_patch.new_path):
            if path is not None:
                check_topic_path(path)

    def edit(staging: Staging) -> None:
        for file_patch in files:
            path = file_patch.path
            original = staging.read(path) if file_patch.old_path and staging.exists(path) else None
            if file_patch.old_path and original is None:
                raise MemoryFailure(FailureCode.PATCH_CONFLICT, f"{path} does not exist")
            if file_patch.old_path is None and staging.exists(path):
                raise MemoryFailure(FailureCode.PATCH_CONFLICT, f"{path} already exists")
            result = apply_file_patch(original, file_patch)
            if result is None:
                staging.delete(path)
            else:
                staging.write(path, result)

    return edit


def file_digest(path: Path) -> str | None:
    """sha256 hex of a file's bytes (what a per-file compare-and-set compares), None when it does not exist."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return None
