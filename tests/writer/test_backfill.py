"""``backfill``: uncited trusted sources through the normal writer, and bookkeeping that ends."""

from __future__ import annotations

import json

from openprogram_memory.failures import FailureCode, MemoryFailure
from openprogram_memory.sources.archive import SourceMessage
from openprogram_memory.writer.backfill import BATCH_TOKENS, backfill

from .helpers import settings, workspace


def msg(n: int, text: str, trust: str = "trusted", thread: str = "t1") -> SourceMessage:
    return SourceMessage(f"legacy/{thread}/m{n}", "Dana", "dana", f"2025-01-{n:02d}T09:00:00Z", text, trust_state=trust)


def test_only_trusted_uncited_sources_are_written_and_a_second_run_finds_nothing(_isolated_state):
    ws = workspace(settings(model="rules"))
    ws.archive([msg(1, "I live in Lisbon."), msg(2, "Nice weather today."), msg(3, "I prefer tea.", trust="pending"),
                msg(4, "Always answer in metric units.")])
    ws.update(changes=[{"path": "topics/notes.md",
                        "content": "# Notes\n\nMetric only.[^e1]\n\n[^e1]: Sources: [metric](legacy/t1/m4)\n"}])
    progress = []
    report = backfill(ws, progress=lambda done, total: progress.append((done, total)))
    assert (report["considered"], report["written"], report["cited"], report["reviewed"], report["remaining"]) == (
        2, 2, 1, 1, 0)
    assert report["ok"] and report["batches"] == 1 and progress == [(2, 2)]
    contents = {r.content for r in ws.records()}
    assert "The user lives in Lisbon." in contents and not any("tea" in c for c in contents)  # pending excluded
    ledger = json.loads(ws.layout.state("backfill-reviewed.json").read_text())
    assert set(ledger["groups"]["sources"]) == {"legacy/t1/m2"}
    history = [json.loads(line) for line in ws.layout.state("agent-history.jsonl").read_text().splitlines()]
    assert [h["stage"] for h in history] == ["backfill"]
    again = backfill(ws)
    assert again["considered"] == 0 and again["remaining"] == 0 and again["revision"] == report["revision"]


def test_backfill_batches_like_the_writer(_isolated_state, fake):
    ws = workspace(settings())
    words = " ".join(["memory"] * 6000)  # ~6,000 tokens each
    ws.archive([msg(n, f"{n} {words}") for n in range(1, 6)] + [msg(1, "another thread", thread="t2")])
    report = backfill(ws, backend=fake)
    sizes = [len(b) for b in fake.batches()]
    assert sizes == [3, 2, 1]  # per thread, up to and including the turn that reaches 16k tokens
    assert report["remaining"] == 0 and report["cited"] == 6
    assert BATCH_TOKENS == 16_000


def test_a_failed_batch_stays_remaining_and_is_retried(_isolated_state, fake):
    ws = workspace(settings())
    ws.archive([msg(1, "I live in Lisbon.")])
    fake.queue.append(MemoryFailure(FailureCode.MODEL_TIMEOUT, "timed out", retryable=True))
    report = backfill(ws, backend=fake)
    assert report["remaining"] == 1 and not report["ok"] and report["failures"][0]["code"] == "MODEL_TIMEOUT"
    assert not ws.layout.state("backfill-reviewed.json").exists()
    report = backfill(ws, backend=fake)
    assert report["remaining"] == 0 and report["cited"] == 1


def test_no_change_without_a_verdict_is_not_settled(_isolated_state, fake):
    ws = workspace(settings())
    ws.archive([msg(1, "hello")])
    fake.queue.append("nothing")
    report = backfill(ws, backend=fake)
    assert report["remaining"] == 1 and report["failures"][0]["code"] == "WRITER_NO_PROGRESS"
    fake.queue.append("durable-none")
    report = backfill(ws, backend=fake)
    assert (report["reviewed"], report["remaining"]) == (1, 0)
    assert backfill(ws, backend=fake)["considered"] == 0


def test_a_record_a_person_deleted_is_not_written_back_by_backfill(_isolated_state):
    """Deleted through apply/HTTP/MCP or the editor: its source is no longer cited, but it was read and judged."""
    ws = workspace(settings(model="rules"))
    ws.archive([msg(1, "I live in Lisbon."), msg(2, "Always answer in metric units.")])
    ws.update(changes=[{"path": "topics/notes.md", "content": "# Notes\n\nDana lives in Lisbon.[^e1]\n\n"
                        "Answers in metric units.[^e2]\n\n[^e1]: Sources: [home](legacy/t1/m1)\n\n"
                        "[^e2]: Sources: [units](legacy/t1/m2)\n"}])
    lisbon = next(r.memory_id for r in ws.records() if "Lisbon" in r.content)
    units = next(r.memory_id for r in ws.records() if "metric" in r.content)
    ws.update(memory_changes=[{"op": "delete_record", "memory_id": lisbon}])  # the API / MCP
    assert units in ws.read_topic("topics/notes.md")
    ws.write_topic("topics/notes.md", "# Notes\n", base_revision=ws.revision())  # the editor / web page
    assert not ws.records()
    noted = json.loads(ws.layout.state("person-deleted.json").read_text())
    assert set(noted) == {"legacy/t1/m1", "legacy/t1/m2"} and noted["legacy/t1/m1"]["memory_ids"] == [lisbon]
    report = backfill(ws)
    assert report["considered"] == 0 and not ws.records()


def test_a_record_deleted_in_another_editor_is_the_persons_delete_too(_isolated_state):
    """Removed in vim or Obsidian: adopted on the next open as the person's delete, never backfilled again."""
    ws = workspace(settings(model="rules"))
    ws.archive([msg(1, "I live in Lisbon.")])
    ws.update(changes=[{"path": "topics/notes.md",
                        "content": "# Notes\n\nDana lives in Lisbon.[^e1]\n\n[^e1]: Sources: [home](legacy/t1/m1)\n"}])
    lisbon = next(r.memory_id for r in ws.records())
    (ws.root / "topics/notes.md").write_text("# Notes\n")  # outside the product
    again = workspace(settings(model="rules"))  # the next command opens the workspace
    assert any(note.startswith("adopted hand edit(s) outside the product") for note in again.recovery_notes)
    noted = json.loads(again.layout.state("person-deleted.json").read_text())
    assert noted["legacy/t1/m1"]["memory_ids"] == [lisbon]
    report = backfill(again)
    assert report["considered"] == 0 and not again.records()
