"""A codex sub-agent (a thread spawned by another) is a session of its own, spawn-linked to the parent's turn."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from openprogram_memory.sessions.importers import import_paths
from openprogram_memory.sessions.markers import is_memory_input

CODEX = Path(__file__).resolve().parents[2] / "fixtures" / "sessions" / "codex"
PARENT = CODEX / "crud.jsonl"
PARENT_ID = "019bf4b5-e7b0-75a0-8bf2-05fbf1b13c9b"
SUB_ID = "019bf4c0-0000-7000-8000-00000000a9e1"
WS = "w-0000beef"


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _message(time: str, role: str, text: str) -> dict:
    kind = "input_text" if role == "user" else "output_text"
    return {"timestamp": time, "type": "response_item",
            "payload": {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}}


def sub_agent(tmp_path: Path, *, copied: int = 0, started: str = "2026-01-25T10:32:06.500Z",
              source: object = None) -> Path:
    """A rollout spawned from PARENT at ``started``; ``copied`` parent lines repeated first (a forked context)."""
    parent = _lines(PARENT)
    meta = copy.deepcopy(parent[0])
    meta["timestamp"] = started
    meta["payload"].update(id=SUB_ID, timestamp=started, source=source if source is not None else {
        "subagent": {"thread_spawn": {"parent_thread_id": PARENT_ID, "depth": 1}}})
    if copied:
        meta["payload"]["forked_from_id"] = PARENT_ID
    history = [{**line, "timestamp": started} for line in parent[1:1 + copied]]
    own = [_message("2026-01-25T10:32:06.600Z", "user", "Count the words of JOKE.md and report the number."),
           _message("2026-01-25T10:32:07.100Z", "assistant", "JOKE.md has 24 words.")]
    path = tmp_path / f"rollout-{SUB_ID}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in [meta, *history, *own]))
    return path


def test_a_spawned_thread_is_its_own_session_linked_to_the_parent_turn_it_started_from(store, tmp_path):
    path = sub_agent(tmp_path)
    result = import_paths(store, "codex", [path, PARENT])  # the sub-agent first: parents are imported first
    assert sorted(result.sessions) == sorted([PARENT_ID, SUB_ID])
    link = store.parent_link(SUB_ID)
    spawner = store.get_node(PARENT_ID, link["node"])
    later = [n for n in store.get_branch(PARENT_ID) if n.created_at > spawner.created_at]
    assert link["session"] == PARENT_ID and spawner.created_at <= "2026-01-25T10:32:06.500Z"
    assert later and all(n.created_at > "2026-01-25T10:32:06.500Z" for n in later)  # the last turn before it
    assert store.spawned(PARENT_ID) == {SUB_ID: link["node"]}
    turns = store.get_branch(SUB_ID)
    assert [(n.role, n.metadata.get("kind")) for n in turns][-2:] == [("user", "subagent_prompt"),
                                                                       ("assistant", "subagent_report")]
    assert not any(is_memory_input(n) for n in turns)  # the parent agent's words, not the person's
    again = import_paths(store, "codex", [PARENT, path])
    assert again.imported == 0 and store.parent_link(SUB_ID) == link


def test_a_sub_agent_with_a_copy_of_the_parent_context_keeps_only_its_own_turns(store, tmp_path):
    import_paths(store, "codex", [PARENT])
    copied = 4  # the developer message, AGENTS.md, environment context and the first request
    result = import_paths(store, "codex", [sub_agent(tmp_path, copied=copied)])
    assert result.sessions == [SUB_ID] and result.skipped["fork_prefix"] == copied and result.imported == 2
    first = store.get_branch(SUB_ID)[0]
    assert first.content.startswith("Count the words") and first.predecessor is None
    assert "detached_from" not in first.metadata  # the copied context is not a parent it lost
    spawner = store.get_node(PARENT_ID, store.parent_link(SUB_ID)["node"])
    assert spawner.content.startswith("create a file `JOKE.md`")  # where the copied context ends
    assert not store.get_node(PARENT_ID, store.head(PARENT_ID)).metadata.get("thread")  # no branch grown


def test_rewinding_the_parent_before_the_spawn_supersedes_the_sub_agent(store, tmp_path):
    import_paths(store, "codex", [PARENT, sub_agent(tmp_path)])
    branch = store.get_branch(PARENT_ID)
    spawner = store.parent_link(SUB_ID)["node"]
    before = branch[[n.id for n in branch].index(spawner) - 1].id
    store.rewind(PARENT_ID, before)
    assert all(store.get_node(SUB_ID, node_id).rewound for node_id in store.parent_map(SUB_ID))
    assert store.session_info(SUB_ID).metadata["superseded_by_parent"] == f"{PARENT_ID}/{spawner}"


def test_a_sub_agent_whose_parent_is_unknown_remembers_the_parent_thread(store, tmp_path):
    import_paths(store, "codex", [sub_agent(tmp_path)])
    assert store.parent_link(SUB_ID) is None
    assert store.session_info(SUB_ID).metadata["spawned_from_thread"] == PARENT_ID


def test_a_review_sub_agent_is_a_plain_session(store, tmp_path):
    import_paths(store, "codex", [PARENT, sub_agent(tmp_path, source={"subagent": "review"})])
    assert store.parent_link(SUB_ID) is None
    assert [n.metadata.get("kind") for n in store.get_branch(SUB_ID)] == [None, None]
