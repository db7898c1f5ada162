"""search(): finding, freshness by file signature, trust filter, languages."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from openprogram_memory.failures import FailureCode, MemoryFailure
from openprogram_memory.search import search
from openprogram_memory.search.cache import current_index
from openprogram_memory.search.index import scan_topics
from openprogram_memory.workspace.caches import TopicCache

from .helpers import Rec, set_trust, write_topic

DAVE = [
    Rec("Dave runs a bike shop in Leiden.", "openprogram/s1/u1", ("Dave", "Work"), label="bike shop"),
    Rec("Dave prefers exact answers with units.", "openprogram/s1/u2", ("Dave", "Style"), label="answers"),
]
TEA = [Rec("用户喜欢喝乌龙茶", "openprogram/s2/u1", ("偏好",), label="乌龙茶")]


def test_fact_is_found_with_its_place_and_sources(root: Path):
    ids = write_topic(root, "topics/people/dave.md", DAVE)
    write_topic(root, "topics/prefs.md", TEA)
    hits = search(root, "Which bike shop?")
    assert hits[0].memory_id == ids[0]
    assert hits[0].topic == "topics/people/dave.md"
    assert hits[0].headings == ("Dave", "Work")
    assert hits[0].content == "Dave runs a bike shop in Leiden."
    assert hits[0].sources == [{"source": "openprogram/s1/u1", "label": "bike shop"}]
    assert hits[0].trust_state == "trusted"
    assert hits[0].to_json() == {
        "memory_id": ids[0], "topic": "topics/people/dave.md", "content": "Dave runs a bike shop in Leiden.",
        "score": hits[0].score, "sources": [{"source": "openprogram/s1/u1", "label": "bike shop"}],
        "headings": ["Dave", "Work"], "trust_state": "trusted",
    }


def test_topic_path_and_headings_are_searchable(root: Path):
    write_topic(root, "topics/people/dave.md", DAVE)
    assert {h.content for h in search(root, "style")} == {"Dave prefers exact answers with units."}
    assert len(search(root, "people")) == 2


def test_top_k_and_order(root: Path):
    write_topic(root, "topics/people/dave.md", DAVE)
    hits = search(root, "dave answers", top_k=1)
    assert [h.content for h in hits] == ["Dave prefers exact answers with units."]
    scores = [h.score for h in search(root, "dave answers")]
    assert scores == sorted(scores, reverse=True)


def test_edit_is_seen_next_call_and_only_that_file_is_reindexed(root: Path):
    write_topic(root, "topics/people/dave.md", DAVE)
    write_topic(root, "topics/prefs.md", TEA)
    assert search(root, "Leiden")
    index, report = current_index(root)
    assert report.indexed == [] and index.files_indexed == 3

    edited = [Rec("Dave runs a bike shop in Utrecht now.", "openprogram/s1/u1", ("Dave", "Work"))] + DAVE[1:]
    write_topic(root, "topics/people/dave.md", edited)
    hits = search(root, "bike shop")
    assert hits[0].content == "Dave runs a bike shop in Utrecht now."
    assert search(root, "Leiden") == []
    index, report = current_index(root)
    assert index.files_indexed == 4  # dave.md once more; prefs.md, misc.md not again
    assert search(root, "乌龙茶")[0].content == "用户喜欢喝乌龙茶"
    assert index.files_indexed == 4


def test_in_place_edit_with_same_size_is_seen(root: Path):
    ids = write_topic(root, "topics/people/dave.md", DAVE)
    path = root / "topics/people/dave.md"
    text = path.read_text(encoding="utf-8")
    assert search(root, "Leiden")
    st = os.stat(path)
    path.write_text(text.replace("Leiden", "Zwolle"), encoding="utf-8")  # same inode, same size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert [h.memory_id for h in search(root, "Zwolle")] == [ids[0]]


def test_new_and_deleted_files(root: Path):
    write_topic(root, "topics/people/dave.md", DAVE)
    assert search(root, "乌龙茶") == []
    write_topic(root, "topics/prefs.md", TEA)
    assert len(search(root, "乌龙茶")) == 1
    (root / "topics/prefs.md").unlink()
    assert search(root, "乌龙茶") == []
    _, report = current_index(root)
    assert report.changed is False


def test_pending_source_excluded_by_default_included_and_marked_on_request(root: Path):
    write_topic(root, "topics/people/dave.md", [
        Rec("Dave keeps bees on the roof.", "openprogram/s1/u1", ("Dave",)),
        Rec("Dave keeps chickens too.", "openprogram/s9/u1", ("Dave",), trust_state="pending"),
    ])
    assert [h.content for h in search(root, "keeps chickens")] == ["Dave keeps bees on the roof."]
    everything = search(root, "keeps chickens", include_pending=True)
    assert [(h.content, h.trust_state) for h in everything] == [
        ("Dave keeps chickens too.", "pending"), ("Dave keeps bees on the roof.", "trusted"),
    ]


def test_record_with_any_pending_source_is_excluded(root: Path):
    write_topic(root, "topics/a.md", [Rec("Mixed fact about kites.", "openprogram/s1/u1")])
    write_topic(root, "topics/b.md", [Rec("Second source for kites.", "openprogram/s9/u2", trust_state="pending")])
    path = root / "topics/a.md"
    text = path.read_text(encoding="utf-8")
    b_def = (root / "topics/b.md").read_text(encoding="utf-8").splitlines()[-1]
    label_a = text.split("[^")[1].split("]")[0]
    link_b = b_def.split("Sources: ", 1)[1]
    path.write_text(text.replace(f"[^{label_a}]: Time: `2026-08-09`; Sources: ",
                                 f"[^{label_a}]: Time: `2026-08-09`; Sources: {link_b}, "), encoding="utf-8")
    (root / "topics/b.md").unlink()
    assert search(root, "kites") == []
    [hit] = search(root, "kites", include_pending=True)
    assert hit.trust_state == "pending" and len(hit.sources) == 2


def test_unresolvable_source_counts_as_pending(root: Path):
    write_topic(root, "topics/a.md", [Rec("Ghost fact about lanterns.", "openprogram/s1/u1")])
    path = root / "topics/a.md"
    path.write_text(path.read_text(encoding="utf-8").replace("#source-", "#source-0000"), encoding="utf-8")
    assert search(root, "lanterns") == []
    [hit] = search(root, "lanterns", include_pending=True)
    assert hit.trust_state == "pending" and hit.sources == []


def test_promoting_a_source_changes_the_filter_without_reindexing_topics(root: Path):
    write_topic(root, "topics/a.md", [Rec("Dave keeps chickens.", "openprogram/s9/u1", trust_state="pending")])
    assert search(root, "chickens") == []
    index, _ = current_index(root)
    before = index.files_indexed
    set_trust(root, "openprogram/s9/u1", "trusted")
    assert [h.content for h in search(root, "chickens")] == ["Dave keeps chickens."]
    index, report = current_index(root)
    assert index.files_indexed == before
    set_trust(root, "openprogram/s9/u1", "pending")
    index, report = current_index(root)
    assert report.archives_read == ["sources/openprogram/_v2/s9.md"] and report.indexed == []
    assert search(root, "chickens") == []


def test_top_k_counts_only_trusted_records(root: Path):
    recs = [Rec(f"Pending note {i} about owls.", f"openprogram/p/u{i}", trust_state="pending") for i in range(12)]
    recs += [Rec(f"Trusted note {i} about owls and more words here.", f"openprogram/t/u{i}") for i in range(3)]
    write_topic(root, "topics/owls.md", recs)
    hits = search(root, "owls", top_k=3)
    assert len(hits) == 3 and all(h.trust_state == "trusted" for h in hits)


def test_chinese_japanese_korean(root: Path):
    write_topic(root, "topics/prefs.md", TEA + [
        Rec("私はコーヒーが好きです", "openprogram/s2/u2"),
        Rec("나는 커피를 좋아해요", "openprogram/s2/u3"),
        Rec("Dave likes green tea.", "openprogram/s2/u4"),
    ])
    assert search(root, "乌龙茶")[0].content == "用户喜欢喝乌龙茶"
    assert search(root, "用户喜欢什么茶？")[0].content == "用户喜欢喝乌龙茶"
    assert search(root, "コーヒー")[0].content == "私はコーヒーが好きです"
    assert search(root, "커피")[0].content == "나는 커피를 좋아해요"
    assert search(root, "green tea")[0].content == "Dave likes green tea."


def test_invalid_arguments_and_missing_workspace(root: Path, tmp_path: Path):
    for query in ["", "   \n"]:
        with pytest.raises(MemoryFailure) as err:
            search(root, query)
        assert err.value.code is FailureCode.INVALID_ARGUMENT
    with pytest.raises(MemoryFailure) as err:
        search(root, "x", top_k=0)
    assert err.value.code is FailureCode.INVALID_ARGUMENT
    with pytest.raises(MemoryFailure) as err:
        search(tmp_path / "nowhere", "bikes")
    assert err.value.code is FailureCode.MEMORY_NOT_FOUND
    assert search(root, "the and of") == []
    empty = tmp_path / "empty"
    empty.mkdir()
    assert search(empty, "bikes") == []  # a root without topics/ finds nothing


def test_scan_matches_topic_cache_listing(root: Path):
    write_topic(root, "topics/a.md", DAVE)
    write_topic(root, "topics/deep/er/b.md", TEA)
    (root / "topics/.hidden").mkdir()
    (root / "topics/.hidden/c.md").write_text("x", encoding="utf-8")
    (root / "topics/.d.md").write_text("x", encoding="utf-8")
    (root / "topics/notes.txt").write_text("x", encoding="utf-8")
    (root / "topics/linked").symlink_to(root / "topics/deep")
    assert sorted(scan_topics(root)) == TopicCache(root).list_topic_paths()


def test_equal_scores_are_ordered_by_topic_then_position(root: Path):
    for name in ["x2", "x1"]:
        write_topic(root, f"topics/{name}.md", [
            Rec(f"Identical pelican note {i}.", f"openprogram/{name}/u{i}") for i in range(10)
        ])
    hits = search(root, "pelican", top_k=12)
    assert len({h.score for h in hits}) == 1
    assert [(h.topic, h.content) for h in hits] == (
        [("topics/x1.md", f"Identical pelican note {i}.") for i in range(10)]
        + [("topics/x2.md", f"Identical pelican note {i}.") for i in range(2)]
    )
    assert [h.content for h in search(root, "pelican", top_k=3)] == [f"Identical pelican note {i}." for i in range(3)]
