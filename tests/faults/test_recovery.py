"""Damage a crash (or a planted file) leaves, and what the next open makes of it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from openprogram_memory.config import load_settings
from openprogram_memory.failures import FailureCode, MemoryFailure
from openprogram_memory.sessions.markers import MARKER_KEY, mark_written
from openprogram_memory.sessions.store import SessionStore
from openprogram_memory.transaction.ledger import GIT_PENDING
from openprogram_memory.memory import MemoryWorkspace
from openprogram_memory.workspace.state import RUNTIME_VERSION, RuntimeState

from faults.harness import fsck, tree_matches_head

GIT = shutil.which("git")
RECORD = "{text}[^e1]\n\n[^e1]: Sources: [said](openprogram/s1/u1)\n"


def _workspace(state):
    from engine.helpers import make_workspace

    ws = make_workspace(state)
    ws.update(changes=[{"path": "topics/people/dana.md", "content": "# Dana\n\n" + RECORD.format(text="Dana runs a bike shop.")}])
    return ws


def _reopen(state) -> MemoryWorkspace:
    return MemoryWorkspace.open(load_settings(str(state)))


def _apply(ws, text: str = "Dana sells cargo bikes."):
    return ws.update(changes=[{"path": "topics/people/erin.md", "content": "# Erin\n\n" + RECORD.format(text=text)}])


def _memory_bytes(root) -> dict[str, bytes]:
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if not rel.startswith((".git", ".scriptorium")):
                out[rel] = open(path, "rb").read()
    return out


def test_stale_git_locks_are_removed_and_history_continues(tmp_path):
    ws = _workspace(tmp_path / "s")
    git = ws.root / ".git"
    for lock in (git / "index.lock", git / "refs" / "heads" / "main.lock"):
        lock.write_bytes(b"")
    reopened = _reopen(tmp_path / "s")
    assert not (git / "index.lock").exists() and not (git / "refs" / "heads" / "main.lock").exists()
    assert any("lock" in note for note in reopened.recovery_notes)
    result = _apply(reopened)
    assert result.git_committed is True, result.git_error
    assert tree_matches_head(ws.root) is None and fsck(ws.root) is None


def test_a_change_left_uncommitted_is_committed_by_the_next_open(tmp_path):
    ws = _workspace(tmp_path / "s")
    path = ws.root / "topics/people/dana.md"
    # an install that finished, then a kill before its commit: the ledger names the path
    path.write_text(path.read_text().replace("bike shop", "bike and cargo shop"))
    (ws.layout.state(GIT_PENDING)).write_text(json.dumps({"version": 2, "paths": ["topics/people/dana.md"]}))
    (ws.root / ".git" / "index.lock").write_bytes(b"")
    _reopen(tmp_path / "s")
    assert not ws.layout.state(GIT_PENDING).exists()
    assert tree_matches_head(ws.root) is None


def test_a_damaged_ledger_is_resynced_with_a_full_scan(tmp_path):
    ws = _workspace(tmp_path / "s")
    path = ws.root / "topics/people/dana.md"
    path.write_text(path.read_text().replace("bike shop", "bike and cargo shop"))
    ws.layout.state(GIT_PENDING).write_text("{garbled")
    reopened = _reopen(tmp_path / "s")
    assert tree_matches_head(ws.root) is None
    assert any("damaged" in note for note in reopened.recovery_notes)


def test_a_torn_archive_append_is_cut_back_and_nothing_is_left_untracked(tmp_path):
    ws = _workspace(tmp_path / "s")
    rel = "sources/openprogram/_v2/s1.md"
    archive = ws.root / rel
    old = archive.read_bytes()
    ws.layout.state(GIT_PENDING).write_text(json.dumps({"version": 2, "paths": [rel],
                                                        "appends": {rel: [len(old), len(old) + 400]}}))
    archive.write_bytes(old + b'<a id="source-0000')  # killed mid-append
    _reopen(tmp_path / "s")
    assert archive.read_bytes() == old
    assert tree_matches_head(ws.root) is None
    from openprogram_memory.sources.archive import SourceMessage

    assert _reopen(tmp_path / "s").archive([SourceMessage("openprogram/s1/u9", "Dana", "user-1",
                                                          "2026-08-20T10:00:00+00:00", "I like tea.")])


def test_an_archive_append_is_in_the_ledger_before_the_file_changes(tmp_path, monkeypatch):
    ws = _workspace(tmp_path / "s")
    from openprogram_memory.sources import archive as archive_module
    from openprogram_memory.sources.archive import SourceMessage

    seen = []
    real_open = os.open

    def spy(path, flags, *args, **kwargs):
        if str(path).endswith("_v2/s2.md"):
            seen.append(json.loads(ws.layout.state(GIT_PENDING).read_text()))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(archive_module.os, "open", spy)
    ws.archive([SourceMessage("openprogram/s2/u1", "Dana", "user-1", "2026-08-20T10:00:00+00:00", "I like tea.")])
    assert seen and "sources/openprogram/_v2/s2.md" in seen[0]["appends"]
    assert not ws.layout.state(GIT_PENDING).exists()  # committed afterwards
    assert tree_matches_head(ws.root) is None


def test_planted_paths_in_the_ledger_touch_nothing_outside(tmp_path):
    ws = _workspace(tmp_path / "s")
    victim = tmp_path / "outside" / "victim.txt"
    victim.parent.mkdir()
    victim.write_text("keep me")
    ws.layout.state(GIT_PENDING).write_text(json.dumps(["../../outside/victim.txt", str(victim), "topics/../../x"]))
    reopened = _reopen(tmp_path / "s")
    assert victim.read_text() == "keep me"
    assert sum("dropped unsafe path" in note for note in reopened.recovery_notes) == 3
    assert fsck(ws.root) is None and tree_matches_head(ws.root) is None


@pytest.mark.parametrize("planted", ["../../outside/victim.txt", "ABSOLUTE"])
def test_planted_paths_in_the_install_journal_touch_nothing_outside(tmp_path, planted):
    ws = _workspace(tmp_path / "s")
    victim = tmp_path / "outside" / "victim.txt"
    victim.parent.mkdir()
    victim.write_text("keep me")
    before = _memory_bytes(ws.root)
    install = ws.layout.install_dir
    (install / "old").mkdir(parents=True)
    path = str(victim) if planted == "ABSOLUTE" else planted
    (install / "journal.json").write_text(json.dumps(
        {"entries": [{"path": path, "slot": "0", "existed": False, "delete": False}]}))
    with pytest.raises(MemoryFailure) as caught:
        _reopen(tmp_path / "s")
    assert "journal.json" in caught.value.message and "restore" in caught.value.message
    assert caught.value.code is FailureCode.TRANSACTION_FAILURE_UNKNOWN
    assert victim.read_text() == "keep me" and victim.parent.is_dir()
    assert _memory_bytes(ws.root) == before


def test_a_garbled_install_journal_is_reported_by_name_not_a_traceback(tmp_path):
    state = tmp_path / "s"
    ws = _workspace(state)
    ws.layout.install_dir.mkdir()
    (ws.layout.install_dir / "journal.json").write_text("{not json")
    proc = subprocess.run([str(Path(sys.executable).with_name("openprogram")), "memory", "status", "--json",
                           "--state", str(state)], capture_output=True, text=True)
    assert proc.returncode == 65, proc.stdout + proc.stderr
    error = json.loads(proc.stdout)
    assert error["code"] == "TRANSACTION_FAILURE_UNKNOWN" and "journal.json" in error["message"]
    assert "Traceback" not in proc.stderr


def test_head_at_a_missing_commit_is_reported_never_committed(tmp_path):
    ws = _workspace(tmp_path / "s")
    (ws.root / ".git" / "refs" / "heads" / "main").write_text("1" * 40 + "\n")
    result = _apply(ws)
    assert result.memory_committed is True
    assert result.git_committed is False and result.git_code == "GIT_UNAVAILABLE"
    assert result.to_json()["git_code"] == "GIT_UNAVAILABLE"
    warnings = _reopen(tmp_path / "s").status()["warnings"]
    assert any(w.startswith("GIT_UNAVAILABLE") for w in warnings)


def test_a_damaged_index_is_rebuilt_at_open(tmp_path):
    ws = _workspace(tmp_path / "s")
    index = ws.root / ".git" / "index"
    index.write_bytes(index.read_bytes()[:-7] + b"garbage")
    assert any("index is damaged" in w for w in ws.status()["warnings"])
    reopened = _reopen(tmp_path / "s")
    assert any("index" in note for note in reopened.recovery_notes)
    assert tree_matches_head(ws.root) is None
    assert _apply(reopened).git_committed is True
    assert tree_matches_head(ws.root) is None


@pytest.mark.parametrize("message", ["bad\0message", 42, ["a list"], None])
def test_bad_commit_messages_are_refused_before_anything_installs(tmp_path, message):
    ws = _workspace(tmp_path / "s")
    before = _memory_bytes(ws.root)
    with pytest.raises(MemoryFailure) as caught:
        ws.update(changes=[{"path": "topics/x.md", "content": "# X\n\n" + RECORD.format(text="X.")}],
                  commit_message=message if message is not None else "\0")
    assert caught.value.code is FailureCode.INVALID_ARGUMENT
    assert _memory_bytes(ws.root) == before


def test_runtime_json_with_wrong_types_loads_defaults_field_by_field(tmp_path):
    ws = _workspace(tmp_path / "s")
    path = ws.root / ".scriptorium" / "runtime.json"
    path.write_text(json.dumps({"version": "x", "created": [1, "abcd1234", None], "batches_since_organize": "7",
                                "tokens_since_organize": -3, "writes_since_global": True, "last_global_at": 5,
                                "last_write_at": "2026-08-01T00:00:00+00:00"}))
    state = RuntimeState.load(ws.layout)
    assert state.version == RUNTIME_VERSION and state.batches_since_organize == 0 and state.tokens_since_organize == 0
    assert state.writes_since_global == 0 and state.last_global_at is None
    assert state.last_write_at == "2026-08-01T00:00:00+00:00" and list(state.created_order) == ["abcd1234"]
    assert _apply(ws).memory_committed


def test_write_force_works_with_a_wrong_typed_runtime_json(tmp_path):
    from openprogram_memory.writer.pipeline import write_report

    state = tmp_path / "s"
    ws = _workspace(state)
    store = SessionStore(ws.settings.sessions_dir)
    store.create_session("s1")
    store.append("s1", "user", "I prefer metric units.", node_id="m1")
    (ws.root / ".scriptorium" / "runtime.json").write_text(json.dumps({"batches_since_organize": "many",
                                                                        "last_global_at": [], "created": "x"}))
    report = write_report(ws, "s1", force=True)
    assert report.to_json()["written"] == ["m1"]


def test_the_workspace_id_comes_back_from_git_then_from_markers(tmp_path):
    ws = _workspace(tmp_path / "s")
    original = ws.workspace_id
    store = SessionStore(ws.settings.sessions_dir)
    store.create_session("s1")
    store.append("s1", "user", "hello", node_id="m1")
    mark_written(store, "s1", ["m1"], original)
    id_file = ws.layout.state("workspace-id")
    id_file.write_text("garbage")
    assert _reopen(tmp_path / "s").workspace_id == original
    id_file.unlink()
    (ws.root / ".git" / "openprogram-workspace-id").unlink()
    assert _reopen(tmp_path / "s").workspace_id == original  # from the markers
    assert id_file.read_text().strip() == original


def test_an_ambiguous_lost_workspace_id_is_refused_with_the_fix(tmp_path):
    ws = _workspace(tmp_path / "s")
    store = SessionStore(ws.settings.sessions_dir)
    store.create_session("s1")
    store.append("s1", "user", "hello", node_id="m1")
    store.append("s1", "user", "again", node_id="m2")
    store.merge_metadata("s1", {"m1": {MARKER_KEY: "w-00000001"}, "m2": {MARKER_KEY: "w-00000002"}})
    ws.layout.state("workspace-id").unlink()
    (ws.root / ".git" / "openprogram-workspace-id").unlink()
    with pytest.raises(MemoryFailure) as caught:
        _reopen(tmp_path / "s").workspace_id
    assert caught.value.code is FailureCode.WRITER_PRECONDITION_FAILED
    assert "w-00000001" in caught.value.message and "workspace-id" in caught.value.message
    assert not ws.layout.state("workspace-id").exists()


def test_scratch_dirs_of_dead_processes_are_reclaimed_but_kept_drafts_stay(tmp_path):
    from openprogram_memory.workspace.scratch import KEEP, PREFIX, workspace_key

    ws = _workspace(tmp_path / "s")
    tmp = __import__("tempfile").gettempdir()
    proc = subprocess.Popen(["true"])
    proc.wait()  # a pid that is gone
    key = workspace_key(ws.root)
    dead = os.path.join(tmp, f"{PREFIX}stage-{key}-{proc.pid}-abc")
    kept = os.path.join(tmp, f"{PREFIX}edit-{key}-{proc.pid}-def")
    other = os.path.join(tmp, f"{PREFIX}stage-000000000000-{proc.pid}-ghi")
    for directory in (dead, kept, other):
        os.makedirs(directory)
    open(os.path.join(kept, KEEP), "w").close()
    _reopen(tmp_path / "s")
    assert not os.path.exists(dead)
    assert os.path.exists(kept) and os.path.exists(other)  # a kept draft; another workspace's
    shutil.rmtree(kept)
    shutil.rmtree(other)


def test_a_damaged_head_tree_is_reported_never_committed(tmp_path):
    ws = _workspace(tmp_path / "s")
    from dulwich.repo import Repo

    repo = Repo(str(ws.root))
    tree = repo[repo.head()].tree.decode()
    loose = ws.root / ".git" / "objects" / tree[:2] / tree[2:]
    loose.chmod(0o600)
    loose.write_bytes(loose.read_bytes()[:10])  # truncated
    result = _apply(_reopen(tmp_path / "s"))
    assert result.memory_committed is True
    assert result.git_committed is False and result.git_code == "GIT_UNAVAILABLE"


def test_status_survives_damaged_runtime_files(tmp_path):
    ws = _workspace(tmp_path / "s")
    ws.layout.state("writer-status.json").write_text("[1, 2]")
    ws.layout.state("runtime.json").write_text('"just a string"')
    status = _reopen(tmp_path / "s").status()
    assert status["writer"]["last_outcome"] is None and status["last_organize"] is None


def test_the_quick_head_check_vouches_only_for_a_sound_head(tmp_path):
    """status checks HEAD by reading loose objects itself (no dulwich import); any doubt goes to the full check,
    so every damage is still reported with the full check's words."""
    from dulwich.repo import Repo

    from openprogram_memory.transaction import gitcheck

    ws = _workspace(tmp_path / "s")
    assert gitcheck._healthy_loose_head(ws.root) and gitcheck.head_problem(ws.root) is None
    repo = Repo(str(ws.root))
    commit = repo[repo.head()]
    tree = repo[commit.tree]
    entry = next(iter(tree.items())).sha.decode()

    def loose(sha: str) -> Path:
        return ws.root / ".git" / "objects" / sha[:2] / sha[2:]

    for sha in (commit.id.decode(), commit.tree.decode(), entry):
        path = loose(sha)
        saved = path.read_bytes()
        path.chmod(0o600)
        path.write_bytes(saved[:10])  # truncated
        assert not gitcheck._healthy_loose_head(ws.root), sha
        assert gitcheck.head_problem(ws.root) is not None, sha
        path.write_bytes(saved)
    assert gitcheck.head_problem(ws.root) is None
    head = ws.root / ".git" / "refs" / "heads" / "main"
    saved = head.read_bytes()
    head.write_text("0" * 40 + "\n")  # a commit that does not exist
    assert not gitcheck._healthy_loose_head(ws.root) and "missing or damaged" in gitcheck.head_problem(ws.root)
    head.write_bytes(saved)
