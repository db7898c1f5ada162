"""The backend-neutral file tools and the prompts (no HTTP at all)."""

from __future__ import annotations

from typing import Iterator

import pytest
from anthropic_helpers import batch_turns

from openprogram_memory.failures import MemoryFailure
from openprogram_memory.transaction.staging import Staging
from openprogram_memory.writer import tools
from openprogram_memory.writer.backend import WriterRequest
from openprogram_memory.writer.prompts import system_prompt, user_message
from openprogram_memory.writer.superseded import SupersededRecord
from openprogram_memory.writer.tools import TOOLS, run_tool


@pytest.fixture
def staging(workspace) -> Iterator[Staging]:
    stage = Staging(workspace.root, workspace.cache)
    yield stage
    stage.cleanup()


def test_schemas_and_dispatcher_agree() -> None:
    names = [tool["name"] for tool in TOOLS]
    assert names == ["list_topics", "read_topic", "write_topic", "edit_topic", "move_topic", "delete_topic",
                     "grep_topics", "commit_edits"]
    for tool in TOOLS:
        assert tool["description"] and tool["input_schema"]["type"] == "object"


def test_list_read_write_move_delete(staging: Staging) -> None:
    assert run_tool(staging, "list_topics", {}) == ("topics/people/dana.md", False)
    text, error = run_tool(staging, "read_topic", {"path": "people/dana.md"})
    assert not error and text.startswith("# Dana\n")
    assert run_tool(staging, "write_topic", {"path": "topics/a.md", "content": "# A\n"}) == ("wrote topics/a.md (4 bytes)", False)
    assert run_tool(staging, "move_topic", {"src": "topics/a.md", "dst": "topics/b/a.md"})[1] is False
    assert run_tool(staging, "list_topics", {})[0] == "topics/b/a.md\ntopics/people/dana.md"
    assert run_tool(staging, "delete_topic", {"path": "topics/b/a.md"}) == ("deleted topics/b/a.md", False)
    text, error = run_tool(staging, "read_topic", {"path": "topics/b/a.md"})
    assert error and text.startswith("MEMORY_NOT_FOUND")


def test_edit_topic_needs_exactly_one_occurrence(staging: Staging) -> None:
    staging.write("topics/x.md", "one two one\n")
    text, error = run_tool(staging, "edit_topic", {"path": "topics/x.md", "old_str": "one", "new_str": "1"})
    assert error and "occurs 2 times" in text
    text, error = run_tool(staging, "edit_topic", {"path": "topics/x.md", "old_str": "three", "new_str": "3"})
    assert error and "does not occur" in text
    assert run_tool(staging, "edit_topic", {"path": "topics/x.md", "old_str": "two", "new_str": ""}) == ("edited topics/x.md", False)
    assert staging.read("topics/x.md") == "one  one\n"


@pytest.mark.parametrize(
    ("name", "tool_input", "prefix"),
    [
        ("write_topic", {"path": "sources/x.md", "content": "x"}, "READ_ONLY_PATH: "),
        ("write_topic", {"path": "core.md", "content": "x"}, "READ_ONLY_PATH: "),
        ("write_topic", {"path": "../x.md", "content": "x"}, "PATH_OUTSIDE_WORKSPACE: "),
        ("read_topic", {"path": "/etc/passwd"}, "PATH_OUTSIDE_WORKSPACE: "),
        ("delete_topic", {"path": "topics/none.md"}, "MEMORY_NOT_FOUND: "),
        ("write_topic", {"path": "topics/x.md"}, "INVALID_ARGUMENT: missing or non-text argument 'content'"),
        ("grep_topics", {"pattern": "("}, "INVALID_ARGUMENT: "),
        ("rm_rf", {}, "INVALID_ARGUMENT: unknown tool 'rm_rf'"),
        ("list_topics", "not an object", "INVALID_ARGUMENT: "),
    ],
)
def test_bad_calls_are_tool_errors_not_exceptions(staging: Staging, name, tool_input, prefix) -> None:
    text, error = run_tool(staging, name, tool_input)
    assert error and text.startswith(prefix), text
    assert staging.changes == {}


def test_grep_topics_reports_path_line_and_caps(staging: Staging, monkeypatch) -> None:
    assert run_tool(staging, "grep_topics", {"pattern": r"BIKE SHOP\.", "ignore_case": True}) == (
        "topics/people/dana.md:3: Dana runs a bike shop.[^e-57027ee120] ^e1ad2733", False)
    assert run_tool(staging, "grep_topics", {"pattern": "BIKE"}) == ("no matches", False)
    staging.write("topics/many.md", "x\n" * 10)
    monkeypatch.setattr(tools, "GREP_MAX_MATCHES", 3)
    text, _ = run_tool(staging, "grep_topics", {"pattern": "^x$"})
    assert text.splitlines()[:3] == ["topics/many.md:1: x", "topics/many.md:2: x", "topics/many.md:3: x"]
    assert "more than 3 matches" in text.splitlines()[3]


def test_commit_edits_touches_nothing(staging: Staging) -> None:
    text, error = run_tool(staging, "commit_edits", {})
    assert not error and staging.changes == {}


def test_write_prompt_carries_the_content_policy_and_format() -> None:
    prompt = system_prompt("write")
    for phrase in ("repeated status checks", "one-off tool procedure", "re-read from the project's own files",
                   "Project progress goes to that project's topic", "`topics/core.md`",
                   "rules, preferences and identity facts",
                   "[^e1]: Time: `2026-08-09`; Sources: [bike shop](openprogram/s1/u1)",
                   "Cite only source ids present in the batch", "Never write a `^id` yourself",
                   "keep all of its existing `^id`s", "remove or update every link to it",
                   "No\n  Markdown, no URL, no source id, no speaker name, no date or time", "call `commit_edits`"):
        assert phrase in prompt, phrase
    assert system_prompt("backfill") == prompt
    assert system_prompt("write-repair").startswith(prompt.rstrip("\n")) and "## Repair run" in system_prompt("write-repair")
    organize = system_prompt("organize")
    assert "Clean `topics/core.md`" in organize and "Never write a new `^id`" in organize
    with pytest.raises(MemoryFailure):
        system_prompt("sing")


def test_user_message_has_turns_verbatim_and_the_tree() -> None:
    text = user_message(WriterRequest(stage="write", turns=batch_turns(), topic_paths=["topics/core.md"], session_id="s2"))
    assert ('<turn source="openprogram/s2/u1" role="user" speaker="Dana" time="2026-08-11T09:00:00+08:00">\n'
            "For the record: our billing service runs on FastAPI.\n</turn>") in text
    assert "- topics/core.md" in text and "Session: s2" in text and "rejection" not in text
    repair = user_message(WriterRequest(stage="write-repair", turns=[], topic_paths=[], rejection="bad line 3"))
    assert "<rejection>\nbad line 3\n</rejection>" in repair and "(no topic files yet)" in repair


def test_user_message_asks_to_drop_the_mark_of_records_whose_branch_is_back() -> None:
    back = SupersededRecord("a1b2c3d4", "topics/core.md", "We use Flask.", ("openprogram/s2/u1",))
    text = user_message(WriterRequest(stage="write", turns=batch_turns(), topic_paths=[], restored=[back]))
    assert "## Records from a branch the person went back to" in text
    assert "remove ` (abandoned branch)` from each one's footnote time" in text
    assert '<record memory_id="a1b2c3d4" topic="topics/core.md">\nWe use Flask.\n</record>' in text
    plain = user_message(WriterRequest(stage="write", turns=batch_turns(), topic_paths=[]))
    assert "went back to" not in plain
