"""The statement classifier behind core cleanup."""

from __future__ import annotations

import pytest

from openprogram_memory.placement.classify import (
    CATEGORIES,
    classify_statement,
    core_rank,
    explain_statement,
    project_name,
)


@pytest.mark.parametrize("text, category", [
    ("Always answer in metric units.", "rule"),
    ("Never invent tool results; report only what tools returned.", "rule"),
    ("Please reply in English unless asked otherwise.", "rule"),
    ("Don't use emojis.", "rule"),
    ("You must cite the source of every claim.", "rule"),
    ("Every answer must include its source.", "rule"),
    ('Sign every email you draft for me as "Kwame Mensah, Mobile Lead".', "rule"),  # (the ways of writing and
    ("cc Fatima on anything tax related.", "rule"),  # addressing the person's mail)
    ("Tag @lagosfoodwalks on anything food-related.", "rule"),
    ("Flag any email that mentions licensing for Tomasz.", "rule"),
    ("Loop in Priya on anything touching billing.", "rule"),
    ("I prefer short, direct answers.", "preference"),
    ("Dana likes espresso.", "preference"),
    ("Her favourite editor is Helix.", "preference"),
    ("She would rather get one good option than five.", "preference"),
    ("My name is Dana Reyes.", "identity"),
    ("Dana lives in Lisbon.", "identity"),
    ("Dana is a nurse.", "identity"),
    ("I speak Portuguese and English.", "identity"),
    ("Her time zone is Europe/Lisbon.", "identity"),
    ("Dana runs a bike shop.", "identity"),
    ("The user teaches year 5 at Holm Park Primary.", "identity"),  # (the writer's wordings of a role)
    ("The user is head of platform.", "identity"),
    ("The user joined the data team.", "identity"),
    ("The user moved to the payments squad.", "identity"),  # (a change of team, the writer's wording of it)
    ("The user switched to the growth team.", "identity"),
    ("The user transferred to the oncology department.", "identity"),
    ("The user is in Nairobi.", "identity"),
    ("The user works part time as a dental nurse.", "identity"),
    ("The user works full-time as a welder.", "identity"),
    ("The user works freelance as a sound engineer.", "identity"),
    ("The user studies at NTNU.", "identity"),
    ("The user is the EM.", "identity"),
    ("The user is the on-call contact.", "other"),
    ("The user mostly works on delivery ETA models.", "identity"),
    ("The user uses PyTorch Geometric, not DGL.", "preference"),
    ("I write everything in type-annotated Python.", "preference"),
    ("The ingest job uses Kafka.", "other"),
    ("The user is in a meeting until noon.", "other"),
    ("The Orbit project uses Postgres 16.", "project"),
    ("Use uv for the `orbit` repo.", "project"),
    ("Working on project Atlas: the migration.", "project"),
    ("Shipped v0.3 to the beta testers.", "project"),
    ("Fixed the login bug last night.", "project"),
    ("The deadline for the report is Friday.", "project"),
    ("The CI server is down right now.", "other"),
    ("The weather was nice.", "other"),
    ("Looks like the build is flaky today.", "other"),
])
def test_categories(text, category):
    assert classify_statement(text) == category
    assert explain_statement(text)[0] == category
    assert category in CATEGORIES


def test_reasons_are_readable():
    category, reason = explain_statement("The Orbit project uses Postgres 16.")
    assert category == "project" and "Orbit" in reason
    assert "always" in explain_statement("Always answer in metric.")[1].lower()


def test_known_projects_win():
    assert classify_statement("Remember that Zephyr needs Python 3.12.") == "rule"
    assert classify_statement("Remember that Zephyr needs Python 3.12.", known_projects=["zephyr"]) == "project"
    assert project_name("deploying zephyr-cli tonight", ["zephyr cli"]) == "zephyr cli"


@pytest.mark.parametrize("text, name", [
    ("The Orbit project uses Postgres.", "Orbit"),
    ("project Atlas is late", "Atlas"),
    ("in the `orbit` repo", "orbit"),
    ("the side project is fun", None),
    ("a big project", None),
    ("this project deadline", None),
])
def test_project_name(text, name):
    assert project_name(text) == name


def test_core_rank_orders_rules_preferences_identity():
    assert [core_rank(c) for c in ("rule", "preference", "identity", "project", "other")] == [0, 1, 2, 3, 3]


def test_the_team_a_person_is_on_is_identity():
    assert classify_statement("The user is on the payments team.") == "identity"
    assert classify_statement("The user is part of the growth squad.") == "identity"
