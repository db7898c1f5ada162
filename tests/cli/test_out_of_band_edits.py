"""Text edited into topics/ outside the product is served only once it is valid (architecture §15).

A person's vim session or a sync tool can put anything into a topic file.
What breaks a record rule never reaches an agent: search, recall and the
core use the file's last committed version, and status names the file, the
line and the rule. A valid edit is served as it is.
"""

from __future__ import annotations

import json
import os
import re
import sys

import pytest

from engine.helpers import make_workspace, record
from openprogram_memory.cli import app as app_module
from openprogram_memory.memory import MemoryWorkspace
from openprogram_memory.search import cache as search_cache
from openprogram_memory.workspace import caches

BIKES = "topics/bikes.md"


def run(monkeypatch, capsys, *argv: str) -> tuple[int, dict]:
    monkeypatch.setattr(sys, "argv", ["openprogram", *argv])
    with pytest.raises(SystemExit) as exit_:
        app_module.main()
    return exit_.value.code, json.loads(capsys.readouterr().out)


def fresh_process() -> None:
    caches._CACHES.clear()
    search_cache.forget()


@pytest.fixture
def ws(tmp_path):
    ws = make_workspace(tmp_path / "state")
    ws.update(changes=[{"path": BIKES, "content": "# Shop\n\n" + record("Dana runs a bike shop in Ghent.")}])
    return ws


def search(monkeypatch, capsys, ws, query: str) -> list[str]:
    code, found = run(monkeypatch, capsys, "memory", "search", query, "--state", str(ws.settings.state_dir), "--json")
    assert code == 0
    return [hit["content"] for hit in found["results"]]


def test_an_invalid_hand_edit_is_not_served_and_the_last_valid_records_are(ws, monkeypatch, capsys):
    path = ws.root / BIKES
    path.write_text(path.read_text() + "\nZebra crossings are painted every Tuesday.[^x9] ^deadbeef\n")
    fresh_process()
    assert search(monkeypatch, capsys, ws, "zebra crossings") == []  # never validated: never served
    assert search(monkeypatch, capsys, ws, "Dana") == ["Dana runs a bike shop in Ghent."]
    code, status = run(monkeypatch, capsys, "memory", "status", "--state", str(ws.settings.state_dir), "--json")
    warning = next(w for w in status["warnings"] if w.startswith(BIKES))
    assert "[undefined-citation]" in warning and "last committed version" in warning
    ws.update(changes=[{"path": "topics/core.md", "content": "# Core\n\n" + record("Answer in metric units.",
                                                                                  "openprogram/s1/u2")}])
    views = "".join((ws.root / rel).read_text() for rel in ("core.md", "recent_events.jsonl"))
    assert "Zebra" not in views and "Dana runs a bike shop" in (ws.root / "recent_events.jsonl").read_text()
    assert "Zebra" in path.read_text()  # the person's file is left as they wrote it


def bikes_warnings(answer: dict) -> list[str]:
    return [w for w in answer.get("warnings", []) if w.startswith(BIKES)]


def test_every_search_recall_and_core_show_warns_while_an_invalid_edit_stays(ws, monkeypatch, capsys):
    """The first search after the edit reads the file; the next answers from the saved search index (the file has
    not moved since): both warn, as recall and the core do, naming the file and how to see the problem."""
    path = ws.root / BIKES
    path.write_text(path.read_text() + "\nA paragraph typed by hand, without a source or a block ID.\n")
    state = str(ws.settings.state_dir)
    saved_index = search_cache.cache_path(ws.root)
    for answer_from_saved_index in (False, True):
        fresh_process()
        written = saved_index.stat().st_mtime_ns if answer_from_saved_index else None
        code, found = run(monkeypatch, capsys, "memory", "search", "bike shop", "--state", state, "--json")
        assert [hit["content"] for hit in found["results"]] == ["Dana runs a bike shop in Ghent."]
        [warning] = bikes_warnings(found)
        assert "[uncited-text]" in warning and "last committed version" in warning
        assert "`openprogram memory check`" in warning
        if answer_from_saved_index:
            assert saved_index.stat().st_mtime_ns == written  # nothing was indexed again
    code, recalled = run(monkeypatch, capsys, "memory", "recall", "bike shop", "--state", state, "--json")
    assert recalled["count"] == 1 and bikes_warnings(recalled) == [warning]
    code, core = run(monkeypatch, capsys, "memory", "core", "show", "--state", state, "--json")
    assert bikes_warnings(core) == [warning]
    path.write_text(path.read_text().replace("\nA paragraph typed by hand, without a source or a block ID.\n", ""))
    for _answer_from_saved_index in (False, True):
        fresh_process()
        code, found = run(monkeypatch, capsys, "memory", "search", "bike shop", "--state", state, "--json")
        assert "warnings" not in found  # fixed: nothing left to say


def test_a_change_installed_over_an_invalid_edit_ends_the_warning_in_the_same_process(ws, monkeypatch, capsys):
    """A long-lived process (an agent's MCP server) that warned about the file stops once a change puts a valid
    version in its place: what a transaction installed is validated."""
    path = ws.root / BIKES
    valid = path.read_text()
    path.write_text(valid + "\nA paragraph typed by hand, without a source or a block ID.\n")
    fresh_process()
    state = str(ws.settings.state_dir)
    code, found = run(monkeypatch, capsys, "memory", "search", "bike shop", "--state", state, "--json")
    assert bikes_warnings(found)
    server = MemoryWorkspace.open(ws.settings)  # the process's own caches, which the search above used
    server.update(changes=[{"path": BIKES, "content": valid.replace("in Ghent", "in Ghent and Bruges")}])
    code, found = run(monkeypatch, capsys, "memory", "search", "bike shop", "--state", state, "--json")
    assert [hit["content"] for hit in found["results"]] == ["Dana runs a bike shop in Ghent and Bruges."]
    assert "warnings" not in found


def test_a_valid_edit_made_elsewhere_is_served_as_it_is(ws, monkeypatch, capsys):
    path = ws.root / BIKES
    draft = path.with_name(".bikes.md.swp")  # written beside the file, then renamed over it (Obsidian, vim)
    draft.write_text(path.read_text().replace("in Ghent", "in Ghent and repairs cargo bikes"))
    os.replace(draft, path)
    fresh_process()
    assert search(monkeypatch, capsys, ws, "cargo bikes") == ["Dana runs a bike shop in Ghent and repairs cargo bikes."]
    code, status = run(monkeypatch, capsys, "memory", "status", "--state", str(ws.settings.state_dir), "--json")
    assert not any(w.startswith(BIKES) for w in status["warnings"])
    assert f"adopted hand edit(s) outside the product: {BIKES}" in status["warnings"]  # said once, by the command
    code, status = run(monkeypatch, capsys, "memory", "status", "--state", str(ws.settings.state_dir), "--json")
    assert not any("adopted" in w for w in status["warnings"])  # committed: nothing left to say


def test_an_invalid_new_file_is_left_out_until_fixed(ws, monkeypatch, capsys):
    new = ws.root / "topics/notes.md"
    new.write_text("Zebra notes typed in vim.[^x1] ^deadbee1\n")  # the footnote is never defined
    fresh_process()
    assert search(monkeypatch, capsys, ws, "zebra notes") == []  # no committed version to fall back on


WINDOWS_SAVES = {
    "CRLF line endings": lambda data: data.replace(b"\n", b"\r\n"),
    "a byte order mark": lambda data: b"\xef\xbb\xbf" + data,
    "both": lambda data: b"\xef\xbb\xbf" + data.replace(b"\n", b"\r\n"),
}


@pytest.mark.parametrize("save", WINDOWS_SAVES.values(), ids=WINDOWS_SAVES.keys())
def test_a_file_saved_by_a_windows_editor_reads_as_the_same_records(ws, monkeypatch, capsys, tmp_path, save):
    """Notepad and VS Code on Windows write a BOM and CRLF: neither is content. check, search and a write all read
    the file as its LF original, and an edit made in the same save is adopted on its own, before the write."""
    path = ws.root / BIKES
    path.write_bytes(save(path.read_bytes().replace(b"in Ghent", b"in Ghent and Bruges")))
    fresh_process()
    state = str(ws.settings.state_dir)
    code, report = run(monkeypatch, capsys, "memory", "check", "--state", state, "--json")
    assert (code, report["problems"]) == (0, [])
    assert report["repaired"] == [f"adopted hand edit(s) outside the product: {BIKES}"]  # as an edit of its own
    assert search(monkeypatch, capsys, ws, "bike shop") == ["Dana runs a bike shop in Ghent and Bruges."]
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"memory_changes": [
        {"op": "create_record", "content": "Dana opens the shop at nine.", "destination": {"topic_path": BIKES},
         "sources": [{"source": "openprogram/s1/u2", "label": "said"}]}]}))
    code, answer = run(monkeypatch, capsys, "memory", "apply", str(request), "--state", state, "--json")
    assert code == 0 and answer["ok"] is True, answer
    messages = [entry["message"] for entry in ws.log(4)]
    assert "apply" in messages[0] and any(m.startswith(f"memory: hand edit outside the product: {BIKES}")
                                          for m in messages[1:])
    assert run(monkeypatch, capsys, "memory", "check", "--state", state, "--json")[1]["problems"] == []
    assert sorted(search(monkeypatch, capsys, ws, "Dana shop")) == [
        "Dana opens the shop at nine.", "Dana runs a bike shop in Ghent and Bruges."]


def test_a_block_id_used_twice_in_one_file_is_not_served_and_rebuild_keeps_the_committed_views(ws, monkeypatch,
                                                                                                capsys):
    """A record pasted with an ID the file already has breaks a rule of the file: search, the core and rebuild use
    its last committed version (with the warning other invalid edits give), and check names both lines."""
    ws.update(changes=[{"path": "topics/core.md", "content": "# Core\n\n" + record("Answer in metric units.",
                                                                                  "openprogram/s1/u2")}])
    path = ws.root / "topics/core.md"
    block_id = next(r.memory_id for r in ws.records() if r.topic == "topics/core.md")
    text = path.read_text()
    lines = text.split("\n")
    at = next(n for n, line in enumerate(lines, 1) if line.endswith(f"^{block_id}"))
    label = lines[at - 1].split("[^", 1)[1].split("]", 1)[0]
    path.write_text(text.replace(f" ^{block_id}\n", f" ^{block_id}\n\nThe user drinks tea.[^{label}] ^{block_id}\n", 1))
    fresh_process()
    state = str(ws.settings.state_dir)
    for _answer_from_saved_index in (False, True):
        code, found = run(monkeypatch, capsys, "memory", "search", "drinks tea", "--state", state, "--json")
        assert found["results"] == [] and any(w.startswith(f"topics/core.md line {at + 2}: [duplicate-id]")
                                              and "last committed version" in w for w in found["warnings"])
        fresh_process()
    code, report = run(monkeypatch, capsys, "memory", "check", "--state", state, "--json")
    assert code == 65 and [(p["rule"], p["line"]) for p in report["problems"]] == [("duplicate-id", at + 2),
                                                                                  ("uncommitted", None)]
    assert f"already used at line {at}" in report["problems"][0]["message"]  # no stale view: nothing to rebuild
    code, rebuilt = run(monkeypatch, capsys, "memory", "rebuild", "--state", state, "--json")
    assert code == 0
    assert "tea" not in (ws.root / "core.md").read_text() + (ws.root / "recent_events.jsonl").read_text()
    code, core = run(monkeypatch, capsys, "memory", "recall", "drinks tea", "--state", state, "--json")
    assert core["count"] == 0
    assert "drinks tea" in path.read_text()  # the person's file is left as they wrote it


def linked_pair(ws) -> str:
    """topics/work.md links a record of topics/people.md; returns the linked block ID."""
    ws.update(changes=[{"path": "topics/people.md", "content": "# People\n\n" + record("Dana is the owner.")}])
    target = next(r.memory_id for r in ws.records() if r.topic == "topics/people.md")
    ws.update(changes=[{"path": "topics/work.md", "content": "# Work\n\n" + record(
        f"The [shop](people.md#^{target}) opens at nine.", "openprogram/s1/u2")}])
    return target


def head_topics(ws) -> dict[str, str]:
    from openprogram_memory.transaction.history import files_at

    return {rel: data.decode() for rel, data in files_at(ws.root, "HEAD", "topics/").items()}


def test_a_renamed_linked_file_is_adopted_whole_or_not_at_all(ws, monkeypatch, capsys):
    """A rename is a removal and a new file seen together: adopted as one commit, or (while a link still points at
    the old path) not at all. Never a HEAD with one block ID in two files; the fix for the removed file works."""
    target = linked_pair(ws)
    os.rename(ws.root / "topics/people.md", ws.root / "topics/persons.md")
    fresh_process()
    state = str(ws.settings.state_dir)
    code, report = run(monkeypatch, capsys, "memory", "check", "--state", state, "--json")
    assert code == 65 and report["repaired"] == []
    assert sorted(rel for rel in head_topics(ws) if rel != BIKES) == ["topics/people.md", "topics/work.md"]
    problems = {(p["file"], p["rule"]): p for p in report["problems"]}
    assert f"topics/people.md#^{target}" in problems[("topics/work.md", "dangling-link")]["message"]
    removed = problems[("topics/people.md", "uncommitted")]
    assert removed["message"].startswith("deleted outside the product")
    assert "checkout -- topics/people.md" in removed["fix"] and "memory edit topics/people.md" not in removed["fix"]
    work = ws.root / "topics/work.md"
    work.write_text(work.read_text().replace("people.md#", "persons.md#"))  # the link follows the rename
    fresh_process()
    code, report = run(monkeypatch, capsys, "memory", "check", "--state", state, "--json")
    assert (code, report["problems"]) == (0, [])
    adopted = next(e for e in ws.log(3) if e["message"].startswith("memory: hand edit outside the product"))
    assert all(rel in adopted["message"] for rel in ("topics/people.md", "topics/persons.md", "topics/work.md"))
    head = head_topics(ws)
    assert "topics/people.md" not in head and f"^{target}" in head["topics/persons.md"]


def test_status_names_a_held_rename_by_the_file_on_disk_now_with_the_fix_check_gives(ws, monkeypatch, capsys):
    """Obsidian renames people.md to persons.md without updating work.md's link: the rename is held back (one ID
    in two files else). Status named the old file, and the new one as holding an ID "in topics/people.md and
    topics/persons.md"; it names the file as it is on disk now, what it was renamed from, and check's fix."""
    target = linked_pair(ws)
    os.rename(ws.root / "topics/people.md", ws.root / "topics/persons.md")
    fresh_process()
    state = str(ws.settings.state_dir)
    code, status = run(monkeypatch, capsys, "memory", "status", "--state", state, "--json")
    assert not [w for w in status["warnings"] if w.startswith("topics/people.md")]
    [renamed] = [w for w in status["warnings"] if w.startswith("topics/persons.md")]
    assert renamed.startswith("topics/persons.md was renamed from topics/people.md outside the product")
    assert f"topics/work.md still links topics/people.md#^{target}" in renamed
    code, report = run(monkeypatch, capsys, "memory", "check", "--state", state, "--json")
    [link] = [p for p in report["problems"] if (p["file"], p["rule"]) == ("topics/work.md", "dangling-link")]
    assert link["fix"] == f"update the link to `persons.md#^{target}` with `openprogram memory edit topics/work.md`"
    assert renamed.endswith(" — " + link["fix"])
    fresh_process()  # a search answers with the same warning
    code, found = run(monkeypatch, capsys, "memory", "search", "Dana owner", "--state", state, "--json")
    assert [w for w in found["warnings"] if "topics/people.md" in w] == [renamed]


def derived(ws) -> dict[str, str]:
    """Every derived view on disk, by path."""
    paths = [ws.root / "relations.json", ws.root / "recent_events.jsonl", *(ws.root / "timeline").rglob("*.md")]
    return {path.relative_to(ws.root).as_posix(): path.read_text() for path in paths}


BROKEN_TREE = {
    "a linked record deleted": lambda ws, target: (ws.root / "topics/people.md").write_text("# People\n"),
    "a dangling link": lambda ws, target: (ws.root / "topics/work.md").write_text(
        (ws.root / "topics/work.md").read_text().replace("opens at nine", "opens at [nine](nope.md#^deadbeef)")),
}


@pytest.mark.parametrize("edit", BROKEN_TREE.values(), ids=BROKEN_TREE.keys())
def test_rebuild_renders_the_committed_version_of_a_file_that_breaks_a_tree_rule(ws, monkeypatch, capsys, edit):
    """A hand edit that leaves a link dangling is not adopted; check reports the file, not a stale view, and
    rebuild renders the committed text (the views agents read keep matching HEAD) and says it changed nothing."""
    target = linked_pair(ws)
    views = derived(ws)
    head = ws.log(1)[0]["commit"]
    edit(ws, target)
    fresh_process()
    state = str(ws.settings.state_dir)
    code, report = run(monkeypatch, capsys, "memory", "check", "--state", state, "--json")
    assert code == 65 and "dangling-link" in {p["rule"] for p in report["problems"]}
    assert not any(p["rule"] == "stale-view" for p in report["problems"])  # nothing a rebuild would fix
    monkeypatch.setattr(sys, "argv", ["openprogram", "memory", "rebuild", "--state", state])
    with pytest.raises(SystemExit) as exit_:
        app_module.main()
    assert exit_.value.code == 0 and "nothing changed" in capsys.readouterr().out
    assert ws.log(1)[0]["commit"] == head
    assert derived(ws) == views
    (ws.root / "relations.json").unlink()  # a view really gone: rebuild it, from the committed text
    code, report = run(monkeypatch, capsys, "memory", "check", "--state", state, "--json")
    stale = next(p for p in report["problems"] if p["rule"] == "stale-view")
    assert stale["fix"].startswith("correct the file(s) named above first")
    code, rebuilt = run(monkeypatch, capsys, "memory", "rebuild", "--state", state, "--json")
    assert code == 0 and rebuilt["derived_files"] == ["relations.json"]
    assert derived(ws) == views


def test_a_hand_edit_linking_a_missing_topic_file_is_not_adopted(ws, monkeypatch, capsys):
    path = ws.root / BIKES
    path.write_text(path.read_text().replace("Dana runs", "[Platform](nope.md) says Dana runs"))
    fresh_process()
    code, report = run(monkeypatch, capsys, "memory", "check", "--state", str(ws.settings.state_dir), "--json")
    assert code == 65 and report["repaired"] == []
    assert [(p["rule"], p["line"]) for p in report["problems"]] == [("dangling-link", 3), ("uncommitted", None)]
    assert "topics/nope.md" in report["problems"][0]["message"] and "Platform" not in head_topics(ws)[BIKES]


def test_a_file_another_links_to_as_a_whole_is_not_removed_by_deleting_it(ws, monkeypatch, capsys):
    ws.update(changes=[{"path": "topics/work.md", "content": "# Work\n\n" + record("[Dana](bikes.md) opens at nine.")}])
    (ws.root / BIKES).unlink()
    fresh_process()
    code, report = run(monkeypatch, capsys, "memory", "check", "--state", str(ws.settings.state_dir), "--json")
    assert code == 65 and report["repaired"] == [] and BIKES in head_topics(ws)
    assert ("topics/work.md", "dangling-link") in {(p["file"], p["rule"]) for p in report["problems"]}


def test_status_gives_the_fix_check_gives_for_a_deletion_held_back(ws, monkeypatch, capsys):
    """people.md deleted by hand while work.md links a record in it: the deletion is not adopted. Status names the
    same fix as check (its committed version, or the file that needs it), never `memory edit` of a file that is
    gone."""
    linked_pair(ws)
    (ws.root / "topics/people.md").unlink()
    fresh_process()
    state = str(ws.settings.state_dir)
    code, report = run(monkeypatch, capsys, "memory", "check", "--state", state, "--json")
    [fix] = [p["fix"] for p in report["problems"] if (p["file"], p["rule"]) == ("topics/people.md", "uncommitted")]
    assert code == 65 and "checkout -- topics/people.md`" in fix
    code, status = run(monkeypatch, capsys, "memory", "status", "--state", state, "--json")
    [warning] = [w for w in status["warnings"] if w.startswith("topics/people.md")]
    assert "topics/work.md" in warning and fix in warning and "memory edit topics/people.md" not in warning


LOST_TARGET = {
    "its record deleted": ("topics/people.md", lambda ws: (ws.root / "topics/people.md").write_text("# People\n")),
    "its file deleted": (BIKES, lambda ws: (ws.root / BIKES).unlink()),
}


@pytest.mark.parametrize("target, edit", LOST_TARGET.values(), ids=LOST_TARGET.keys())
def test_the_fix_for_a_link_left_dangling_by_another_file_points_at_that_file(ws, monkeypatch, capsys, target, edit):
    """topics/work.md is as committed; its link dangles because the file it points at changed outside the
    product. Checking work.md out again would change nothing: the fix names the file that lost the target (and
    the link itself), and taking that file's committed version back clears the report."""
    from openprogram_memory.workspace.caches import committed_text

    linked_pair(ws)
    work = ws.root / "topics/work.md"
    work.write_text(work.read_text().replace("opens at nine.", f"opens at nine ([Dana]({target[7:]}))."))
    fresh_process()
    state = str(ws.settings.state_dir)
    assert run(monkeypatch, capsys, "memory", "check", "--state", state, "--json")[1]["problems"] == []  # adopted
    edit(ws)
    fresh_process()
    code, report = run(monkeypatch, capsys, "memory", "check", "--state", state, "--json")
    assert code == 65
    [fix] = {p["fix"] for p in report["problems"] if (p["file"], p["rule"]) == ("topics/work.md", "dangling-link")}
    assert f"checkout -- {target}`" in fix and "memory edit topics/work.md" in fix
    assert "checkout -- topics/work.md" not in fix  # work.md is as committed: a checkout of it does nothing
    (ws.root / target).write_text(committed_text(ws.root, target))  # what that checkout does
    fresh_process()
    assert run(monkeypatch, capsys, "memory", "check", "--state", state, "--json")[1]["problems"] == []


def test_a_record_moved_by_hand_into_a_file_that_is_not_valid_is_not_lost(ws, monkeypatch, capsys):
    """Cut from bikes.md (line and footnote) and pasted into a file one folder deeper, keeping its ``../sources/…``
    link, one level too shallow there. The new home is not valid, so the leaving half is not adopted as a delete
    either: the record is served where it was, status names both files, check gives the link as that folder
    needs it (and never a checkout of the new home alone, which would lose the record); fixing the link adopts
    both halves as one commit."""
    ghent = ws.root / "topics/shops/ghent.md"
    ws.update(changes=[{"path": "topics/shops/ghent.md",
                        "content": "# Ghent\n\n" + record("The Ghent shop opens at nine.", "openprogram/s1/u2")}])
    [moved] = [r.memory_id for r in ws.records() if r.topic == BIKES]
    bikes = ws.root / BIKES
    lines = bikes.read_text().splitlines(keepends=True)
    line = next(text for text in lines if text.rstrip().endswith(f"^{moved}"))
    footnote = next(text for text in lines if text.startswith("[^") and "](../sources/" in text)
    bikes.write_text("".join(text for text in lines if text not in (line, footnote)))
    ghent.write_text(ghent.read_text() + "\n" + line + "\n" + footnote)
    head = head_topics(ws)
    fresh_process()
    state = str(ws.settings.state_dir)
    code, status = run(monkeypatch, capsys, "memory", "status", "--state", state, "--json")
    assert code == 0 and head_topics(ws) == head  # neither half adopted
    [left] = [w for w in status["warnings"] if w.startswith(BIKES)]
    assert f"^{moved}" in left and "topics/shops/ghent.md" in left and "[bad-source-target]" in left
    assert any(w.startswith("topics/shops/ghent.md") for w in status["warnings"])
    code, got = run(monkeypatch, capsys, "memory", "get", moved, "--state", state, "--json")
    assert code == 0 and got["topic"] == BIKES
    assert search(monkeypatch, capsys, ws, "Dana bike") == ["Dana runs a bike shop in Ghent."]
    fresh_process()  # (a search that opens nothing serves it so too)
    assert search(monkeypatch, capsys, ws, "Dana bike") == ["Dana runs a bike shop in Ghent."]
    code, report = run(monkeypatch, capsys, "memory", "check", "--state", state, "--json")
    problems = {(p["file"], p["rule"]): p for p in report["problems"]}
    assert code == 65 and (BIKES, "lost-block-id") in problems
    target = problems[("topics/shops/ghent.md", "bad-source-target")]
    assert "'../../sources/" in target["message"]
    assert f"checkout -- topics/shops/ghent.md {BIKES}`" in target["fix"]  # both, or the record is lost
    ghent.write_text(ghent.read_text().replace("](../sources/", "](../../sources/"))
    fresh_process()
    code, report = run(monkeypatch, capsys, "memory", "check", "--state", state, "--json")
    assert (code, report["problems"]) == (0, [])
    adopted = next(e for e in ws.log(3) if e["message"].startswith("memory: hand edit outside the product"))
    assert BIKES in adopted["message"] and "topics/shops/ghent.md" in adopted["message"]
    code, got = run(monkeypatch, capsys, "memory", "get", moved, "--state", state, "--json")
    assert code == 0 and got["topic"] == "topics/shops/ghent.md"
    fresh_process()  # bikes.md's bytes did not change when it was adopted: the index reads it again all the same
    assert search(monkeypatch, capsys, ws, "Dana bike") == ["Dana runs a bike shop in Ghent."]


def test_a_rename_that_leaves_a_link_behind_blocks_no_write_and_check_names_the_new_file(ws, monkeypatch, capsys):
    """Obsidian renames schedule.md to calendar.md without updating the link in people.md. A write that touches
    people.md goes ahead on the last committed state (the renamed file stays as the person left it); status
    warns, naming the file as it is on disk now; check says the link dangles because of the rename, with the
    link as it must read now."""
    ws.update(changes=[{"path": "topics/schedule.md",
                        "content": "# Schedule\n\n" + record("Standup is at nine every day.", "openprogram/s1/u2")}])
    [standup] = [r.memory_id for r in ws.records() if r.topic == "topics/schedule.md"]
    ws.update(changes=[{"path": "topics/people.md", "content": "# People\n\n## Priya\n\n" + record(
        f"Priya runs the [standup](schedule.md#^{standup}).", "openprogram/s1/u3")}])
    os.rename(ws.root / "topics/schedule.md", ws.root / "topics/calendar.md")
    fresh_process()
    state = str(ws.settings.state_dir)
    assert run(monkeypatch, capsys, "session", "new", "--id", "chat", "--state", state, "--json")[0] == 0
    for text in ("Priya owns billing.", "Noted."):
        code, _ = run(monkeypatch, capsys, "session", "append", "chat", "--role",
                      "user" if text.startswith("Priya") else "assistant", "--text", text, "--state", state, "--json")
        assert code == 0
    code, written = run(monkeypatch, capsys, "memory", "write", "chat", "--force", "--state", state, "--json")
    assert code == 0 and written["changed_files"] == ["topics/people.md"]
    assert "Priya owns billing." in head_topics(ws)["topics/people.md"]
    assert (ws.root / "topics/calendar.md").exists() and not (ws.root / "topics/schedule.md").exists()
    code, status = run(monkeypatch, capsys, "memory", "status", "--state", state, "--json")
    assert not any(w.startswith("topics/schedule.md") for w in status["warnings"])  # the file has another name now
    assert any(w.startswith("topics/calendar.md was renamed from topics/schedule.md") and "topics/people.md" in w
               for w in status["warnings"])
    code, report = run(monkeypatch, capsys, "memory", "check", "--state", state, "--json")
    [link] = [p for p in report["problems"] if (p["file"], p["rule"]) == ("topics/people.md", "dangling-link")]
    assert "topics/schedule.md was renamed to topics/calendar.md" in link["message"]
    assert f"`calendar.md#^{standup}`" in link["fix"] and "checkout" not in link["fix"]
    people = ws.root / "topics/people.md"
    people.write_text(people.read_text().replace("(schedule.md#", "(calendar.md#"))  # the fix as check gives it
    fresh_process()
    code, report = run(monkeypatch, capsys, "memory", "check", "--state", state, "--json")
    assert (code, report["problems"]) == (0, [])


def test_status_warns_of_a_block_id_renamed_while_a_link_needs_it_and_search_keeps_the_old_one(
        ws, monkeypatch, capsys):
    """Renaming ``^old`` by hand while work.md links it: check rejects it, so status warns too, and nothing
    serves the new ID, which was never adopted."""
    target = linked_pair(ws)
    people = ws.root / "topics/people.md"
    renamed = target[:-1] + ("f" if target[-1] != "f" else "e")
    people.write_text(people.read_text().replace(f"^{target}", f"^{renamed}"))
    fresh_process()
    state = str(ws.settings.state_dir)
    code, report = run(monkeypatch, capsys, "memory", "check", "--state", state, "--json")
    assert code == 65 and ("topics/work.md", "dangling-link") in {(p["file"], p["rule"]) for p in report["problems"]}
    code, status = run(monkeypatch, capsys, "memory", "status", "--state", state, "--json")
    [warning] = [w for w in status["warnings"] if w.startswith("topics/people.md")]
    assert f"^{target}" in warning and "topics/work.md" in warning
    fresh_process()
    code, found = run(monkeypatch, capsys, "memory", "search", "Dana owner", "--state", state, "--json")
    ids = [hit["memory_id"] for hit in found["results"]]
    assert target in ids and renamed not in ids
    assert run(monkeypatch, capsys, "memory", "get", renamed, "--state", state, "--json")[0] != 0


def checked_out(ws, *paths: str) -> None:
    """``git checkout -- PATH…``: each file's committed bytes back, its git index entry in step with them."""
    from dulwich import porcelain

    for rel in paths:
        (ws.root / rel).write_text(head_topics(ws)[rel])
    porcelain.add(str(ws.root), [str(ws.root / rel) for rel in paths])


@pytest.mark.parametrize("copy", ["topics/work.md", "topics/agenda.md"])  # (sorts after the original, and before)
def test_a_record_pasted_with_its_block_id_holds_back_the_copy_not_the_original(ws, monkeypatch, capsys, copy):
    """A paragraph copied from bikes.md into another topic, footnote and block ID and all, while bikes.md was
    saved unchanged (an editor that rewrites what it opens): the copy's file is held back and named with the fix;
    bikes.md, as committed, is never blamed and its record is served once — it was gone after any status."""
    ws.update(changes=[{"path": copy, "content": "# Work\n\n" + record("The shop opens at nine.", "openprogram/s1/u2")}])
    [pasted] = [r.memory_id for r in ws.records() if r.topic == BIKES]
    lines = (ws.root / BIKES).read_text().splitlines(keepends=True)
    paragraph = next(text for text in lines if text.rstrip().endswith(f"^{pasted}"))
    footnote = next(text for text in lines if text.startswith("[^"))
    path = ws.root / copy
    path.write_text(path.read_text() + "\n" + paragraph + footnote)
    os.utime(ws.root / BIKES, ns=(1, 1))  # saved as it was: its stat moved, its bytes did not
    fresh_process()
    state = str(ws.settings.state_dir)
    code, status = run(monkeypatch, capsys, "memory", "status", "--state", state, "--json")
    [warning] = status["warnings"]
    assert warning.startswith(f"{copy} [duplicate-id] block ID ^{pasted} is already in {BIKES}")
    assert "give the copy here a new block ID or remove it" in warning
    for _answer_from_saved_index in (False, True):
        assert search(monkeypatch, capsys, ws, "Dana") == ["Dana runs a bike shop in Ghent."]
        code, recalled = run(monkeypatch, capsys, "memory", "recall", "Dana", "--state", state, "--json")
        assert recalled["count"] == 1
        fresh_process()
    code, report = run(monkeypatch, capsys, "memory", "check", "--state", state, "--json")
    [duplicate] = [p for p in report["problems"] if p["rule"] == "duplicate-id"]
    assert duplicate["file"] == copy and f"is also at {BIKES}:" in duplicate["message"]
    assert f"give the copy a new block ID or remove it with `openprogram memory edit {copy}`" in duplicate["fix"]
    path.write_text(path.read_text().replace(f"^{pasted}\n", "^0badc0de\n"))  # the copy given an ID of its own
    fresh_process()
    code, report = run(monkeypatch, capsys, "memory", "check", "--state", state, "--json")
    assert (code, report["problems"]) == (0, [])
    assert sorted(r.topic for r in MemoryWorkspace.open(ws.settings).records() if "bike shop" in r.content) == sorted(
        [BIKES, copy])


def _dana_served_once_and_the_copy_named(monkeypatch, capsys, state: str, also=lambda: None) -> str:
    """Search and recall "Dana" in a fresh process, twice (the second answer from the saved index): the record of
    bikes.md once, and the same one warning each time (which is returned); ``also`` is checked after each."""
    warnings = []
    for _answer_from_saved_index in (False, True):
        fresh_process()
        code, found = run(monkeypatch, capsys, "memory", "search", "Dana", "--state", state, "--json")
        assert code == 0 and [hit["topic"] for hit in found["results"]] == [BIKES]
        warnings += found.get("warnings", [])
        code, recalled = run(monkeypatch, capsys, "memory", "recall", "Dana", "--state", state, "--json")
        assert recalled["count"] == 1 and recalled["warnings"] == warnings[-1:]
        also()
    [warning, again] = warnings
    assert warning == again
    return warning


@pytest.mark.parametrize("searched_before", [False, True])  # (the index built with the copy, or knowing the original)
def test_a_topic_file_pasted_beside_itself_is_served_once_by_the_first_search(ws, monkeypatch, capsys,
                                                                              searched_before):
    """``cp topics/bikes.md "topics/bikes copy.md"`` (Finder, Obsidian), then a search before any status or check:
    the original's record is served once and the copy is named once, in the words status uses for it, by every
    answer (recall too, and one from the saved index) until the copy is removed. Was: every hit twice, no
    warning, until a status or check had judged the copy."""
    state = str(ws.settings.state_dir)
    if searched_before:
        assert search(monkeypatch, capsys, ws, "Dana") == ["Dana runs a bike shop in Ghent."]
    copy = "topics/bikes copy.md"
    (ws.root / copy).write_bytes((ws.root / BIKES).read_bytes())
    warning = _dana_served_once_and_the_copy_named(monkeypatch, capsys, state)
    assert warning.startswith(f"{copy} [duplicate-id] block ID ^")
    fresh_process()
    code, status = run(monkeypatch, capsys, "memory", "status", "--state", state, "--json")
    assert status["warnings"] == [warning]
    (ws.root / copy).unlink()
    fresh_process()
    code, found = run(monkeypatch, capsys, "memory", "search", "Dana", "--state", state, "--json")
    assert [hit["topic"] for hit in found["results"]] == [BIKES] and "warnings" not in found


def test_a_record_pasted_into_a_topic_file_the_index_knows_is_served_once_by_the_next_search(ws, monkeypatch,
                                                                                            capsys):
    """A record pasted, footnote and block ID and all, into another topic file a search has already read: the next
    search and recall serve the original once and name the copy once, in the words status uses, while the rest of
    that file is served as last committed (as status serves it), until the copy is removed. Was: every hit twice,
    no warning, on every search until a status had judged the copy."""
    people = "topics/people.md"
    ws.update(changes=[{"path": people, "content": "# People\n\n## Bob\n\n" + record("Bob trues wheels on Fridays.",
                                                                                    "openprogram/s1/u2")}])
    state = str(ws.settings.state_dir)
    assert search(monkeypatch, capsys, ws, "Dana") == ["Dana runs a bike shop in Ghent."]  # (the index knows both)
    target = ws.root / people
    before = target.read_text()
    pasted = [line for line in (ws.root / BIKES).read_text().splitlines(keepends=True)
              if line.startswith("Dana runs") or line.startswith("[^")]
    assert len(pasted) == 2
    target.write_text(before.replace("## Bob\n\n", "## Bob\n\n" + pasted[0] + "\n", 1) + pasted[1])

    def the_rest_of_the_file_is_served() -> None:
        assert search(monkeypatch, capsys, ws, "Bob trues wheels") == ["Bob trues wheels on Fridays."]

    warning = _dana_served_once_and_the_copy_named(monkeypatch, capsys, state, the_rest_of_the_file_is_served)
    assert warning.startswith(f"{people} [duplicate-id] block ID ^") and BIKES in warning
    fresh_process()
    code, status = run(monkeypatch, capsys, "memory", "status", "--state", state, "--json")
    assert status["warnings"] == [warning]
    target.write_text(before)
    fresh_process()
    code, found = run(monkeypatch, capsys, "memory", "search", "Dana", "--state", state, "--json")
    assert [hit["topic"] for hit in found["results"]] == [BIKES] and "warnings" not in found


def test_a_topic_renamed_by_hand_is_served_from_its_new_name_by_the_next_search_and_is_no_copy(ws, monkeypatch,
                                                                                                capsys):
    """``mv topics/bikes.md topics/cycling.md`` after a search: the next search serves the record from its new
    name and warns of no copy. Was: no result, and a warning to give cycling.md's record a new block ID, as a copy
    of the bikes.md that is gone (the index still listed it while removing it)."""
    assert search(monkeypatch, capsys, ws, "Dana") == ["Dana runs a bike shop in Ghent."]
    (ws.root / BIKES).rename(ws.root / "topics/cycling.md")
    fresh_process()
    code, found = run(monkeypatch, capsys, "memory", "search", "Dana", "--state", str(ws.settings.state_dir), "--json")
    assert code == 0 and [hit["topic"] for hit in found["results"]] == ["topics/cycling.md"]
    assert not any("duplicate-id" in warning for warning in found.get("warnings", []))


def test_a_record_pasted_into_a_topic_file_never_committed_leaves_the_file_out_once_searched(ws, monkeypatch,
                                                                                             capsys):
    """A topic file made by hand (never committed) that a search has served, then given a record pasted with its
    block ID: there is no last commit to serve, so the next search leaves the file out and names it, as it would
    have done had the file been made with the paste in it. Was: the file's records served as the index had them."""
    bikes = (ws.root / BIKES).read_text().splitlines(keepends=True)
    [line] = [text for text in bikes if text.startswith("Dana runs")]
    footnotes = [text for text in bikes if text.startswith("[^")]
    own = line.replace("Dana runs a bike shop in Ghent.", "Eve paints frames in Leuven.").rsplit("^", 1)[0]
    draft = ws.root / "topics/draft.md"
    draft.write_text("# Draft\n\n" + own + "^1234abcd\n\n" + "".join(footnotes))
    fresh_process()
    assert search(monkeypatch, capsys, ws, "Eve paints frames") == ["Eve paints frames in Leuven."]
    draft.write_text(draft.read_text().replace("# Draft\n\n", "# Draft\n\n" + line + "\n", 1))
    fresh_process()
    code, found = run(monkeypatch, capsys, "memory", "search", "Dana Eve", "--state", str(ws.settings.state_dir),
                      "--json")
    assert [hit["topic"] for hit in found["results"]] == [BIKES]
    assert [w.split(" [")[0] for w in found["warnings"]] == ["topics/draft.md"]


def test_a_held_file_checked_out_again_is_served_and_no_longer_held(ws, monkeypatch, capsys):
    """The fix status gives for a held file, ``git checkout -- FILE``, puts its index entry in step too: no edit
    is left to judge. A search that opens nothing serves the file (it served none of it, the committed bytes
    being "the last committed version" of a held file), and the next open lets go of it, so check is clean."""
    ghent = ws.root / "topics/shops/ghent.md"
    ws.update(changes=[{"path": "topics/shops/ghent.md",
                        "content": "# Ghent\n\n" + record("The Ghent shop opens at nine.", "openprogram/s1/u2")}])
    bikes = ws.root / BIKES
    lines = bikes.read_text().splitlines(keepends=True)
    moved = [text for text in lines if text.rstrip().endswith("^" + ws.records()[0].memory_id) or text.startswith("[^")]
    bikes.write_text("".join(text for text in lines if text not in moved))  # moved to a file it is not valid in
    ghent.write_text(ghent.read_text() + "\n" + "".join(moved))
    fresh_process()
    state = str(ws.settings.state_dir)
    code, status = run(monkeypatch, capsys, "memory", "status", "--state", state, "--json")
    assert any(w.startswith(BIKES) for w in status["warnings"])
    checked_out(ws, BIKES, "topics/shops/ghent.md")
    fresh_process()
    assert search(monkeypatch, capsys, ws, "Dana") == ["Dana runs a bike shop in Ghent."]
    code, found = run(monkeypatch, capsys, "memory", "search", "Ghent shop nine", "--state", state, "--json")
    assert "warnings" not in found
    code, report = run(monkeypatch, capsys, "memory", "check", "--state", state, "--json")
    assert (code, report["problems"]) == (0, [])


def _a_commit_then_a_core_record(ws) -> str:
    """The commit to restore, and a core record committed after it (what the restore would undo)."""
    rev = ws.log(1)[0]["commit"]
    ws.update(changes=[{"path": "topics/core.md", "content": "# Core\n\n" + record("Answer in metric units.",
                                                                                  "openprogram/s1/u2")}])
    return rev


def _restore_refused(ws, monkeypatch, capsys, rev: str) -> tuple[str, str, dict]:
    """``memory restore REV`` in a fresh process, refused as not retryable: (state, HEAD before it, the refusal)."""
    fresh_process()
    state = str(ws.settings.state_dir)
    head = ws.log(1)[0]["commit"]
    code, refusal = run(monkeypatch, capsys, "memory", "restore", rev[:10], "--state", state, "--json")
    assert code == 65 and (refusal["code"], refusal["retryable"]) == ("WRITER_PRECONDITION_FAILED", False)
    return state, head, refusal


def test_a_restore_leaves_a_hand_edit_held_back_as_invalid_alone_and_never_overwrites_it(ws, monkeypatch, capsys):
    """restore writes every topic file, so over a file a person left invalid by hand it would delete typed text that
    is in no commit. Where REV holds the file as it is committed now, the restore goes through and leaves the file
    alone, saying so once (was: refused, exit 65, though it had nothing to change there). Where the restore would
    change or remove it, it is refused (exit 65: the file, the line and the fix) and nothing changes; once the
    file is fixed, that restore goes through."""
    before = ws.log(2)[1]["commit"]  # (the archive's commit, before the file was made: a restore removes it)
    rev = _a_commit_then_a_core_record(ws)
    path = ws.root / BIKES
    typed = path.read_text() + "\nMy uncited note.\n"
    path.write_text(typed)
    fresh_process()
    state = str(ws.settings.state_dir)
    code, restored = run(monkeypatch, capsys, "memory", "restore", rev[:10], "--state", state, "--json")
    assert code == 0 and restored["changed_files"] == ["topics/core.md"]
    [warning] = restored["warnings"]
    assert warning.startswith(f"{BIKES} line 7: [uncited-text]")
    assert "left alone: the restore's edit does not change it" in warning
    assert f"`openprogram memory edit {BIKES}`" in warning
    assert path.read_text() == typed
    state, head, refusal = _restore_refused(ws, monkeypatch, capsys, before)
    assert refusal["message"].startswith(f"{BIKES} line 7: [uncited-text]")
    assert f"`openprogram memory edit {BIKES}`" in refusal["message"]
    assert f"`openprogram memory restore {before[:10]}` again" in refusal["message"]
    assert path.read_text() == typed and ws.log(1)[0]["commit"] == head
    path.write_text(typed.replace("\nMy uncited note.\n", ""))
    fresh_process()
    code, restored = run(monkeypatch, capsys, "memory", "restore", before[:10], "--state", state, "--json")
    assert code == 0 and restored["changed_files"] == [BIKES] and not path.exists()


def test_a_restore_writes_back_a_file_deleted_by_hand_whose_deletion_is_held_back(ws, monkeypatch, capsys):
    """people.md deleted by hand while work.md links a record in it (the deletion is held back); ``memory restore
    HEAD`` puts it back, as its fix says a checkout would, and check is clean. Was: "ok", nothing changed, and a
    warning that the restore left it alone — a file that is gone has no typed bytes to keep."""
    linked_pair(ws)
    people = ws.root / "topics/people.md"
    committed = people.read_bytes()
    people.unlink()
    fresh_process()
    state = str(ws.settings.state_dir)
    code, restored = run(monkeypatch, capsys, "memory", "restore", "HEAD", "--state", state, "--json")
    assert code == 0 and people.read_bytes() == committed
    assert not any("left alone" in warning for warning in restored.get("warnings", []))
    fresh_process()
    code, report = run(monkeypatch, capsys, "memory", "check", "--state", state, "--json")
    assert (code, report["problems"]) == (0, [])


def test_a_restore_never_overwrites_a_topic_file_that_is_not_utf8_and_names_every_held_file(ws, monkeypatch, capsys):
    """A note appended in Latin-1 leaves the file out of memory (not text): its bytes are in no commit, so a
    restore that would write or remove it would lose them. It was installed, exit 0, the note gone. Refused like
    an invalid hand edit, and with a second file held back both are named, each with its fix."""
    before = ws.log(2)[1]["commit"]  # (the archive's commit, before both files were made)
    _a_commit_then_a_core_record(ws)
    latin = ws.root / BIKES
    typed = latin.read_bytes() + "caf\u00e9 note\n".encode("latin-1")
    latin.write_bytes(typed)
    state, head, refusal = _restore_refused(ws, monkeypatch, capsys, before)
    assert refusal["message"].startswith(f"{BIKES} not valid UTF-8 at line ")
    assert "re-save it as UTF-8" in refusal["message"]
    assert latin.read_bytes() == typed and ws.log(1)[0]["commit"] == head
    core = ws.root / "topics/core.md"
    invalid = core.read_text() + "\nMy uncited note.\n"
    core.write_text(invalid)
    fresh_process()
    code, refusal = run(monkeypatch, capsys, "memory", "restore", before[:10], "--state", state, "--json")
    assert code == 65 and set(refusal["details"]["files"]) == {BIKES, "topics/core.md"}
    assert f"{BIKES} not valid UTF-8" in refusal["message"] and "topics/core.md line " in refusal["message"]
    assert "re-save it as UTF-8" in refusal["message"]
    assert "`openprogram memory edit topics/core.md`" in refusal["message"]
    assert refusal["message"].endswith(f"`openprogram memory restore {before[:10]}` again")
    assert latin.read_bytes() == typed and core.read_text() == invalid and ws.log(1)[0]["commit"] == head
    code, refusal = run(monkeypatch, capsys, "memory", "restore", f"{before[:10]}^0", "--state", state, "--json")
    assert code == 65 and refusal["message"].endswith(f"`openprogram memory restore '{before[:10]}^0'` again")


def test_a_writer_pass_into_a_topic_file_that_is_not_utf8_is_refused_not_installed(ws):
    """A writer's whole-file write (its write_file tool reads nothing first) over a file left out as not UTF-8
    replaced the person's bytes with no word; the pass is refused with the file and the fix, nothing changes."""
    from datetime import datetime, timezone

    from openprogram_memory.failures import MemoryFailure
    from openprogram_memory.writer.backend import WriterRun
    from openprogram_memory.writer.runner import run_writer

    latin = ws.root / BIKES
    committed = latin.read_text()
    typed = latin.read_bytes() + "caf\u00e9 note\n".encode("latin-1")
    latin.write_bytes(typed)

    class WholeFileWriter:
        name = "whole-file"

        def run(self, request, staging, _ws):
            staging.write(BIKES, committed.replace("in Ghent", "in Ghent and Bruges"))
            return WriterRun(backend=self.name, committed=True)

    fresh_process()
    again = MemoryWorkspace.open(ws.settings)
    head = again.log(1)[0]["commit"]
    with pytest.raises(MemoryFailure) as refused:
        run_writer(again, WholeFileWriter(), [], stage="write", session_id=None, tokens=0,
                   now=datetime.now(timezone.utc), lock_timeout=5, message="memory: write")
    assert refused.value.code.value == "WRITER_PRECONDITION_FAILED"
    assert refused.value.message.startswith(f"{BIKES} not valid UTF-8 at line ")
    assert "(this is not the writer's edit)" in refused.value.message
    assert latin.read_bytes() == typed and again.log(1)[0]["commit"] == head


def _mistyped_anchor(text: str) -> str:
    return re.sub(r"(#source-[0-9a-f]{15})([0-9a-f])", lambda m: m[1] + ("1" if m[2] == "0" else "0"), text)


CITATIONS_OF_NOTHING = {
    "a mistyped anchor": _mistyped_anchor,
    "an archive file that is not there": lambda text: text.replace("/_v2/s1.md#", "/_v2/nothere.md#"),
}


@pytest.mark.parametrize("cite", CITATIONS_OF_NOTHING.values(), ids=CITATIONS_OF_NOTHING.keys())
def test_a_hand_edit_citing_a_message_the_archive_does_not_hold_is_held_back(ws, monkeypatch, capsys, cite):
    """`memory edit` refuses such a citation (MISSING_SOURCE); made in another editor it was adopted and committed
    all the same (check then failed on HEAD, and the record left search without a word). It is held back like any
    invalid hand edit: not committed, status and search warn, search serves the last committed version."""
    path = ws.root / BIKES
    typed = cite(path.read_text().replace("in Ghent", "in Ghent and Bruges"))
    path.write_text(typed)
    head = head_topics(ws)
    fresh_process()
    state = str(ws.settings.state_dir)
    code, report = run(monkeypatch, capsys, "memory", "check", "--state", state, "--json")
    assert code == 65 and report["repaired"] == [] and head_topics(ws) == head
    assert [p["rule"] for p in report["problems"]] == ["unknown-source", "uncommitted"]
    code, status = run(monkeypatch, capsys, "memory", "status", "--state", state, "--json")
    [warning] = [w for w in status["warnings"] if w.startswith(BIKES)]
    assert "[unknown-source]" in warning and "last committed version" in warning
    fresh_process()
    code, found = run(monkeypatch, capsys, "memory", "search", "bike shop", "--state", state, "--json")
    assert [hit["content"] for hit in found["results"]] == ["Dana runs a bike shop in Ghent."]
    assert [w for w in found["warnings"] if w.startswith(BIKES)] == [warning]
    assert path.read_text() == typed and head_topics(ws) == head


def test_a_hand_edit_citing_a_message_archived_later_is_adopted_once_the_archive_holds_it(ws, monkeypatch, capsys):
    """A citation of a message no import has archived yet (a sync tool brought the topic first) is held back only
    until the archive holds the message: the first command after that adopts it and serves its record."""
    from openprogram_memory.sources.archive import SourceMessage

    later = SourceMessage("openprogram/s1/u9", "Dana", "user-1", "2026-08-12T09:00:00+08:00", "We open at nine.")
    path = ws.root / BIKES
    path.write_text(path.read_text() + "\nThe shop opens at nine.[^e9] ^abcd1234\n\n[^e9]: Time: `2026-08-12`; "
                    f"Sources: [nine](../sources/openprogram/_v2/s1.md#{later.anchor})\n")
    fresh_process()
    state = str(ws.settings.state_dir)
    code, status = run(monkeypatch, capsys, "memory", "status", "--state", state, "--json")
    assert any(w.startswith(BIKES) and "[unknown-source]" in w for w in status["warnings"])
    assert search(monkeypatch, capsys, ws, "opens at nine") == []
    ws.archive([later])  # what the next import does
    fresh_process()
    code, status = run(monkeypatch, capsys, "memory", "status", "--state", state, "--json")
    assert f"adopted hand edit(s) outside the product: {BIKES}" in status["warnings"]
    assert not any(w.startswith(BIKES) for w in status["warnings"])
    assert search(monkeypatch, capsys, ws, "opens at nine") == ["The shop opens at nine."]
    assert "^abcd1234" in head_topics(ws)[BIKES]


def test_a_committed_record_whose_archived_message_is_gone_stays_served_as_pending(ws, monkeypatch, capsys):
    """The archive lost a frame a committed record cites (removed by hand, a damaged copy): the topic file is as
    committed, so there is no hand edit to hold back. The record stays served, as pending (never automatic
    context), and check names the citation."""
    archive = ws.root / "sources/openprogram/_v2/s1.md"
    frames = archive.read_text().split("\n\n<a id=")
    archive.write_text("\n\n<a id=".join(frames[:1] + frames[2:]))  # u1's frame, which bikes.md cites
    fresh_process()
    state = str(ws.settings.state_dir)
    code, status = run(monkeypatch, capsys, "memory", "status", "--state", state, "--json")
    assert not any(w.startswith(BIKES) for w in status["warnings"])
    code, found = run(monkeypatch, capsys, "memory", "search", "bike shop", "--all", "--state", state,
                      "--json")
    assert [(hit["content"], hit["trust_state"]) for hit in found["results"]] == [
        ("Dana runs a bike shop in Ghent.", "pending")]
    code, report = run(monkeypatch, capsys, "memory", "check", "--state", state, "--json")
    assert code == 65 and (BIKES, "unknown-source") in {(p["file"], p["rule"]) for p in report["problems"]}
