"""Operations combined in one request: merge and split, and the views they rebuild."""

from __future__ import annotations

import json
import shutil

import pytest

from openprogram_memory.config import load_settings
from openprogram_memory.memory import MemoryWorkspace
from openprogram_memory.transaction.history import files_at, log
from openprogram_memory.transaction.structured import parse_request, run_request
from openprogram_memory.workspace.state import RuntimeState
from structured.helpers import SOURCES, create, create_op, dest, topic_text


def _recent(ws) -> list[dict]:
    return [json.loads(line) for line in (ws.root / "recent_events.jsonl").read_text().splitlines()]


def _timeline(ws, day: str) -> str:
    path = ws.root / "timeline" / (day.replace("-", "/") + ".md")
    return path.read_text() if path.exists() else ""


def test_all_four_ops_in_one_transaction(ws):
    keep = create(ws, "Keep and update me.", time="2026-08-02", sources=((SOURCES[1], "upd"),))
    gone = create(ws, "Delete me.", time="2026-08-03", sources=((SOURCES[2], "del"),))
    mover = create(ws, "Move me.", time="2026-08-04", sources=((SOURCES[3], "mov"),))
    commits = len(log(ws.root, 100))
    result = ws.update(memory_changes=[
        create_op("Brand new.", topic="topics/new.md", time="2026-08-05", sources=((SOURCES[4], "new"),)),
        {"op": "update_record", "memory_id": keep, "content": "Updated text.", "time": "2026-08-06",
         "sources": [{"source": SOURCES[5], "label": "upd2"}]},
        {"op": "delete_record", "memory_id": gone},
        {"op": "move_records", "memory_ids": [mover], "destination": dest("topics/new.md", position="start")},
    ], commit_message="combined")
    assert result.changed_files == ["topics/new.md", "topics/t.md"]
    assert len(log(ws.root, 100)) == commits + 1 and log(ws.root, 1)[0].message.strip() == "combined"
    new_id = result.extra["created"][0]["memory_id"]
    assert [r.memory_id for r in ws.records() if r.topic == "topics/new.md"] == [mover, new_id]
    # the derived views changed in the same commit
    assert "recent_events.jsonl" in result.derived_files and "timeline/2026/08/06.md" in result.derived_files
    assert "Delete me." not in _timeline(ws, "2026-08-03")
    assert "Updated text." in _timeline(ws, "2026-08-06") and "Keep and update me." not in _timeline(ws, "2026-08-02")
    assert "Brand new." in _timeline(ws, "2026-08-05")
    assert f"new.md#^{mover}" in _timeline(ws, "2026-08-04")
    recent = {e["memory_id"]: e for e in _recent(ws)}
    assert gone not in recent and recent[keep]["content"] == "Updated text."
    assert recent[mover]["topic"] == "topics/new.md"
    assert recent[new_id]["created_order"] > recent[mover]["created_order"] > recent[keep]["created_order"]
    # ... and were committed with the topics, in the same commit
    committed = files_at(ws.root, result.commit, "")
    for rel in ["topics/new.md", "topics/t.md", "recent_events.jsonl", "timeline/2026/08/06.md"]:
        assert committed[rel] == (ws.root / rel).read_bytes()
    assert "timeline/2026/08/03.md" not in committed


def test_merge_as_update_deletes_and_move(ws):
    a = create(ws, "Dana likes espresso.", topic="topics/food.md", time="2026-08-01", sources=((SOURCES[0], "espresso"),))
    b = create(ws, "Dana likes coffee, espresso mostly.", topic="topics/misc.md", time="2026-08-02",
               sources=((SOURCES[1], "coffee"),))
    c = create(ws, "Espresso is Dana's favourite drink.", topic="topics/misc.md", time="2026-08-03",
               sources=((SOURCES[2], "favourite"),))
    linker = create(ws, f"See [coffee](misc.md#^{b}).", topic="topics/links.md")
    order_before = RuntimeState.load(ws.layout).created_order[a]
    result = ws.update(memory_changes=[
        {"op": "update_record", "memory_id": a, "content": "Dana's favourite drink is espresso.", "time": "2026-08-03",
         "sources": [{"source": SOURCES[0], "label": "espresso"}, {"source": SOURCES[1], "label": "coffee"},
                     {"source": SOURCES[2], "label": "favourite"}]},
        {"op": "delete_record", "memory_id": b},
        {"op": "delete_record", "memory_id": c},
        {"op": "update_record", "memory_id": linker, "content": f"See [coffee](food.md#^{a}).", "time": "2026-08-01",
         "sources": [{"source": SOURCES[0], "label": "first"}]},
        {"op": "move_records", "memory_ids": [a], "destination": dest("topics/core.md", ("Preferences",))},
    ])
    assert sorted(result.extra["deleted_ids"]) == sorted([b, c])
    assert result.changed_files == ["topics/core.md", "topics/food.md", "topics/links.md", "topics/misc.md"]
    assert not (ws.root / "topics/misc.md").exists() and not (ws.root / "topics/food.md").exists()
    record = ws.get(a)
    assert record["topic"] == "topics/core.md" and record["content"] == "Dana's favourite drink is espresso."
    assert [s["label"] for s in record["sources"]] == ["espresso", "coffee", "favourite"]
    assert f"[coffee](core.md#^{a})" in topic_text(ws, "topics/links.md")  # rewritten to the new file
    assert "espresso" in (ws.root / "core.md").read_text()
    relations = json.loads((ws.root / "relations.json").read_text())
    assert relations["backlinks"] == {a: [linker]}
    assert RuntimeState.load(ws.layout).created_order[a] == order_before


def test_split_as_update_creates_and_move(ws):
    big = create(ws, "Dana runs a bike shop and speaks Portuguese.", topic="topics/dana.md", headings=("Dana",),
                 sources=((SOURCES[0], "shop"), (SOURCES[1], "language")))
    result = ws.update(memory_changes=[
        {"op": "update_record", "memory_id": big, "content": "Dana runs a bike shop.", "time": "2026-08-01",
         "sources": [{"source": SOURCES[0], "label": "shop"}]},
        create_op("Dana speaks Portuguese.", topic="topics/dana.md", headings=("Dana", "Languages"),
                  sources=((SOURCES[1], "language"),)),
        create_op("Dana learned Portuguese in Lisbon.", topic="topics/dana.md", headings=("Dana", "Languages"),
                  sources=((SOURCES[1], "language"),), time="2026-08-02"),
        {"op": "move_records", "memory_ids": [big], "destination": dest("topics/dana.md", ("Dana", "Work"))},
    ])
    assert result.changed_files == ["topics/dana.md"]
    assert len(result.block_ids) == 2
    text = topic_text(ws, "topics/dana.md")
    assert text.index("## Languages") < text.index("## Work")
    assert ws.get(big)["headings"] == ["Dana", "Work"] and ws.get(big)["content"] == "Dana runs a bike shop."
    # two records share the (time, source) evidence of the first new record: defined once
    assert sum(1 for line in text.splitlines() if line.startswith("[^")) == 3
    assert {e["memory_id"] for e in _recent(ws)} == {big, *result.block_ids}


def test_moving_a_whole_section_out_prunes_its_heading(ws):
    stay = create(ws, "Stays.", headings=("A", "Keep"))
    movers = [create(ws, f"Mover {n}.", headings=("A", "Go")) for n in range(2)]
    ws.update(memory_changes=[{"op": "move_records", "memory_ids": movers, "destination": dest("topics/b.md")}])
    assert "## Go" not in topic_text(ws, "topics/t.md") and stay in topic_text(ws, "topics/t.md")
    assert [r.memory_id for r in ws.records() if r.topic == "topics/b.md"] == movers


def test_delete_with_link_fixed_in_same_request(ws):
    target = create(ws, "Target.", topic="topics/a.md")
    linker = create(ws, f"Links [there](a.md#^{target}).", topic="topics/b.md")
    ws.update(memory_changes=[
        {"op": "delete_record", "memory_id": target},
        {"op": "update_record", "memory_id": linker, "content": "No link any more.",
         "sources": [{"source": SOURCES[0], "label": "x"}]},
    ])
    assert json.loads((ws.root / "relations.json").read_text()) == {"backlinks": {}, "outbound": {}}



def _move(ids, topic="topics/t.md", headings=(), position="end", anchor=None):
    return {"op": "move_records", "memory_ids": ids, "destination": dest(topic, headings, position, anchor)}


SPLIT = [  # (indexes into the records of topics/t.md, where to)
    lambda r: _move([r[0], r[3]], "topics/a.md", ("A",)),
    lambda r: _move([r[6]], "topics/b.md"),
    lambda r: _move([r[5]], headings=("H", "S0"), position="start"),
    lambda r: _move([r[9], r[1]], "topics/a.md", ("A",), "after", r[0]),
    lambda r: _move([r[2]], headings=("H", "S0"), position="after", anchor=r[5]),
    lambda r: {"op": "delete_record", "memory_id": r[7]},
    lambda r: _move([r[8]], headings=("H", "S1")),
    lambda r: _move([r[10], r[11]], "topics/a.md", ("A",), "after", r[9]),
    lambda r: _move([r[6]], headings=("H", "S1")),  # back: topics/b.md is empty again
    lambda r: {"op": "merge_records", "memory_ids": [r[4], r[0]]},
    lambda r: _move([r[0], r[4]], "topics/b.md"),
]
THERE_AND_BACK = [lambda r: _move([r[1]], "topics/b.md"), lambda r: _move([r[1]], headings=("H", "S1"))]


@pytest.mark.parametrize("ops", [SPLIT, THERE_AND_BACK], ids=["split", "there-and-back"])
def test_many_moves_in_one_request_write_what_one_request_per_move_writes(ws, tmp_path, ops):
    """A split moves many records out of one file in one (organizer) request; the editor finds each record by an
    index, and takes the moved ones out of their file (dropping the footnotes only they cited) in one pass when the
    file is next read, not once per move. The files are byte for byte those of the same operations made one
    request at a time (each then taken out at once)."""
    shared = ((SOURCES[0], "shared"),)
    ids = [create(ws, f"Record {n}.", time="2026-08-01" if n % 3 else f"2026-08-{n + 2:02d}",
                  sources=shared if n % 3 else ((SOURCES[n % 8], f"own {n}"),), headings=("H", f"S{n % 2}"))
           for n in range(12)]
    shutil.copytree(ws.root.parent, tmp_path / "twin", symlinks=True)
    twin = MemoryWorkspace.open(load_settings(tmp_path / "twin"))
    changes = [op(ids) for op in ops]
    run_request(ws, parse_request(changes, internal=True), message="test: in one request")
    for change in changes:
        run_request(twin, parse_request([change], internal=True), message="test: one by one")
    files = sorted(str(p.relative_to(ws.root)) for p in (ws.root / "topics").rglob("*.md"))
    assert files == sorted(str(p.relative_to(twin.root)) for p in (twin.root / "topics").rglob("*.md"))
    assert {f: topic_text(ws, f) for f in files} == {f: topic_text(twin, f) for f in files}
    if ops is SPLIT:
        assert "own 6" in topic_text(ws, "topics/t.md") and "own 9" not in topic_text(ws, "topics/t.md")
