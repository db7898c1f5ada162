"""The tree cache of a cold process: parses and records stay packed until read, and a one-record transaction
reads only the files it touches — with the same results as a process that parsed everything."""

from __future__ import annotations

import json
import pickle

import pytest

from engine.helpers import linked_pair, make_workspace, record
from openprogram_memory.failures import FailureCode, MemoryFailure
from openprogram_memory.placement.similarity import near_duplicate_prefix, records_with_any, tokens
from openprogram_memory.sources.archive import ParsedArchive
from openprogram_memory.workspace import caches
from openprogram_memory.workspace.caches import FileSummary


def _seed(ws, topics: int = 12) -> str:
    target = linked_pair(ws)  # a link from topics/work.md into topics/people.md
    ws.update(changes=[{"path": f"topics/t{n:02d}.md", "content": record(f"Fact number {n} about tea.",
                                                                           "openprogram/s1/u3")}
                       for n in range(topics)])
    return target


def _cold(ws) -> caches.TopicCache:
    """Save this process's parse to disk and forget it: ``ws`` now reads as a fresh process would."""
    caches.topic_cache(ws.root)._save_disk()
    caches._CACHES.clear()
    ws._cache = None
    assert ws.cache is caches.topic_cache(ws.root)
    return ws.cache


def _unpacked(cache: caches.TopicCache) -> set[str]:
    return {rel for rel, (_sig, summary) in cache._files.items() if "records" in summary.__dict__}


def test_a_one_record_transaction_reads_only_the_files_it_touches(tmp_path):
    # (recent_events.jsonl reads the files of the newest records: two of them here, as 50 of 10,000 would be)
    ws = make_workspace(tmp_path / "state", **{"memory.recent.limit": 2})
    target = _seed(ws)
    cache = _cold(ws)
    ws.update(changes=[{"path": "topics/t03b.md", "content": record("Fact number 3b about green tea.",
                                                                     "openprogram/s1/u3")}])
    touched = _unpacked(cache)
    assert len(touched) <= 3, touched  # not the 15 files of the tree
    # and it saw the whole tree: the links, the IDs, the views are a full parse's
    relations = json.loads((ws.root / "relations.json").read_text())
    assert list(relations["backlinks"]) == [target]
    caches._CACHES.clear()
    fresh = caches.TopicCache(ws.root)
    fresh._disk_loaded = True  # parse every file from its bytes
    assert {rel: s.ids for rel, s in fresh.snapshot().files.items()} == \
        {rel: s.ids for rel, s in cache.snapshot().files.items()}


def test_a_cold_process_finds_duplicate_candidates_reading_only_the_files_that_hold_them(tmp_path):
    # what the rules writer does for every statement: the token index over the whole tree, then the records of
    # the files holding the statement's rarest tokens — without reading every file's records first
    ws = make_workspace(tmp_path / "state")
    _seed(ws)
    cache = _cold(ws)
    tree = ws.tree()
    said = frozenset(tokens("Fact number 7 about tea."))
    found = records_with_any(tree, near_duplicate_prefix(said, tree, 1.0))
    assert [r.content for r in found] == ["Fact number 7 about tea."]
    assert _unpacked(cache) == {"topics/t07.md"}  # not the 15 files of the tree


def test_a_link_made_dangling_is_refused_from_the_stored_links(tmp_path):
    ws = make_workspace(tmp_path / "state")
    target = _seed(ws)
    cache = _cold(ws)
    before = ws.revision()
    with pytest.raises(MemoryFailure) as refused:
        ws.update(memory_changes=[{"op": "delete_record", "memory_id": target, "reason": "test"}])
    assert refused.value.code is FailureCode.INVALID_TOPIC_FORMAT
    assert f"topics/work.md:1: link to topics/people.md#^{target} does not resolve" in refused.value.message
    assert "topics/work.md" not in _unpacked(cache)  # found without reading the linking file's records
    assert ws.revision() == before


def test_a_packed_summary_round_trips_and_packs_again_without_reading(tmp_path):
    ws = make_workspace(tmp_path / "state")
    _seed(ws, topics=1)
    summary = ws.tree().files["topics/work.md"]
    assert summary.link_targets and summary.ids
    again = pickle.loads(pickle.dumps(summary))
    assert set(again.__dict__) >= {"ids", "archives", "unresolved_archives", "link_targets"}
    assert "records" not in again.__dict__ and "doc" not in again.__dict__
    third = pickle.loads(pickle.dumps(again))  # never unpacked: the packed bytes are carried over
    assert "records" not in again.__dict__
    for copy in (again, third):
        assert copy.records == summary.records and copy.ids == summary.ids
        assert copy.link_targets == summary.link_targets and copy.archives == summary.archives
        assert copy.doc == summary.doc and copy.by_id.keys() == summary.by_id.keys()
    assert isinstance(again, FileSummary)


def test_a_packed_archive_parse_reads_its_frames_on_first_use_and_extends(tmp_path):
    ws = make_workspace(tmp_path / "state")
    rel = next(p for p in ws.root.rglob("sources/**/*.md")).relative_to(ws.root).as_posix()
    data = (ws.root / rel).read_bytes()
    parsed = ParsedArchive.of(data)
    packed = pickle.loads(pickle.dumps(parsed))
    assert pickle.loads(pickle.dumps(packed)).by_anchor.keys() == parsed.by_anchor.keys()  # packs again unread
    assert packed.by_anchor == parsed.by_anchor and packed.archive.frames == parsed.archive.frames
    grown = pickle.loads(pickle.dumps(parsed)).extend(data)
    assert grown.extends and grown.by_anchor == parsed.by_anchor
