"""``reorganize`` on a seeded messy workspace, and its guarantees."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from typer.testing import CliRunner

from openprogram_memory.cli.app import app
from openprogram_memory.failures import FailureCode, MemoryFailure
from openprogram_memory.organizer import classify_statement, reorganize, register_planner
from openprogram_memory.organizer import planner, sleep
from openprogram_memory.organizer.sleep import PLANNERS
from openprogram_memory.transaction.check import check_workspace
from openprogram_memory.workspace.state import RuntimeState
from organizer.helpers import archive, digest, load_messy, topic, workspace

MESSY = load_messy()
NOW = datetime(2026, 8, 20, 3, 0, tzinfo=timezone.utc)


@pytest.fixture
def messy(tmp_path):
    ws = workspace(tmp_path / "state")
    ids = MESSY.build(ws)
    sources = archive(ws, 1, thread="tidy")
    ws.update(changes=[{"path": "topics/tidy.md", "content": topic([("# Tidy", None), ("A tidy fact.", sources[0])])}])
    return ws, ids


def test_messy_workspace_is_organized(messy):
    ws, ids = messy
    before = {rel: (ws.root / rel).read_bytes() for rel in ("topics/tidy.md",)}
    sources_before = digest(ws.root, "sources")
    report = reorganize(ws, now=NOW)

    # duplicates: one record each, every old ID still resolves to it
    assert report["merged"] == 3
    assert ws.get(ids["metric_dup"])["memory_id"] == ids["metric"]
    assert ws.get(ids["pref_near"])["memory_id"] == ids["pref"]
    assert ws.get(ids["orbit_db_copy"])["memory_id"] == ids["orbit_db"]
    contents = [r.content for r in ws.records()]
    assert contents.count("Always answer in metric units.") == 1
    assert contents.count("The Orbit project uses Postgres 16 for storage.") == 1
    assert sum("prefers short" in c for c in contents) == 1
    for memory_id in ids.values():
        ws.get(memory_id)
    # merged citations are unioned: both sources still back the kept record
    assert len(ws.get(ids["metric"])["sources"]) == 2

    # the core keeps rules, preferences and identity, rules first
    core = [r for r in ws.records() if r.topic == "topics/core.md"]
    categories = [classify_statement(r.content) for r in core]
    assert set(categories) <= {"rule", "preference", "identity"}
    assert categories == sorted(categories, key=["rule", "preference", "identity"].index)
    assert [r.memory_id for r in core] == [ids["metric"], ids["tools"], ids["pref"], ids["identity"]]
    assert ws.get(ids["orbit_db"])["topic"] == "topics/projects/orbit.md"
    assert ws.get(ids["orbit_ship"])["topic"] == "topics/projects/orbit.md"
    assert ws.get(ids["atlas"])["topic"] == "topics/projects/atlas.md"
    assert ws.get(ids["atlas"])["headings"] == ["Atlas"]
    assert ws.get(ids["stale"])["topic"] == "topics/notes.md"
    assert "Orbit" not in (ws.root / "core.md").read_text()

    # the link to a moved record follows it
    assert f"](../projects/orbit.md#^{ids['orbit_db']})" in (ws.root / "topics/people/dana.md").read_text()

    # the 40-record topic is split by its level-2 headings
    assert not (ws.root / "topics/reading.md").exists()
    per_file = {}
    for record in ws.records():
        per_file[record.topic] = per_file.get(record.topic, 0) + 1
    assert per_file["topics/reading/fiction.md"] == 20 and per_file["topics/reading/science.md"] == 20
    assert max(per_file.values()) <= 30

    # only changed files are reported; sources and untouched topics keep every byte
    assert report["changed_files"] == [
        "topics/core.md", "topics/notes.md", "topics/people/dana.md", "topics/projects/atlas.md",
        "topics/projects/orbit.md", "topics/reading.md", "topics/reading/fiction.md", "topics/reading/science.md"]
    assert {rel: (ws.root / rel).read_bytes() for rel in before} == before
    assert digest(ws.root, "sources") == sources_before
    assert report["moved"] == 44 and report["reordered"] == 4
    assert all(action["reason"] for action in report["actions"])

    # runtime: stamped and reset
    runtime = RuntimeState.load(ws.layout)
    assert runtime.last_global_at == NOW.isoformat(timespec="seconds")
    assert runtime.batches_since_organize == runtime.tokens_since_organize == runtime.writes_since_global == 0


def test_second_run_changes_nothing(messy):
    ws, _ids = messy
    first = reorganize(ws, now=NOW)
    everything = digest(ws.root)
    second = reorganize(ws, now=NOW.replace(day=21))
    assert second["changed_files"] == [] and second["revision"] == first["revision"]
    assert second["merged"] == second["moved"] == second["reordered"] == 0
    assert digest(ws.root) == everything


def test_created_order_is_kept(messy):
    ws, ids = messy
    before = RuntimeState.load(ws.layout).created_order
    reorganize(ws, now=NOW)
    after = RuntimeState.load(ws.layout).created_order
    for memory_id in (ids["orbit_db"], ids["atlas"], ids["metric"], ids["metric_dup"]):
        assert after[memory_id] == before[memory_id]


def test_flat_overgrown_topic_is_split_into_parts(tmp_path):
    ws = workspace(tmp_path / "state")
    sources = archive(ws, 70)
    lines = [("# Log", None)] + [(f"Entry about item {n} and nothing else.", sources[n]) for n in range(70)]
    ws.update(changes=[{"path": "topics/log.md", "content": topic(lines)}])
    order = [r.memory_id for r in ws.records()]
    report = reorganize(ws, now=NOW)
    assert report["changed_files"] == ["topics/log.md", "topics/log/part-2.md", "topics/log/part-3.md"]
    files = {}
    for record in ws.records():
        files.setdefault(record.topic, []).append(record.memory_id)
    assert [len(files[f]) for f in ("topics/log.md", "topics/log/part-2.md", "topics/log/part-3.md")] == [30, 30, 10]
    assert files["topics/log.md"] + files["topics/log/part-2.md"] + files["topics/log/part-3.md"] == order
    assert ws.get(files["topics/log/part-3.md"][0])["headings"] == ["Log"]
    assert reorganize(ws, now=NOW)["changed_files"] == []


def test_a_split_takes_the_wikilinks_to_the_records_it_moves_along(tmp_path):
    """A record another note links in Obsidian (``[[log#^id]]``) is split off to log/part-3.md: the sleep is not
    refused for a dangling link, the link names the new file; a link to a record that stays is not touched."""
    ws = workspace(tmp_path / "state")
    sources = archive(ws, 71)
    lines = [("# Log", None)] + [(f"Entry about item {n} and nothing else.", sources[n]) for n in range(70)]
    ws.update(changes=[{"path": "topics/log.md", "content": topic(lines)}])
    order = [r.memory_id for r in ws.records()]
    ws.update(changes=[{"path": "topics/people.md", "content": topic([("# People", None), (
        f"Dana keeps [[log#^{order[65]}|the entry]] and ![[Log#^{order[0]}]].", sources[70])])}])
    report = reorganize(ws, now=NOW)
    assert "topics/log/part-3.md" in report["changed_files"] and ws.get(order[65])["topic"] == "topics/log/part-3.md"
    assert (f"Dana keeps [[part-3#^{order[65]}|the entry]] and ![[Log#^{order[0]}]]."
            in (ws.root / "topics/people.md").read_text())
    assert reorganize(ws, now=NOW)["changed_files"] == []


def test_tidy_workspace_only_stamps_runtime(tmp_path):
    ws = workspace(tmp_path / "state")
    sources = archive(ws, 1)
    ws.update(changes=[{"path": "topics/core.md", "content": topic([("Always answer in metric.", sources[0])])}])
    first = reorganize(ws, now=NOW)
    assert first["changed_files"] == [] and first["memory_committed"]  # runtime.json: last_global_at
    assert RuntimeState.load(ws.layout).last_global_at is not None
    revision = ws.revision()
    assert reorganize(ws, now=NOW)["revision"] == revision


def test_unknown_model_is_invalid_argument(messy):
    ws, _ids = messy
    revision = ws.revision()
    for model in ("gpt-9", "anthropic:"):
        with pytest.raises(MemoryFailure) as info:
            reorganize(ws, model=model)
        assert info.value.code is FailureCode.INVALID_ARGUMENT
    assert reorganize.__doc__ and ws.revision() == revision


def test_a_model_without_a_key_fails_instead_of_falling_back(messy):
    ws, _ids = messy
    revision = ws.revision()
    with pytest.raises(MemoryFailure) as info:
        reorganize(ws, model="anthropic:claude-sonnet-4")
    assert (info.value.code, info.value.retryable) == (FailureCode.MODEL_AUTHENTICATION, False)
    assert ws.revision() == revision


def test_a_model_planner_plugs_into_the_seam(messy, monkeypatch):
    ws, ids = messy
    seen = {}

    def planner(tree, created_order):
        seen["records"] = len(tree.records())
        return [{"op": "move_records", "memory_ids": [ids["tools"]],
                 "destination": {"topic_path": "topics/core.md", "headings": ["Core"],
                                 "position": "start"}}]

    monkeypatch.setitem(PLANNERS, "fake:", planner)
    report = reorganize(ws, model="fake:model-1", now=NOW)
    assert report["model"] == "fake:model-1" and report["changed_files"] == ["topics/core.md"]
    assert report["reordered"] == 1 and seen["records"] == len(ws.records())
    assert register_planner  # public registration function


def test_a_bad_plan_is_rejected_whole(messy, monkeypatch):
    ws, ids = messy
    everything = digest(ws.root)
    monkeypatch.setitem(PLANNERS, "broken", lambda tree, order: [
        {"op": "merge_records", "memory_ids": [ids["metric"], ids["metric_dup"]]},
        {"op": "move_records", "memory_ids": ["deadbeef"], "destination": {"topic_path": "topics/x.md"}},
    ])
    with pytest.raises(MemoryFailure) as info:
        reorganize(ws, model="broken")
    assert info.value.code is FailureCode.MEMORY_NOT_FOUND
    assert digest(ws.root) == everything


def test_cli_sleep(messy, tmp_path):
    ws, _ids = messy
    runner = CliRunner()
    state = str(tmp_path / "state")
    result = runner.invoke(app, ["memory", "sleep", "--state", state, "--json"])
    assert result.exit_code == 0, result.stdout
    out = json.loads(result.stdout)
    assert out["ok"] is True and out["merged"] == 3 and out["moved"] == 44 and out["revision"] == ws.revision()
    assert "topics/core.md" in out["changed_files"]
    again = json.loads(runner.invoke(app, ["memory", "sleep", "--state", state, "--json"]).stdout)
    assert again["changed_files"] == [] and again["revision"] == out["revision"]
    result = runner.invoke(app, ["memory", "sleep", "--model", "nope", "--state", state, "--json"])
    assert result.exit_code == 64 and json.loads(result.stdout)["code"] == "INVALID_ARGUMENT"
    human = runner.invoke(app, ["memory", "sleep", "--state", state])
    assert human.exit_code == 0 and "Nothing to organize" in human.stdout


def _two_wordings_of_where_dana_lives(ws, sources: list[str]) -> list[str]:
    """notes.md with two near-duplicate records, the second richer: their IDs, in order."""
    ws.update(changes=[{"path": "topics/notes.md", "content": topic([
        ("# Notes", None),
        ("Dana lives in Oslo near the old harbour.", sources[0]),
        ("Dana lives in Oslo near the old harbour, Norway.", sources[1]),
    ])}])
    return [r.memory_id for r in ws.records()]


def test_merging_near_duplicates_keeps_the_richer_wording(tmp_path):
    ws = workspace(tmp_path / "state")
    sources = archive(ws, 2)
    older, newer = _two_wordings_of_where_dana_lives(ws, sources)
    report = reorganize(ws, now=NOW)
    assert report["merged"] == 1
    (kept,) = ws.records()
    assert kept.content == "Dana lives in Oslo near the old harbour, Norway."
    assert ws.get(newer)["memory_id"] == ws.get(older)["memory_id"] == kept.memory_id


def test_a_merge_keeps_the_properties_at_the_top_of_the_file(tmp_path):
    """Obsidian's Properties (YAML frontmatter) are the person's: sleep rewrites the records under them, byte for
    byte leaving them where they are."""
    ws = workspace(tmp_path / "state")
    sources = archive(ws, 2)
    _two_wordings_of_where_dana_lives(ws, sources)
    properties = "---\ntags: [people]\ncssclasses:\n  - wide\n---\n"
    notes = ws.root / "topics/notes.md"
    ws.update(changes=[{"path": "topics/notes.md", "content": properties + notes.read_text()}])
    assert reorganize(ws, now=NOW)["merged"] == 1
    # (the heading stays on the line right after them, as written: no blank line put between)
    assert notes.read_text().startswith(properties + "# Notes\n") and len(ws.records()) == 1


def test_a_wikilink_to_a_merged_duplicate_names_the_kept_record(tmp_path):
    """Obsidian reads only a record's last block ID, so a wikilink to a duplicate the organizer merges away
    (its ID now an alias) is pointed at the kept record's ID, the note and label as written."""
    ws = workspace(tmp_path / "state")
    sources = archive(ws, 3)
    older, newer = _two_wordings_of_where_dana_lives(ws, sources)
    ws.update(changes=[{"path": "topics/people.md", "content": topic([
        ("# People", None), (f"Where Dana lives: [[notes#^{older}|home]].", sources[2])])}])
    report = reorganize(ws, now=NOW)
    assert report["merged"] == 1 and ws.get(older)["memory_id"] == newer
    assert f"Where Dana lives: [[notes#^{newer}|home]]." in (ws.root / "topics/people.md").read_text()


def test_near_duplicates_filed_under_two_projects_are_each_about_their_own(tmp_path):
    """One word apart ("alpha"/"bravo"), so near duplicates by their words: the bravo decision was merged into
    the alpha one. Each project's own near duplicate, and an exact copy in another project, are still merged."""
    ws = workspace(tmp_path / "state")
    sources = archive(ws, 4)
    alpha, bravo = "We decided to use Postgres for the alpha project.", "We decided to use Postgres for the bravo project."
    bravo_too = "We decided to use Postgres for the bravo project too."
    ws.update(changes=[
        {"path": "topics/projects/alpha.md", "content": topic([("# Alpha", None), (alpha, sources[0])])},
        {"path": "topics/projects/bravo.md", "content": topic([("# Bravo", None), (bravo, sources[1]),
                                                                (bravo_too, sources[2])])},
        {"path": "topics/projects/charlie.md", "content": topic([("# Charlie", None), (alpha, sources[3])])},
    ])
    ids = {(r.topic, r.content): r.memory_id for r in ws.records()}
    report = reorganize(ws, now=NOW)
    assert report["merged"] == 2
    after = {(r.topic, r.content): len(r.sources) for r in ws.records()}
    assert after.pop(("topics/projects/alpha.md", alpha)) == 2
    assert list(after.values()) == [2] and next(iter(after))[0] == "topics/projects/bravo.md"
    assert ws.get(ids[("topics/projects/bravo.md", bravo)])["memory_id"] == ws.get(
        ids[("topics/projects/bravo.md", bravo_too)])["memory_id"]


def test_a_topic_grown_past_the_limit_by_records_the_core_cleanup_moved_in_is_split(tmp_path):
    """The stages see each other's results: the splitter counts the records the core cleanup just moved into
    a project file (29 there, 2 moved in: 31 > 30), not what the file held on disk."""
    ws = workspace(tmp_path / "state")
    sources = archive(ws, 32, thread="grow")
    names = ["alpha", "beta", "gamma", "delta", "kappa", "lambda", "sigma", "omega", "zeta", "theta"]
    people = ["Dana", "Erin", "Ravi"]
    orbit = [("# Orbit", None)] + [(f"Orbit module {names[n % 10]}{n} is owned by {people[n % 3]} since {2000 + n}.",
                                     sources[n]) for n in range(29)]
    ws.update(changes=[
        {"path": "topics/projects/orbit.md", "content": topic(orbit)},
        {"path": "topics/core.md", "content": topic([
            ("Always answer in metric units.", sources[29]),
            ("The Orbit project uses Postgres 16 for storage.", sources[30]),
            ("The Orbit project ships its releases on Fridays.", sources[31])])}])
    reorganize(ws, now=NOW)
    by_topic: dict[str, int] = {}
    for record in ws.records():
        by_topic[record.topic] = by_topic.get(record.topic, 0) + 1
    assert by_topic["topics/core.md"] == 1
    assert by_topic["topics/projects/orbit.md"] == 30
    assert by_topic["topics/projects/orbit/part-2.md"] == 1


def _people(sections: dict[str, list[str]], sources: list[str], title: bool = True) -> list[tuple[str, str | None]]:
    lines: list[tuple[str, str | None]] = [("# People", None)] if title else []
    for person, facts in sections.items():
        lines.append((f"## {person}", None))
        lines += [(fact, sources.pop(0)) for fact in facts]
    return lines


def _files(ws) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for record in ws.records():
        out.setdefault(record.topic, []).append(record.memory_id)
    return out


COLLEAGUES = ["Walter", "Priya", "Omar", "Lena", "Kenji", "Sofia", "Marco", "Aisha", "Tomas", "Yuki", "Nadia",
              "Felix", "Ines", "Ravi", "Clara", "Hugo"]


def _colleagues(sources: list[str]) -> list[tuple[str, str | None]]:
    """people.md's lines for the sixteen COLLEAGUES, two records each under ``## <name>`` (32: over the limit)."""
    return _people({n: [f"{n} is a colleague who lives in city number {i}.", f"{n} owns service number {i}."]
                    for i, n in enumerate(COLLEAGUES)}, sources)


def test_a_split_happens_once_new_records_join_the_section_file_it_made(tmp_path):
    """people.md was split into people/<name>.md; the writer keeps filing new facts under ``## Walter`` in
    people.md. The next organize, overgrown or not, sends them to people/walter.md (was: a second split made
    people/walter-2.md, … 41 files for 20 people)."""
    ws = workspace(tmp_path / "state")
    sources = archive(ws, 80)
    names = COLLEAGUES
    ws.update(changes=[{"path": "topics/people.md", "content": topic(_colleagues(sources))}])
    reorganize(ws, now=NOW)
    split = _files(ws)
    assert "topics/people.md" not in split and len(split["topics/people/walter.md"]) == 2

    # small: only the sections an earlier split gave a file move
    ws.update(changes=[{"path": "topics/people.md", "content": topic(_people(
        {"Walter": ["Walter likes hiking on the weekend."], "Dana": ["Dana plays the cello every Sunday."]},
        sources)).replace("[^n", "[^s")}])
    reorganize(ws, now=NOW)
    files = _files(ws)
    assert len(files["topics/people/walter.md"]) == 3 and files["topics/people.md"] == [
        r.memory_id for r in ws.records() if r.content.startswith("Dana")]

    # overgrown: split again, onto the same files; only a new person gets a new one (Dana's record: elsewhere)
    ws.update(changes=[{"path": "topics/people.md", "content": topic(_people(
        {**{n: [f"{n} has a dog named Rex{i}.", f"{n} speaks {i} languages."] for i, n in enumerate(names)},
         "Zoe": ["Zoe runs the Tuesday standup."]}, sources)).replace("[^n", "[^t")}], base_revision=ws.revision())
    ids = {r.memory_id for r in ws.records()}
    report = reorganize(ws, now=NOW)
    files = _files(ws)
    assert sorted(files) == sorted([f"topics/people/{n.lower()}.md" for n in names] + ["topics/people/zoe.md"])
    assert not [f for f in report["changed_files"] if f.endswith("-2.md")]
    walter = [ws.get(i)["content"] for i in files["topics/people/walter.md"]]
    assert walter[2:] == ["Walter likes hiking on the weekend.", "Walter has a dog named Rex0.",
                          "Walter speaks 0 languages."]
    assert {ws.get(i)["memory_id"] for i in ids} == ids  # no block ID lost
    assert reorganize(ws, now=NOW)["changed_files"] == []


def test_two_files_of_one_section_left_by_an_older_organizer_become_one(tmp_path):
    """people/walter.md and people/walter-2.md under the same ``People > Walter`` are one topic in two files: the
    numbered one's records join the first, in order, every ID kept. A numbered file of another section stays."""
    ws = workspace(tmp_path / "state")
    sources = archive(ws, 6)
    ws.update(changes=[
        {"path": "topics/people/walter.md", "content": topic(_people(
            {"Walter": ["Walter owns the billing service.", "Walter lives in Madrid."]}, sources))},
        {"path": "topics/people/walter-2.md", "content": topic(_people(
            {"Walter": ["Walter speaks Portuguese fluently.", "Walter has a dog named Rex."]}, sources))
         .replace("[^n", "[^w")},
        {"path": "topics/people/c-2.md", "content": topic(_people({"C": ["C is a colleague in Oslo."]}, sources))},
        {"path": "topics/people/c.md", "content": topic(_people({"C++": ["The C++ guild meets on Monday."]},
                                                                sources))},
    ])
    order = [i for f in ("topics/people/walter.md", "topics/people/walter-2.md") for i in _files(ws)[f]]
    report = reorganize(ws, now=NOW)
    assert report["changed_files"] == ["topics/people/walter-2.md", "topics/people/walter.md"]
    assert not (ws.root / "topics/people/walter-2.md").exists()
    files = _files(ws)
    assert files["topics/people/walter.md"] == order
    assert ws.get(order[-1])["headings"] == ["People", "Walter"]
    assert len(files["topics/people/c.md"]) == len(files["topics/people/c-2.md"]) == 1
    assert reorganize(ws, now=NOW)["changed_files"] == []


def _walter_twins(sources: list[str]) -> list[dict[str, str]]:
    """The changes that make topics/people/walter.md and walter-2.md, one record of Walter's each (twins an older
    organizer left)."""
    return [
        {"path": "topics/people/walter.md", "content": topic(_people({"Walter": ["Walter lives in Madrid."]},
                                                                     sources))},
        {"path": "topics/people/walter-2.md", "content": topic(_people(
            {"Walter": ["Walter speaks Portuguese fluently."]}, sources)).replace("[^n", "[^w")},
    ]


def test_joining_twins_renames_the_wikilinks_to_the_file_that_goes(tmp_path):
    """walter-2.md's records all join walter.md and walter-2.md goes: a note linking the file itself in Obsidian
    (``[[walter-2]]``, ``[[people/walter-2#Walter|his file]]``) follows it there, as when Obsidian renames a note."""
    ws = workspace(tmp_path / "state")
    sources = archive(ws, 3)
    ws.update(changes=[
        *_walter_twins(sources),
        {"path": "topics/dana.md", "content": topic([("# Dana", None), (
            "Dana works with Walter ([[walter-2]], [[people/walter-2#Walter|his file]]).", sources[0])])},
    ])
    report = reorganize(ws, now=NOW)
    assert report["changed_files"] == ["topics/dana.md", "topics/people/walter-2.md", "topics/people/walter.md"]
    assert ("Dana works with Walter ([[walter]], [[people/walter#Walter|his file]])."
            in (ws.root / "topics/dana.md").read_text())


def test_twins_an_older_organizer_left_tidy_are_joined_by_the_next_sleep(tmp_path, monkeypatch):
    """A workspace the previous version organized (its manifest says nothing changed since) still gets its
    walter.md + walter-2.md joined by a plain ``memory sleep``, not 'Nothing to organize'."""
    ws = workspace(tmp_path / "state")
    sources = archive(ws, 2)
    ws.update(changes=[
        *_walter_twins(sources),
    ])
    with monkeypatch.context() as old:  # the previous version: its manifest records, no twin join
        old.setattr(sleep, "ORGANIZED", "organized")
        old.setattr(sleep, "ORGANIZED_AT", "organized_at")
        old.setattr(planner, "_join_twins", lambda draft, children: None)
        reorganize(ws, now=NOW)
        assert reorganize(ws, now=NOW)["changed_files"] == []
    report = reorganize(ws, now=NOW)
    assert report["changed_files"] == ["topics/people/walter-2.md", "topics/people/walter.md"]
    assert list(_files(ws)) == ["topics/people/walter.md"]


@pytest.mark.parametrize("link", ["[[people]], [[People#Walter|Walter's entry]]", "[the people note](people.md)"])
def test_an_overgrown_topic_another_note_links_as_a_whole_is_left_whole(tmp_path, link):
    """people.md (16 people, 32 records, all under ``## <name>``) is over the limit, but dana.md links the note
    itself (Obsidian ``[[people]]`` or ``[x](people.md)``): a split by person would empty it, and the link would
    have no single new home. The sleep leaves people.md whole instead of being refused every night."""
    ws = workspace(tmp_path / "state")
    sources = archive(ws, 33)
    ws.update(changes=[{"path": "topics/people.md", "content": topic(_colleagues(sources))}])
    ws.update(changes=[{"path": "topics/dana.md", "content": topic([("# Dana", None), (
        f"Dana keeps a list of her colleagues: {link}.", sources.pop())])}])
    before = _files(ws)
    result = CliRunner().invoke(app, ["memory", "sleep", "--state", str(tmp_path / "state"), "--json"])
    assert result.exit_code == 0, result.stdout
    ws = workspace(tmp_path / "state")
    assert _files(ws) == before  # people.md whole, every ID where it was
    assert f"Dana keeps a list of her colleagues: {link}." in (ws.root / "topics/dana.md").read_text()
    assert check_workspace(ws) == []  # no link dangles
    assert reorganize(ws, now=NOW)["changed_files"] == []


def test_twins_a_markdown_link_names_by_file_are_left_apart(tmp_path):
    """walter-2.md would join walter.md, but dana.md links it by file (``[x](people/walter-2.md)``), which a
    rename does not rewrite: the sleep leaves the twins apart instead of being refused for a dangling link."""
    ws = workspace(tmp_path / "state")
    sources = archive(ws, 3)
    ws.update(changes=[
        *_walter_twins(sources),
        {"path": "topics/dana.md", "content": topic([("# Dana", None), (
            "Dana works with Walter ([his second file](people/walter-2.md)).", sources[0])])},
    ])
    before = _files(ws)
    assert reorganize(ws, now=NOW)["changed_files"] == []
    assert _files(ws) == before and check_workspace(ws) == []


def test_an_overgrown_topic_linked_as_a_whole_is_split_when_the_note_keeps_a_record(tmp_path):
    """The same people.md with one record directly under ``# People``: that record stays, so the note ``[[people]]``
    names still exists and the split by person goes ahead."""
    ws = workspace(tmp_path / "state")
    sources = archive(ws, 34)
    lines = [("# People", None), ("Everyone here works at the Lisbon office.", sources.pop())]
    ws.update(changes=[{"path": "topics/people.md", "content": topic(lines + _colleagues(sources)[1:])}])
    ws.update(changes=[{"path": "topics/dana.md", "content": topic([("# Dana", None), (
        "Dana keeps a list of her colleagues: [[people]].", sources.pop())])}])
    ids = {r.memory_id for r in ws.records()}
    reorganize(ws, now=NOW)
    files = _files(ws)
    assert len(files["topics/people.md"]) == 1 and len(files["topics/people/walter.md"]) == 2
    assert {i for f in files.values() for i in f} == ids and check_workspace(ws) == []
