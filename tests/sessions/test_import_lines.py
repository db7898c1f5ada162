"""Importers keep every real turn: absent parents, duplicate ids, skipped lines counted, wrong formats refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pytest

from openprogram_memory.failures import FailureCode, MemoryFailure
from openprogram_memory.sessions.importers import import_paths
from openprogram_memory.sessions.markers import is_memory_input, live_tips, pending_turns
from openprogram_memory.sessions.store import SessionStore

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "sessions"
REWIND = FIXTURES / "claude-code" / "rewind.jsonl"
REWIND_SESSION = "5f0c7a8e-1d2b-4c3a-9e7f-2a6b8c9d0e1f"
WS = "w-0000beef"


def U(number: int) -> str:
    return f"00000000-0000-4000-8000-{number:012d}"


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def write_lines(path: Path, lines: list[Any]) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def without_parents(source: Path, target: Path, keep: Callable[[dict], bool] = lambda line: False) -> Path:
    """``source`` with ``parentUuid: null`` on every line (as older Claude Code wrote them)."""
    lines = lines_of(source)
    for line in lines:
        if "parentUuid" in line and not keep(line):
            line["parentUuid"] = None
    return write_lines(target, lines)


def tree_of(store: SessionStore, session: str) -> dict[str, str | None]:
    return {node_id: store.get_node(session, node_id).predecessor for node_id in store.parent_map(session)}


# -- absent parents -------------------------------------------------------------------------------


@pytest.mark.parametrize("fixture", [FIXTURES / "claude-code" / "subagent.jsonl",
                                     FIXTURES / "claude-code" / "compact.jsonl",
                                     FIXTURES / "claude-code" / "crud.jsonl",
                                     FIXTURES / "claude-code" / "todos.jsonl"])
def test_null_parents_rebuild_the_recorded_tree_of_a_linear_transcript(fixture: Path, tmp_path: Path) -> None:
    recorded = SessionStore(tmp_path / "recorded")
    session = import_paths(recorded, "claude-code", [fixture]).sessions[0]
    nulled = SessionStore(tmp_path / "nulled")
    result = import_paths(nulled, "claude-code", [without_parents(fixture, tmp_path / "old.jsonl")])
    assert result.sessions == [session]
    # file order is the conversation order, sub-agent branches included
    assert tree_of(nulled, session) == tree_of(recorded, session)
    assert nulled.head(session) == recorded.head(session)
    assert pending_turns(nulled, session, WS) == pending_turns(recorded, session, WS)


def test_an_old_transcript_with_null_parents_is_one_conversation_with_every_turn_pending(
        store: SessionStore, tmp_path: Path) -> None:
    path = without_parents(REWIND, tmp_path / "old.jsonl")
    result = import_paths(store, "claude-code", [path])
    assert len(live_tips(store, REWIND_SESSION)) == 2  # the main conversation and the sub-agent branch
    turns = pending_turns(store, REWIND_SESSION, WS)
    expected = [line["uuid"] for line in lines_of(REWIND)
                if line.get("type") in ("user", "assistant") and not line.get("isSidechain")
                and store.has_node(REWIND_SESSION, line["uuid"])
                and is_memory_input(store.get_node(REWIND_SESSION, line["uuid"]))]
    assert [turn.id for turn in turns] == expected and len(expected) >= 8  # both edits of message two, in file order
    assert result.imported == store.session_info(REWIND_SESSION).node_count


def test_a_parent_missing_from_the_file_chains_to_the_previous_line(store: SessionStore, tmp_path: Path) -> None:
    lines = lines_of(REWIND)
    for line in lines:
        if line.get("uuid") == U(18):
            line["parentUuid"] = "ffffffff-0000-4000-8000-000000000000"  # a line this file never had
    import_paths(store, "claude-code", [write_lines(tmp_path / "t.jsonl", lines)])
    node = store.get_node(REWIND_SESSION, U(18))
    assert node.predecessor == U(17) and node.metadata["detached_from"] == "ffffffff-0000-4000-8000-000000000000"
    assert U(18) in [n.id for n in store.get_branch(REWIND_SESSION)]


def test_a_continuation_file_attaches_to_its_parent_already_in_the_store(store: SessionStore, tmp_path: Path) -> None:
    lines = REWIND.read_text().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if f'"uuid":"{U(18)}"' in line)
    first, rest = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text("".join(lines[:cut]))
    rest.write_text("".join(lines[cut:]))
    import_paths(store, "claude-code", [first])
    import_paths(store, "claude-code", [rest])
    assert store.get_node(REWIND_SESSION, U(18)).predecessor == U(17)  # found in the store, not chained in file


@pytest.mark.parametrize("name", ["branched.jsonl", "crud.jsonl"])
def test_null_parents_in_a_pi_file_continue_the_previous_entry(store: SessionStore, tmp_path: Path,
                                                               name: str) -> None:
    fixture = FIXTURES / "pi" / name
    recorded = SessionStore(tmp_path / "recorded")
    session = import_paths(recorded, "pi", [fixture]).sessions[0]
    lines = lines_of(fixture)
    for before, line in zip(lines, lines[1:]):
        if line.get("parentId") == before.get("id"):
            line["parentId"] = None  # only where file order says the same; branch points keep theirs
    import_paths(store, "pi", [write_lines(tmp_path / "p.jsonl", lines)])
    assert tree_of(store, session) == tree_of(recorded, session)
    assert len(live_tips(store, session)) == len(live_tips(recorded, session))


# -- duplicate ids ----------------------------------------------------------------------------------


def _torn_copy(line: dict) -> dict:
    torn = dict(line)
    torn["message"] = "error"
    torn.pop("timestamp", None)
    torn["timesstamp"] = line.get("timestamp")
    return torn


@pytest.mark.parametrize("torn_first", [True, False])
def test_a_duplicated_uuid_keeps_the_well_formed_line(store: SessionStore, tmp_path: Path, torn_first: bool) -> None:
    lines = lines_of(REWIND)
    index = next(i for i, line in enumerate(lines) if line.get("uuid") == U(4))
    good = lines[index]
    lines[index:index + 1] = [_torn_copy(good), good] if torn_first else [good, _torn_copy(good)]
    result = import_paths(store, "claude-code", [write_lines(tmp_path / "t.jsonl", lines)])
    node = store.get_node(REWIND_SESSION, U(4))
    assert node.role == "user" and node.content == "We need a web framework for the new billing service. " \
        "We decided to use Flask for the billing service."
    assert result.skipped["duplicate_id"] == 1 and result.imported == 18


def test_a_duplicated_pi_id_keeps_the_well_formed_entry(store: SessionStore, tmp_path: Path) -> None:
    lines = lines_of(FIXTURES / "pi" / "branched.jsonl")
    index = next(i for i, line in enumerate(lines) if line.get("type") == "message"
                 and line["message"].get("role") == "user")
    torn = dict(lines[index], message="error")
    lines.insert(index, torn)
    result = import_paths(store, "pi", [write_lines(tmp_path / "p.jsonl", lines)])
    node = store.get_node(lines[0]["id"], lines[index + 1]["id"])
    assert node.content == "write a haiku about coding to haiku1.txt" and result.skipped["duplicate_id"] == 1


# -- skipped lines, by reason -------------------------------------------------------------------------


def test_every_skipped_line_is_counted_by_reason(store: SessionStore, tmp_path: Path) -> None:
    good = lines_of(REWIND)
    user = next(line for line in good if line.get("type") == "user")
    nameless = {key: value for key, value in user.items() if key != "uuid"}
    broken = dict(user, uuid="0badf00d-0000-4000-8000-000000000001", message="not a message")
    future = dict(user, uuid="0badf00d-0000-4000-8000-000000000002", type="hologram")
    path = write_lines(tmp_path / "t.jsonl", [*good, "", "   ", "{torn line", "42", "[1, 2]",
                                               {"silly": "this"}, nameless, broken, future])
    result = import_paths(store, "claude-code", [path])
    assert result.imported == 18
    assert result.to_json()["skipped"] == {"blank": 2, "malformed_json": 1, "not_an_object": 2,
                                           "unknown_type": 2, "missing_id": 1, "malformed_line": 1,
                                           "not_a_turn": 4}
    again = import_paths(store, "claude-code", [path]).to_json()
    assert again["imported"] == 0 and again["skipped"]["already_present"] == 18
    assert again["skipped"]["malformed_json"] == 1  # counted on every import, not only the first


def test_codex_and_pi_lines_are_counted_too(store: SessionStore) -> None:
    codex = import_paths(store, "codex", [FIXTURES / "codex" / "crud.jsonl"])
    lines = lines_of(FIXTURES / "codex" / "crud.jsonl")
    assert codex.imported + codex.skipped_total == len(lines)
    assert codex.skipped == {"not_a_turn": sum(1 for line in lines if line["type"] != "response_item"
                                               or line["payload"]["type"] == "reasoning")}
    pi = import_paths(store, "pi", [FIXTURES / "pi" / "branched.jsonl"])
    assert pi.imported + pi.skipped_total == len(lines_of(FIXTURES / "pi" / "branched.jsonl"))
    assert pi.skipped == {"not_a_turn": 3}  # the session header, a model change, a thinking-level change


# -- wrong format ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt, path, looks_like", [
    ("claude-code", FIXTURES / "codex" / "crud.jsonl", "codex"),
    ("claude-code", FIXTURES / "pi" / "branched.jsonl", "pi"),
    ("codex", REWIND, "claude-code"),
    ("codex", FIXTURES / "pi" / "branched.jsonl", "pi"),
    ("pi", FIXTURES / "codex" / "crud.jsonl", "codex"),
    ("pi", REWIND, "claude-code"),
])
def test_a_file_of_another_format_is_refused_naming_it(store: SessionStore, fmt: str, path: Path,
                                                       looks_like: str) -> None:
    good = {"claude-code": REWIND, "codex": FIXTURES / "codex" / "crud.jsonl",
            "pi": FIXTURES / "pi" / "branched.jsonl"}[fmt]
    with pytest.raises(MemoryFailure) as caught:
        import_paths(store, fmt, [good, path])
    failure = caught.value
    assert failure.code is FailureCode.INVALID_ARGUMENT and failure.exit_code == 64  # as every INVALID_ARGUMENT
    assert f"run `openprogram memory import {looks_like} {path}`" in failure.message
    assert failure.details["looks_like"] == looks_like
    assert store.list_sessions() == []  # the good file was not imported either


def test_random_jsonl_is_refused_and_an_empty_file_is_not(store: SessionStore, tmp_path: Path) -> None:
    random = write_lines(tmp_path / "metrics.jsonl", [{"cpu": 0.4, "at": "10:00"}, {"cpu": 0.5, "at": "10:01"}])
    for fmt in ("claude-code", "codex", "pi"):
        with pytest.raises(MemoryFailure) as caught:
            import_paths(store, fmt, [random])
        assert caught.value.code is FailureCode.INVALID_ARGUMENT and "known transcript format" in caught.value.message
    empty = tmp_path / "new.jsonl"
    empty.write_text("")
    assert import_paths(store, "claude-code", [empty]).imported == 0
    assert store.list_sessions() == []


def test_file_order_links_lines_of_one_file_only(store: SessionStore, tmp_path: Path) -> None:
    lines = lines_of(FIXTURES / "claude-code" / "crud.jsonl")
    session = next(line["sessionId"] for line in lines if "sessionId" in line)
    first_user = next(line for line in lines if line.get("type") == "user")
    other = dict(first_user, uuid="other-file-0001", message={"role": "user", "content": "from another file"})
    nulled = [dict(line, parentUuid=None) if "parentUuid" in line else line for line in lines]
    result = import_paths(store, "claude-code", [write_lines(tmp_path / "a.jsonl", [other]),
                                                 write_lines(tmp_path / "b.jsonl", nulled)])
    assert result.sessions == [session]
    # the real file's first line starts its own conversation, it does not continue the other file
    assert store.get_node(session, first_user["uuid"]).predecessor is None
    assert store.get_node(session, "other-file-0001").predecessor is None


def test_a_copy_of_a_late_line_in_another_file_makes_no_cycle(store: SessionStore, tmp_path: Path) -> None:
    lines = lines_of(FIXTURES / "claude-code" / "crud.jsonl")
    session = next(line["sessionId"] for line in lines if "sessionId" in line)
    recorded = SessionStore(tmp_path / "recorded")
    import_paths(recorded, "claude-code", [FIXTURES / "claude-code" / "crud.jsonl"])
    stray = next(line for line in reversed(lines) if line.get("type") == "assistant")
    nulled = [dict(line, parentUuid=None) if "parentUuid" in line else line for line in lines]
    result = import_paths(store, "claude-code", [write_lines(tmp_path / "a.jsonl", [stray]),
                                                 write_lines(tmp_path / "b.jsonl", nulled)])
    assert result.skipped["duplicate_id"] == 1
    assert tree_of(store, session) == tree_of(recorded, session)


def test_a_parent_cycle_is_cut_and_every_line_kept(store: SessionStore, tmp_path: Path) -> None:
    user = next(line for line in lines_of(REWIND) if line.get("type") == "user")
    a, b, c = (dict(user, uuid=f"cyc-{name}", message={"role": "user", "content": f"turn {name}"})
               for name in "abc")
    a["parentUuid"], b["parentUuid"], c["parentUuid"] = "cyc-c", "cyc-a", "cyc-b"
    result = import_paths(store, "claude-code", [write_lines(tmp_path / "t.jsonl", [a, b, c])])
    assert result.imported == 3
    roots = [n for n in map(lambda i: store.get_node(REWIND_SESSION, i), ("cyc-a", "cyc-b", "cyc-c"))
             if n.predecessor is None]
    assert len(roots) == 1 and roots[0].metadata["detached_from"]
    assert [n.content for n in store.get_branch(REWIND_SESSION)][-3:] in (
        ["turn a", "turn b", "turn c"], ["turn b", "turn c", "turn a"], ["turn c", "turn a", "turn b"])


# -- every real turn of the real transcripts ------------------------------------------------------------

WRAPPERS = ("<", "Caveat:", "[Request interrupted")


def _typed_texts(path: Path) -> list[str]:
    """Judged from the raw lines alone: what the person typed and the assistant answered, in the main thread."""
    texts = []
    for line in lines_of(path):
        message = line.get("message") if isinstance(line.get("message"), dict) else {}
        content = message.get("content")
        blocks = [content] if isinstance(content, str) else [
            b.get("text") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]
        if line.get("type") not in ("user", "assistant") or line.get("isSidechain") or line.get("isMeta") \
                or line.get("isCompactSummary") or "toolUseResult" in line:
            continue
        texts.extend(text for text in blocks if text and text.strip() and not text.lstrip().startswith(WRAPPERS))
    return texts


@pytest.mark.parametrize("name", ["rewind.jsonl", "compact.jsonl", "subagent.jsonl", "crud.jsonl", "todos.jsonl"])
def test_every_typed_turn_of_a_claude_code_transcript_is_memory_input(store: SessionStore, name: str) -> None:
    path = FIXTURES / "claude-code" / name
    session = import_paths(store, "claude-code", [path]).sessions[0]
    pending = " ".join(turn.content for tip in live_tips(store, session)
                       for turn in pending_turns(store, session, WS, tip=tip))
    # a branch the person rewound away from is kept, but rewound (test_importers checks which)
    abandoned = " ".join(n.content for n in map(lambda i: store.get_node(session, i), store.parent_map(session))
                         if n.rewound)
    missing = [text[:60] for text in _typed_texts(path) if text not in pending and text not in abandoned]
    assert _typed_texts(path) and missing == []
    assert len(abandoned) < len(pending)
    for tip in live_tips(store, session):
        for turn in pending_turns(store, session, WS, tip=tip):
            assert not turn.content.lstrip().startswith(WRAPPERS)


@pytest.mark.parametrize("fmt, path", [("pi", FIXTURES / "pi" / "branched.jsonl"),
                                       ("pi", FIXTURES / "pi" / "crud.jsonl"),
                                       ("codex", FIXTURES / "codex" / "crud.jsonl")])
def test_every_typed_turn_of_pi_and_codex_transcripts_is_memory_input(store: SessionStore, fmt: str,
                                                                      path: Path) -> None:
    session = import_paths(store, fmt, [path]).sessions[0]
    pending = [turn.content for tip in live_tips(store, session) for turn in pending_turns(store, session, WS, tip=tip)]
    typed = []
    for line in lines_of(path):
        message = line.get("message") or line.get("payload") or {}
        if message.get("role") in ("user", "assistant") and line.get("type") in ("message", "response_item"):
            text = "\n\n".join(b.get("text") for b in message.get("content") or [] if isinstance(b, dict)
                               and b.get("type") in ("text", "input_text", "output_text") and b.get("text"))
            if text and not text.lstrip().startswith(("<", "# AGENTS.md")):
                typed.append(text)
    assert typed and [text for text in typed if text not in pending] == []


def _import_with_user_line_before_u4(store: SessionStore, tmp_path: Path, uuid: str, text: str) -> None:
    """The REWIND transcript with one more user line, ``uuid`` saying ``text``, between U(2) and U(4), imported."""
    lines = lines_of(REWIND)
    index = next(i for i, line in enumerate(lines) if line.get("uuid") == U(4))
    lines[index:index + 1] = [dict(lines[index], uuid=uuid, parentUuid=U(2), message={"role": "user", "content": text}),
                              dict(lines[index], parentUuid=uuid)]
    import_paths(store, "claude-code", [write_lines(tmp_path / "t.jsonl", lines)])


@pytest.mark.parametrize("text", [
    "Caveat: The messages below were generated by the user while running local commands. DO NOT respond to "
    "these messages or otherwise consider them in your response unless the user explicitly asks you to.",
    "<local-command-caveat>Caveat: the messages below were generated by the user while running local commands."
    "</local-command-caveat>",
    "<system-reminder>The TodoWrite tool hasn't been used recently.</system-reminder>",
    "<bash-input>git status</bash-input>",
    "<bash-stdout>On branch main</bash-stdout><bash-stderr></bash-stderr>",
])
def test_agent_wrappers_without_a_meta_flag_are_never_memory_input(store: SessionStore, tmp_path: Path,
                                                                   text: str) -> None:
    _import_with_user_line_before_u4(store, tmp_path, "wrapper-0001", text)  # as older Claude Code: no isMeta
    node = store.get_node(REWIND_SESSION, "wrapper-0001")
    assert node.role == "user" and not is_memory_input(node)
    assert store.get_node(REWIND_SESSION, U(4)).predecessor == "wrapper-0001"


@pytest.mark.parametrize("text", [
    "This session is being continued from a previous conversation that ran out of context. The conversation is "
    "summarized below:\nThe user prefers tabs and is allergic to peanuts.",
    "<system-reminder>Note: app.py was modified.</system-reminder>\nThis session is being continued from a previous "
    "conversation that ran out of context. The user prefers tabs.",
])
def test_a_compaction_summary_without_its_flag_is_known_by_its_words(store: SessionStore, tmp_path: Path,
                                                                     text: str) -> None:
    _import_with_user_line_before_u4(store, tmp_path, "summary-0001", text)  # as older Claude Code: no flag
    node = store.get_node(REWIND_SESSION, "summary-0001")
    assert node.metadata.get("kind") == "compaction_summary" and not is_memory_input(node)


def test_the_compaction_summary_openings_the_importers_know_are_the_ones_the_writer_drops() -> None:
    """One list: what the importers mark ``compaction_summary`` by its words, the writer reads as the runtime's."""
    from openprogram_memory.sessions.wrappers import COMPACTION_SUMMARY_STARTS
    from openprogram_memory.writer.segment import agent_generated

    assert all(agent_generated(f"{start}. The user prefers tabs.") for start in COMPACTION_SUMMARY_STARTS)


def test_a_claude_code_file_without_turns_yet_is_still_claude_code(store: SessionStore, tmp_path: Path) -> None:
    path = write_lines(tmp_path / "t.jsonl", [  # a message queued before the first turn was recorded
        {"type": "queue-operation", "operation": "enqueue", "timestamp": "2026-01-01T00:00:00Z",
         "sessionId": "queued-0001", "content": "hello"},
        {"type": "queue-operation", "operation": "dequeue", "timestamp": "2026-01-01T00:00:01Z",
         "sessionId": "queued-0001"},
    ])
    result = import_paths(store, "claude-code", [path])
    assert (result.imported, result.to_json()["skipped"]) == (0, {"not_a_turn": 2})
    with pytest.raises(MemoryFailure) as caught:
        import_paths(store, "codex", [path])
    assert caught.value.details["looks_like"] == "claude-code"


def test_a_pi_parent_missing_from_the_file_chains_to_the_previous_entry(store: SessionStore, tmp_path: Path) -> None:
    lines = lines_of(FIXTURES / "pi" / "crud.jsonl")
    target = next(i for i, line in enumerate(lines) if i > 3 and line.get("type") == "message")
    lines[target]["parentId"] = "gone0000"
    import_paths(store, "pi", [write_lines(tmp_path / "p.jsonl", lines)])
    node = store.get_node(lines[0]["id"], lines[target]["id"])
    assert node.predecessor == lines[target - 1]["id"] and node.metadata["detached_from"] == "gone0000"
