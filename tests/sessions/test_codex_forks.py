"""A codex fork is a branch of its parent's conversation: the shared prefix is one set of nodes, written once."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from typer.testing import CliRunner

from openprogram_memory.cli.app import app
from openprogram_memory.config import load_settings
from openprogram_memory.sessions.importers import import_paths
from openprogram_memory.sessions.importers.tail import import_appended
from openprogram_memory.sessions.markers import MARKER_KEY, is_memory_input, live_tips
from openprogram_memory.sessions.store import SessionStore

CODEX = Path(__file__).resolve().parents[2] / "fixtures" / "sessions" / "codex"
PARENT = CODEX / "crud.jsonl"
FORK = CODEX / "crud-fork.jsonl"
PARENT_ID = "019bf4b5-e7b0-75a0-8bf2-05fbf1b13c9b"
FORK_ID = "019bf4d3-5e12-7c40-b1a7-6d2e8f0a4c39"
runner = CliRunner()


def run(*args: str) -> dict:
    result = runner.invoke(app, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def marks(store: SessionStore, session: str) -> dict[str, str | None]:
    return {node_id: store.get_node(session, node_id).metadata.get(MARKER_KEY) for node_id in store.parent_map(session)}


def test_a_fork_of_a_written_rollout_writes_only_the_turns_after_the_fork() -> None:
    store = SessionStore(load_settings().sessions_dir)
    run("memory", "init")
    assert run("memory", "import", "codex", str(PARENT))["sessions"] == [PARENT_ID]
    first = run("memory", "write", "--session", PARENT_ID, "--force")
    parent_turns = first["written"] + first["reviewed"]
    assert parent_turns and first["pending"] == 0
    marks_before = marks(store, PARENT_ID)

    imported = run("memory", "import", "codex", str(FORK))
    kept_parent_lines = len(marks_before)
    assert imported["sessions"] == [PARENT_ID]  # a branch of the parent's session, not a new session
    assert imported["skipped"]["fork_prefix"] == kept_parent_lines
    assert imported["imported"] == 4  # the new question, the patch call, its output, the answer
    fork_turns = [node for node in store.get_branch(PARENT_ID)
                  if node.metadata.get("thread") == FORK_ID and is_memory_input(node)]
    assert [t.role for t in fork_turns] == ["user", "assistant"]
    assert fork_turns[0].content.startswith("now add a second joke")

    second = run("memory", "write", "--session", PARENT_ID, "--force")
    # the parent's turns were settled (marked, or reviewed with nothing durable) under the same node ids
    assert sorted(second["written"] + second["reviewed"]) == sorted(t.id for t in fork_turns)
    after = marks(store, PARENT_ID)
    assert {k: v for k, v in after.items() if k in marks_before} == marks_before  # the prefix was not rewritten
    assert run("memory", "write", "--session", PARENT_ID, "--force")["passes"] == 0


def test_fork_nodes_hang_off_the_last_shared_node_and_reimport_adds_nothing(store: SessionStore) -> None:
    import_paths(store, "codex", [PARENT])
    parent_tip = store.head(PARENT_ID)
    result = import_paths(store, "codex", [FORK])
    fork_tip = store.head(PARENT_ID)
    # forked at its end, the parent's tip is the fork's last shared node: one branch, grown
    assert live_tips(store, PARENT_ID) == [fork_tip] and fork_tip != parent_tip
    branch = store.get_branch(PARENT_ID, fork_tip)
    new = [node for node in branch if node.metadata.get("thread") == FORK_ID]
    assert len(new) == result.imported and new[0].predecessor == parent_tip
    assert all(node.metadata["forked_from"] == PARENT_ID for node in new)
    threads = store.session_info(PARENT_ID).metadata["codex_threads"]
    assert threads == {PARENT_ID: parent_tip, FORK_ID: fork_tip}
    again = import_paths(store, "codex", [FORK])
    assert again.imported == 0 and again.skipped["already_present"] == result.imported
    assert not store.exists(FORK_ID)


def test_parent_and_fork_in_one_import_link_whatever_the_order(store: SessionStore) -> None:
    result = import_paths(store, "codex", [FORK, PARENT])
    assert result.sessions == [PARENT_ID] and result.skipped["fork_prefix"] > 0
    assert store.get_node(PARENT_ID, store.head(PARENT_ID)).metadata["thread"] == FORK_ID


def test_a_fork_of_a_fork_truncated_before_its_last_question_joins_the_same_session(store: SessionStore,
                                                                                   tmp_path: Path) -> None:
    import_paths(store, "codex", [PARENT, FORK])
    lines = [json.loads(line) for line in FORK.read_text().splitlines()]
    last_question = max(i for i, line in enumerate(lines) if line["type"] == "response_item"
                        and line["payload"].get("role") == "user")
    meta = copy.deepcopy(lines[0])
    meta["payload"].update(id="019bf4e0-0000-7000-8000-00000000f0f2", forked_from_id=FORK_ID)
    ask = "make the joke about Rust instead"
    fork2 = [meta, *lines[:last_question],
             {"timestamp": "2026-01-25T12:00:00.000Z", "type": "response_item",
              "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": ask}]}}]
    path = tmp_path / "fork2.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in fork2))
    result = import_paths(store, "codex", [path])
    assert result.sessions == [PARENT_ID] and result.imported == 1
    node = store.get_node(PARENT_ID, store.head(PARENT_ID))
    parent_tip = store.session_info(PARENT_ID).metadata["codex_threads"][PARENT_ID]
    assert node.content == ask and node.predecessor == parent_tip
    assert len(live_tips(store, PARENT_ID)) == 2  # the first fork's answer and this question


def test_a_fork_whose_parent_is_unknown_is_its_own_session(store: SessionStore) -> None:
    result = import_paths(store, "codex", [FORK])
    assert result.sessions == [FORK_ID] and "fork_prefix" not in result.skipped
    assert store.session_info(FORK_ID).metadata["forked_from"] == PARENT_ID
    # imported alone first, it stays alone: moving it would duplicate its turns
    import_paths(store, "codex", [PARENT])
    assert import_paths(store, "codex", [FORK]).imported == 0


def test_a_fork_read_as_it_grows_ends_where_a_whole_file_import_does(tmp_path: Path) -> None:
    whole = SessionStore(tmp_path / "whole")
    import_paths(whole, "codex", [PARENT, FORK])
    store = SessionStore(tmp_path / "tail")
    import_paths(store, "codex", [PARENT])
    growing = tmp_path / "live" / FORK.name
    growing.parent.mkdir()
    with open(growing, "wb") as handle:
        for line in FORK.read_bytes().splitlines(keepends=True):
            handle.write(line)
            handle.flush()
            import_appended(store, "codex", growing, tmp_path / "transcripts")
    assert [info.session for info in store.list_sessions()] == [PARENT_ID]
    assert tree(store) == tree(whole)


def tree(store: SessionStore) -> dict[str, tuple]:
    return {node_id: (node.predecessor, node.role, node.content)
            for node_id in store.parent_map(PARENT_ID) for node in [store.get_node(PARENT_ID, node_id)]}
