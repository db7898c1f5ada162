"""The bundled session store: layout, append/fork, branches, rewind, metadata."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from openprogram_memory.failures import FailureCode, MemoryFailure
from openprogram_memory.sessions import files as files_module
from openprogram_memory.sessions.store import SessionStore


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_round_trip_survives_a_new_store_instance(store: SessionStore) -> None:
    session = store.create_session("s1", created_at="2025-01-01T00:00:00Z")
    store.append(session, "user", "I'm Dana.", node_id="n1", created_at="2025-01-02T03:04:05+01:00",
                 metadata={"source": "test"})
    reopened = SessionStore(store.root)
    node = reopened.get_node("s1", "n1")
    assert (node.id, node.predecessor, node.role, node.content) == ("n1", None, "user", "I'm Dana.")
    assert node.created_at == node.updated_at == "2025-01-02T02:04:05.000Z"  # normalised to UTC
    assert node.metadata == {"source": "test"}
    on_disk = json.loads((store.root / "s1" / "history" / "n1.json").read_text())
    assert set(on_disk) == {"id", "predecessor", "role", "content", "created_at", "updated_at", "metadata"}
    meta = json.loads((store.root / "s1" / "meta.json").read_text())
    assert meta["head_id"] == "n1" and meta["updated_at"] == "2025-01-02T02:04:05.000Z"


def test_private_modes(store: SessionStore) -> None:
    store.create_session("s1")
    store.append("s1", "user", "hello", node_id="n1")
    for directory in (store.root, store.root / "s1", store.root / "s1" / "history"):
        assert _mode(directory) == 0o700
    for file in (store.root / "s1" / "meta.json", store.root / "s1" / "history" / "n1.json",
                 store.root / "s1" / "index.jsonl"):
        assert _mode(file) == 0o600


def test_append_defaults_to_head_and_moves_head_and_updated_at(store: SessionStore) -> None:
    store.create_session("s1", created_at="2025-01-01T00:00:00Z")
    store.append("s1", "user", "one", node_id="a", created_at="2025-01-01T00:01:00Z")
    second = store.append("s1", "assistant", "two", node_id="b", created_at="2025-01-01T00:02:00Z")
    assert second.predecessor == "a"
    assert store.head("s1") == "b"
    assert store.updated_at("s1") == "2025-01-01T00:02:00.000Z"


def test_generated_ids_are_uuid4_hex(store: SessionStore) -> None:
    session = store.create_session()
    node = store.append(session, "user", "hi")
    assert len(session) == 32 and int(session, 16) >= 0
    assert len(node.id) == 32 and int(node.id, 16) >= 0


def test_fork_makes_a_second_branch_and_moves_head(store: SessionStore, add_chain) -> None:
    store.create_session("s1")
    add_chain(store, "s1", "m", 5)
    fork = store.append("s1", "user", "instead, try this", parent="m3", node_id="f4")
    assert fork.predecessor == "m3"
    assert store.head("s1") == "f4"
    assert store.branch_tips("s1") == ["f4", "m5"]
    assert [n.id for n in store.get_branch("s1")] == ["m1", "m2", "m3", "f4"]
    assert [n.id for n in store.get_branch("s1", "m5")] == ["m1", "m2", "m3", "m4", "m5"]


def test_rewind_moves_head_back_and_hides_the_abandoned_turns(store: SessionStore, add_chain) -> None:
    store.create_session("s1")
    add_chain(store, "s1", "m", 5)
    before = store.get_node("s1", "m4").updated_at
    assert store.rewind("s1", "m2") == ["m5", "m4", "m3"]
    assert store.head("s1") == "m2"
    assert store.get_node("s1", "m4").metadata["rewound"] is True
    assert store.get_node("s1", "m4").updated_at == before
    assert [n.id for n in store.get_branch("s1", "m5")] == ["m1", "m2"]
    assert store.branch_tips("s1") == ["m2"]  # the old tip is archived
    assert store.branch_tips("s1", include_archived=True) == ["m2", "m5"]
    nxt = store.append("s1", "user", "a different question", node_id="r3")
    assert nxt.predecessor == "m2"
    assert [n.id for n in store.get_branch("s1")] == ["m1", "m2", "r3"]


def test_rewind_refuses_a_node_off_the_head_branch(store: SessionStore, add_chain) -> None:
    store.create_session("s1")
    add_chain(store, "s1", "m", 3)
    store.append("s1", "user", "fork", parent="m1", node_id="f2")
    with pytest.raises(MemoryFailure) as caught:
        store.rewind("s1", "m3")
    assert caught.value.code is FailureCode.INVALID_ARGUMENT
    assert store.head("s1") == "f2"


def test_merge_metadata_touches_only_those_nodes_and_no_updated_at(store: SessionStore, add_chain) -> None:
    store.create_session("s1")
    add_chain(store, "s1", "m", 3)
    session_before = store.updated_at("s1")
    untouched = (store.root / "s1" / "history" / "m3.json").read_bytes()
    node_before = store.get_node("s1", "m2")
    store.merge_metadata("s1", {"m1": {"k": "v"}, "m2": {"k": "w", "x": 1}})
    store.merge_metadata("s1", {"m2": {"x": None}})  # None removes a key
    assert store.get_node("s1", "m1").metadata == {"k": "v"}
    assert store.get_node("s1", "m2").metadata == {"k": "w"}
    assert store.get_node("s1", "m2").updated_at == node_before.updated_at
    assert store.updated_at("s1") == session_before
    assert (store.root / "s1" / "history" / "m3.json").read_bytes() == untouched


def test_merge_metadata_checks_every_node_before_writing(store: SessionStore, add_chain) -> None:
    store.create_session("s1")
    add_chain(store, "s1", "m", 2)
    with pytest.raises(MemoryFailure) as caught:
        store.merge_metadata("s1", {"m1": {"k": "v"}, "missing": {"k": "v"}})
    assert caught.value.code is FailureCode.MEMORY_NOT_FOUND
    assert store.get_node("s1", "m1").metadata == {}


@pytest.mark.parametrize("bad", ["../evil", "a/b", "..", ".hidden", "a..b", "", "x" * 200, "a\\b"])
def test_unsafe_ids_are_refused(store: SessionStore, bad: str) -> None:
    store.create_session("s1")
    for call in (lambda: store.create_session(bad), lambda: store.append("s1", "user", "x", node_id=bad),
                 lambda: store.get_node("s1", bad), lambda: store.append(bad, "user", "x")):
        with pytest.raises(MemoryFailure) as caught:
            call()
        assert caught.value.code is FailureCode.INVALID_ARGUMENT
    assert sorted(p.name for p in store.root.parent.iterdir()) == ["sessions"]


def test_unknown_things_are_not_found(store: SessionStore) -> None:
    for call in (lambda: store.head("nope"), lambda: store.get_node("nope", "n")):
        with pytest.raises(MemoryFailure) as caught:
            call()
        assert caught.value.code is FailureCode.MEMORY_NOT_FOUND
    assert not (store.root / "nope").exists()
    store.create_session("s1")
    with pytest.raises(MemoryFailure) as caught:
        store.append("s1", "user", "x", parent="ghost")
    assert caught.value.code is FailureCode.MEMORY_NOT_FOUND


def test_duplicate_ids_and_bad_roles_are_refused(store: SessionStore) -> None:
    store.create_session("s1")
    store.append("s1", "user", "x", node_id="n1")
    for call in (lambda: store.append("s1", "user", "y", node_id="n1"), lambda: store.create_session("s1"),
                 lambda: store.append("s1", "User Role", "y")):
        with pytest.raises(MemoryFailure) as caught:
            call()
        assert caught.value.code is FailureCode.INVALID_ARGUMENT
    assert store.get_node("s1", "n1").content == "x"


def test_damaged_node_is_session_nodes_unavailable(store: SessionStore, add_chain) -> None:
    store.create_session("s1")
    add_chain(store, "s1", "m", 3)
    (store.root / "s1" / "history" / "m2.json").write_text("{not json")
    with pytest.raises(MemoryFailure) as caught:
        store.get_branch("s1")
    assert caught.value.code is FailureCode.SESSION_NODES_UNAVAILABLE
    (store.root / "s1" / "history" / "m2.json").unlink()
    with pytest.raises(MemoryFailure) as caught:
        store.get_branch("s1")
    assert caught.value.code is FailureCode.SESSION_NODES_UNAVAILABLE


def test_index_can_be_rebuilt_from_history(store: SessionStore, add_chain) -> None:
    store.create_session("s1")
    add_chain(store, "s1", "m", 4)
    store.append("s1", "user", "fork", parent="m2", node_id="f3")
    (store.root / "s1" / "index.jsonl").unlink()
    assert store.branch_tips("s1") == ["f3"]  # the index lags: only head is known
    assert store.rebuild_index("s1") == 5
    assert store.branch_tips("s1") == ["f3", "m4"]


def test_archived_branches_are_not_tips_and_names_follow_appends(store: SessionStore, add_chain) -> None:
    store.create_session("s1")
    add_chain(store, "s1", "m", 3)
    store.append("s1", "user", "side", parent="m1", node_id="s2")
    store.set_branch("s1", "m3", name="main line")
    store.append("s1", "user", "continue", parent="m3", node_id="m4")
    assert store.branches("s1") == {"m4": {"name": "main line", "archived": False}}
    store.archive_branch("s1", "s2")
    assert store.branch_tips("s1") == ["m4"]
    assert store.branch_tips("s1", include_archived=True) == ["m4", "s2"]


def test_list_sessions_newest_first(store: SessionStore) -> None:
    for name, time in (("old", "2025-01-01T00:00:00Z"), ("new", "2025-03-01T00:00:00Z")):
        store.create_session(name, created_at=time)
        store.append(name, "user", "hi", created_at=time)
    assert [info.session for info in store.list_sessions()] == ["new", "old"]
    assert store.list_sessions()[0].node_count == 1


def test_a_busy_session_lock_is_a_retryable_concurrent_update(store: SessionStore,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import filelock

    store.create_session("s1")
    monkeypatch.setattr(files_module, "LOCK_TIMEOUT_SECONDS", 0.05)
    holder = filelock.FileLock(str(store.root / "s1" / ".lock"), thread_local=False)
    with holder:
        with pytest.raises(MemoryFailure) as caught:
            store.append("s1", "user", "blocked")
    assert caught.value.code is FailureCode.CONCURRENT_UPDATE and caught.value.retryable
    assert store.append("s1", "user", "fine now").content == "fine now"
