"""Transcript importers: tree kept, idempotent, tool and runtime turns never memory input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openprogram_memory.failures import FailureCode, MemoryFailure
from openprogram_memory.sessions.importers import import_paths
from openprogram_memory.sessions.markers import is_memory_input, live_tips, pending_turns
from openprogram_memory.sessions.store import SessionStore

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "sessions"
REWIND = FIXTURES / "claude-code" / "rewind.jsonl"
REWIND_SESSION = "5f0c7a8e-1d2b-4c3a-9e7f-2a6b8c9d0e1f"
WS = "w-0000beef"
LEGACY_THREAD = "7c1e2d3a-5b6f-4a08-9c1d-2e3f4a5b6c7d"  # codex/legacy.jsonl's header id


def U(number: int) -> str:
    """Node ids of the rewind fixture."""
    return f"00000000-0000-4000-8000-{number:012d}"


def _texts(nodes) -> list[str]:
    return [node.content for node in nodes]


def test_rewind_transcript_keeps_both_branches_with_head_on_the_newest(store: SessionStore) -> None:
    result = import_paths(store, "claude-code", [REWIND])
    assert result.sessions == [REWIND_SESSION]
    assert store.head(REWIND_SESSION) == U(23)
    head_text = " ".join(_texts(pending_turns(store, REWIND_SESSION, WS)))
    assert "FastAPI" in head_text and "Flask" not in head_text
    assert "I'm Dana, I run the data team at Acme" in head_text
    # the two branches share the first user/assistant exchange
    assert store.get_node(REWIND_SESSION, U(4)).predecessor == store.get_node(REWIND_SESSION, U(9)).predecessor == U(2)
    # the Flask branch is the one the person rewound away from: kept, rewound as `session rewind` does
    flask = [node for node in store.walk_back(REWIND_SESSION, U(8)) if node.id not in {U(1), U(2)}]
    assert "We decided to use Flask" in " ".join(_texts(flask)) and all(node.rewound for node in flask)
    assert live_tips(store, REWIND_SESSION) == [U(23), U(14)]  # the sub-agent of a live turn stays live
    assert U(8) in store.branch_tips(REWIND_SESSION, include_archived=True)
    assert not store.get_node(REWIND_SESSION, U(14)).rewound


def test_imported_node_files_are_complete_and_private(store: SessionStore) -> None:
    result = import_paths(store, "claude-code", [REWIND])
    files = sorted((store.root / REWIND_SESSION / "history").iterdir())
    assert len(files) == result.imported and all(f.suffix == ".json" for f in files)  # no temp files left
    assert all(f.stat().st_mode & 0o777 == 0o600 for f in files)
    assert all(json.loads(f.read_text())["id"] == f.stem for f in files)


def test_reimport_adds_nothing_and_touches_nothing(store: SessionStore) -> None:
    first = import_paths(store, "claude-code", [REWIND])
    meta_before = (store.root / REWIND_SESSION / "meta.json").read_bytes()
    again = import_paths(store, "claude-code", [REWIND])
    assert (again.imported, again.skipped["already_present"]) == (0, first.imported)
    assert first.imported == store.session_info(REWIND_SESSION).node_count
    assert (store.root / REWIND_SESSION / "meta.json").read_bytes() == meta_before


def test_a_grown_transcript_imports_only_its_new_lines(store: SessionStore, tmp_path: Path) -> None:
    lines = REWIND.read_text().splitlines(keepends=True)
    partial = tmp_path / "t.jsonl"
    partial.write_text("".join(lines[:-3]))
    early = import_paths(store, "claude-code", [partial])
    partial.write_text("".join(lines))
    later = import_paths(store, "claude-code", [partial])
    assert later.skipped["already_present"] == early.imported and later.imported > 0
    assert store.head(REWIND_SESSION) == U(23)


def test_assistant_lines_of_one_message_become_one_node(store: SessionStore) -> None:
    import_paths(store, "claude-code", [REWIND])
    node = store.get_node(REWIND_SESSION, U(10))  # thinking, text and Task call lines
    assert node.role == "assistant"
    assert node.content == "Good choice for typed request models. Let me have a helper check the packages we need."
    assert node.metadata["tool_uses"] == ["Task"]
    for merged in (U(11), U(12)):
        assert not store.has_node(REWIND_SESSION, merged)
    assert store.get_node(REWIND_SESSION, U(15)).predecessor == U(10)  # child of the last line re-attached
    assert store.get_node(REWIND_SESSION, U(22)).predecessor == U(20)  # across the dropped stop-hook line


def test_tool_results_and_calls_are_never_memory_input(store: SessionStore) -> None:
    import_paths(store, "claude-code", [REWIND])
    result = store.get_node(REWIND_SESSION, U(17))
    call = store.get_node(REWIND_SESSION, U(16))  # an assistant message with only a tool call
    assert result.role == call.role == "tool"
    assert "requirements.txt" in result.content
    assert not is_memory_input(result) and not is_memory_input(call)
    for tip in live_tips(store, REWIND_SESSION):
        for turn in pending_turns(store, REWIND_SESSION, WS, tip=tip):
            assert turn.role in ("user", "assistant")
            assert "[tool" not in turn.content and "uvicorn" not in turn.content


def test_sidechain_is_its_own_branch_and_not_memory_input(store: SessionStore) -> None:
    import_paths(store, "claude-code", [REWIND])
    prompt, report = store.get_node(REWIND_SESSION, U(13)), store.get_node(REWIND_SESSION, U(14))
    assert prompt.predecessor == U(10)  # attached to the message holding the Task call
    assert prompt.metadata["sidechain"] is True and report.metadata["kind"] == "subagent_report"
    assert pending_turns(store, REWIND_SESSION, WS, tip=U(14))[-1].id == U(10)


def test_a_sub_agent_in_its_own_file_comes_along_with_its_main_transcript(store: SessionStore, tmp_path) -> None:
    lines = [json.loads(line) for line in REWIND.read_text().splitlines()]
    sub = [line for line in lines if line.get("isSidechain")]
    project = tmp_path / "projects" / "-home-dana-billing"
    agents = project / REWIND_SESSION / "subagents"
    agents.mkdir(parents=True)
    main = project / f"{REWIND_SESSION}.jsonl"
    main.write_text("".join(json.dumps(line) + "\n" for line in lines if not line.get("isSidechain")))
    (agents / "agent-a1b2c3d.jsonl").write_text("".join(json.dumps({**line, "agentId": "a1b2c3d"}) + "\n"
                                                        for line in sub))
    compaction = {**sub[0], "uuid": U(77), "agentId": "acompact-1", "message": {"role": "user", "content": "x"}}
    (agents / "agent-acompact-1.jsonl").write_text(json.dumps(compaction) + "\n")

    result = import_paths(store, "claude-code", [main])  # only the main transcript is named
    prompt, report = store.get_node(REWIND_SESSION, U(13)), store.get_node(REWIND_SESSION, U(14))
    assert prompt.predecessor == U(10) and report.predecessor == U(13)  # hung from the Task call, as in one file
    assert prompt.metadata["agent_id"] == "a1b2c3d" and report.metadata["kind"] == "subagent_report"
    assert U(77) not in store.parent_map(REWIND_SESSION)  # Claude Code's internal compaction run is not a turn
    assert result.imported == len(store.parent_map(REWIND_SESSION))
    again = import_paths(store, "claude-code", [project])  # the directory: the same files, nothing new
    assert again.imported == 0 and U(77) not in store.parent_map(REWIND_SESSION)


def _main_and_agent_files(folder: Path) -> tuple[Path, Path]:
    """The rewind fixture as Claude Code writes it now: the main conversation, and its sub-agent in a file of its
    own (side by side here, as in a copy: nothing brings one along with the other)."""
    lines = [json.loads(line) for line in REWIND.read_text().splitlines()]
    main, agent = folder / f"{REWIND_SESSION}.jsonl", folder / "agent-a1b2c3d.jsonl"
    main.write_text("".join(json.dumps(line) + "\n" for line in lines if not line.get("isSidechain")))
    agent.write_text("".join(json.dumps({**line, "agentId": "a1b2c3d"}) + "\n" for line in lines
                             if line.get("isSidechain")))
    return main, agent


def _rewound(store: SessionStore) -> set[str]:
    return {n for n in store.parent_map(REWIND_SESSION) if store.get_node(REWIND_SESSION, n).rewound}


@pytest.mark.parametrize("agent_first", [False, True], ids=["main-then-agent", "agent-then-main"])
def test_a_sub_agent_file_imported_on_its_own_hangs_from_its_call_and_head_stays(store: SessionStore, tmp_path,
                                                                                 agent_first: bool) -> None:
    """Was: `memory import claude-code agent-x.jsonl` after the main transcript made the sub-agent's last line head
    and every main turn rewound (0 pending, nothing ever written); read first, the sub-agent stayed a loose root."""
    main, agent = _main_and_agent_files(tmp_path)
    whole = SessionStore(tmp_path / "whole")
    import_paths(whole, "claude-code", [main, agent])
    for path in ([agent, main] if agent_first else [main, agent]):
        import_paths(store, "claude-code", [path])
    assert store.head(REWIND_SESSION) == whole.head(REWIND_SESSION) == U(23)
    assert _rewound(store) == _rewound(whole) == {U(4), U(5), U(7), U(8)}  # the Flask branch only
    assert store.get_node(REWIND_SESSION, U(13)).predecessor == U(10)  # hung from the Task call
    assert _texts(pending_turns(store, REWIND_SESSION, WS)) == _texts(pending_turns(whole, REWIND_SESSION, WS))


def test_only_a_summary_whose_leaf_is_in_the_file_names_the_session(store: SessionStore) -> None:
    import_paths(store, "claude-code", [REWIND, FIXTURES / "claude-code" / "subagent.jsonl"])
    assert store.session_info(REWIND_SESSION).metadata["title"] == "Billing service: FastAPI instead of Flask"
    assert "title" not in store.session_info("609efeca-2f51-4118-b077-e91c9fe63f73").metadata


def test_compaction_continues_the_branch_and_its_summary_is_not_input(store: SessionStore) -> None:
    session = "0e26ec2f-937e-482c-b889-bc126f996913"
    import_paths(store, "claude-code", [FIXTURES / "claude-code" / "compact.jsonl"])
    boundary = store.get_node(session, "a623034a-2670-4ca8-83f6-b21d2b5eb3c0")
    # logicalParentUuid 844dd3c8 is the text line of the assistant message whose node is 14c028b4
    assert boundary.role == "system" and boundary.predecessor == "14c028b4-e074-4062-9c69-5a7e5794ce7c"
    summary = store.get_node(session, "cff5fe4f-d7c3-4631-8580-3176d62c0e62")
    assert summary.content.startswith("This session is being continued") and not is_memory_input(summary)
    branch_ids = [node.id for node in store.get_branch(session)]
    assert branch_ids[0] == "801d461f-636a-431e-a961-070c91c8ae3e"  # one branch through the compaction
    assert summary.id in branch_ids
    turns = pending_turns(store, session, WS)
    assert _texts(turns)[0] == "how are you doing"
    assert [t.role for t in turns] == ["user", "assistant"]  # no /clear, caveat, summary or /compact


def test_claude_subagent_fixture_parses(store: SessionStore) -> None:
    session = "609efeca-2f51-4118-b077-e91c9fe63f73"
    import_paths(store, "claude-code", [FIXTURES / "claude-code" / "subagent.jsonl"])
    tips = live_tips(store, session)
    assert len(tips) == 2
    main = pending_turns(store, session, WS, tip=tips[0])
    assert main[0].content == "ask a subagent how he's doing"
    assert main[-1].content.startswith("The subagent says they're doing well")
    side = store.get_branch(session, tips[1])
    assert side[-1].metadata.get("sidechain") and not is_memory_input(side[-1])


def test_pi_branches_share_their_prefix(store: SessionStore) -> None:
    session = "a9642bdf-2c10-4503-abb2-081990e56318"
    result = import_paths(store, "pi", [FIXTURES / "pi"])
    assert session in result.sessions and len(result.sessions) == len(list((FIXTURES / "pi").glob("*.jsonl")))
    assert import_paths(store, "pi", [FIXTURES / "pi" / "branched.jsonl"]).imported == 0
    tips = live_tips(store, session)
    texts = [" ".join(_texts(pending_turns(store, session, WS, tip=tip))) for tip in tips]
    assert any("instead write a limerick" in t and "second haiku" not in t for t in texts)
    assert any("second haiku" in t and "limerick" not in t for t in texts)
    assert all(t.startswith("write a haiku about coding") for t in texts)
    assert store.get_node(session, "372e435f").role == "tool"


def test_codex_rollout_is_a_chain_without_injected_context(store: SessionStore) -> None:
    result = import_paths(store, "codex", [FIXTURES / "codex" / "crud.jsonl"])
    again = import_paths(store, "codex", [FIXTURES / "codex" / "crud.jsonl"])
    assert again.skipped["already_present"] == result.imported
    session = result.sessions[0]
    turns = pending_turns(store, session, WS)
    assert turns[0].content.startswith("create a file `JOKE.md`")
    assert [t.role for t in turns] == ["user", "assistant"]
    assert len(store.get_branch(session)) == result.imported


def test_a_legacy_codex_rollout_is_one_linear_session_in_line_order(store: SessionStore) -> None:
    """Older codex CLIs wrote a bare ``{id, timestamp}`` header, then unwrapped response items."""
    legacy = FIXTURES / "codex" / "legacy.jsonl"
    result = import_paths(store, "codex", [legacy])
    assert result.sessions == [LEGACY_THREAD]
    assert result.skipped == {"not_a_turn": 4}  # the header, the reasoning item, two state lines
    branch = store.get_branch(LEGACY_THREAD)
    assert len(branch) == result.imported == store.session_info(LEGACY_THREAD).node_count  # one chain
    assert [(n.role, n.content) for n in pending_turns(store, LEGACY_THREAD, WS)] == [
        ("user", "FYI our CI runs on Buildkite and I prefer squash merges."),
        ("assistant", "Understood: Buildkite for CI, squash merges for pull requests."),
        ("user", "Can you show me which pipeline file we use?"),
        ("assistant", "The pipeline lives in .buildkite/pipeline.yml."),
    ]
    wrappers = [n for n in branch if n.content.startswith(("<user_instructions>", "<environment_context>"))]
    assert len(wrappers) == 2 and not any(is_memory_input(n) for n in wrappers)
    assert [n.role for n in branch if n.content.startswith("[tool")] == ["tool", "tool"]
    assert {n.created_at for n in branch} == {"2025-04-18T09:15:30.000Z"}  # the header's time: no per-item times
    again = import_paths(store, "codex", [legacy])
    assert (again.imported, again.skipped["already_present"]) == (0, result.imported)


def test_pi_message_entries_are_not_mistaken_for_legacy_codex_items(store: SessionStore, tmp_path: Path) -> None:
    """A pi entry is ``{"type": "message", "message": {"role": …}}``; a legacy codex item has its role on top."""
    entries = [line for line in (FIXTURES / "pi" / "branched.jsonl").read_text().splitlines()
               if json.loads(line)["type"] == "message"]
    path = tmp_path / "entries.jsonl"
    path.write_text("\n".join(entries) + "\n")
    with pytest.raises(MemoryFailure) as caught:
        import_paths(store, "codex", [path])
    assert caught.value.details["looks_like"] == "pi" and store.list_sessions() == []


def test_unknown_format_and_missing_path_are_invalid_arguments(store: SessionStore, tmp_path: Path) -> None:
    with pytest.raises(MemoryFailure) as caught:
        import_paths(store, "chatgpt", [REWIND])
    assert caught.value.code is FailureCode.INVALID_ARGUMENT and "claude-code" in caught.value.message
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(MemoryFailure) as caught:
        import_paths(store, "claude-code", [REWIND, missing])
    assert caught.value.code is FailureCode.INVALID_ARGUMENT and str(missing) in caught.value.message
    assert store.list_sessions() == []  # nothing imported when one path is bad


def test_directories_are_searched_recursively_and_bad_lines_skipped(store: SessionStore, tmp_path: Path) -> None:
    nested = tmp_path / "projects" / "-home-dana-billing"
    nested.mkdir(parents=True)
    (nested / "session.jsonl").write_text(REWIND.read_text() + "{torn line\n[1, 2]\n")
    (nested / "notes.txt").write_text("not a transcript")
    result = import_paths(store, "claude-code", [tmp_path / "projects"])
    assert result.sessions == [REWIND_SESSION] and result.imported == 18


def test_lines_of_other_types_keep_the_tree_connected(store: SessionStore, tmp_path: Path) -> None:
    lines = [json.loads(line) for line in REWIND.read_text().splitlines()]
    for line in lines:  # an unknown future line type in the middle of the chain
        if line.get("uuid") == U(19):
            line["type"] = "progress"
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    import_paths(store, "claude-code", [path])
    assert not store.has_node(REWIND_SESSION, U(19))
    assert store.get_node(REWIND_SESSION, U(20)).predecessor == U(18)


def test_a_message_imported_mid_stream_is_completed_and_pending_again(store: SessionStore, tmp_path: Path) -> None:
    lines = REWIND.read_text().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if f'"uuid":"{U(10)}"' in line) + 1  # only the thinking line
    path = tmp_path / "live.jsonl"
    path.write_text("".join(lines[:cut]))
    import_paths(store, "claude-code", [path])
    assert store.get_node(REWIND_SESSION, U(10)).content == ""
    store.merge_metadata(REWIND_SESSION, {U(10): {"memory_written_scriptorium": WS, "note": "kept"}})
    path.write_text("".join(lines))
    result = import_paths(store, "claude-code", [path])
    node = store.get_node(REWIND_SESSION, U(10))
    assert result.updated == 1
    assert node.content.startswith("Good choice for typed request models")
    assert node.metadata["note"] == "kept" and "memory_written_scriptorium" not in node.metadata
    assert U(10) in [turn.id for turn in pending_turns(store, REWIND_SESSION, WS)]
    assert import_paths(store, "claude-code", [path]).updated == 0


def test_a_pi_session_forked_from_another_remembers_its_parent_file(store: SessionStore, tmp_path) -> None:
    lines = [json.loads(line) for line in (FIXTURES / "pi" / "crud.jsonl").read_text().splitlines()]
    lines[0]["parentSession"] = "/home/dana/.pi/agent/sessions/--home-dana--/2026-01-20_parent.jsonl"
    path = tmp_path / "forked.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    session = import_paths(store, "pi", [path]).sessions[0]
    assert store.session_info(session).metadata["forked_from"] == lines[0]["parentSession"]


def test_import_reports_progress_and_stops_between_files_when_asked(store: SessionStore) -> None:
    files = sorted((FIXTURES / "claude-code").glob("*.jsonl"))
    seen: list[tuple[int, int]] = []
    stopped = import_paths(store, "claude-code", files, progress=lambda done, total: seen.append((done, total)),
                           should_stop=lambda: len(seen) >= 2)  # Ctrl-C after the second file
    assert seen == [(1, len(files)), (2, len(files))]
    assert stopped.interrupted and stopped.remaining == len(files) - 2
    assert stopped.to_json()["interrupted"] is True and stopped.to_json()["remaining"] == len(files) - 2
    rest = import_paths(store, "claude-code", files)  # the same command again: only what is missing
    whole = import_paths(SessionStore(store.root.parent / "other"), "claude-code", files)
    assert not rest.interrupted and "interrupted" not in rest.to_json()
    assert stopped.imported + rest.imported == whole.imported
