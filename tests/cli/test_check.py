"""`memory check` names every problem a person or another program left, with its file, line, rule and fix."""

from __future__ import annotations

import json
import re
import sys

import pytest

from engine.helpers import linked_pair, make_workspace, record
from openprogram_memory.cli import app as app_module


def check(monkeypatch, capsys, state) -> tuple[int, dict]:
    monkeypatch.setattr(sys, "argv", ["openprogram", "memory", "check", "--state", str(state), "--json"])
    with pytest.raises(SystemExit) as exit_:
        app_module.main()
    return exit_.value.code, json.loads(capsys.readouterr().out)


@pytest.fixture
def ws(tmp_path):
    ws = make_workspace(tmp_path / "state")
    linked_pair(ws)
    return ws


def test_a_sound_workspace_has_no_problem(ws, monkeypatch, capsys):
    code, report = check(monkeypatch, capsys, ws.settings.state_dir)
    assert (code, report) == (0, {"ok": True, "problems": [], "repaired": []})


def test_a_fresh_workspace_has_no_problem(tmp_path, monkeypatch, capsys):
    """Right after init (and an import with no write yet) no view was ever rendered: none is missing."""
    monkeypatch.setattr(sys, "argv", ["openprogram", "memory", "init", "--state", str(tmp_path / "a"), "--json"])
    with pytest.raises(SystemExit):
        app_module.main()
    capsys.readouterr()
    assert check(monkeypatch, capsys, tmp_path / "a") == (0, {"ok": True, "problems": [], "repaired": []})
    ws = make_workspace(tmp_path / "b")  # sources archived, nothing written from them
    assert check(monkeypatch, capsys, ws.settings.state_dir) == (0, {"ok": True, "problems": [], "repaired": []})


def test_every_kind_of_damage_is_named_with_its_fix(ws, monkeypatch, capsys):
    people = ws.root / "topics/people.md"
    target = next(r.memory_id for r in ws.records() if r.topic == "topics/people.md")
    people.write_text(people.read_text().replace(f" ^{target}", ""), encoding="utf-8")  # an ID removed by hand
    work = ws.root / "topics/work.md"
    work.write_text(work.read_text() + "\nA line typed in vim, no citation.\n", encoding="utf-8")
    (ws.root / "topics/latin1.md").write_bytes("Café.\n".encode("latin-1"))
    (ws.root / "core.md").write_text("edited by hand\n")  # a derived view
    (ws.root / ".git/index.lock").write_text("")
    code, report = check(monkeypatch, capsys, ws.settings.state_dir)
    assert code == 65 and report["ok"] is False
    found = {(p["file"], p["rule"]) for p in report["problems"]}
    assert {("topics/people.md", "missing-block-id"), ("topics/work.md", "uncited-text"),
            ("topics/latin1.md", "encoding"),
            ("topics/people.md", "uncommitted"), ("topics/latin1.md", "uncommitted")} <= found
    assert ("topics/people.md", "unused-definition") not in found  # (the removed ID is named once: its footnote is
    # still cited by the paragraph that lost it)
    assert not (ws.root / ".git/index.lock").exists() and any("lock" in note for note in report["repaired"])
    uncited = next(p for p in report["problems"] if p["rule"] == "uncited-text")
    assert uncited["line"] == 5 and "memory edit topics/work.md" in uncited["fix"]
    # a file that is not text is rendered as committed: the view is named in the same run (was: only once it read)
    stale = next(p for p in report["problems"] if p["rule"] == "stale-view")
    assert stale["file"] == "core.md" and stale["fix"].startswith("correct the file(s) named above first")


def _several_problems_at_once(ws) -> tuple[set[tuple[str, int | None, str]], str]:
    """Two files each of a lost block ID, a broken link, a broken citation, a frontmatter never closed, a record
    pasted with its ID and a byte of another encoding; one file with four problems; a derived view edited by hand.
    Returns ``(file, line, rule)`` of every problem (but the files' own [uncommitted]), and the pasted block ID."""
    from engine.helpers import record

    for name in "abcdefghijkn":
        ws.update(changes=[{"path": f"topics/{name}.md", "content": record(f"Fact {name} one.") + "\n" + record(
            f"Fact {name} two.", "openprogram/s1/u2", "e2")}])
    first = {r.topic: r.memory_id for r in reversed(ws.records())}

    def edit(name: str, change) -> None:
        path = ws.root / f"topics/{name}.md"
        path.write_text(change(path.read_text()), encoding="utf-8")

    for name in "ab":
        edit(name, lambda text, name=name: text.replace(f" ^{first[f'topics/{name}.md']}", ""))
    edit("c", lambda text: text.replace("Fact c one.", "Fact c one, see [x](a.md#^deadbeef)."))
    edit("d", lambda text: text.replace("Fact d one.", "Fact d one, see [x](nowhere.md#^deadbeef)."))
    for name in "ef":
        edit(name, lambda text: re.sub(r"#source-[0-9a-f]+", "#source-00000000", text, count=1))
    for name in "gh":
        edit(name, lambda text, name=name: f"---\ntitle: {name}\n\n" + text)
    pasted = "\n\n".join((ws.root / "topics/k.md").read_text().split("\n\n")[:2]).replace("[^e-", "[^k-")
    for name in "ij":
        edit(name, lambda text: text + "\n" + pasted + "\n")
    for name in "lm":
        (ws.root / f"topics/{name}.md").write_bytes("Caf\xe9 notes.\n".encode("latin-1"))
    edit("n", lambda text: text.replace(f" ^{first['topics/n.md']}", "").replace(
        "Fact n two.", "Fact n two, see [y](b.md#^0badbeef).") + "\nA line typed in vim.\n\nCited, never defined.[^zz] ^1234abcd\n")
    (ws.root / "core.md").write_text("edited by hand\n")
    k = first["topics/k.md"]
    return {("topics/a.md", 1, "missing-block-id"), ("topics/b.md", 1, "missing-block-id"),
            ("topics/c.md", 1, "dangling-link"), ("topics/d.md", 1, "dangling-link"),
            ("topics/e.md", 3, "unknown-source"), ("topics/f.md", 3, "unknown-source"),
            ("topics/g.md", 1, "uncited-text"), ("topics/h.md", 1, "uncited-text"),
            ("topics/i.md", 9, "duplicate-id"), ("topics/j.md", 9, "duplicate-id"),
            ("topics/l.md", 1, "encoding"), ("topics/m.md", 1, "encoding"),
            ("topics/n.md", 1, "missing-block-id"), ("topics/n.md", 5, "dangling-link"),
            ("topics/n.md", 9, "uncited-text"), ("topics/n.md", 11, "undefined-citation"),
            ("core.md", None, "stale-view")}, k


def test_every_problem_of_every_file_is_named_in_one_run(tmp_path, monkeypatch, capsys):
    """Like `git fsck`: the person fixes them all from one report. Was: a file that broke a record rule hid its
    link to nowhere, a block ID pasted into two files named one copy (against the other copy), and a file that is
    not UTF-8 hid a derived view edited by hand: each learnt of only after fixing the others."""
    ws = make_workspace(tmp_path / "state")
    expected, k = _several_problems_at_once(ws)
    code, report = check(monkeypatch, capsys, ws.settings.state_dir)
    problems = [p for p in report["problems"] if p["rule"] != "uncommitted"]
    assert code == 65 and {(p["file"], p["line"], p["rule"]) for p in problems} == expected
    assert {p["file"] for p in report["problems"] if p["rule"] == "uncommitted"} == {
        f"topics/{name}.md" for name in "abcdefghijlmn"}
    for copy in ("topics/i.md", "topics/j.md"):  # each copy against the file that held the ID first
        [duplicate] = [p for p in problems if p["file"] == copy and p["rule"] == "duplicate-id"]
        assert duplicate["message"] == f"block ID ^{k} is also at topics/k.md:1"
    assert all(p["fix"] for p in report["problems"])
    monkeypatch.setattr(sys, "argv", ["openprogram", "memory", "check", "--state", str(ws.settings.state_dir)])
    with pytest.raises(SystemExit) as exit_:
        app_module.main()
    lines = capsys.readouterr().out.splitlines()
    said_once = [text for text in lines if text.startswith("  fix (")]  # (one fix for every problem of one file)
    assert exit_.value.code == 65 and len(lines) - len(said_once) == len(report["problems"])
    for file, line, rule in expected:  # the same problems, one a line, with the fix on it or once after its file's
        where = f"{file}:{line}" if line else file
        [at] = [i for i, text in enumerate(lines) if text.startswith(f"{where}: [{rule}] ")]
        assert " — fix: " in lines[at] or any(f" problems of {file}): " in text for text in said_once), (where, rule)


def test_a_new_file_gets_no_hint_to_take_back_a_committed_version_it_never_had(ws, monkeypatch, capsys):
    (ws.root / "topics/mynotes.md").write_text("# My notes\n\nA line typed in vim, no citation.\n")
    work = ws.root / "topics/work.md"
    work.write_text(work.read_text() + "\nA line typed in vim, no citation.\n", encoding="utf-8")
    code, report = check(monkeypatch, capsys, ws.settings.state_dir)
    fixes = {p["file"]: p["fix"] for p in report["problems"] if p["rule"] == "uncited-text"}
    assert code == 65 and set(fixes) == {"topics/mynotes.md", "topics/work.md"}
    assert "checkout" not in fixes["topics/mynotes.md"] and "never committed" in fixes["topics/mynotes.md"]
    assert f"rm {ws.root / 'topics/mynotes.md'}" in fixes["topics/mynotes.md"]
    assert "memory edit topics/mynotes.md" in fixes["topics/mynotes.md"]
    assert "checkout -- topics/work.md" in fixes["topics/work.md"]  # a committed file can still be taken back


def test_unreadable_runtime_state_and_a_broken_head_are_named(ws, monkeypatch, capsys):
    ws.layout.state("scheduled.json").write_text("[garbled")
    code, report = check(monkeypatch, capsys, ws.settings.state_dir)
    assert code == 65 and [(p["file"], p["rule"]) for p in report["problems"]] == [
        (".scriptorium/scheduled.json", "runtime-state")]
    ws.layout.state("scheduled.json").unlink()
    (ws.root / ".git/refs/heads/main").write_text("0" * 40 + "\n")  # HEAD at a commit that does not exist
    code, report = check(monkeypatch, capsys, ws.settings.state_dir)
    assert code == 65 and [p["rule"] for p in report["problems"]] == ["git-head"]
    assert "git -C" in report["problems"][0]["fix"]


def repair(monkeypatch, capsys, state) -> tuple[int, dict]:
    monkeypatch.setattr(sys, "argv", ["openprogram", "memory", "check", "--repair", "--state", str(state), "--json"])
    with pytest.raises(SystemExit) as exit_:
        app_module.main()
    return exit_.value.code, json.loads(capsys.readouterr().out)


def _log(ws) -> list[str]:
    return [entry["message"] for entry in ws.log(10)]


def test_repair_fixes_what_needs_no_judgement_and_leaves_a_broken_edit_reported(ws, monkeypatch, capsys):
    people = ws.root / "topics/people.md"
    people.write_text(people.read_text().replace("runs a bike shop", "runs a bike shop in Ghent"), encoding="utf-8")
    work = ws.root / "topics/work.md"
    work.write_text(work.read_text() + "\nA line typed in vim, no citation.\n", encoding="utf-8")
    (ws.root / "core.md").write_text("edited by hand\n")
    ws.layout.state("scheduled.json").write_text("[garbled")
    code, report = repair(monkeypatch, capsys, ws.settings.state_dir)
    assert code == 65, report  # the broken file needs a person: still reported, with its fix
    assert {(p["file"], p["rule"]) for p in report["problems"]} == {("topics/work.md", "uncited-text"),
                                                                    ("topics/work.md", "uncommitted")}
    assert any(note.startswith("adopted hand edit(s) outside the product: topics/people.md") for note in
               report["repaired"])  # on open, like every command
    assert any("hand edit outside the product" in message for message in _log(ws))
    assert "Ghent" in next(r.content for r in ws.records() if r.topic == "topics/people.md")
    assert not (ws.root / "core.md").exists() or (ws.root / "core.md").read_text() != "edited by hand\n"  # rebuilt
    assert not ws.layout.state("scheduled.json").exists()
    assert "A line typed in vim" in work.read_text()  # never touched
    work.write_text(work.read_text().replace("\nA line typed in vim, no citation.\n", ""), encoding="utf-8")
    assert check(monkeypatch, capsys, ws.settings.state_dir)[1]["ok"] is True  # back to the committed bytes


def test_repair_points_a_broken_head_at_the_newest_sound_commit_and_commits_the_tree(ws, monkeypatch, capsys):
    from openprogram_memory.transaction import gitcheck

    before = {r.memory_id: r.content for r in ws.records()}
    (ws.root / ".git/refs/heads/main").write_text("0" * 40 + "\n")  # HEAD at a commit that does not exist
    code, report = repair(monkeypatch, capsys, ws.settings.state_dir)
    assert (code, report["ok"], report["problems"]) == (0, True, [])
    assert any("newest sound commit" in note for note in report["repaired"])
    assert gitcheck.head_problem(ws.root) is None
    assert {r.memory_id: r.content for r in ws.records()} == before
    assert check(monkeypatch, capsys, ws.settings.state_dir) == (0, {"ok": True, "problems": [], "repaired": []})
    result = ws.update(changes=[{"path": "topics/people.md", "content": (ws.root / "topics/people.md").read_text()
                                 + "\nDana also fixes wheels.[^e9]\n\n[^e9]: Sources: [note](openprogram/s1/u1)\n"}])
    assert result.git_committed  # history goes on


def test_check_without_repair_changes_nothing_a_person_must_decide(ws, monkeypatch, capsys):
    from engine.helpers import tree_digest

    work = ws.root / "topics/work.md"
    work.write_text(work.read_text() + "\nA line typed in vim, no citation.\n", encoding="utf-8")
    before = tree_digest(ws.root)
    code, report = check(monkeypatch, capsys, ws.settings.state_dir)
    uncommitted = next(p["fix"] for p in report["problems"] if p["rule"] == "uncommitted")
    assert code == 65 and "memory edit topics/work.md" in uncommitted
    assert "--repair" not in uncommitted  # it would leave the broken file as it is: never suggested
    assert tree_digest(ws.root) == before


LEFTOVERS = ("topics/.people.md.swp", "topics/.people.md.swo", "topics/people.md~", "topics/.DS_Store",
             "topics/Thumbs.db", "topics/.obsidian/workspace.json", "topics/.trash/old.md",
             "topics/team/.DS_Store", "sources/.DS_Store", "sources/openprogram/Thumbs.db")


def test_what_editors_and_vault_apps_leave_in_topics_is_not_memory(ws, monkeypatch, capsys):
    """vim, Obsidian, Finder and Explorer leave files beside the topics: never reported, never committed."""
    from openprogram_memory.transaction.history import files_at

    for rel in LEFTOVERS:
        (ws.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws.root / rel).write_text((ws.root / "topics/people.md").read_text() + "\nNot a record.\n")
    assert check(monkeypatch, capsys, ws.settings.state_dir) == (0, {"ok": True, "problems": [], "repaired": []})
    (ws.root / ".git/refs/heads/main").write_text("0" * 40 + "\n")  # repair commits the installed tree …
    code, report = repair(monkeypatch, capsys, ws.settings.state_dir)
    assert (code, report["problems"]) == (0, [])
    committed = set(files_at(ws.root, "HEAD", "topics/")) | set(files_at(ws.root, "HEAD", "sources/"))
    assert committed and not committed & set(LEFTOVERS)  # … and only the memory files in it
    assert all((ws.root / rel).exists() for rel in LEFTOVERS)  # the person's files are left where they are


def test_repair_is_suggested_only_where_it_commits_the_file(ws, monkeypatch, capsys):
    archive = ws.root / "sources/openprogram/_v2/s1.md"
    appended = archive.read_text()
    archive.write_text(appended.replace("I run a bike shop.", "I run a car shop."), encoding="utf-8")
    code, report = check(monkeypatch, capsys, ws.settings.state_dir)
    fix = next(p["fix"] for p in report["problems"] if p["rule"] == "uncommitted")
    assert "--repair" not in fix and "append-only" in fix and "checkout -- sources/openprogram/_v2/s1.md" in fix
    archive.write_text(appended + "\n", encoding="utf-8")  # (an append repair can commit)
    code, report = check(monkeypatch, capsys, ws.settings.state_dir)
    assert "memory check --repair" in next(p["fix"] for p in report["problems"] if p["rule"] == "uncommitted")
    assert repair(monkeypatch, capsys, ws.settings.state_dir)[1]["problems"] == []  # and it does


def test_a_valid_edit_made_outside_is_adopted_by_the_next_command_that_opens_memory(ws, monkeypatch, capsys):
    """An Obsidian-style save (a temp file renamed over the topic) lands in history on the next command."""
    import os

    people = ws.root / "topics/people.md"
    draft = people.with_name(".people.md.tmp")
    draft.write_text(people.read_text().replace("runs a bike shop", "runs a bike shop in Ghent"), encoding="utf-8")
    os.replace(draft, people)
    code, report = check(monkeypatch, capsys, ws.settings.state_dir)
    assert (code, report["problems"]) == (0, [])
    assert any(note.startswith("adopted hand edit(s) outside the product: topics/people.md")
               for note in report["repaired"])
    assert _log(ws)[0].startswith("memory: rebuild derived views") and any(
        m.startswith("memory: hand edit outside the product: topics/people.md") for m in _log(ws))
    assert check(monkeypatch, capsys, ws.settings.state_dir) == (0, {"ok": True, "problems": [], "repaired": []})


def test_an_adoption_names_only_the_files_whose_bytes_changed(ws, monkeypatch, capsys, tmp_path):
    """A topic file whose stat moved while its bytes stayed as committed (``touch``, a ``cp -a`` of the workspace)
    is settled without a commit; beside a real edit it is not named as edited, in the note or the commit."""
    import os
    import shutil

    from openprogram_memory.transaction import history

    work = ws.root / "topics/work.md"
    before = _log(ws)
    later = work.stat().st_mtime_ns + 5_000_000_000
    os.utime(work, ns=(later, later))  # touched
    assert check(monkeypatch, capsys, ws.settings.state_dir) == (0, {"ok": True, "problems": [], "repaired": []})
    assert _log(ws) == before  # nothing committed
    copy = tmp_path / "copy"
    shutil.copytree(ws.settings.state_dir, copy, symlinks=True)  # cp -a: every inode new, every mtime kept
    people = copy / "memory/topics/people.md"
    people.write_text(people.read_text().replace("runs a bike shop", "runs a bike shop in Ghent"), encoding="utf-8")
    os.utime(copy / "memory/topics/work.md", ns=(later + 1, later + 1))
    code, report = check(monkeypatch, capsys, copy)
    assert (code, report["problems"]) == (0, [])
    assert report["repaired"] == ["adopted hand edit(s) outside the product: topics/people.md"]
    assert [c.message for c in history.log(copy / "memory", 10) if c.message.startswith("memory: hand edit")] == [
        "memory: hand edit outside the product: topics/people.md"]


def test_plain_check_says_it_adopted_a_hand_edit_not_that_it_repaired_one(ws, monkeypatch, capsys):
    """Opening adopts a valid hand edit (as every command does); the human report says so in the words status
    uses, and keeps "repaired:" for what --repair did."""
    people = ws.root / "topics/people.md"
    people.write_text(people.read_text().replace("runs a bike shop", "runs a bike shop in Ghent"), encoding="utf-8")
    monkeypatch.setattr(sys, "argv", ["openprogram", "memory", "check", "--state", str(ws.settings.state_dir)])
    with pytest.raises(SystemExit) as exit_:
        app_module.main()
    out = capsys.readouterr().out
    assert exit_.value.code == 0
    assert "adopted hand edit(s) outside the product: topics/people.md" in out and "repaired" not in out


def test_repair_never_adopts_a_rewritten_archive(ws, monkeypatch, capsys):
    archive = ws.root / "sources/openprogram/_v2/s1.md"
    archive.write_text(archive.read_text().replace("I run a bike shop.", "I run a car shop."), encoding="utf-8")
    code, report = repair(monkeypatch, capsys, ws.settings.state_dir)
    assert code == 65 and ("sources/openprogram/_v2/s1.md", "uncommitted") in {
        (p["file"], p["rule"]) for p in report["problems"]}  # sources/ is append-only: a rewrite needs a person
    assert not any("archive" in note for note in report["repaired"])


def test_a_citation_whose_archived_message_is_gone_is_named_at_its_record(ws, monkeypatch, capsys):
    archive = ws.root / "sources/openprogram/_v2/s1.md"
    frames = archive.read_text().split("\n\n<a id=")
    archive.write_text("\n\n<a id=".join(frames[:1] + frames[2:]), encoding="utf-8")  # u1's frame removed by hand
    code, report = check(monkeypatch, capsys, ws.settings.state_dir)
    found = {(p["file"], p["rule"]) for p in report["problems"]}
    assert code == 65 and ("topics/people.md", "unknown-source") in found


def test_an_edit_outside_that_removes_a_linked_record_is_not_adopted(ws, monkeypatch, capsys):
    """Removing a record another file links to is refused by the hand-edit policy: the edit stays out of history,
    and check names the link it leaves dangling."""
    people = ws.root / "topics/people.md"
    target = next(r for r in ws.records() if r.topic == "topics/people.md")
    people.write_text(people.read_text().replace(target.content, "Dana also fixes wheels."), encoding="utf-8")
    people.write_text(people.read_text().replace(f" ^{target.memory_id}", " ^0fedcba9"), encoding="utf-8")
    code, report = check(monkeypatch, capsys, ws.settings.state_dir)
    found = {(p["file"], p["rule"]) for p in report["problems"]}
    assert code == 65 and {("topics/people.md", "uncommitted"), ("topics/work.md", "dangling-link")} <= found
    assert not any("adopted" in note for note in report["repaired"])


def test_a_wikilink_typed_in_obsidian_is_checked_like_a_link(ws, monkeypatch, capsys):
    """A hand edit whose ``[[people#^id]]`` resolves is adopted; one that dangles is not, and check names it with
    the rule and fix of a dangling link; so is an edit of the target that breaks another file's wikilink."""
    people, work = ws.root / "topics/people.md", ws.root / "topics/work.md"
    target = next(r.memory_id for r in ws.records() if r.topic == "topics/people.md")
    work.write_text(work.read_text().replace(f"[shop](people.md#^{target})", f"[[people#^{target}|shop]]"),
                    encoding="utf-8")
    code, report = check(monkeypatch, capsys, ws.settings.state_dir)
    assert (code, report["repaired"]) == (0, ["adopted hand edit(s) outside the product: topics/work.md"])
    people.write_text(people.read_text().replace(f" ^{target}", " ^0fedcba9"), encoding="utf-8")
    code, report = check(monkeypatch, capsys, ws.settings.state_dir)
    assert code == 65 and ("topics/work.md", "dangling-link") in {(p["file"], p["rule"]) for p in report["problems"]}
    assert not any("adopted" in note for note in report["repaired"])
    people.write_text(people.read_text().replace(" ^0fedcba9", f" ^{target}"), encoding="utf-8")
    work.write_text(work.read_text().replace("[[people#", "[[peple#"), encoding="utf-8")
    code, report = check(monkeypatch, capsys, ws.settings.state_dir)
    dangling = [p for p in report["problems"] if p["rule"] == "dangling-link"]
    assert code == 65 and [(p["file"], p["line"]) for p in dangling] == [("topics/work.md", 1)]
    assert "[[peple#^" in dangling[0]["message"] and "openprogram memory edit topics/work.md" in dangling[0]["fix"]
    assert not any("adopted" in note for note in report["repaired"])


def test_an_id_also_used_in_another_file_is_named_with_both_places(ws, monkeypatch, capsys):
    people = (ws.root / "topics/people.md").read_text()
    (ws.root / "topics/copy.md").write_text("# Copied\n\n" + people, encoding="utf-8")  # pasted into a new file
    target = next(r for r in ws.records() if r.topic == "topics/people.md")
    code, report = check(monkeypatch, capsys, ws.settings.state_dir)
    duplicate = next(p for p in report["problems"] if p["rule"] == "duplicate-id")
    assert code == 65 and (duplicate["file"], duplicate["line"]) == ("topics/copy.md", target.line + 2)  # the copy
    assert duplicate["message"] == f"block ID ^{target.memory_id} is also at topics/people.md:{target.line}"


def _status(monkeypatch, capsys, state) -> dict:
    from openprogram_memory.search import cache as search_cache
    from openprogram_memory.workspace import caches

    caches._CACHES.clear()
    search_cache.forget()  # a fresh process, as the CLI is
    monkeypatch.setattr(sys, "argv", ["openprogram", "memory", "status", "--state", str(state), "--json"])
    with pytest.raises(SystemExit):
        app_module.main()
    return json.loads(capsys.readouterr().out)


def _denied_for(path, real):
    """``real`` (a read of ``Path``), refused for ``path`` as a file of mode 000 refuses its reader."""
    def read(self, *args, **kwargs):
        if self == path:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *args, **kwargs)
    return read


def test_a_topic_that_is_not_readable_text_gets_a_fix_that_works_from_check_and_status_alike(
        ws, tmp_path, monkeypatch, capsys):
    """Was: `git checkout` for a chmod 000 file (the mode stays), `memory edit` for a file that is not UTF-8 (it
    opens text only) and a checkout of a file never committed, nothing but [uncommitted] + `memory edit` for a link
    out of the workspace (PATH_OUTSIDE_WORKSPACE), and "its last committed version" for a link that has none."""
    from pathlib import Path

    work = ws.root / "topics/work.md"  # chmod 000 (which root would not feel)
    for name in ("read_bytes", "read_text"):
        monkeypatch.setattr(Path, name, _denied_for(work, getattr(Path, name)))
    latin = ws.root / "topics/latin1.md"
    latin.write_bytes("Café.\n".encode("latin-1"))
    (tmp_path / "elsewhere.md").write_text("Not memory.\n")
    (ws.root / "topics/outside.md").symlink_to(tmp_path / "elsewhere.md")
    (ws.root / "topics/inside.md").symlink_to("people.md")
    (ws.root / "topics/mynotes.md").write_text("# My notes\n\nA line typed in vim, no citation.\n")
    code, report = check(monkeypatch, capsys, ws.settings.state_dir)
    found = {(p["file"], p["rule"]): p["fix"] for p in report["problems"]}
    assert code == 65 and {("topics/work.md", "unreadable"), ("topics/latin1.md", "encoding"),
                           ("topics/outside.md", "symlink"), ("topics/inside.md", "symlink")} <= set(found)
    assert found[("topics/work.md", "unreadable")] == f"let yourself read and write it again: `chmod u+rw {work}`"
    assert "iconv" in found[("topics/latin1.md", "encoding")] and f"rm {latin}" in found[("topics/latin1.md", "encoding")]
    assert "replace the link with a real file" in found[("topics/outside.md", "symlink")]
    for rel in ("topics/latin1.md", "topics/outside.md", "topics/inside.md"):  # no `memory edit` can open them
        assert "memory edit" not in found[(rel, "uncommitted")] and "checkout" not in found[(rel, "uncommitted")]
    warnings = _status(monkeypatch, capsys, ws.settings.state_dir)["warnings"]
    said = {w.split(" ", 1)[0]: w for w in warnings}
    for (rel, rule), fix in found.items():
        if rule in ("unreadable", "encoding") or rel == "topics/inside.md" and rule == "symlink":
            assert said[rel].endswith(" — " + fix), rel  # one wording of the fix
    assert "search, recall and the core use its last committed version" in said["topics/work.md"]
    for rel in ("topics/inside.md", "topics/mynotes.md"):  # never committed: nothing of theirs is served
        assert "left out of memory" in said[rel] and "committed" not in said[rel], rel
    monkeypatch.setattr(sys, "argv", ["openprogram", "memory", "show", "topics/work.md", "--state",
                                      str(ws.settings.state_dir), "--json"])
    with pytest.raises(SystemExit) as exit_:  # was: unexpected error: PermissionError, exit 1
        app_module.main()
    shown = json.loads(capsys.readouterr().out)
    assert exit_.value.code == 65 and shown["code"] == "INVALID_TOPIC_FORMAT"
    assert shown["details"]["rule"] == "unreadable" and f"chmod u+rw {work}" in shown["message"]


def _moved_deeper(tmp_path):
    """topics/projects/billing.md (whose record links topics/projects/db.md) moved by hand to topics/work/eng/: a
    folder of another depth, so its relative links (evidence into sources/, the record link) point nowhere."""
    from engine.helpers import record

    ws = make_workspace(tmp_path / "state")
    ws.update(changes=[{"path": "topics/projects/db.md", "content": record("Billing runs on Postgres.")}])
    db = ws.records()[0].memory_id
    ws.update(changes=[{"path": "topics/projects/billing.md", "content": record(
        f"Billing uses FastAPI and its [database](db.md#^{db}).", "openprogram/s1/u3")}])
    [billing] = [r.memory_id for r in ws.records() if r.topic == "topics/projects/billing.md"]
    text = ws.read_topic("topics/projects/billing.md")  # and a link inside the file, which stays one
    ws.update(changes=[{"path": "topics/projects/billing.md", "content": text + "\n" + record(
        f"Billing deploys weekly, with [that stack](#^{billing}).", "openprogram/s1/u2", "e2")}])
    (ws.root / "topics/work/eng").mkdir(parents=True)
    (ws.root / "topics/projects/billing.md").rename(ws.root / "topics/work/eng/billing.md")
    return ws, billing, db


def test_a_note_moved_to_a_folder_of_another_depth_is_named_by_its_new_path_with_the_link_fix(tmp_path, monkeypatch,
                                                                                              capsys):
    """Was: `memory edit topics/projects/billing.md` for the file that is gone (MEMORY_NOT_FOUND)."""
    ws, _billing, _db = _moved_deeper(tmp_path)
    code, report = check(monkeypatch, capsys, ws.settings.state_dir)
    assert code == 65
    fixes = {(p["file"], p["rule"]): p["fix"] for p in report["problems"]}
    assert ("topics/work/eng/billing.md", "bad-source-target") in fixes
    assert {file for file, _rule in fixes} == {"topics/projects/billing.md", "topics/work/eng/billing.md"}
    for (file, rule), fix in fixes.items():
        assert "memory edit topics/projects/billing.md" not in fix, (file, rule, fix)
        assert "moved to topics/work/eng/billing.md" in fix and "relative links" in fix, (file, rule, fix)
        assert "`openprogram memory check --repair` rewrites them" in fix
        assert "`openprogram memory edit topics/work/eng/billing.md`" in fix



def test_status_and_an_edit_of_the_old_path_give_the_fix_check_gives_for_a_moved_note(tmp_path, monkeypatch, capsys):
    """Was: status warned of the old file with `git checkout … or correct the files that still need it` and never
    named `check --repair`; `memory edit` of the old path answered MEMORY_NOT_FOUND without saying where it went."""
    from openprogram_memory.search import cache as search_cache
    from openprogram_memory.workspace import caches

    ws, _billing, _db = _moved_deeper(tmp_path)
    state = str(ws.settings.state_dir)
    code, report = check(monkeypatch, capsys, state)
    [fix] = {p["fix"] for p in report["problems"] if p["file"] == "topics/projects/billing.md"}
    assert "`openprogram memory check --repair` rewrites them" in fix
    for _saved_facts in (False, True):  # (the second status answers from the facts the first one kept)
        caches._CACHES.clear()
        search_cache.forget()
        monkeypatch.setattr(sys, "argv", ["openprogram", "memory", "status", "--state", state, "--json"])
        with pytest.raises(SystemExit):
            app_module.main()
        warnings = json.loads(capsys.readouterr().out)["warnings"]
        [old] = [w for w in warnings if w.startswith("topics/projects/billing.md ")]
        assert old.endswith(f" — {fix}") and "git -C" not in old
        [new] = [w for w in warnings if w.startswith("topics/work/eng/billing.md ")]
        assert new.endswith(f" — {fix}")
    monkeypatch.setattr(sys, "argv", ["openprogram", "memory", "edit", "topics/projects/billing.md", "--no-reopen",
                                      "--state", state, "--json"])
    with pytest.raises(SystemExit) as exit_:
        app_module.main()
    refusal = json.loads(capsys.readouterr().out)
    assert exit_.value.code == 65 and refusal["code"] == "MEMORY_NOT_FOUND"
    assert refusal["message"] == f"topics/projects/billing.md does not exist: {fix}"
    assert not (ws.root / "topics/projects/billing.md").exists()

def test_a_search_gives_the_fix_check_gives_for_a_moved_note_without_opening_the_workspace(tmp_path, monkeypatch,
                                                                                          capsys):
    """Was: search's fast path (no workspace opened) warned of the moved note with `openprogram memory edit …`
    only, and of the file it left with `git checkout … or correct the files that still need it`."""
    from openprogram_memory.cli import fast
    from openprogram_memory.search import cache as search_cache
    from openprogram_memory.workspace import caches

    ws, _billing, _db = _moved_deeper(tmp_path)
    state = str(ws.settings.state_dir)

    def search_warnings() -> list[str]:
        caches._CACHES.clear()
        search_cache.forget()  # a fresh process, as the CLI is
        assert fast.main(["search", "billing", "--state", state, "--json"]) == 0
        return json.loads(capsys.readouterr().out)["warnings"]

    before_any_open = search_warnings()  # (nothing held back yet: only the moved file is left out)
    code, report = check(monkeypatch, capsys, state)
    [fix] = {p["fix"] for p in report["problems"] if p["file"] == "topics/projects/billing.md"}
    assert code == 65 and "`openprogram memory check --repair` rewrites them" in fix
    for warnings in (before_any_open, search_warnings()):
        moved = [w for w in warnings if w.startswith(("topics/work/eng/billing.md ", "topics/projects/billing.md "))]
        assert moved and all(w.endswith(f" — {fix}") for w in moved), warnings
    assert len(moved) == 2  # (after check, the file it left is held back too: named with the same fix)


def test_an_edit_of_a_moved_note_is_validated_without_the_file_it_left(tmp_path, monkeypatch, capsys):
    """Was: INVALID_TOPIC_FORMAT "block ID ^… appears in topics/projects/billing.md and topics/work/eng/billing.md"."""
    ws, billing, _db = _moved_deeper(tmp_path)
    editor = tmp_path / "editor.sh"  # the person corrects the relative links by hand
    editor.write_text("#!/bin/sh\nsed -i -e 's#(\\.\\./\\.\\./sources/#(../../../sources/#' "
                      "-e 's#(db\\.md#(../../projects/db.md#' \"$1\"\n")
    editor.chmod(0o755)
    monkeypatch.setenv("EDITOR", str(editor))
    monkeypatch.setattr(sys, "argv", ["openprogram", "memory", "edit", "topics/work/eng/billing.md", "--no-reopen",
                                      "--state", str(ws.settings.state_dir), "--json"])
    with pytest.raises(SystemExit) as exit_:
        app_module.main()
    out = capsys.readouterr().out
    assert exit_.value.code == 0, out
    assert json.loads(out)["changed_files"] == ["topics/projects/billing.md", "topics/work/eng/billing.md"]
    assert check(monkeypatch, capsys, ws.settings.state_dir) == (0, {"ok": True, "problems": [], "repaired": []})
    assert ws.get(billing)["topic"] == "topics/work/eng/billing.md"


def test_repair_rewrites_the_relative_links_of_a_moved_note_through_the_transaction(tmp_path, monkeypatch, capsys):
    ws, billing, db = _moved_deeper(tmp_path)
    code, report = repair(monkeypatch, capsys, ws.settings.state_dir)
    assert code == 0, report
    assert any(note.startswith("rewrote the relative links of topics/work/eng/billing.md, moved from "
                               "topics/projects/billing.md") for note in report["repaired"])
    text = (ws.root / "topics/work/eng/billing.md").read_text()
    assert f"[database](../../projects/db.md#^{db})" in text and "](../../../sources/openprogram/" in text
    assert f"[that stack](#^{billing})" in text
    assert any("topics/projects/billing.md moved to topics/work/eng/billing.md" in m for m in _log(ws))
    assert check(monkeypatch, capsys, ws.settings.state_dir) == (0, {"ok": True, "problems": [], "repaired": []})
    assert ws.get(billing)["topic"] == "topics/work/eng/billing.md"


def _commands(fix: str) -> list[list[str]]:
    """The shell commands a fix suggests (between backticks), split as a shell splits them."""
    import shlex

    return [shlex.split(command) for command in re.findall(r"`([^`]+)`", fix)]


def test_a_path_with_a_space_is_quoted_in_every_command_check_and_status_suggest(ws, monkeypatch, capsys):
    """Was: `rm /…/topics/people copy.md` (a shell removes ./copy.md too) and `memory edit topics/people copy.md`
    (an extra argument): each path is one word of the command."""
    import shutil

    copy = ws.root / "topics/people copy.md"
    shutil.copy(ws.root / "topics/people.md", copy)
    code, report = check(monkeypatch, capsys, ws.settings.state_dir)
    assert code == 65
    fixes = [p["fix"] for p in report["problems"] if p["file"] == "topics/people copy.md"]
    commands = [c for fix in fixes for c in _commands(fix)]
    assert ["rm", str(copy)] in commands
    assert ["openprogram", "memory", "edit", "topics/people copy.md"] in commands
    monkeypatch.setattr(sys, "argv", ["openprogram", "memory", "status", "--state", str(ws.settings.state_dir)])
    with pytest.raises(SystemExit):
        app_module.main()
    [warning] = [line for line in capsys.readouterr().out.splitlines() if "people copy.md" in line]
    assert ["openprogram", "memory", "edit", "topics/people copy.md"] in _commands(warning)


def test_a_removed_block_id_is_named_and_problems_come_by_file_then_line(ws, monkeypatch, capsys):
    """Was: `[missing-block-id] paragraph does not end in a ^block-id` without the ID the committed version had,
    and a file's rules before the files that come before it by name."""
    work = ws.root / "topics/work.md"
    target = next(r.memory_id for r in ws.records() if r.topic == "topics/work.md")
    work.write_text(work.read_text().replace(f" ^{target}", ""), encoding="utf-8")
    (ws.root / "topics/people.md").write_text((ws.root / "topics/people.md").read_text() + "\nTyped, uncited.\n",
                                               encoding="utf-8")
    code, report = check(monkeypatch, capsys, ws.settings.state_dir)
    [missing] = [p for p in report["problems"] if p["rule"] == "missing-block-id"]
    assert f"^{target}" in missing["message"]
    topics = [(p["file"], p["line"] or 1e9) for p in report["problems"] if p["file"].startswith("topics/")]
    assert topics == sorted(topics) and topics[0][0] == "topics/people.md"


def test_a_fix_the_same_for_every_problem_of_a_moved_note_is_said_once_per_file(tmp_path, monkeypatch, capsys):
    ws, _billing, _db = _moved_deeper(tmp_path)
    monkeypatch.setattr(sys, "argv", ["openprogram", "memory", "check", "--state", str(ws.settings.state_dir)])
    with pytest.raises(SystemExit):
        app_module.main()
    out = capsys.readouterr().out
    assert out.count("`openprogram memory check --repair` rewrites them") == 2  # (the old file's and the new one's)
    assert "fix (" in out and "problems of topics/work/eng/billing.md)" in out


def test_a_fix_shared_by_many_problems_of_a_hand_edited_file_is_said_once(tmp_path, monkeypatch, capsys):
    """Every block ID stripped from a committed file by hand: check names each record that lost one, and the fix
    they share once, though the file's [uncommitted] problem asks another. Was: the same long fix on every line
    (300 lines of it for 300 records)."""
    ws = make_workspace(tmp_path / "state")
    ws.update(changes=[{"path": "topics/big.md", "content": "# Big\n\n" + "\n".join(
        record(f"Fact {n} holds.", f"openprogram/s1/u{i}", f"e{i}") for i, n in enumerate(("one", "two", "three"), 1))}])
    path = ws.root / "topics/big.md"
    path.write_text(re.sub(r" \^[0-9a-f]{8}$", "", path.read_text(), flags=re.M))
    monkeypatch.setattr(sys, "argv", ["openprogram", "memory", "check", "--state", str(ws.settings.state_dir)])
    with pytest.raises(SystemExit):
        app_module.main()
    out = capsys.readouterr().out
    lost = [line for line in out.splitlines() if "[missing-block-id]" in line]
    assert len(lost) == 3 and not any(" — fix: " in line for line in lost)
    assert out.count("fix (3 problems of topics/big.md): ") == 1


def test_a_paragraph_typed_without_an_id_beside_a_deleted_record_is_not_given_its_id(tmp_path, monkeypatch, capsys):
    """Record one deleted by hand and a new paragraph typed without a block ID: check says the new paragraph has
    none, and names no ID for it (the deleted record's would make sync and history read it as an edit of that
    record)."""
    ws = make_workspace(tmp_path / "state")
    ws.update(changes=[{"path": "topics/big.md", "content": "# Big\n\n" + "\n".join(
        record(f"Fact {n} holds.", f"openprogram/s1/u{i}", f"e{i}") for i, n in enumerate(("one", "two"), 1))}])
    path = ws.root / "topics/big.md"
    lines = path.read_text().splitlines(keepends=True)
    [two] = [line for line in lines if line.startswith("Fact two holds.")]
    label = re.search(r"\[\^([^\]]+)\]", two).group(1)
    kept = [line for line in lines if not line.startswith("Fact one holds.")]
    at = kept.index(two) + 1
    path.write_text("".join(kept[:at] + ["\n", f"Fact four holds.[^{label}]\n"] + kept[at:]))
    monkeypatch.setattr(sys, "argv", ["openprogram", "memory", "check", "--state", str(ws.settings.state_dir),
                                      "--json"])
    with pytest.raises(SystemExit):
        app_module.main()
    report = json.loads(capsys.readouterr().out)
    [lost] = [p for p in report["problems"] if p["rule"] == "missing-block-id"]
    assert "its last commit has ^" not in lost["message"]
