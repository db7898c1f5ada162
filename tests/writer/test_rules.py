"""The offline ``rules`` writer: a real extractor, routed, deduped, cited — through the real pipeline."""

from __future__ import annotations

import pytest

from openprogram_memory.organizer.classify import classify_statement
from openprogram_memory.writer.pipeline import write_report
from openprogram_memory.writer.statements import extract_statements, third_person

from .helpers import LATER, chain, marked, settings, workspace


def kinds(text: str) -> list[tuple[str, str]]:
    return [(s.kind, s.text) for s in extract_statements(text)]


# -- extraction -------------------------------------------------------------------
@pytest.mark.parametrize("said, expected", [
    ("Hi! I'm Dana, I run the data team at Acme.",
     [("identity", "The user's name is Dana."), ("identity", "The user runs the data team at Acme.")]),
    ("My name is Dana.", [("identity", "The user's name is Dana.")]),
    ("I work at Acme as a data engineer.", [("identity", "The user works at Acme as a data engineer.")]),
    ("I live in Amsterdam and I speak Dutch.",
     [("identity", "The user lives in Amsterdam."), ("identity", "The user speaks Dutch.")]),
    ("I prefer metric units.", [("preference", "The user prefers metric units.")]),
    ("I really like short answers.", [("preference", "The user really likes short answers.")]),
    ("I don't like emojis.", [("preference", "The user doesn't like emojis.")]),
    ("Please use British spelling.", [("rule", "Use British spelling.")]),
    ("Always answer in metric units.", [("rule", "Always answer in metric units.")]),
    ("Never push to main.", [("rule", "Never push to main.")]),
    ("Don't use tabs.", [("rule", "Don't use tabs.")]),
    ("From now on, write the tests first.", [("rule", "From now on, write the tests first.")]),
    ("We decided to use FastAPI for the billing service.",
     [("decision", "We decided to use FastAPI for the billing service.")]),
    ("Let's go with Postgres.", [("decision", "We decided to go with Postgres.")]),
    ("We switched from Flask to FastAPI.", [("decision", "We switched from Flask to FastAPI.")]),
    ("We'll use Redis for caching.", [("decision", "We'll use Redis for caching.")]),
    ("The billing service runs on Kubernetes.", [("fact", "The billing service runs on Kubernetes.")]),
    ("Orbit uses Rust.", [("fact", "Orbit uses Rust.")]),
    ("Our deadline is March 3.", [("fact", "Our deadline is March 3.")]),
])
def test_durable_statements_are_extracted_and_lightly_normalized(said, expected):
    assert kinds(said) == expected


@pytest.mark.parametrize("said", [
    "Is it done?", "What's the status", "any update on the deploy", "Hi there!", "Thanks, that's all for today.",
    "ok great", "Never mind.", "Run the tests.", "Please run the tests.", "Open the file.", "Don't change that file.",
    "I like that!", "I'd like to see the logs.", "Don't worry about it.", "I'm not sure.", "I'm trying to fix the build.",
    "Can you always answer in metric?", "The billing service is down again.", "For now, skip the linter.",
    "Here is the error:\n```\nTraceback (most recent call last):\n  File \"x.py\", line 1\nValueError: I prefer tabs\n```",
    "ERROR 2026-08-09 10:00:01 worker: I live in a queue",
    "[tool result] I prefer metric units",
    "    I prefer indented code",
    "> I prefer quoted text",
])
def test_questions_chitchat_procedure_and_tool_output_are_skipped(said):
    assert extract_statements(said) == []


def test_third_person_agrees_the_verb_and_later_pronouns():
    assert third_person("I now live in Utrecht with my partner") == "The user now lives in Utrecht with their partner"
    assert third_person("I watch films") == "The user watches films"
    assert third_person("I'm a nurse") == "The user is a nurse"


def test_core_statements_are_ones_the_organizer_keeps_in_the_core():
    for said in ("I like short answers.", "I don't like emojis.", "I run the data team at Acme.",
                 "I prefer metric units.", "Always answer in metric units.", "I live in Amsterdam."):
        (statement,) = extract_statements(said)
        assert classify_statement(statement.text) in ("rule", "preference", "identity"), statement.text


# -- writing, end to end through write() ------------------------------------------------
TALK = {
    "u1": "Hi! I'm Dana, I run the data team at Acme. Always answer in metric units.",
    "a1": "Nice to meet you, Dana! I prefer to answer in metric units too.",
    "u2": "We decided to use Flask for the billing service. Is the CI green?",
    "a2": "CI is green. We decided nothing else.",
    "u3": "I live in Amsterdam. I like short answers.",
    "a3": "Noted.",
    "u4": "Run the tests please. What's the status?",
    "a4": "All 120 tests pass.",
}


@pytest.fixture
def rules_ws(_isolated_state):
    return workspace(settings(model="rules"))


def write(ws, session="s"):
    return write_report(ws, session, force=True, now=LATER)


def test_rules_writer_routes_identity_preference_rule_to_core_and_decisions_to_the_project(rules_ws, store):
    chain(store, "s", list(TALK), texts=TALK)
    report = write(rules_ws)
    assert set(report.to_json()["written"]) == set(TALK)
    core = (rules_ws.root / "topics/core.md").read_text()
    assert core.startswith("# Core\n")
    for heading in ("## Identity", "## Rules", "## Preferences"):
        assert heading in core
    by_text = {r.content: r for r in rules_ws.records()}
    assert by_text["The user's name is Dana."].headings == ("Core", "Identity")
    assert by_text["The user runs the data team at Acme."].headings == ("Core", "Identity")
    assert by_text["The user lives in Amsterdam."].headings == ("Core", "Identity")
    assert by_text["Always answer in metric units."].headings == ("Core", "Rules")
    assert by_text["The user likes short answers."].headings == ("Core", "Preferences")
    decision = by_text["We decided to use Flask for the billing service."]
    assert decision.topic == "topics/projects/billing-service.md"
    assert decision.headings == ("Billing service", "Decisions")
    # only the person's words; no questions, status checks, procedure or assistant text
    assert set(by_text) == {"The user's name is Dana.", "The user runs the data team at Acme.",
                            "Always answer in metric units.", "We decided to use Flask for the billing service.",
                            "The user lives in Amsterdam.", "The user likes short answers."}
    # every record cites the person's turn it came from, with a short keyword label
    assert by_text["The user lives in Amsterdam."].sources == [{"source": "openprogram/s/u3", "label": "Amsterdam"}]
    assert decision.sources == [{"source": "openprogram/s/u2", "label": "Flask"}]
    assert by_text["The user likes short answers."].time == "2026-08-09"
    assert all(1 <= len(s["label"].split()) <= 3 for r in rules_ws.records() for s in r.sources)


def test_repeated_statements_are_not_recorded_twice(rules_ws, store):
    chain(store, "s", list(TALK), texts=TALK)
    write(rules_ws)
    before = {r.memory_id: r.content for r in rules_ws.records()}
    chain(store, "s", ["u5", "a5"], start=LATER, texts={"u5": "As I said: always answer in metric units. I'm Dana.",
                                                          "a5": "Sure."})
    report = write(rules_ws)
    assert report.to_json()["reviewed"] == ["u5", "a5"]  # nothing new: reviewed, nothing durable
    assert {r.memory_id: r.content for r in rules_ws.records()} == before


def test_an_updated_fact_rewrites_the_record_in_place_keeping_its_block_id(rules_ws, store):
    chain(store, "s", list(TALK), texts=TALK)
    write(rules_ws)
    home = next(r for r in rules_ws.records() if r.content == "The user lives in Amsterdam.")
    flask = next(r for r in rules_ws.records() if "Flask" in r.content)
    chain(store, "s", ["u5", "a5"], start=LATER,
          texts={"u5": "I now live in Utrecht. We switched from Flask to FastAPI for the billing service.",
                 "a5": "Got it."})
    write(rules_ws)
    records = {r.memory_id: r for r in rules_ws.records()}
    assert records[home.memory_id].content == "The user now lives in Utrecht."
    assert [s["source"] for s in records[home.memory_id].sources] == ["openprogram/s/u3", "openprogram/s/u5"]
    assert records[flask.memory_id].content == "We switched from Flask to FastAPI for the billing service."
    assert records[flask.memory_id].topic == "topics/projects/billing-service.md"
    assert len(records) == 6  # updated, not added


def test_an_older_statement_does_not_overwrite_a_newer_record(rules_ws, store):
    chain(store, "s", ["u1", "a1"], texts={"u1": "We decided to use FastAPI for the billing service.", "a1": "ok"},
          start=LATER)
    write(rules_ws)
    # an older conversation that chose differently, written afterwards (a sibling branch, an import …)
    chain(store, "t", ["v1", "b1"], texts={"v1": "We decided to use Flask for the billing service.", "b1": "ok"})
    report = write(rules_ws, "t")
    (decision,) = [r for r in rules_ws.records() if "billing" in r.content]
    assert decision.content == "We decided to use FastAPI for the billing service."
    assert report.to_json()["reviewed"] == ["v1", "b1"]


def test_a_newer_near_duplicate_updates_the_record(rules_ws, store):
    chain(store, "s", ["u1", "a1"], texts={"u1": "We decided to use Flask for the billing service.", "a1": "ok"})
    write(rules_ws)
    (before,) = rules_ws.records()
    chain(store, "s", ["u2", "a2"], texts={"u2": "We decided to use FastAPI for the billing service.", "a2": "ok"},
          start=LATER)
    write(rules_ws)
    (after,) = rules_ws.records()
    assert after.memory_id == before.memory_id and "FastAPI" in after.content


def test_a_named_project_in_a_rule_goes_to_that_project(rules_ws, store):
    chain(store, "s", ["u1", "a1"], texts={"u1": "Always run the Orbit project tests before a release.", "a1": "ok"})
    write(rules_ws)
    (record,) = rules_ws.records()
    assert record.topic == "topics/projects/orbit.md"


def test_a_fact_with_no_subject_goes_to_notes(rules_ws, store):
    chain(store, "s", ["u1", "a1"], texts={"u1": "Let's go with Postgres.", "a1": "ok"})
    write(rules_ws)
    (record,) = rules_ws.records()
    assert record.topic == "topics/notes.md" and record.content == "We decided to go with Postgres."


def test_assistant_turns_are_never_a_source_of_records(rules_ws, store):
    chain(store, "s", ["u1", "a1"], texts={"u1": "Hello!", "a1": "I prefer metric units. My name is Claude."})
    report = write(rules_ws)
    assert rules_ws.records() == [] and report.to_json()["reviewed"] == ["u1", "a1"]
    assert marked(store, "s", rules_ws) == set()
