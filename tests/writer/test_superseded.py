"""Branches that disagree (issue 14): a written pass reconsiders records from an abandoned branch.

The real path with the offline ``rules`` writer: session store → rewind →
write → transaction → git. Memory changes only in a written pass.
"""

from __future__ import annotations

import json
import re
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest

from openprogram_memory.sources.archive import archive_relpath_for
from openprogram_memory.topics.ids import source_anchor
from openprogram_memory.writer.pipeline import write_report

from .helpers import LATER, T0, settings, workspace

FLASK = "We decided to use Flask for the billing service."
FASTAPI = "We decided to use FastAPI for the billing service."


@pytest.fixture
def rules_ws(_isolated_state):
    return workspace(settings(model="rules"))


def write(ws, session="s"):
    return write_report(ws, session, force=True, now=LATER + timedelta(days=2))


def turn(store, session, node_id, role, text, minutes, parent=None):
    store.append(session, role, text, parent=parent, node_id=node_id,
                 created_at=(T0 + timedelta(minutes=minutes)).isoformat())


def opening(store, session="s"):
    """m1/m2 shared prefix, then the branch that chose Flask (m3/m4)."""
    store.create_session(session, created_at=T0.isoformat())
    turn(store, session, "m1", "user", "I'm planning the billing service rewrite with the team.", 0)
    turn(store, session, "m2", "assistant", "Sounds good, what framework?", 1)
    turn(store, session, "m3", "user", FLASK, 2)
    turn(store, session, "m4", "assistant", "Flask it is.", 3)


def topics_text(ws) -> str:
    return "\n".join(r.content for r in ws.records())


def git_log_text(ws) -> str:
    root = ws.layout.root
    return subprocess.run(["git", "-C", str(root), "log", "-p", "--all"], capture_output=True, text=True).stdout


def test_flask_then_rewind_to_fastapi_leaves_fastapi_and_retracts_flask(rules_ws, store):
    opening(store)
    write(rules_ws)
    flask = [r for r in rules_ws.records() if "Flask" in r.content]
    assert len(flask) == 1
    flask_id, flask_source = flask[0].memory_id, "openprogram/s/m3"

    store.rewind("s", "m2")
    turn(store, "s", "b3", "user", FASTAPI, 10)
    turn(store, "s", "b4", "assistant", "FastAPI it is.", 11)
    report = write(rules_ws).to_json()

    assert "FastAPI" in topics_text(rules_ws) and "Flask" not in topics_text(rules_ws)
    assert all(flask_source not in r.source_ids for r in rules_ws.records())
    assert report["retracted"] == [flask_id]
    assert report["superseded"][0]["action"] in ("replaced", "deleted")
    assert "Flask" in git_log_text(rules_ws)  # history keeps it
    archived = rules_ws.cache.sources.lookup(archive_relpath_for(flask_source), source_anchor(flask_source))
    assert archived is not None and archived.text == FLASK  # the archive is append-only
    history = [json.loads(line) for line in
               (rules_ws.layout.root / ".scriptorium" / "agent-history.jsonl").read_text().splitlines()]
    assert history[-1]["retracted"] == [flask_id]


def test_a_rewind_that_does_not_contradict_retracts_nothing_and_marks_the_old_record(rules_ws, store):
    opening(store)
    write(rules_ws)
    before = {r.memory_id: r.content for r in rules_ws.records()}
    store.rewind("s", "m2")
    turn(store, "s", "b3", "user", "Our staging cluster runs in Frankfurt.", 10)
    report = write(rules_ws).to_json()
    assert report["retracted"] == []
    after = {r.memory_id: r for r in rules_ws.records()}
    flask_id = next(i for i, text in before.items() if "Flask" in text)
    assert after[flask_id].content == before[flask_id]  # kept
    flask_file = (rules_ws.root / after[flask_id].topic).read_text()
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", after[flask_id].time)  # readers of times see the plain date
    assert [e.time for e in after[flask_id].evidence] == [f"{after[flask_id].time} (abandoned branch)"]
    assert f"Time: `{after[flask_id].time} (abandoned branch)`" in flask_file  # marked in its footnote time
    assert "openprogram/s/m3" in after[flask_id].source_ids  # still cites the archived message
    assert "Frankfurt" in topics_text(rules_ws)
    again = write(rules_ws).to_json()  # nothing pending, nothing reconsidered twice
    assert again["passes"] == 0 and again["retracted"] == []


def test_going_on_from_the_abandoned_branch_makes_its_records_current_and_marks_the_other(rules_ws, store):
    """Flask written, rewound to Frankfurt (Flask marked), then the person continues the Flask branch: Flask is
    current again without its turn being written twice, and Frankfurt is the abandoned branch's record now."""
    opening(store)
    write(rules_ws)
    store.rewind("s", "m2")
    turn(store, "s", "b3", "user", "Our staging cluster runs in Frankfurt.", 10)
    write(rules_ws)
    turn(store, "s", "m5", "user", "Our production cluster runs in Dublin.", 20, parent="m4")
    report = write(rules_ws).to_json()
    assert report["written"] == ["m5"] and report["retracted"] == []
    records = {r.content: r for r in rules_ws.records()}
    flask = next(r for text, r in records.items() if "Flask" in text)
    assert [e.time for e in flask.evidence] == [flask.time]  # no "(abandoned branch)" any more
    assert f"Time: `{flask.time} (abandoned branch)`" not in (rules_ws.root / flask.topic).read_text()
    frankfurt = records["Our staging cluster runs in Frankfurt."]
    assert [e.time for e in frankfurt.evidence] == [f"{frankfurt.time} (abandoned branch)"]
    assert "Our production cluster runs in Dublin." in records
    again = write(rules_ws).to_json()  # nothing pending, nothing reconsidered twice
    assert again["passes"] == 0 and again["retracted"] == []


def test_flipping_branches_without_writing_changes_nothing(rules_ws, store):
    opening(store)
    write(rules_ws)
    store.rewind("s", "m2")
    turn(store, "s", "b3", "user", FASTAPI, 10)
    write(rules_ws)
    revision = rules_ws.revision()
    store.switch("s", "m4")  # back to Flask
    store.switch("s", "b3")  # and to FastAPI again
    store.switch("s", "m4")
    report = write(rules_ws).to_json()
    assert report["passes"] == 0 and report["retracted"] == []
    assert rules_ws.revision() == revision


def test_a_spawned_session_cites_its_own_turns_and_is_superseded_with_its_parent_turn(rules_ws, store):
    from openprogram_memory.writer.backend import WriterRequest

    store.create_session("p", created_at=T0.isoformat())
    turn(store, "p", "p1", "user", "Please audit the payment retries.", 0)
    turn(store, "p", "p2", "assistant", "Spawning an auditor for the payment retries.", 1)
    store.create_spawned_session("p", "p2", "c")
    turn(store, "c", "c1", "user", "Our payment gateway is Adyen.", 2)
    seen: list[WriterRequest] = []
    from openprogram_memory.writer import rules_backend as rules

    original = rules.RulesWriter.run

    def spy(self, request, staging, ws):
        seen.append(request)
        return original(self, request, staging, ws)

    rules.RulesWriter.run = spy
    try:
        write(rules_ws, "c")
    finally:
        rules.RulesWriter.run = original
    adyen = [r for r in rules_ws.records() if "Adyen" in r.content]
    assert len(adyen) == 1 and adyen[0].source_ids == ["openprogram/c/c1"]
    assert seen[0].parent_context and "Spawning an auditor" in seen[0].parent_context and "p2" in seen[0].parent_context
    assert "Spawning an auditor" in __import__("openprogram_memory.writer.prompts", fromlist=["x"]).user_message(seen[0])

    store.rewind("p", "p1")  # the spawning turn is abandoned: the child is superseded
    assert store.get_node("c", "c1").superseded_for(rules_ws.workspace_id)
    turn(store, "p", "q2", "assistant", "Let's look at the retries ourselves; our gateway is Stripe.", 5)
    turn(store, "p", "q3", "user", "Our payment gateway is Stripe.", 6)
    report = write(rules_ws, "p").to_json()
    assert report["retracted"] == [adyen[0].memory_id]
    assert "Stripe" in topics_text(rules_ws) and "Adyen" not in topics_text(rules_ws)


# -- a Claude Code transcript: the rewind arrives by import ----------------------------------------
CC_REWIND = Path(__file__).resolve().parents[2] / "fixtures" / "sessions" / "claude-code" / "rewind.jsonl"
CC_SESSION = "5f0c7a8e-1d2b-4c3a-9e7f-2a6b8c9d0e1f"


def U(number: int) -> str:
    return f"00000000-0000-4000-8000-{number:012d}"


def test_a_claude_code_rewind_and_sidechain_import_to_the_same_structure(rules_ws, store, tmp_path):
    from openprogram_memory.sessions.importers import import_paths

    lines = CC_REWIND.read_text().splitlines(keepends=True)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(lines[:11]))  # up to the Flask branch's end: no rewind yet
    import_paths(store, "claude-code", [transcript])
    write(rules_ws, CC_SESSION)
    flask = [r for r in rules_ws.records() if "Flask" in r.content]
    assert flask and all(r.source_ids[0].endswith(U(4)) for r in flask)

    transcript.write_text("".join(lines))  # the person rewound to m3 and chose FastAPI
    import_paths(store, "claude-code", [transcript])
    wid = rules_ws.workspace_id
    assert store.head(CC_SESSION) == U(23)
    assert store.get_node(CC_SESSION, U(4)).superseded_for(wid)  # written, then abandoned
    assert not store.get_node(CC_SESSION, U(13)).rewound  # the sub-agent of a live turn stays
    report = write(rules_ws, CC_SESSION).to_json()
    assert sorted(report["retracted"]) == sorted(r.memory_id for r in flask)
    assert "FastAPI" in topics_text(rules_ws) and "Flask" not in topics_text(rules_ws)

    # a second rewind, to before the turn that spawned the sub-agent: its branch goes with it
    again = json.loads(lines[11])
    again.update(uuid=U(99), parentUuid=U(3), timestamp="2025-11-04T10:00:00.000Z",
                 message={"role": "user", "content": "Let's park the billing service for now."})
    transcript.write_text("".join(lines) + json.dumps(again) + "\n")
    before = rules_ws.revision()
    import_paths(store, "claude-code", [transcript])
    assert store.head(CC_SESSION) == U(99)
    assert store.get_node(CC_SESSION, U(10)).rewound and store.get_node(CC_SESSION, U(9)).superseded_for(wid)
    assert store.get_node(CC_SESSION, U(13)).rewound and store.get_node(CC_SESSION, U(14)).rewound
    assert rules_ws.revision() == before  # importing (a branch switch) changed no memory
