"""Core block rendering to the budget, derived views, rebuild, git hygiene."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from engine.helpers import make_workspace, record, tree_digest
from openprogram_memory.failures import FailureCode, MemoryFailure
from openprogram_memory.tokens import count_tokens
from openprogram_memory.transaction.engine import Policy

WORDS = ("Always state units explicitly and prefer concise, exact answers that cite the relevant "
         "measurement, the assumption behind it, and the source where the number came from").split()


def _big_core(n_records: int = 120) -> str:
    parts = ["# Core", ""]
    defs = []
    for i in range(n_records):
        sentence = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(60))
        parts.append(f"Rule {i}: {sentence}.[^e{i}]")
        parts.append("")
        defs.append(f"[^e{i}]: Time: `2026-08-10`; Sources: [rule {i}](openprogram/s1/u2)")
    return "\n".join(parts + defs) + "\n"


def test_oversized_hand_written_core_does_not_block_an_unrelated_edit():
    ws = make_workspace()
    ws.update(changes=[{"path": "topics/core.md", "content": _big_core(150)}])
    core_tokens = count_tokens(ws.read_topic("topics/core.md"))
    assert core_tokens > 11_000
    result = ws.update(changes=[{"path": "topics/people/dana.md", "content": "# Dana\n\n" + record("Dana runs a bike shop.")}])
    assert result.changed_files == ["topics/people/dana.md"]
    rendered = (ws.root / "core.md").read_text()
    assert count_tokens(rendered) <= 2000
    view = ws.core_view()
    assert view["excluded_block_ids"], "records over the budget are reported"
    assert view["tokens"] <= 2000 and view["budget"] == 2000
    status = ws.status()
    assert status["core"]["excluded_block_ids"] == view["excluded_block_ids"]
    assert any("do not fit" in w for w in status["warnings"])
    # every excluded record stays in the canonical file and stays readable
    for block_id in view["excluded_block_ids"][:3]:
        assert ws.get(block_id)["topic"] == "topics/core.md"
    # the render keeps file order: the first records are in, footnotes travel along
    first = ws.tree().files["topics/core.md"].records[0]
    assert f"^{first.memory_id}" in rendered
    assert "[^" in rendered and "]: Time:" in rendered


def test_exactly_11883_token_hand_written_core_renders_within_budget():
    ws = make_workspace()
    ws.update(changes=[{"path": "topics/core.md", "content": _big_core(80)}])  # each record has its own footnote
    text = ws.read_topic("topics/core.md")
    marker = "Rule 79: "
    for _ in range(20):  # pad the last record by hand until the file is exactly 11,883 tokens
        missing = 11_883 - count_tokens(text)
        if missing == 0:
            break
        if missing > 0:
            text = text.replace(marker, marker + "very " * missing, 1)
        else:
            text = text.replace(marker + "very ", marker, -missing)
    assert count_tokens(text) == 11_883
    ws.write_topic("topics/core.md", text)
    assert count_tokens(ws.read_topic("topics/core.md")) == 11_883
    result = ws.update(changes=[{"path": "topics/other.md", "content": record("An unrelated fact.")}])
    assert result.memory_committed and result.changed_files == ["topics/other.md"]
    rendered = count_tokens((ws.root / "core.md").read_text())
    assert 1_500 < rendered <= 2_000


def test_inject_false_makes_effective_core_empty():
    ws = make_workspace(**{"memory.core.inject": False})
    ws.update(changes=[{"path": "topics/core.md", "content": "# Core\n\n" + record("Always answer in metric units.", "openprogram/s1/u2")}])
    view = ws.core_view()
    assert view["rendered"] and view["effective"] == "" and view["inject"] is False and view["tokens"] == 0
    assert any("inject=false" in w for w in ws.status()["warnings"])


def test_rebuild_restores_deleted_views_byte_for_byte():
    ws = make_workspace()
    ws.update(changes=[
        {"path": "topics/core.md", "content": "# Core\n\n" + record("Always answer in metric units.", "openprogram/s1/u2")},
        {"path": "topics/people/dana.md", "content": "# Dana\n\n" + record("Dana runs a bike shop.")},
    ])
    views = {rel: h for rel, h in tree_digest(ws.root).items()
             if rel in ("core.md", "recent_events.jsonl", "relations.json") or rel.startswith("timeline/")}
    assert {"core.md", "recent_events.jsonl", "relations.json"} <= set(views)
    assert any(rel.startswith("timeline/2026/08/") for rel in views)
    for rel in ("core.md", "recent_events.jsonl", "relations.json"):
        (ws.root / rel).unlink()
    shutil.rmtree(ws.root / "timeline")
    ws.rebuild()
    after = tree_digest(ws.root)
    assert {rel: after.get(rel) for rel in views} == views
    # and a rebuild with everything current changes nothing
    rev = ws.revision()
    assert ws.rebuild().changed_files == [] and ws.revision() == rev


def test_timeline_recent_relations_content():
    ws = make_workspace()
    ws.update(changes=[{"path": "topics/people/dana.md", "content": "# Dana\n\n" + record("Dana runs a bike shop.")}])
    block_id = ws.tree().files["topics/people/dana.md"].ids[0]
    day = (ws.root / "timeline/2026/08/09.md").read_text()
    assert "Dana runs a bike shop." in day and f"#^{block_id}" in day
    recent = [json.loads(line) for line in (ws.root / "recent_events.jsonl").read_text().splitlines()]
    assert recent[0]["memory_id"] == block_id and recent[0]["time"] == "2026-08-09"
    assert json.loads((ws.root / "relations.json").read_text()) == {"backlinks": {}, "outbound": {}}


@pytest.mark.skipif(shutil.which("git") is None, reason="git CLI needed")
def test_git_status_clean_and_fsck_after_each_transaction():
    ws = make_workspace()
    edits = [
        [{"path": "topics/a.md", "content": record("Fact A.")}],
        [{"path": "topics/b/c.md", "content": record("Fact C.", "openprogram/s1/u3")}],
        [{"path": "topics/a.md", "action": "delete"}],
    ]
    for change in edits:
        result = ws.update(changes=change, base_revision=ws.revision())
        assert result.git_committed and result.commit
        status = subprocess.run(["git", "status", "--porcelain"], cwd=ws.root, capture_output=True, text=True)
        assert status.stdout == ""
        fsck = subprocess.run(["git", "fsck", "--strict"], cwd=ws.root, capture_output=True, text=True)
        assert fsck.returncode == 0, fsck.stderr
    log = subprocess.run(["git", "log", "--format=%an <%ae>"], cwd=ws.root, capture_output=True, text=True).stdout
    assert set(log.split("\n")) - {""} == {"OpenProgram Memory <memory@openprogram.local>"}
    assert ".scriptorium" not in subprocess.run(["git", "ls-files"], cwd=ws.root, capture_output=True, text=True).stdout


def test_restore_is_a_new_transaction():
    ws = make_workspace()
    first = ws.update(changes=[{"path": "topics/a.md", "content": record("Fact A.")}])
    ws.update(changes=[{"path": "topics/b.md", "content": record("Fact B.", "openprogram/s1/u3")}])
    before_log = len(ws.log())
    result = ws.restore(first.commit)
    assert result.changed_files == ["topics/b.md"]
    assert not (ws.root / "topics/b.md").exists()
    assert len(ws.log()) == before_log + 1


def test_pre_install_callback():
    ws = make_workspace()
    seen = []
    ws.pre_install = lambda plan: seen.append(sorted(plan.changed_topics))
    with pytest.raises(MemoryFailure):
        ws.update(changes=[{"path": "topics/a.md", "content": "uncited\n"}])
    assert seen == []  # an invalid edit creates no checkpoint
    ws.update(changes=[{"path": "topics/a.md", "content": record("Fact A.")}])
    assert seen == [["topics/a.md"]]

    def boom(plan):
        raise RuntimeError("checkpoint store is full")

    ws.pre_install = boom
    before = tree_digest(ws.root)
    with pytest.raises(RuntimeError):
        ws.update(changes=[{"path": "topics/b.md", "content": record("Fact B.")}])
    assert tree_digest(ws.root) == before  # callback failure → no install


def test_base_revision_compare_and_set():
    ws = make_workspace()
    stale = ws.revision()
    ws.update(changes=[{"path": "topics/a.md", "content": record("Fact A.")}])
    with pytest.raises(MemoryFailure) as info:
        ws.update(changes=[{"path": "topics/b.md", "content": record("Fact B.")}], base_revision=stale)
    assert info.value.code is FailureCode.CONCURRENT_UPDATE and info.value.retryable


def test_lock_held_elsewhere_is_concurrent_update():
    from filelock import FileLock

    ws = make_workspace()
    other = FileLock(str(ws.layout.lock_file))
    other.acquire()
    try:
        with pytest.raises(MemoryFailure) as info:
            ws.edit(lambda s: s.write("topics/a.md", record("Fact A.")), policy=Policy.MODEL, lock_timeout=0.2)
        assert info.value.code is FailureCode.CONCURRENT_UPDATE and info.value.exit_code == 75
    finally:
        other.release()


def test_relations_json_stays_what_the_whole_tree_gives_through_edits_that_do_and_do_not_touch_links(tmp_path):
    """relations.json is carried from one tree to the next when an edit neither holds a link nor touches a
    record a link points at; every other edit works it out again. Either way it is what the whole tree gives."""
    import json

    from openprogram_memory.views.derived import _relations
    from openprogram_memory.workspace.caches import TreeState

    from .helpers import linked_pair, make_workspace, record

    ws = make_workspace(tmp_path / "state")

    def on_disk_is_whole():
        text = (ws.root / "relations.json").read_text()
        assert text == _relations(TreeState(dict(ws.cache.snapshot().files)))
        return json.loads(text)

    target = linked_pair(ws)
    assert on_disk_is_whole()["outbound"]  # the link is listed
    ws.update(changes=[{"path": "topics/tea.md", "content": record("Tea at four.", "openprogram/s1/u3")}])
    on_disk_is_whole()  # unrelated: carried
    tea = next(r.memory_id for r in ws.records() if "Tea" in r.content)
    ws.update(changes=[{"path": "topics/menu.md",
                        "content": record(f"The [tea](tea.md#^{tea}) is oolong.", "openprogram/s1/u3")}])
    assert tea in on_disk_is_whole()["backlinks"]  # a new link
    tea_file = ws.read_topic("topics/tea.md")
    ws.update(changes=[{"path": "topics/tea.md", "content": tea_file.replace("Tea at four.", "Tea at five.")}])
    on_disk_is_whole()  # an edit of a linked record
    ws.update(changes=[{"path": "topics/people.md", "content": ws.read_topic("topics/people.md")
                        + "\n" + record("Dana also fixes kites.", "openprogram/s1/u2", label="e9")}])
    on_disk_is_whole()  # a record added beside a linked one
    kites = next(r.memory_id for r in ws.records() if "kites" in r.content)
    _merge_kites_into(ws, target, kites)
    assert kites in on_disk_is_whole()["backlinks"]  # the linked record merged: listed under its new memory id
    target = kites
    menu = next(r.memory_id for r in ws.records() if "oolong" in r.content)
    ws.update(memory_changes=[{"op": "delete_record", "memory_id": menu}])
    assert tea not in on_disk_is_whole()["backlinks"]  # the link went with its record
    assert target in on_disk_is_whole()["backlinks"]


def _merge_kites_into(ws, target: str, kites: str) -> None:
    """People.md's two records (``target``, ``kites``) merged by hand into one holding both IDs and both notes."""
    import re

    people = ws.read_topic("topics/people.md")
    labels = re.findall(r"^(\[\^[^\]]+\]):", people, re.M)
    notes = "\n".join(line for line in people.splitlines() if line.startswith("[^"))
    merged = f"Dana runs a bike shop and fixes kites.{labels[0]}{labels[1]} ^{target} ^{kites}\n\n{notes}\n"
    ws.update(changes=[{"path": "topics/people.md", "content": merged}], base_revision=ws.revision())


def test_wikilinks_to_records_are_relations_like_markdown_links(tmp_path):
    """An Obsidian wikilink (``[[people#^id]]``, an embed ``![[…]]`` too) from a record to a record is an outbound
    link and a backlink in relations.json, as ``[text](people.md#^id)`` is, through the edits that carry the view
    from tree to tree: the linked record merged into another is listed under its new memory id."""

    from openprogram_memory.views.derived import _relations
    from openprogram_memory.workspace.caches import TreeState

    ws = make_workspace(tmp_path / "state")

    def on_disk_is_whole():
        text = (ws.root / "relations.json").read_text()
        assert text == _relations(TreeState(dict(ws.cache.snapshot().files)))
        return json.loads(text)

    ws.update(changes=[{"path": "topics/people.md", "content": record("Dana runs a bike shop.")}])
    target = ws.records()[0].memory_id
    ws.update(changes=[{"path": "topics/work/menu.md", "content": record(
        f"The shop ([[people#^{target}|Dana's]]) sells tea, see ![[People#^{target}]].", "openprogram/s1/u3")}])
    menu = next(r.memory_id for r in ws.records() if "tea" in r.content)
    assert on_disk_is_whole() == {"backlinks": {target: [menu]}, "outbound": {menu: [f"topics/people.md#^{target}"]}}
    ws.update(changes=[{"path": "topics/people.md", "content": ws.read_topic("topics/people.md")
                        + "\n" + record("Dana also fixes kites.", "openprogram/s1/u2", label="e9")}])
    kites = next(r.memory_id for r in ws.records() if "kites" in r.content)
    _merge_kites_into(ws, target, kites)
    assert on_disk_is_whole()["backlinks"] == {kites: [menu]}  # menu.md unchanged: the view is not carried
    ws.update(memory_changes=[{"op": "delete_record", "memory_id": menu}])
    assert on_disk_is_whole() == {"backlinks": {}, "outbound": {}}


def test_views_an_older_version_rendered_are_rendered_again_on_the_next_open(tmp_path):
    """A workspace from before record wikilinks counted in relations.json (its runtime state names no views
    version) held a relations.json without them, committed: `memory check` said stale-view (exit 65) until the
    person ran `memory rebuild`. The next open renders the views again and commits them; check is clean."""
    from openprogram_memory.memory import MemoryWorkspace
    from openprogram_memory.search import cache as search_cache
    from openprogram_memory.transaction.check import check_workspace
    from openprogram_memory.transaction.history import commit_paths
    from openprogram_memory.workspace import caches
    from openprogram_memory.workspace.state import VIEWS_VERSION

    ws = make_workspace(tmp_path / "state")
    ws.update(changes=[{"path": "topics/people.md", "content": record("Dana runs a bike shop.")}])
    target = ws.records()[0].memory_id
    ws.update(changes=[{"path": "topics/menu.md", "content": record(
        f"The shop ([[people#^{target}]]) sells tea.", "openprogram/s1/u3")}])
    menu = next(r.memory_id for r in ws.records() if "tea" in r.content)
    relations = ws.root / "relations.json"
    rendered = relations.read_text()
    assert json.loads(rendered)["backlinks"] == {target: [menu]}
    relations.write_text(json.dumps({"backlinks": {}, "outbound": {}}, indent=2, sort_keys=True) + "\n")
    commit_paths(ws.root, ["relations.json"], "memory: rebuild derived views")  # what the older version committed
    runtime = ws.layout.path(".scriptorium/runtime.json")
    old = json.loads(runtime.read_text())
    del old["views_version"]
    runtime.write_text(json.dumps(old))
    caches._CACHES.clear()
    search_cache.forget()  # a fresh process, after the upgrade
    again = MemoryWorkspace.open(ws.settings)
    assert relations.read_text() == rendered
    assert [p for p in check_workspace(again) if p.rule == "stale-view"] == []
    assert "older version" in again.log(1)[0]["message"]
    assert json.loads(runtime.read_text())["views_version"] == VIEWS_VERSION  # once: the next open renders nothing
    caches._CACHES.clear()
    before = again.log(1)[0]["commit"]
    MemoryWorkspace.open(ws.settings)
    assert again.log(1)[0]["commit"] == before
