"""numpy scoring (a watched, long-running process): the same matches as the pure-Python scoring, bit for bit."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from openprogram_memory.search import search
from openprogram_memory.search.cache import current_index
from openprogram_memory.search.cache import forget as forget_in_process
from openprogram_memory.search.index import SearchIndex
from openprogram_memory.search.tokenize import tokenize
from openprogram_memory.workspace import watch

from .helpers import HeldWatch, Rec, write_topic

WORDS = "bike shop tea garden river owl kite metric units billing deploy friday oolong chickens".split()


def _build(root: Path, files: int, per_file: int, seed: int) -> None:
    rng = random.Random(seed)
    for f in range(files):
        recs = []
        for r in range(per_file):
            if r % 4 == 0:  # the same text in many files and places: ties at every cut
                content = "Dave likes tea and bike rides."
            else:
                content = " ".join(rng.choices(WORDS, k=rng.randint(2, 9))).capitalize() + "."
            trust = "pending" if rng.random() < 0.2 else "trusted"
            recs.append(Rec(content, f"openprogram/s{f}/u{r}", trust_state=trust))
        write_topic(root, f"topics/t{f:02d}.md", recs)


def _both(index: SearchIndex, query: str, k: int, pending: bool) -> tuple[list, list]:
    terms = tokenize(query)
    pure = [(m.topic, m.doc.memory_id, m.score) for m in index.top(terms, k, include_pending=pending)]
    dense = [(m.topic, m.doc.memory_id, m.score) for m in index.top(terms, k, include_pending=pending, dense=True)]
    return pure, dense


def _queries(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=rng.randint(1, 6))) for _ in range(n)]


def test_dense_scoring_gives_the_same_matches_and_scores(root: Path):
    _build(root, files=12, per_file=10, seed=3)
    index, _ = current_index(root)
    for query in _queries(5, 60) + ["tea bike", "dave"]:
        for k in (1, 3, 5, 20):
            for pending in (False, True):
                pure, dense = _both(index, query, k, pending)
                assert dense == pure, (query, k, pending)
    assert _both(index, "tea", 3, False)[1]  # ties at the cut resolve the same way (topic, then position)


def test_dense_scoring_follows_changes_and_freed_slots(root: Path):
    _build(root, files=8, per_file=6, seed=4)
    index, _ = current_index(root)
    assert _both(index, "tea owl", 5, False)[0]
    (root / "topics" / "t02.md").unlink()  # a freed slot between live files
    write_topic(root, "topics/t05.md", [Rec("Owls everywhere: owl owl kite.", "openprogram/x/u1")])
    write_topic(root, "topics/zz.md", [Rec("Dave likes tea and bike rides.", "openprogram/x/u2")])
    index, report = current_index(root)
    assert report.indexed and report.removed
    for query in _queries(6, 40) + ["owl kite", "tea bike"]:
        for k in (1, 5, 20):
            pure, dense = _both(index, query, k, True)
            assert dense == pure, query
    assert _both(index, "owl", 1, True)[1][0][0] == "topics/t05.md"


def test_search_in_a_watched_process_scores_with_numpy(root: Path, monkeypatch: pytest.MonkeyPatch):
    _build(root, files=4, per_file=5, seed=7)
    unwatched = search(root, "tea bike", 5)
    calls: list[bool] = []
    real = SearchIndex.top

    def spy(self, terms, k, *, include_pending=False, dense=False):
        calls.append(dense)
        return real(self, terms, k, include_pending=include_pending, dense=dense)

    monkeypatch.setattr(SearchIndex, "top", spy)

    monkeypatch.setitem(watch._WATCHES, root.resolve(), HeldWatch())
    assert search(root, "tea bike", 5) == unwatched
    assert search(root, "tea bike", 5) == unwatched
    assert calls == [True, True]


def test_dense_scoring_finds_the_records_of_rare_terms_without_scanning_every_record(root: Path):
    # A few postings (rare terms) are merged; many (a common term) are found by a scan: the same matches.
    rng = random.Random(8)
    for f in range(10):
        recs = [Rec(f"Note{f * 30 + r} " + " ".join(rng.choices(WORDS, k=4)) + ".", f"openprogram/s{f}/u{r}")
                for r in range(30)]
        write_topic(root, f"topics/r{f}.md", recs)
    write_topic(root, "topics/z.md", [Rec("Kiwi and note7, both rare.", "openprogram/z/u1")])
    index, _ = current_index(root)
    queries = ["kiwi note7", "note7", "note7 note250", "note250 note7 note7 note31", "note7 unseenword", "note7 tea",
               "note7 note8 note9 note10 note11 note12 note13 note14 note15 note16 note17 note18 note19",
               "unseenword"]
    for query in queries:
        for k in (1, 2, 5):
            pure, dense = _both(index, query, k, True)
            assert dense == pure, (query, k)
    assert [m[1] for m in _both(index, "note250 note7", 5, True)[1]] == [
        m[1] for m in _both(index, "note7 note250", 5, True)[0]]
    assert len(_both(index, "note7 note250 note31", 5, True)[1]) == 4
    assert [m[0] for m in _both(index, "kiwi note7", 5, True)[1]] == ["topics/z.md", "topics/r0.md"]


def test_a_watched_process_decodes_the_postings_once_not_query_by_query(root: Path):
    # A cold process decodes only the postings shards its query terms live in; a long-lived one (numpy
    # scoring) decodes them all with its first query, so no later query waits for a decode.
    _build(root, files=6, per_file=8, seed=9)
    current_index(root)
    forget_in_process(root)
    index, _ = current_index(root)
    index.top(tokenize("tea"), 3)
    assert sum(shard is not None for shard in index.postings._shards) == 1
    index.top(tokenize("owl"), 3, dense=True)
    assert all(shard is not None for shard in index.postings._shards)
