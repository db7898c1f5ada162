"""Incremental import: appending a transcript line by line ends where a whole-file import does."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from openprogram_memory.sessions.importers import import_paths
from openprogram_memory.sessions.importers.tail import import_appended
from openprogram_memory.sessions.store import SessionStore

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "sessions"
REWIND_SESSION = "5f0c7a8e-1d2b-4c3a-9e7f-2a6b8c9d0e1f"
CASES = [
    ("claude-code", FIXTURES / "claude-code" / "rewind.jsonl"),
    ("claude-code", FIXTURES / "claude-code" / "subagent.jsonl"),
    ("claude-code", FIXTURES / "claude-code" / "compact.jsonl"),
    ("codex", FIXTURES / "codex" / "crud.jsonl"),
    ("codex", FIXTURES / "codex" / "legacy.jsonl"),
    ("pi", FIXTURES / "pi" / "branched.jsonl"),
]


def snapshot(store: SessionStore) -> dict[str, dict[str, tuple]]:
    """Every session's nodes as (predecessor, role, content, kind, tools called) — what memory reads and shows."""
    out = {}
    for info in store.list_sessions():
        nodes = {}
        for path in (store.root / info.session / "history").iterdir():
            node = store.get_node(info.session, path.stem)
            nodes[node.id] = (node.predecessor, node.role, node.content, node.metadata.get("kind"),
                              node.metadata.get("tool_uses"))
        out[info.session] = nodes
    return out


@pytest.mark.parametrize("fmt,fixture", CASES, ids=lambda c: getattr(c, "name", c))
def test_appending_line_by_line_imports_what_a_whole_file_import_does(tmp_path, fmt, fixture) -> None:
    whole = SessionStore(tmp_path / "whole")
    import_paths(whole, fmt, [fixture])
    store = SessionStore(tmp_path / "tail")
    state = tmp_path / "transcripts"
    growing = tmp_path / "live" / fixture.name
    growing.parent.mkdir()
    data = fixture.read_bytes()
    lines = data.splitlines(keepends=True)
    with open(growing, "wb") as handle:
        for line in lines:
            half = len(line) // 2
            handle.write(line[:half])  # the agent is mid-write: a partial line must wait
            handle.flush()
            import_appended(store, fmt, growing, state)
            handle.write(line[half:])
            handle.flush()
            import_appended(store, fmt, growing, state)
    assert snapshot(store) == snapshot(whole)
    again = import_appended(store, fmt, growing, state)
    assert (again.imported, again.skipped_total) == (0, 0)  # nothing appended: nothing read


def test_only_new_lines_are_read(tmp_path) -> None:
    fixture = FIXTURES / "claude-code" / "rewind.jsonl"
    lines = fixture.read_bytes().splitlines(keepends=True)
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(lines[:10]))
    store = SessionStore(tmp_path / "s")
    state = tmp_path / "transcripts"
    first = import_appended(store, "claude-code", path, state)
    with open(path, "ab") as handle:
        handle.write(lines[10])
    second = import_appended(store, "claude-code", path, state)
    assert first.imported > 1 and second.imported == 1
    assert second.skipped_total < 4  # the last turn read again, not the whole file


def test_a_legacy_codex_rollout_is_read_again_only_from_its_last_prompt(tmp_path) -> None:
    """A bare user message of an older codex CLI's rollout starts a turn, as a wrapped one does."""
    lines = (FIXTURES / "codex" / "legacy.jsonl").read_bytes().splitlines(keepends=True)
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(b"".join(lines[:-1]))
    store = SessionStore(tmp_path / "s")
    state = tmp_path / "transcripts"
    first = import_appended(store, "codex", path, state)
    with open(path, "ab") as handle:
        handle.write(lines[-1])
    second = import_appended(store, "codex", path, state)
    assert first.imported == 7 and second.imported == 1
    # the header and the last turn (its prompt, tool call, output and state line) again, not the whole file
    assert second.skipped == {"not_a_turn": 2, "already_present": 3}


def test_a_truncated_or_replaced_file_is_read_again_from_the_start(tmp_path) -> None:
    rewind = (FIXTURES / "claude-code" / "rewind.jsonl").read_bytes()
    compact = (FIXTURES / "claude-code" / "compact.jsonl").read_bytes()
    path = tmp_path / "t.jsonl"
    path.write_bytes(rewind)
    store = SessionStore(tmp_path / "s")
    state = tmp_path / "transcripts"
    import_appended(store, "claude-code", path, state)
    replacement = tmp_path / "new.jsonl"
    replacement.write_bytes(compact)
    os.replace(replacement, path)  # rotated: another inode
    rotated = import_appended(store, "claude-code", path, state)
    assert rotated.imported > 0
    with open(path, "r+b") as handle:  # same inode, rewritten shorter then regrown past the old offset
        handle.truncate(0)
        handle.write(rewind + rewind[:0])
    fresh = SessionStore(tmp_path / "s2")
    regrown = import_appended(fresh, "claude-code", path, state)
    assert regrown.imported == import_paths(SessionStore(tmp_path / "s3"), "claude-code", [path]).imported


def _state(store: SessionStore) -> tuple:
    """What a person sees of a session: its nodes, its head and which turns are rewound."""
    rewound = {n for n in store.parent_map(REWIND_SESSION) if store.get_node(REWIND_SESSION, n).rewound}
    return snapshot(store), store.head(REWIND_SESSION), rewound


@pytest.mark.parametrize("order", ["main-first", "agent-first", "agent-whole-first"])
def test_a_sub_agent_file_read_beside_its_growing_transcript_ends_where_a_whole_import_does(tmp_path, order) -> None:
    """The hook (SubagentStop sends the sub-agent's file) and the watcher (which reads `<id>/subagents/agent-*`
    before `<id>.jsonl`) read a sub-agent's own file on its own. Was: its sidechain became head, every main turn
    rewound; now its lines hang from the Task call, head stays on the conversation at every step, whichever file
    is read first."""
    fixture = FIXTURES / "claude-code" / "rewind.jsonl"
    whole = SessionStore(tmp_path / "whole")
    import_paths(whole, "claude-code", [fixture])
    store, state = SessionStore(tmp_path / "tail"), tmp_path / "transcripts"
    live = tmp_path / "live"
    main, agent = live / "5f0c.jsonl", live / "5f0c" / "subagents" / "agent-a1.jsonl"
    agent.parent.mkdir(parents=True)
    lines = fixture.read_bytes().splitlines(keepends=True)
    sidechain = [line for line in lines if json.loads(line).get("isSidechain")]
    assert len(sidechain) == 2
    main.write_bytes(b"")
    agent.write_bytes(b"".join(sidechain) if order == "agent-whole-first" else b"")
    files = [main, agent] if order == "main-first" else [agent, main]
    for line in lines:
        if line not in sidechain or order != "agent-whole-first":
            with open(agent if line in sidechain else main, "ab") as handle:
                handle.write(line)
        for path in files:
            import_appended(store, "claude-code", path, state)
            head = store.head(REWIND_SESSION) if store.exists(REWIND_SESSION) else None
            assert head is None or not store.get_node(REWIND_SESSION, head).metadata.get("sidechain")
    assert _state(store) == _state(whole)


def test_a_claude_code_compaction_run_is_never_imported(tmp_path) -> None:
    """`subagents/agent-acompact-*` (Claude Code's internal compaction: its prompt is the conversation) is left out
    by the incremental import the hook and the watcher run, as a whole import leaves it out."""
    line = (FIXTURES / "claude-code" / "rewind.jsonl").read_bytes().splitlines(keepends=True)[3]
    run = tmp_path / "5f0c" / "subagents" / "agent-acompact-1.jsonl"
    run.parent.mkdir(parents=True)
    run.write_bytes(line)
    store = SessionStore(tmp_path / "s")
    result = import_appended(store, "claude-code", run, tmp_path / "transcripts")
    assert (result.imported, result.sessions, store.list_sessions()) == (0, [], [])
    assert import_paths(store, "claude-code", [run]).imported == 0


@pytest.mark.parametrize("fmt,other,said", [
    ("claude-code", FIXTURES / "codex" / "crud.jsonl", "looks like a codex rollout, not a Claude Code transcript"),
    ("codex", FIXTURES / "claude-code" / "rewind.jsonl", "looks like a Claude Code transcript, not a codex rollout"),
])
def test_a_file_of_another_format_is_refused_as_memory_import_refuses_it(tmp_path, fmt, other, said) -> None:
    from openprogram_memory.failures import FailureCode, MemoryFailure

    store = SessionStore(tmp_path / "s")
    state = tmp_path / "transcripts"
    for _ in range(2):  # refused every time, not read as a file holding nothing once its offset is kept
        with pytest.raises(MemoryFailure) as refused:
            import_appended(store, fmt, other, state)
        assert refused.value.code is FailureCode.INVALID_ARGUMENT and said in refused.value.message
        assert refused.value.details["looks_like"] != fmt
    assert store.list_sessions() == [] and not list(state.glob("*.json"))


def _sub_agent_lines(rounds: int) -> list[bytes]:
    """A sub-agent's own file: its prompt, then per round a streamed tool call (two lines of one message) and the
    tool's result; every line a sidechain line."""
    session = "7d1e0c52-3f4a-4b6c-8d9e-0a1b2c3d4e5f"
    lines: list[dict] = []

    def add(kind: str, content, message_id: str | None = None) -> None:
        message = {"role": kind, "content": content} | ({"id": message_id} if message_id else {})
        lines.append({"type": kind, "isSidechain": True, "agentId": "a1", "sessionId": session,
                      "uuid": f"00000000-0000-4000-8000-{len(lines):012d}",
                      "parentUuid": lines[-1]["uuid"] if lines else None,
                      "timestamp": f"2026-01-05T10:{len(lines) // 60:02d}:{len(lines) % 60:02d}Z", "message": message})

    add("user", "Find where the config is read.")
    for n in range(rounds):
        add("assistant", [{"type": "text", "text": f"Looking at file {n}."}], f"msg_{n}")
        add("assistant", [{"type": "tool_use", "id": f"toolu_{n}", "name": "Read", "input": {"n": n}}], f"msg_{n}")
        add("user", [{"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": f"file {n} holds nothing"}])
    return [json.dumps(line).encode() + b"\n" for line in lines]


def test_a_sub_agent_file_is_read_again_only_from_its_last_step(tmp_path) -> None:
    """A sub-agent file holds sidechain lines only, none of which starts a turn. Was: the resume point stayed at
    0, so the hook and the watcher read the whole file again on every call (already_present growing with it)."""
    lines = _sub_agent_lines(20)
    path = tmp_path / "5f0c" / "subagents" / "agent-a1.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(lines[:-2]))
    store, state = SessionStore(tmp_path / "s"), tmp_path / "transcripts"
    first = import_appended(store, "claude-code", path, state)
    for line in lines[-2:]:
        with open(path, "ab") as handle:
            handle.write(line)
        again = import_appended(store, "claude-code", path, state)
        assert again.skipped_total <= 2  # the last tool result (and a message still streaming) read again
    assert first.imported > 20
    whole = SessionStore(tmp_path / "whole")
    import_paths(whole, "claude-code", [path])
    assert snapshot(store) == snapshot(whole)


def test_a_sub_agent_file_appended_line_by_line_imports_what_a_whole_file_import_does(tmp_path) -> None:
    lines = _sub_agent_lines(4)
    path = tmp_path / "agent-a1.jsonl"
    store, state = SessionStore(tmp_path / "s"), tmp_path / "transcripts"
    for line in lines:
        with open(path, "ab") as handle:
            handle.write(line)
        import_appended(store, "claude-code", path, state)
    whole = SessionStore(tmp_path / "whole")
    import_paths(whole, "claude-code", [path])
    assert snapshot(store) == snapshot(whole)
