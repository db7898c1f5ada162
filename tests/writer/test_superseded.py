"""Branches that disagree (issue 14): a written pass reconsiders records from an abandoned branch.

The real path with the offline ``rules`` writer: session store → rewind →
write → transaction → git. Memory changes only in a written pass.
"""

from __future__ import annotations

import json
import subprocess
from datetime import timedelta

import pytest

from openprogram_memory.sources.archive import archive_relpath_for
from openprogram_memory.topics.ids import source_anchor
from openprogram_memory.writer.pipeline import write_report
from openprogram_memory.writer.superseded import ABANDONED_LABEL

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
    assert all(s["label"].endswith(ABANDONED_LABEL) for s in after[flask_id].sources)
    assert "openprogram/s/m3" in after[flask_id].source_ids  # still cites the archived message
    assert "Frankfurt" in topics_text(rules_ws)
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
    from openprogram_memory.writer import rules

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
