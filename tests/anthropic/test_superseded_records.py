"""Branches that disagree with the Anthropic writer (issue 14): recorded exchanges, the real pipeline.

The Flask branch is written first (by the offline writer, which names the
record ^3ab2bf87 deterministically), the person rewinds and chooses FastAPI,
and the Anthropic writer's pass over the new branch receives the Flask
record as a record from an abandoned branch and the record tools to act on it.
"""

from __future__ import annotations

import json
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

from anthropic_helpers import writer_for

from openprogram_memory.config import load_settings
from openprogram_memory.sessions.store import SessionStore
from openprogram_memory.memory import MemoryWorkspace
from openprogram_memory.writer.pipeline import write_report
from openprogram_memory.writer.rules_backend import RulesWriter

T0 = datetime(2026, 8, 10, 9, 0, tzinfo=timezone.utc)
LATER = T0 + timedelta(days=3)
FLASK_ID = "3ab2bf87"


def _rewound_to_fastapi(state: Path) -> tuple[MemoryWorkspace, SessionStore]:
    ws = MemoryWorkspace.open(load_settings(state), create=True)
    store = SessionStore(ws.settings.sessions_dir)
    store.create_session("s", created_at=T0.isoformat())

    def turn(node: str, role: str, text: str, minutes: int) -> None:
        store.append("s", role, text, node_id=node, created_at=(T0 + timedelta(minutes=minutes)).isoformat())

    turn("m1", "user", "I'm planning the billing service rewrite with the team.", 0)
    turn("m2", "assistant", "Sounds good, what framework?", 1)
    turn("m3", "user", "We decided to use Flask for the billing service.", 2)
    turn("m4", "assistant", "Flask it is.", 3)
    write_report(ws, "s", force=True, backend=RulesWriter(), now=LATER)
    assert [r.memory_id for r in ws.records()] == [FLASK_ID]
    store.rewind("s", "m2")
    turn("b3", "user", "We decided to use FastAPI for the billing service.", 10)
    turn("b4", "assistant", "FastAPI it is.", 11)
    return ws, store


def _history(ws: MemoryWorkspace) -> list[dict]:
    lines = (ws.layout.root / ".scriptorium" / "agent-history.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def _check_flask_gone(ws: MemoryWorkspace) -> None:
    text = "\n".join(r.content for r in ws.records())
    assert "FastAPI" in text and "Flask." not in text
    assert all("openprogram/s/m3" not in r.source_ids for r in ws.records())
    log = subprocess.run(["git", "-C", str(ws.layout.root), "log", "-p"], capture_output=True, text=True).stdout
    assert "We decided to use Flask for the billing service." in log  # git history keeps it
    archive = (ws.layout.root / "sources" / "openprogram" / "_v2" / "s.md").read_text()
    assert "We decided to use Flask for the billing service." in archive  # so does the archive


def test_update_record_replaces_the_abandoned_decision_in_place(tmp_path, replay) -> None:
    ws, _store = _rewound_to_fastapi(tmp_path / "state")
    transport = replay("supersede_update")
    report = write_report(ws, "s", force=True, backend=writer_for(transport), now=LATER).to_json()
    assert report["retracted"] == [FLASK_ID]
    assert report["superseded"] == [{"memory_id": FLASK_ID, "topic": "topics/projects/billing-service.md",
                                     "action": "replaced", "content": "We decided to use Flask for the billing service."}]
    record = ws.get(FLASK_ID)  # same block ID, new text and evidence
    assert record["content"] == "The billing service uses FastAPI (chosen over Flask after a rethink)."
    assert record["sources"] == [{"source": "openprogram/s/b3", "label": "FastAPI"}]
    assert ws.records()[0].memory_id == FLASK_ID and len(ws.records()) == 1
    log = subprocess.run(["git", "-C", str(ws.layout.root), "log", "-p"], capture_output=True, text=True).stdout
    assert "We decided to use Flask for the billing service." in log
    entry = _history(ws)[-1]
    assert entry["retracted"] == [FLASK_ID] and entry["superseded"][0]["action"] == "replaced"
    # the first request offered the record tools and named the abandoned record (checked by the replay)
    assert [tool["name"] for tool in transport.requests[0]["tools"]][-3:] == ["update_record", "delete_record",
                                                                              "commit_edits"]


def test_delete_record_removes_the_abandoned_decision(tmp_path, replay) -> None:
    ws, _store = _rewound_to_fastapi(tmp_path / "state")
    report = write_report(ws, "s", force=True, backend=writer_for(replay("supersede_delete")), now=LATER).to_json()
    assert report["retracted"] == [FLASK_ID] and report["superseded"][0]["action"] == "deleted"
    _check_flask_gone(ws)
    assert FLASK_ID not in {r.memory_id for r in ws.records()}
    assert _history(ws)[-1]["retracted"] == [FLASK_ID]
