"""Each structured operation on its own."""

from __future__ import annotations

import difflib
import json

import pytest

from openprogram_memory.failures import FailureCode, MemoryFailure
from openprogram_memory.workspace.state import RuntimeState
from structured.helpers import SOURCES, create, create_op, dest, topic_text


# -- create_record ------------------------------------------------------------
def test_create_renders_canonical_record_with_verbatim_labels(ws):
    result = ws.update(memory_changes=[create_op(
        "Dana runs a bike shop.", topic="people/dana.md", headings=("Dana", "Work"),
        sources=((SOURCES[0], "bike shop"), (SOURCES[1], "调研范围")), time="2024-03")])
    assert result.changed_files == ["topics/people/dana.md"]
    (block_id,) = result.block_ids
    assert result.extra["created"] == [{"change": 0, "memory_id": block_id}]
    text = topic_text(ws, "topics/people/dana.md")
    (evidence,) = result.evidence_ids
    assert text == (
        "# Dana\n\n## Work\n\n"
        f"Dana runs a bike shop.[^{evidence}] ^{block_id}\n\n"
        f"[^{evidence}]: Time: `2024-03`; Sources: "
        "[bike shop](../../sources/openprogram/_v2/s1.md#source-d4939e57a74bbf13), "
        f"[调研范围](../../sources/openprogram/_v2/s1.md#source-05445ea43c2c241e)\n")
    record = ws.get(block_id)
    assert record["headings"] == ["Dana", "Work"]
    assert record["time"] == "2024-03"
    assert record["sources"] == [{"source": SOURCES[0], "label": "bike shop"}, {"source": SOURCES[1], "label": "调研范围"}]
    json.dumps(result.to_json())


@pytest.mark.parametrize("time, shown", [("2026-08-09", "2026-08-09"), ("2026-08", "2026-08"), ("2026", "2026"),
                                         ("undated", "undated"), (None, "undated")])
def test_create_time_forms(ws, time, shown):
    block_id = create(ws, "A fact with a time.", time=time)
    assert ws.get(block_id)["time"] == shown


def test_create_positions(ws):
    a = create(ws, "Alpha fact.", headings=("H",))
    c = create(ws, "Gamma fact.", headings=("H",))
    b = create(ws, "Beta fact.", headings=("H",), position="before", anchor=c)
    d = create(ws, "Delta fact.", headings=("H",), position="after", anchor=c)
    z = create(ws, "Zero fact.", headings=("H",), position="start")
    order = [r.memory_id for r in ws.records()]
    assert order == [z, a, b, c, d]


OBSIDIAN_PROPERTIES = "---\ntags: [person, shop]\naliases:\n  - Dana R.\n---\n"


@pytest.mark.parametrize("layout, headings", [
    ("# Dana\n", ("Dana",)),  # the heading right under the properties (was: a blank line put between them)
    ("\n\n", ()),  # two blank lines after them (was: made one)
    ("   \n# Dana\n", ("Dana",)),  # a blank line of spaces (was: emptied)
])
def test_a_write_adds_its_record_and_leaves_the_frontmatter_and_what_follows_it_byte_for_byte(ws, layout, headings):
    """A topic opening with Obsidian's Properties, written to twice: every byte the person had is kept, in place;
    each write only inserts its record (and the blank lines around it)."""
    path = ws.root / "topics/people/dana.md"
    path.parent.mkdir(parents=True)
    path.write_bytes((OBSIDIAN_PROPERTIES + layout).encode("utf-8"))
    for n in range(2):
        before = path.read_bytes()
        create(ws, f"Dana fact number {n}.", topic="people/dana.md", headings=headings)
        after = path.read_bytes()
        edits = difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes()
        assert all(tag in ("equal", "insert") for tag, *_ in edits), (before, after)
        assert after.startswith((OBSIDIAN_PROPERTIES + layout).encode("utf-8")), after


def test_create_topic_path_without_prefix_and_heading_chain_reuse(ws):
    one = create(ws, "One fact.", topic="x.md", headings=("A", "B"))
    two = create(ws, "Two fact.", topic="topics/x.md", headings=("A", "C"))
    three = create(ws, "Three fact.", topic="x.md", headings=("A", "B"))
    text = topic_text(ws, "topics/x.md")
    assert text.count("# A") == 1 and text.count("## B") == 1
    assert text.index(one) < text.index(three) < text.index("## C") < text.index(two)


def test_create_with_new_source(ws):
    result = ws.update(
        memory_changes=[create_op("Dana likes espresso.", sources=(("new-source-1", "espresso"),))],
        sources=[{"label": "new-source-1", "role": "user", "content": "I like espresso.",
                  "observed_at": "2026-08-12T08:00:00+00:00"}])
    (source_id,) = result.extra["source_ids"]
    provider, thread, message = source_id.split("/")
    assert provider == "openprogram" and message.startswith("m-")
    assert thread == f"api-2026-08-12-{message[2]}"  # API threads by day, sharded by the content hash
    assert result.extra["new_sources"] == {"new-source-1": source_id}
    record = ws.get(result.block_ids[0])
    assert record["sources"] == [{"source": source_id, "label": "espresso"}]
    assert record["trust_state"] == "trusted"
    archive = (ws.root / f"sources/openprogram/_v2/{thread}.md").read_text()
    assert "I like espresso." in archive and "speaker-id:api%2Duser" in archive


def test_legacy_source_refs(ws):
    op = create_op("Legacy fact.")
    del op["sources"]
    op["source_refs"] = [SOURCES[2]]
    result = ws.update(memory_changes=[op])
    assert ws.get(result.block_ids[0])["sources"] == [{"source": SOURCES[2], "label": SOURCES[2]}]


def test_legacy_op_names(ws):
    op = create_op("Old-style create.")
    op["op"] = "create"
    block_id = ws.update(memory_changes=[op]).block_ids[0]
    ws.update(memory_changes=[{"op": "delete", "memory_id": block_id}])
    with pytest.raises(MemoryFailure):
        ws.get(block_id)


# -- update_record ------------------------------------------------------------
def test_update_keeps_id_and_place_and_replaces_evidence(ws):
    first = create(ws, "First.", headings=("H",))
    target = create(ws, "Old text.", headings=("H",), sources=((SOURCES[1], "old"),))
    last = create(ws, "Last.", headings=("H",))
    result = ws.update(memory_changes=[{"op": "update_record", "memory_id": target, "content": "New text.",
                                        "time": "2026-08-03", "sources": [{"source": SOURCES[2], "label": "new"}]}])
    assert result.changed_files == ["topics/t.md"]
    assert [r.memory_id for r in ws.records()] == [first, target, last]
    record = ws.get(target)
    assert record["content"] == "New text."
    assert record["sources"] == [{"source": SOURCES[2], "label": "new"}]
    text = topic_text(ws, "topics/t.md")
    assert "[old]" not in text and "Old text." not in text  # unused evidence removed


def test_update_can_change_only_labels(ws):
    block_id = create(ws, "Fact.", sources=((SOURCES[0], "one"),))
    ws.update(memory_changes=[{"op": "update_record", "memory_id": block_id, "content": "Fact.",
                               "time": "2026-08-01", "sources": [{"source": SOURCES[0], "label": "renamed"}]}])
    assert ws.get(block_id)["sources"][0]["label"] == "renamed"


def test_update_identical_is_no_change(ws):
    block_id = create(ws, "Fact.")
    revision = ws.revision()
    result = ws.update(memory_changes=[{"op": "update_record", "memory_id": block_id, "content": "Fact.",
                                        "time": "2026-08-01", "sources": [{"source": SOURCES[0], "label": "first"}]}])
    assert result.changed_files == [] and result.revision == revision and not result.memory_committed


# -- delete_record ------------------------------------------------------------
def test_delete_removes_record_evidence_and_answers_not_found(ws):
    keep = create(ws, "Keep me.", sources=((SOURCES[0], "k"),))
    gone = create(ws, "Delete me.", sources=((SOURCES[1], "d"),))
    result = ws.update(memory_changes=[{"op": "delete_record", "memory_id": gone}])
    assert result.extra["deleted_ids"] == [gone]
    text = topic_text(ws, "topics/t.md")
    assert "Delete me." not in text and "[d]" not in text and keep in text
    with pytest.raises(MemoryFailure) as info:
        ws.get(gone)
    assert info.value.code is FailureCode.MEMORY_NOT_FOUND
    assert gone not in RuntimeState.load(ws.layout).created_order


def test_delete_last_core_record_removes_core_files(ws):
    block_id = create(ws, "Always answer in metric units.", topic="topics/core.md", headings=("Core",))
    assert (ws.root / "core.md").exists()
    result = ws.update(memory_changes=[{"op": "delete_record", "memory_id": block_id}])
    assert result.changed_files == ["topics/core.md"]
    assert not (ws.root / "topics/core.md").exists()
    assert not (ws.root / "core.md").exists()


def test_delete_prunes_emptied_heading_chain(ws):
    stay = create(ws, "Stays.", headings=("A", "B"))
    gone = create(ws, "Goes.", headings=("A", "C", "D"))
    ws.update(memory_changes=[{"op": "delete_record", "memory_id": gone}])
    text = topic_text(ws, "topics/t.md")
    assert "C" not in text.replace(stay, "") and "D" not in text.replace(stay, "")
    assert text.startswith("# A\n\n## B\n\nStays.")


def test_delete_alias_keeps_merged_record(ws, merged):
    identity, alias = merged
    result = ws.update(memory_changes=[{"op": "delete_record", "memory_id": alias}])
    assert result.extra["deleted_ids"] == [alias]
    assert ws.get(identity)["ids"] == [identity]
    assert ws.get(identity)["content"] == "Merged."
    with pytest.raises(MemoryFailure):
        ws.get(alias)


def test_delete_identity_of_merged_record_removes_its_aliases(ws, merged):
    identity, alias = merged
    result = ws.update(memory_changes=[{"op": "delete_record", "memory_id": identity}])
    assert sorted(result.extra["deleted_ids"]) == sorted([identity, alias])
    for gone in (identity, alias):
        with pytest.raises(MemoryFailure):
            ws.get(gone)


# -- move_records -------------------------------------------------------------
def test_move_keeps_order_ids_evidence_labels_and_created_order(ws):
    a = create(ws, "Alpha.", sources=((SOURCES[0], "alpha label"),))
    b = create(ws, "Beta.", sources=((SOURCES[1], "beta label"),))
    c = create(ws, "Gamma.", sources=((SOURCES[2], "gamma label"),))
    order_before = dict(RuntimeState.load(ws.layout).created_order)
    result = ws.update(memory_changes=[{"op": "move_records", "memory_ids": [c, a],
                                        "destination": dest("sub/dir/other.md", ("X", "Y"))}])
    assert result.changed_files == ["topics/sub/dir/other.md", "topics/t.md"]
    moved = [r for r in ws.records() if r.topic == "topics/sub/dir/other.md"]
    assert [r.memory_id for r in moved] == [c, a]
    assert ws.get(a)["sources"] == [{"source": SOURCES[0], "label": "alpha label"}]
    assert ws.get(c)["headings"] == ["X", "Y"]
    text = topic_text(ws, "topics/sub/dir/other.md")
    assert "](../../../sources/openprogram/_v2/s1.md#" in text
    assert "alpha label" not in topic_text(ws, "topics/t.md")
    runtime = RuntimeState.load(ws.layout)
    assert {k: runtime.created_order[k] for k in (a, b, c)} == {k: order_before[k] for k in (a, b, c)}
    # labels survive a full rebuild of the derived views too
    ws.rebuild()
    assert ws.get(c)["sources"] == [{"source": SOURCES[2], "label": "gamma label"}]


def test_move_reorders_within_a_section(ws):
    a, b, c = (create(ws, f"{name}.", headings=("H",)) for name in ("One", "Two", "Three"))
    ws.update(memory_changes=[{"op": "move_records", "memory_ids": [c, a],
                               "destination": dest(headings=("H",), position="start")}])
    assert [r.memory_id for r in ws.records()] == [c, a, b]
    ws.update(memory_changes=[{"op": "move_records", "memory_ids": [c],
                               "destination": dest(headings=("H",), position="after", anchor=b)}])
    assert [r.memory_id for r in ws.records()] == [a, b, c]


def test_move_rewrites_links_to_moved_records(ws):
    target = create(ws, "Target fact.", topic="topics/a.md")
    ws.update(memory_changes=[
        create_op(f"See [the target](a.md#^{target}) for details.", topic="topics/b.md"),
        create_op(f"Same file link [here](#^{target}).", topic="topics/a.md"),
    ])
    ws.update(memory_changes=[{"op": "move_records", "memory_ids": [target],
                               "destination": dest("topics/deep/c.md")}])
    assert f"[the target](deep/c.md#^{target})" in topic_text(ws, "topics/b.md")
    assert f"[here](deep/c.md#^{target})" in topic_text(ws, "topics/a.md")
    relations = json.loads((ws.root / "relations.json").read_text())
    assert all(t == f"topics/deep/c.md#^{target}" for ts in relations["outbound"].values() for t in ts)


def test_move_rewrites_wikilinks_to_moved_records_in_their_own_form(ws):
    """Wikilinks typed in Obsidian follow a moved record as Obsidian writes them when it renames a note: a bare
    name stays the name (the path once a shorter path has that name), a path stays a path, a relative link stays
    relative, label and embed kept; the moved record's own ``[[#^id]]`` names the file it left."""
    other = create(ws, "Other fact.", topic="topics/a.md")
    target = create(ws, f"Target fact, unlike [[#^{other}]].", topic="topics/a.md")
    ws.update(memory_changes=[
        create_op(f"See [[a#^{target}|the target]], ![[topics/a.md#^{target}]] and [[./a#^{target}]].",
                  topic="topics/b.md"),
        create_op(f"Same file [[#^{target}]], not [[#^{other}]].", topic="topics/a.md"),
    ])
    ws.update(memory_changes=[{"op": "move_records", "memory_ids": [target], "destination": dest("topics/deep/d.md")}])
    assert (f"See [[d#^{target}|the target]], ![[topics/deep/d.md#^{target}]] and [[./deep/d#^{target}]]."
            in topic_text(ws, "topics/b.md"))
    assert f"Same file [[d#^{target}]], not [[#^{other}]]." in topic_text(ws, "topics/a.md")
    assert f"Target fact, unlike [[a#^{other}]]." in topic_text(ws, "topics/deep/d.md")
    create(ws, "A shorter path named e.", topic="topics/e.md")
    ws.update(memory_changes=[{"op": "move_records", "memory_ids": [target], "destination": dest("topics/deep/e.md")}])
    assert f"See [[deep/e#^{target}|the target]]" in topic_text(ws, "topics/b.md")
    assert ws.get(target)["topic"] == "topics/deep/e.md"


def test_move_rebases_the_moved_records_own_links(ws):
    other = create(ws, "Other.", topic="topics/a.md")
    mover = ws.update(memory_changes=[create_op(f"Points at [other](a.md#^{other}).", topic="topics/b.md")]).block_ids[0]
    ws.update(memory_changes=[{"op": "move_records", "memory_ids": [mover], "destination": dest("topics/x/y.md")}])
    assert f"[other](../a.md#^{other})" in topic_text(ws, "topics/x/y.md")
    ws.update(memory_changes=[{"op": "move_records", "memory_ids": [mover], "destination": dest("topics/a.md")}])
    assert f"[other](#^{other})" in topic_text(ws, "topics/a.md")


def test_move_of_merged_paragraph_needs_all_ids_in_order(ws, merged):
    identity, alias = merged
    for ids in ([identity], [identity, alias]):
        with pytest.raises(MemoryFailure) as info:
            ws.update(memory_changes=[{"op": "move_records", "memory_ids": ids, "destination": dest("topics/z.md")}])
        assert info.value.code is FailureCode.INVALID_ARGUMENT
        assert "changes[0]" in info.value.message and alias in info.value.message
    ws.update(memory_changes=[{"op": "move_records", "memory_ids": [alias, identity],
                               "destination": dest("topics/z.md")}])
    assert ws.get(alias)["topic"] == "topics/z.md" and ws.get(alias)["ids"] == [alias, identity]


def test_move_anchor_rules(ws):
    a = create(ws, "A.", headings=("H",))
    b = create(ws, "B.", headings=("H",))
    other = create(ws, "Elsewhere.", headings=("G",))
    cases = [
        ({"memory_ids": [a, b], "destination": dest(headings=("H",), position="before", anchor=b)}, "itself being moved"),
        ({"memory_ids": [a], "destination": dest(headings=("H",), position="before", anchor=other)}, "is not under"),
        ({"memory_ids": [a], "destination": dest("topics/u.md", position="after", anchor=b)}, "is not under"),
    ]
    for change, message in cases:
        with pytest.raises(MemoryFailure) as info:
            ws.update(memory_changes=[{"op": "move_records", **change}])
        assert info.value.code is FailureCode.INVALID_ARGUMENT and message in info.value.message
    with pytest.raises(MemoryFailure) as info:
        ws.update(memory_changes=[{"op": "move_records", "memory_ids": [a],
                                   "destination": dest(headings=("H",), position="after", anchor="deadbeef")}])
    assert info.value.code is FailureCode.MEMORY_NOT_FOUND


def _legacy_topic(text: str, source: str) -> str:
    return f"{text}[^mem_1]\n\n[^mem_1]: Sources: [legacy]({source})\n"


def test_move_evidence_label_conflict_is_invalid_argument(ws):
    ws.update(changes=[{"path": "topics/a.md", "content": _legacy_topic("From a.", SOURCES[0])},
                       {"path": "topics/b.md", "content": _legacy_topic("From b.", SOURCES[1])}])
    mover = [r.memory_id for r in ws.records() if r.topic == "topics/a.md"][0]
    revision = ws.revision()
    with pytest.raises(MemoryFailure) as info:
        ws.update(memory_changes=[{"op": "move_records", "memory_ids": [mover], "destination": dest("topics/b.md")}])
    assert info.value.code is FailureCode.INVALID_ARGUMENT and "mem_1" in info.value.message
    assert ws.revision() == revision


def test_move_same_evidence_with_other_relative_path_is_no_conflict(ws):
    ws.update(changes=[{"path": "topics/a.md", "content": _legacy_topic("From a.", SOURCES[0])},
                       {"path": "topics/x/b.md", "content": _legacy_topic("From b.", SOURCES[0])}])
    mover = [r.memory_id for r in ws.records() if r.topic == "topics/a.md"][0]
    ws.update(memory_changes=[{"op": "move_records", "memory_ids": [mover], "destination": dest("topics/x/b.md")}])
    text = topic_text(ws, "topics/x/b.md")
    assert text.count("[^mem_1]:") == 1 and ws.get(mover)["topic"] == "topics/x/b.md"
    assert not (ws.root / "topics/a.md").exists()


def test_api_sources_are_threaded_by_day_so_no_archive_grows_without_bound(ws):
    for day in ("2026-08-12", "2026-08-12", "2026-08-13"):
        ws.update(memory_changes=[create_op(f"Fact of {day} {len(list(ws.records()))}.",
                                            sources=(("new-source-1", "said"),))],
                  sources=[{"label": "new-source-1", "content": f"Said on {day}, call {len(list(ws.records()))}.",
                            "observed_at": f"{day}T23:30:00+02:00"}])
    archives = sorted((ws.root / "sources/openprogram/_v2").glob("api*.md"))
    assert {p.name[:len("api-2026-08-12")] for p in archives} == {"api-2026-08-12", "api-2026-08-13"}  # own offset
    assert sum(p.read_text().count("<!-- source-id:") for p in archives if "08-12" in p.name) == 2


def test_a_busy_day_of_api_sources_is_spread_over_shards_and_a_source_keeps_its_id(ws):
    def create(i: int) -> dict:
        return ws.update(memory_changes=[create_op(f"Fact number {i}.", sources=(("new-source-1", "said"),))],
                         sources=[{"label": "new-source-1", "content": f"Said thing number {i}.",
                                   "observed_at": "2026-08-12T10:00:00+00:00"}]).extra["source_ids"][0]

    ids = [create(i) for i in range(40)]
    threads = {source_id.split("/")[1] for source_id in ids}
    assert 8 <= len(threads) <= 16 and all(t.startswith("api-2026-08-12-") for t in threads)
    assert create(7) == ids[7]  # the same words said the same day: the same source


def test_a_full_archive_part_sends_new_sources_to_the_next_part_and_old_ones_keep_their_ids(ws, monkeypatch):
    from openprogram_memory.transaction import structured_editor

    monkeypatch.setattr(structured_editor, "ARCHIVE_PART_BYTES", 1_000)

    def create(i: int) -> dict:
        return ws.update(memory_changes=[create_op(f"Fact number {i}.", sources=(("new-source-1", "said"),))],
                         sources=[{"label": "new-source-1", "content": f"Said thing number {i}.",
                                   "observed_at": "2026-08-12T10:00:00+00:00"}]).extra["source_ids"][0]

    ids = [create(i) for i in range(60)]
    archives = sorted((ws.root / "sources/openprogram/_v2").glob("api*.md"))
    frame = max(len(p.read_text().split("<a id=")[1]) for p in archives) + 10
    assert max(p.stat().st_size for p in archives) < 1_000 + frame  # full parts stop taking sources
    assert any("-p2" in p.name for p in archives) and len(set(ids)) == 60
    assert create(3) == ids[3] and create(57) == ids[57]  # said before: the same source, wherever it landed
    for i in (3, 57):
        thread = ids[i].split("/")[1]
        assert f"Said thing number {i}." in (ws.root / f"sources/openprogram/_v2/{thread}.md").read_text()
    assert sum(p.read_text().count("<!-- source-id:") for p in archives) == 60
