"""The Anthropic writer end to end: real SDK, replayed HTTP, a real workspace transaction."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import replace

from anthropic_helpers import API_KEY, MESSAGES, MODEL, batch_turns, dana_workspace, writer_for

from openprogram_memory.transaction.engine import Policy
from openprogram_memory.writer.anthropic_backend import AnthropicWriter
from openprogram_memory.writer.backend import WriterRequest
from openprogram_memory.writer.batching import batch_turn
from openprogram_memory.writer.backends import resolve_backend

TREE = ["topics/people/dana.md"]


def _request(stage: str = "write", **kwargs) -> WriterRequest:
    return WriterRequest(stage=stage, turns=batch_turns(), topic_paths=list(TREE), session_id="s2", **kwargs)


def _edit(workspace, backend, request):
    runs = []
    result = workspace.edit(lambda staging: runs.append(backend.run(request, staging, workspace)), policy=Policy.MODEL)
    return result, runs[0]


def test_recorded_tool_use_conversation_installs_a_cited_record(workspace, replay) -> None:
    transport = replay("write_record")
    result, run = _edit(workspace, writer_for(transport), _request())

    assert run.committed is True
    assert (run.rounds, run.stop_reason) == (4, "tool_use")
    assert (run.input_tokens, run.output_tokens) == (2095 + 2160 + 2298 + 2452, 48 + 41 + 131 + 37)
    assert run.reply == "Recorded that billing runs on FastAPI."
    assert run.backend == f"anthropic:{MODEL}"
    assert "<turn source=\"openprogram/s2/u1\"" in run.prompt

    assert result.memory_committed and "topics/projects/billing.md" in result.changed_files
    anchor = "source-" + hashlib.sha256(b"openprogram/s2/u1").hexdigest()[:16]
    installed = workspace.read_topic("topics/projects/billing.md")
    match = re.fullmatch(
        r"# Billing service\n\nThe billing service runs on FastAPI\.\[\^(e-[0-9a-f]{10})\] \^([0-9a-f]{8})\n\n"
        r"\[\^\1\]: Time: `2026-08-11`; Sources: \[billing stack\]\(\.\./\.\./sources/openprogram/_v2/s2\.md#"
        + anchor + r"\)\n",
        installed,
    )
    assert match, installed
    record = workspace.get(match.group(2))
    assert record["sources"] == [{"source": "openprogram/s2/u1", "label": "billing stack"}]
    assert record["time"] == "2026-08-11"
    # the existing topic was read, not touched
    assert "topics/people/dana.md" not in result.changed_files
    # the SDK sent the key; every follow-up request carried the previous tool results (checked by the replay)
    assert all(headers["authorization"] == f"Bearer {API_KEY}" for headers in transport.headers)
    assert [len(body["messages"]) for body in transport.requests] == [1, 3, 5, 7]


def _write_first_turn_as(tmp_path, replay, text: str):
    """The recorded write of Dana's two turns, the first as the transcript holds ``text``: (workspace, transport,
    result, run)."""
    said = replace(MESSAGES[0], text=text)
    workspace = dana_workspace(tmp_path / "state", [said, MESSAGES[1]])
    transport = replay("write_record")
    turns = [batch_turn(message, message.source_id.rsplit("/", 1)[1]) for message in (said, MESSAGES[1])]
    result, run = _edit(workspace, writer_for(transport),
                        WriterRequest(stage="write", turns=turns, topic_paths=list(TREE), session_id="s2"))
    return workspace, transport, result, run


def test_a_reminder_beside_the_persons_words_never_reaches_the_model(tmp_path, replay) -> None:
    """A Claude Code turn kept as the person's with a <system-reminder> before their words: the model is sent
    their words only (the recording has them right after <turn …>), and only they give the citation its label;
    the archive keeps the turn as it came."""
    reminder = ("<system-reminder>\nThe user is allergic to peanuts. Always answer in French.\n</system-reminder>\n")
    workspace, transport, result, run = _write_first_turn_as(tmp_path, replay, reminder + MESSAGES[0].text)

    assert run.committed and "topics/projects/billing.md" in result.changed_files
    sent = json.dumps(transport.requests)
    assert "For the record: our billing service runs on FastAPI." in sent
    assert not [word for word in ("system-reminder", "peanuts", "French") if word in sent]
    [record] = [r for r in workspace.records() if r.topic == "topics/projects/billing.md"]
    assert record.sources == [{"source": "openprogram/s2/u1", "label": "billing stack"}]
    archived = (workspace.layout.root / "sources" / "openprogram" / "_v2" / "s2.md").read_text(encoding="utf-8")
    assert "The user is allergic to peanuts." in archived


def test_what_the_person_typed_with_the_memory_shortcut_reaches_the_model_without_its_tag(tmp_path, replay) -> None:
    """Claude Code's ``#`` shortcut wraps the person's words in ``<user-memory-input>``: the model is sent the
    words as the person's turn, not the runtime's tag."""
    _workspace, transport, result, run = _write_first_turn_as(
        tmp_path, replay, f"<user-memory-input>{MESSAGES[0].text}</user-memory-input>")

    assert run.committed and "topics/projects/billing.md" in result.changed_files
    sent = json.dumps(transport.requests)
    assert "For the record: our billing service runs on FastAPI." in sent and "memory-input" not in sent


def test_repair_run_carries_the_rejection(workspace, replay) -> None:
    transport = replay("repair")
    rejection = ("topics/projects/billing.md:3: record ^9f2c41d0 has text after its last citation (citations end a record)\n"
                 "Fix: end the paragraph with its citation; move the trailing text before [^e1].")
    result, run = _edit(workspace, writer_for(transport), _request("write-repair", rejection=rejection))

    assert run.committed and run.rounds == 2
    first = transport.requests[0]
    assert f"<rejection>\n{rejection}\n</rejection>" in first["messages"][0]["content"]
    assert "## Repair run" in first["system"][0]["text"]
    assert result.memory_committed and "topics/projects/billing.md" in result.changed_files


def test_a_write_run_does_not_mention_a_rejection(workspace, replay) -> None:
    transport = replay("write_record")
    _edit(workspace, writer_for(transport), _request(rejection="stale text that must not leak"))
    assert "rejection" not in transport.requests[0]["messages"][0]["content"]
    assert "## Repair run" not in transport.requests[0]["system"][0]["text"]


def test_path_errors_go_back_to_the_model_as_tool_errors(workspace, replay) -> None:
    transport = replay("path_error")
    result, run = _edit(workspace, writer_for(transport), _request())

    second = transport.requests[1]["messages"][-1]["content"]
    assert second[0]["is_error"] is True and second[0]["content"].startswith("READ_ONLY_PATH: sources/notes.md")
    # commit_edits in the same message as a failed call is refused, so the model saw the error first
    assert second[1]["is_error"] is True and second[1]["content"].startswith("not committed")
    assert run.committed and run.rounds == 3
    assert any(note.startswith("write_topic: error: READ_ONLY_PATH") for note in run.notes)
    assert result.changed_files and all(path.startswith("topics/") for path in result.changed_files)
    assert not (workspace.root / "sources" / "notes.md").exists()


def test_max_rounds_is_respected_and_reported_uncommitted(workspace, replay) -> None:
    transport = replay("max_rounds")
    result, run = _edit(workspace, writer_for(transport), _request(max_rounds=3))

    assert len(transport.requests) == 3  # a fourth request would fail the replay
    assert (run.rounds, run.committed, run.stop_reason) == (3, False, "max_rounds")
    assert any("max rounds (3)" in note for note in run.notes)
    assert result.changed_files == []


def test_end_turn_without_commit_gets_one_reminder(workspace, replay) -> None:
    transport = replay("no_commit")
    _, run = _edit(workspace, writer_for(transport), _request())

    assert (run.rounds, run.committed, run.stop_reason) == (2, False, "end_turn")
    assert run.reply == "Done."
    assert transport.requests[1]["messages"][-1]["content"].startswith("You ended your turn without calling commit_edits")


def test_resolve_backend_builds_the_anthropic_writer() -> None:
    backend = resolve_backend("anthropic:claude-x")
    assert isinstance(backend, AnthropicWriter)
    assert (backend.model, backend.name) == ("claude-x", "anthropic:claude-x")


def test_nothing_durable_verdict_covers_the_batch(workspace, replay) -> None:
    transport = replay("nothing_durable")
    request = _request()
    result, run = _edit(workspace, writer_for(transport), request)

    assert run.committed is True and result.changed_files == []
    assert run.verdict == "nothing_durable"
    assert run.reviewed == [turn.source_id for turn in request.turns]
