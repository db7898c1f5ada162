"""Written markers and pending turns: identity, not position (architecture §4.2)."""

from __future__ import annotations

import pytest

from openprogram_memory.failures import FailureCode, MemoryFailure
from openprogram_memory.sessions.markers import (
    MARKER_KEY,
    is_memory_input,
    live_tips,
    mark_written,
    pending_turns,
    pending_walk,
)
from openprogram_memory.sessions.store import Node, SessionStore

WS = "w-1234abcd"


def _ids(nodes) -> list[str]:
    return [node.id for node in nodes]


@pytest.fixture
def nine_written(store: SessionStore, add_chain) -> SessionStore:
    """Session ``s`` with m1…m9, all written for WS."""
    store.create_session("s")
    mark_written(store, "s", add_chain(store, "s", "m", 9), WS)
    return store


def test_fork_at_m3_after_nine_written_leaves_exactly_the_new_branch(nine_written: SessionStore, add_chain) -> None:
    branch = add_chain(nine_written, "s", "b", 6, parent="m3", start=4)  # b4…b9: ordinals <= 9
    assert _ids(pending_turns(nine_written, "s", WS)) == branch


def test_an_eleven_turn_branch_from_m3_is_pending_whole(nine_written: SessionStore, add_chain) -> None:
    branch = add_chain(nine_written, "s", "b", 11, parent="m3", start=4)  # b4…b14
    assert _ids(pending_turns(nine_written, "s", WS)) == branch
    assert len(branch) == 11


def test_a_mark_from_another_workspace_does_not_count(store: SessionStore, add_chain) -> None:
    store.create_session("s")
    ids = add_chain(store, "s", "m", 4)
    mark_written(store, "s", ids, "w-other000")
    assert _ids(pending_turns(store, "s", WS)) == ids
    assert pending_turns(store, "s", "w-other000") == []


def test_runtime_scheduled_tool_rewound_and_empty_turns_are_never_pending(store: SessionStore) -> None:
    store.create_session("s")
    store.append("s", "user", "I'm Dana, I run the data team.", node_id="u1")
    store.append("s", "tool", "[tool result] ok", node_id="t1")
    store.append("s", "user", "summary of earlier turns", node_id="c1", metadata={"kind": "compaction_summary"})
    store.append("s", "assistant", "report from a helper", node_id="r1", metadata={"scheduled": True})
    store.append("s", "subagent_report", "sub-agent says hi", node_id="r2")
    store.append("s", "merge_hint", "branches merged", node_id="h1")
    store.append("s", "assistant", "   ", node_id="e1")
    store.append("s", "assistant", "Noted, Dana.", node_id="a1")
    assert _ids(pending_turns(store, "s", WS)) == ["u1", "a1"]
    walk = pending_walk(store, "s", WS)
    assert _ids(walk.walked) == ["u1", "t1", "c1", "r1", "r2", "h1", "e1", "a1"]


def test_rewound_turns_are_not_memory_input(store: SessionStore, add_chain) -> None:
    store.create_session("s")
    add_chain(store, "s", "m", 4)
    store.rewind("s", "m2")
    assert not is_memory_input(store.get_node("s", "m3"))
    assert _ids(pending_turns(store, "s", WS, tip="m4")) == ["m1", "m2"]


def test_shared_prefix_is_pending_once_across_head_and_sibling(store: SessionStore, add_chain) -> None:
    store.create_session("s")
    add_chain(store, "s", "m", 5)
    sibling = add_chain(store, "s", "s", 2, parent="m3", start=4)
    tips = live_tips(store, "s")
    assert tips == ["s5", "m5"]
    first = pending_turns(store, "s", WS, tip=tips[0])
    assert _ids(first) == ["m1", "m2", "m3", *sibling]
    mark_written(store, "s", _ids(first), WS)
    assert _ids(pending_turns(store, "s", WS, tip=tips[1])) == ["m4", "m5"]


def test_marking_the_span_lets_the_next_walk_stop_at_the_batch(store: SessionStore) -> None:
    store.create_session("s")
    for node_id, role in (("u1", "user"), ("t1", "tool"), ("a1", "assistant"), ("t2", "tool"), ("u2", "user")):
        store.append("s", role, f"{node_id} text", node_id=node_id)
    walk = pending_walk(store, "s", WS)
    batch = walk.turns[:2]  # u1, a1
    span = walk.span_through(batch[-1].id)
    assert span == ["u1", "t1", "a1"]
    mark_written(store, "s", span, WS)
    again = pending_walk(store, "s", WS)
    assert _ids(again.walked) == ["t2", "u2"] and _ids(again.turns) == ["u2"]
    with pytest.raises(MemoryFailure):
        again.span_through("u1")


def test_mark_written_marks_only_the_given_nodes_and_keeps_updated_at(store: SessionStore, add_chain) -> None:
    store.create_session("s")
    add_chain(store, "s", "m", 3)
    before = store.updated_at("s")
    mark_written(store, "s", ["m2"], WS)
    assert store.get_node("s", "m2").metadata == {MARKER_KEY: WS}
    assert MARKER_KEY not in store.get_node("s", "m1").metadata
    assert MARKER_KEY not in store.get_node("s", "m3").metadata
    assert store.updated_at("s") == before
    assert _ids(pending_turns(store, "s", WS)) == ["m3"]  # stops at the first marked node


def test_pending_reads_only_the_pending_nodes(store: SessionStore, add_chain, monkeypatch) -> None:
    reads: list[str] = []
    original = SessionStore.get_node

    def counting(self, session_id, node_id):
        reads.append(node_id)
        return original(self, session_id, node_id)

    for name, size in (("big", 2000), ("small", 20)):
        store.create_session(name)
        written = [Node(f"m{i}", f"m{i - 1}" if i > 1 else None, "user", f"turn {i}", "2025-01-01T00:00:00.000Z",
                        "2025-01-01T00:00:00.000Z", {MARKER_KEY: WS}) for i in range(1, size + 1)]
        store.insert_nodes(name, written, head=f"m{size}", fsync=False)
        add_chain(store, name, "p", 3, start=size + 1)
    monkeypatch.setattr(SessionStore, "get_node", counting)
    for name in ("big", "small"):
        reads.clear()
        assert len(pending_turns(store, name, WS)) == 3
        assert len(reads) == 4  # three pending nodes and the first marked one


def test_a_workspace_id_is_required(store: SessionStore) -> None:
    store.create_session("s")
    with pytest.raises(MemoryFailure) as caught:
        pending_turns(store, "s", "")
    assert caught.value.code is FailureCode.INVALID_ARGUMENT


def test_live_tips_skip_archived_branches(store: SessionStore, add_chain) -> None:
    store.create_session("s")
    add_chain(store, "s", "m", 3)
    store.append("s", "user", "side", parent="m1", node_id="x2")
    store.append("s", "user", "back on main", parent="m3", node_id="m4")
    assert live_tips(store, "s") == ["m4", "x2"]
    store.archive_branch("s", "x2")
    assert live_tips(store, "s") == ["m4"]
