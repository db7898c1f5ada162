"""Incremental import: appending a transcript line by line ends where a whole-file import does."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from openprogram_memory.sessions.importers import import_paths
from openprogram_memory.sessions.importers.tail import import_appended
from openprogram_memory.sessions.store import SessionStore

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "sessions"
CASES = [
    ("claude-code", FIXTURES / "claude-code" / "rewind.jsonl"),
    ("claude-code", FIXTURES / "claude-code" / "subagent.jsonl"),
    ("claude-code", FIXTURES / "claude-code" / "compact.jsonl"),
    ("codex", FIXTURES / "codex" / "crud.jsonl"),
    ("codex", FIXTURES / "codex" / "legacy.jsonl"),
    ("pi", FIXTURES / "pi" / "branched.jsonl"),
]


def snapshot(store: SessionStore) -> dict[str, dict[str, tuple]]:
    """Every session's nodes as (predecessor, role, content, kind) — what memory reads."""
    out = {}
    for info in store.list_sessions():
        nodes = {}
        for path in (store.root / info.session / "history").iterdir():
            node = store.get_node(info.session, path.stem)
            nodes[node.id] = (node.predecessor, node.role, node.content, node.metadata.get("kind"))
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
