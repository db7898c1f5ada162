"""The write pipeline walks the real path: store → archive → transaction → markers."""

from __future__ import annotations

import json

import pytest
from filelock import FileLock

from openprogram_memory.failures import FailureCode, MemoryFailure
from openprogram_memory.sessions.markers import MARKER_KEY, mark_written
from openprogram_memory.sources.archive import archive_relpath_for
from openprogram_memory.topics.ids import source_anchor
from openprogram_memory.workspace.state import RuntimeState
from openprogram_memory.writer.pipeline import write, write_report

from .helpers import LATER, SOON, chain, failure_of, marked, settings, workspace

M = [f"m{n}" for n in range(1, 10)]


def forced(ws, session="s", **kw):
    return write_report(ws, session, force=True, now=LATER, **kw)


# -- markers: identity, not position ------------------------------------------
def test_fork_at_m3_after_nine_written_turns_writes_exactly_the_six_new_ones(ws, store, fake):
    chain(store, "s", M)
    forced(ws)
    assert marked(store, "s", ws) == set(M)
    branch = chain(store, "s", [f"b{n}" for n in range(4, 10)], parent="m3")
    fake.requests.clear()
    report = forced(ws)
    assert fake.batches() == [branch]
    assert report.to_json()["written"] == branch
    assert marked(store, "s", ws) == set(M) | set(branch)


def test_an_eleven_turn_branch_is_written_whole(ws, store, fake):
    chain(store, "s", M)
    forced(ws)
    branch = chain(store, "s", [f"b{n}" for n in range(4, 15)], parent="m3")
    fake.requests.clear()
    forced(ws)
    assert [n for batch in fake.batches() for n in batch] == branch


def test_rerunning_writes_nothing(ws, store, fake):
    chain(store, "s", M)
    forced(ws)
    revision = ws.revision()
    calls = len(fake.requests)
    report = forced(ws)
    assert len(fake.requests) == calls and report.passes == [] and ws.revision() == revision
    assert write(ws, "s", force=True) is None


def test_a_mark_from_another_workspace_leaves_the_node_pending(ws, store, fake):
    chain(store, "s", ["m1", "m2"])
    mark_written(store, "s", ["m1", "m2"], "w-0ther000")
    forced(ws)
    assert fake.batches() == [["m1", "m2"]]
    assert store.get_node("s", "m1").metadata[MARKER_KEY] == ws.workspace_id


def test_shared_prefix_goes_to_the_writer_once_across_head_and_sibling(ws, store, fake):
    chain(store, "s", ["m1", "m2", "m3"])
    chain(store, "s", ["a4", "a5"], parent="m3")
    chain(store, "s", ["b4", "b5"], parent="m3")  # head
    forced(ws)
    sent = [n for batch in fake.batches() for n in batch]
    assert sorted(sent) == sorted(["m1", "m2", "m3", "a4", "a5", "b4", "b5"])  # each exactly once
    assert fake.batches()[0] == ["m1", "m2", "m3", "b4", "b5"]  # head first
    assert marked(store, "s", ws) == set(sent)


def test_runtime_scheduled_turns_never_reach_the_writer(ws, store, fake):
    store.create_session("s")
    store.append("s", "user", "please look at the billing code", node_id="u1")
    store.append("s", "assistant", "delegating", node_id="a1", metadata={"kind": "subagent_prompt"})
    store.append("s", "assistant", "the sub-agent's report", node_id="r1", metadata={"kind": "subagent_report"})
    store.append("s", "merge_hint", "branches x and y merged", node_id="h1")
    store.append("s", "user", "a scheduled nudge", node_id="n1", metadata={"scheduled": True})
    store.append("s", "tool", "[tool result] 42 files", node_id="t1")
    store.append("s", "system", "you are a helpful agent", node_id="y1")
    store.append("s", "assistant", "", node_id="e1")
    store.append("s", "assistant", "here is what I found", node_id="a2")
    forced(ws)
    assert fake.batches() == [["u1", "a2"]]
    # the whole walked span is marked, so the next walk stops at once
    assert marked(store, "s", ws) == {"u1", "a1", "r1", "h1", "n1", "t1", "y1", "e1", "a2"}


# -- order: archive → install → markers ------------------------------------------
def test_the_archive_exists_before_the_writer_runs_and_marks_come_after_install(ws, store, fake):
    chain(store, "s", ["m1", "m2"])

    def check(request, staging, workspace_):
        for turn in request.turns:
            assert workspace_.cache.sources.lookup(archive_relpath_for(turn.source_id),
                                                   source_anchor(turn.source_id)) is not None
            assert MARKER_KEY not in store.get_node("s", turn.node_id).metadata

    fake.checks.append(check)
    forced(ws)
    assert len(fake.requests) == 1 and marked(store, "s", ws) == {"m1", "m2"}
    record = ws.records()[0]
    assert record.source_ids == ["openprogram/s/m1", "openprogram/s/m2"] and record.trust_state == "trusted"


# -- batches and thresholds -------------------------------------------------------
FOUR = {"t1": "alpha beta gamma delta", "t2": "one two three four", "t3": "red green blue pink",
        "t4": "apple pear plum fig"}


def test_threshold_8_with_four_4_token_turns_batches_two_and_forced_drains_all(_isolated_state, store, fake):
    ws = workspace(settings(trigger=8))
    chain(store, "s", list(FOUR), texts=FOUR)
    report = write_report(ws, "s", force=True, now=SOON)
    assert fake.batches() == [["t1", "t2"], ["t3", "t4"]]
    assert len(report.passes) == 2 and report.pending == 0


def test_per_turn_write_takes_one_batch_when_the_threshold_is_reached(_isolated_state, store, fake):
    ws = workspace(settings(trigger=8))
    chain(store, "s", list(FOUR), texts=FOUR)
    report = write_report(ws, "s", now=SOON)
    assert fake.batches() == [["t1", "t2"]] and report.pending == 2


def test_below_threshold_returns_none_without_a_model_call(ws, store, fake):
    chain(store, "s", ["m1", "m2", "m3"])
    assert write(ws, "s", now=SOON) is None
    report = write_report(ws, "s", now=SOON)
    assert fake.requests == [] and fake.resolved == 0  # the backend was not even resolved
    assert report.pending == 3 and report.passes == [] and marked(store, "s", ws) == set()
    status = json.loads(ws.layout.state("writer-status.json").read_text())
    assert status["pending"] == 3


def test_below_threshold_by_bytes_never_builds_the_tokenizer(ws, store, fake):
    """Fewer UTF-8 bytes than the threshold proves fewer tokens: a fresh hook process skips tiktoken's setup."""
    from openprogram_memory import tokens

    chain(store, "s", ["m1", "m2", "m3"])
    tokens.encoding.cache_clear()
    assert write(ws, "s", now=SOON) is None
    assert tokens.encoding.cache_info().currsize == 0


def test_bytes_over_the_threshold_still_counts_tokens(_isolated_state, store, fake):
    """22 bytes but 4 tokens against a threshold of 8: not due (the byte bound only ever skips counting)."""
    ws = workspace(settings(trigger=8))
    chain(store, "s", ["t1"], texts={"t1": FOUR["t1"]})
    assert write(ws, "s", now=SOON) is None and fake.requests == []
    chain(store, "s", ["t2"], texts={"t2": FOUR["t2"]}, parent="t1")
    write_report(ws, "s", now=SOON)
    assert fake.batches() == [["t1", "t2"]]


def test_pending_turns_over_an_hour_old_are_written_per_turn(ws, store, fake):
    chain(store, "s", ["m1", "m2"])
    write(ws, "s", now=LATER)
    assert fake.batches() == [["m1", "m2"]]


def test_a_held_lock_is_retryable_concurrent_update_never_below_threshold(ws, store, fake):
    chain(store, "s", ["m1", "m2"])
    with FileLock(str(ws.layout.lock_file)):
        failure = failure_of(lambda: write(ws, "s", now=LATER))
    assert failure.code is FailureCode.CONCURRENT_UPDATE and failure.retryable
    assert fake.requests == [] and marked(store, "s", ws) == set()
    status = json.loads(ws.layout.state("writer-status.json").read_text())
    assert status["last_failure"]["reason_code"] == "CONCURRENT_UPDATE" and status["last_failure"]["retryable"]
    write(ws, "s", now=LATER)  # the lock is free again: the next turn writes
    assert marked(store, "s", ws) == {"m1", "m2"}


# -- failures: no marks ---------------------------------------------------------------
def _events(ws):
    path = ws.layout.state("events.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_writer_exception_is_non_retryable_and_moves_no_marker(ws, store, fake):
    chain(store, "s", ["m1", "m2"])
    fake.queue.append("raise")
    failure = failure_of(lambda: forced(ws))
    assert failure.code is FailureCode.WRITER_FAILURE_UNKNOWN and not failure.retryable
    assert marked(store, "s", ws) == set() and ws.records() == []
    assert ws.cache.sources.all_sources()  # the batch stays archived: a retry redoes it byte for byte
    assert _events(ws)[-1]["event"] == "memory.write_failed"
    history = [json.loads(line) for line in ws.layout.state("agent-history.jsonl").read_text().splitlines()]
    assert history[-1]["error"]["code"] == "WRITER_FAILURE_UNKNOWN"


def test_a_model_failure_passes_through_with_its_retryable_flag(ws, store, fake):
    chain(store, "s", ["m1"])
    fake.queue.append(MemoryFailure(FailureCode.MODEL_RATE_LIMIT, "429", retryable=True))
    failure = failure_of(lambda: forced(ws))
    assert failure.code is FailureCode.MODEL_RATE_LIMIT and failure.retryable
    assert marked(store, "s", ws) == set()


def test_rejected_twice_is_commit_rejected_after_exactly_two_runs(ws, store, fake):
    chain(store, "s", ["m1", "m2"])
    fake.queue.extend(["invalid", "invalid"])
    failure = failure_of(lambda: forced(ws))
    assert failure.code is FailureCode.COMMIT_REJECTED and not failure.retryable
    assert [r.stage for r in fake.requests] == ["write", "write-repair"]
    repair = fake.requests[1].rejection
    assert "uncited" in repair and "An uncited claim about the batch." in repair and "Fix:" in repair
    assert "openprogram/s/m1" in repair  # the fix names the batch's source ids
    assert marked(store, "s", ws) == set() and ws.records() == []
    assert not (ws.root / "topics/notes.md").exists()


def test_a_rule_broken_by_hand_is_not_the_writers_and_the_turns_are_written_once_it_is_fixed(ws, store, fake):
    chain(store, "s", ["m1"])
    forced(ws)
    notes = ws.root / "topics/notes.md"
    committed = notes.read_text()
    notes.write_text(committed + "\nThe user likes Vim.\n")  # typed in an editor: no citation, no ^id
    chain(store, "s", ["m2"], parent="m1")
    fake.requests.clear()
    failure = failure_of(lambda: forced(ws))
    # only the person can fix it: not retryable (exit 65), named by file, line and the fix
    assert failure.code is FailureCode.WRITER_PRECONDITION_FAILED and not failure.retryable
    assert failure.exit_code == 65
    assert failure.message.startswith("topics/notes.md line ") and "[uncited-text]" in failure.message
    assert "not the writer's edit" in failure.message and "`openprogram memory check`" in failure.message
    assert "`openprogram memory edit topics/notes.md`" in failure.message
    assert [r.stage for r in fake.requests] == ["write"]  # no repair run: it could only rewrite the person's text
    assert marked(store, "s", ws) == {"m1"} and notes.read_text() == committed + "\nThe user likes Vim.\n"
    status = json.loads(ws.layout.state("writer-status.json").read_text())
    assert status["last_failure"]["reason_code"] == "WRITER_PRECONDITION_FAILED"
    assert status["last_failure"]["retryable"] is False
    notes.write_text(committed)  # the person fixes the file
    assert forced(ws).to_json()["written"] == ["m2"] and marked(store, "s", ws) == {"m1", "m2"}


def test_a_topic_that_cannot_be_read_holds_the_turns_and_names_the_file_and_the_chmod(ws, store, fake, monkeypatch):
    """``chmod 000`` on a topic the writer must change: a stable refusal by file and fix, not an unexpected error."""
    from pathlib import Path

    chain(store, "s", ["m1"])
    forced(ws)
    notes = ws.root / "topics/notes.md"
    real = Path.read_bytes

    def denied(self):
        if self == notes:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", denied)
    chain(store, "s", ["m2"], parent="m1")
    fake.requests.clear()
    failure = failure_of(lambda: forced(ws))
    assert failure.code is FailureCode.WRITER_PRECONDITION_FAILED and not failure.retryable
    assert failure.message.startswith("topics/notes.md cannot be read (Permission denied)")
    assert f"`chmod u+rw {notes}`" in failure.message and failure.details["file"] == "topics/notes.md"
    assert [r.stage for r in fake.requests] == ["write"]  # no repair run: the model cannot fix a file mode
    assert marked(store, "s", ws) == {"m1"}  # the turn stays pending
    monkeypatch.setattr(Path, "read_bytes", real)  # the person runs the chmod
    assert forced(ws).to_json()["written"] == ["m2"]


def test_rejected_then_valid_succeeds_after_the_repair(ws, store, fake):
    chain(store, "s", ["m1", "m2"])
    fake.queue.extend(["invalid", "valid"])
    report = forced(ws)
    assert [r.stage for r in fake.requests] == ["write", "write-repair"]
    assert report.passes[0].runs == 2 and marked(store, "s", ws) == {"m1", "m2"}
    assert "An uncited claim" not in (ws.root / "topics/notes.md").read_text()


def test_the_repair_starts_from_a_fresh_staging_copy(ws, store, fake):
    chain(store, "s", ["m1"])

    def check(request, staging, workspace_):
        assert staging.changes == {}  # nothing of the rejected edit is left

    fake.checks.append(check)
    fake.queue.extend(["invalid", "valid"])
    forced(ws)
    assert len(fake.requests) == 2


def test_a_forced_pass_that_changes_nothing_is_writer_no_progress(ws, store, fake):
    chain(store, "s", ["m1", "m2"])
    fake.queue.append("nothing")
    failure = failure_of(lambda: forced(ws))
    assert failure.code is FailureCode.WRITER_NO_PROGRESS and not failure.retryable
    assert marked(store, "s", ws) == set()


def test_a_per_turn_pass_that_changes_nothing_is_also_no_progress(ws, store, fake):
    chain(store, "s", ["m1"])
    fake.queue.append("nothing")
    assert failure_of(lambda: write(ws, "s", now=LATER)).code is FailureCode.WRITER_NO_PROGRESS


# -- reviewed, nothing durable ----------------------------------------------------------
def test_nothing_durable_settles_the_batch_without_marking_it(_isolated_state, store, fake):
    ws = workspace(settings(trigger=8))
    chain(store, "s", list(FOUR), texts=FOUR)
    fake.queue.append("durable-none")
    report = write_report(ws, "s", force=True, now=SOON)
    assert report.to_json()["reviewed"] == ["t1", "t2"] and report.to_json()["written"] == ["t3", "t4"]
    # the real write of t3, t4 marks the walked span, reviewed turns included
    assert marked(store, "s", ws) == {"t1", "t2", "t3", "t4"}
    ledger = json.loads(ws.layout.state("reviewed.json").read_text())
    assert ledger["groups"] == {}  # marked turns leave the ledger


def test_reviewed_turns_stay_unmarked_until_a_real_change_and_are_not_resent(ws, store, fake):
    chain(store, "s", ["m1", "m2"])
    fake.queue.append("durable-none")
    assert forced(ws).to_json()["reviewed"] == ["m1", "m2"]
    assert marked(store, "s", ws) == set()  # a mark needs an installed change
    assert forced(ws).passes == []  # nothing pending: no WRITER_NO_PROGRESS, no second model call
    chain(store, "s", ["m3", "m4"], start=LATER)
    fake.requests.clear()
    forced(ws)
    assert fake.batches() == [["m3", "m4"]]
    assert marked(store, "s", ws) == {"m1", "m2", "m3", "m4"}


def test_a_verdict_that_does_not_cover_the_batch_is_not_enough(ws, store, fake):
    chain(store, "s", ["m1", "m2"])

    def partial(request, staging, workspace_):
        fake.queue.appendleft("durable-none")

    fake.checks.append(partial)
    original = fake.run

    def run(request, staging, workspace_):
        result = original(request, staging, workspace_)
        result.reviewed = result.reviewed[:1]
        return result

    fake.run = run
    try:
        assert failure_of(lambda: forced(ws)).code is FailureCode.WRITER_NO_PROGRESS
    finally:
        del fake.run


# -- entry conditions -------------------------------------------------------------------
def test_missing_and_unknown_sessions(ws, fake):
    assert failure_of(lambda: write(ws, None)).code is FailureCode.MISSING_SESSION_ID
    assert failure_of(lambda: write(ws, "")).code is FailureCode.MISSING_SESSION_ID
    failure = failure_of(lambda: write(ws, "nope", force=True))
    assert failure.code is FailureCode.SESSION_NODES_UNAVAILABLE and not failure.retryable


def test_writer_disabled_does_nothing(_isolated_state, store, fake):
    cfg = settings(enabled=False)
    ws = workspace(cfg)
    chain(store, "s", ["m1"])
    assert write(ws, "s", force=True) is None
    assert fake.requests == [] and marked(store, "s", ws) == set()
    assert not ws.layout.state("writer-status.json").exists()


def test_write_accepts_settings_and_appends_messages(cfg, store, fake):
    chain(store, "s", ["m1"])
    assert write(cfg, "s", force=True, messages=[{"id": "m2", "role": "user", "content": "appended"}]) is None
    assert fake.batches() == [["m1", "m2"]] and store.head("s") == "m2"


# -- bookkeeping ----------------------------------------------------------------------
def test_status_history_counters_and_events(ws, store, fake):
    chain(store, "s", ["m1", "m2"])
    forced(ws)
    status = json.loads(ws.layout.state("writer-status.json").read_text())
    assert status["last_outcome"] == "success" and status["pending"] == 0 and status["last_success_at"]
    history = [json.loads(line) for line in ws.layout.state("agent-history.jsonl").read_text().splitlines()]
    write_run = next(h for h in history if h["stage"] == "write")
    assert write_run["batch"] == ["m1", "m2"] and write_run["rounds"] == 1 and write_run["error"] is None
    assert "m1 says something" in write_run["prompt"] and write_run["changed_files"] == ["topics/notes.md"]
    assert any(h["stage"] == "organize" for h in history)  # the first write is due an organize
    runtime = RuntimeState.load(ws.layout)
    assert runtime.last_write_at == LATER.isoformat(timespec="seconds")
    assert [e["event"] for e in _events(ws)] == ["memory.write_completed"]
    assert ws.status()["writer"]["pending"] == 0


def test_counters_count_batches_and_tokens_since_organize(ws, store, fake, monkeypatch):
    import openprogram_memory.writer.pipeline as pipeline

    monkeypatch.setattr(pipeline, "organize_if_due", lambda ws_, now: None)
    chain(store, "s", ["m1", "m2"])
    forced(ws)
    runtime = RuntimeState.load(ws.layout)
    assert runtime.batches_since_organize == 1 and runtime.writes_since_global == 1
    assert runtime.tokens_since_organize > 0


def test_an_organize_failure_does_not_undo_the_write(ws, store, fake, monkeypatch):
    import openprogram_memory.organizer as organizer

    def broken(*args, **kwargs):
        raise RuntimeError("organizer crashed")

    monkeypatch.setattr(organizer, "reorganize", broken)
    chain(store, "s", ["m1"])
    report = forced(ws)
    assert report.passes[0].organize == {"ok": False, "code": "TRANSACTION_FAILURE_UNKNOWN",
                                         "message": "RuntimeError: organizer crashed"}
    assert marked(store, "s", ws) == {"m1"} and (ws.root / "topics/notes.md").exists()
    assert _events(ws)[0]["event"] == "memory.organize_failed"


def test_a_grown_message_is_archived_under_a_new_id(ws, store, fake):
    chain(store, "s", ["m1"])
    fake.queue.append("raise")
    with pytest.raises(MemoryFailure):
        forced(ws)  # archived, not written
    node = store.get_node("s", "m1")
    from dataclasses import replace

    store.refresh_nodes("s", [replace(node, content=node.content + " and then some")])
    forced(ws)
    assert fake.requests[-1].turns[0].source_id.startswith("openprogram/s/m1~")


# -- cost: what the pass changed, not the size of memory ---------------------------------------------------------
def test_a_pass_sees_a_topic_saved_by_hand_since_the_last_with_its_transactions_one_scan(ws, store, fake, count_calls):
    """The writer is offered the topics as they are now (a file saved by hand between two writes included), from
    the transaction's stat pass: no directory scan of every topic of its own (none for a session never rewound)."""
    from openprogram_memory.workspace import caches

    chain(store, "s", ["m1", "m2"])
    forced(ws)
    (ws.root / "topics/kites.md").write_text("# Kites\n")  # by hand, between two writes
    chain(store, "s", ["m3", "m4"], parent="m2")
    topic_scans = count_calls(caches, "topic_files")
    forced(ws)
    assert fake.requests[-1].topic_paths == ["topics/kites.md", "topics/notes.md"]
    assert topic_scans == []
