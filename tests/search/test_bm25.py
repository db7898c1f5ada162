"""The inverted index scores exactly as rank_bm25.BM25Okapi with Lucene's idf (get_scores)."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest
from rank_bm25 import BM25Okapi

from openprogram_memory.search.query import search
from openprogram_memory.search.cache import current_index
from openprogram_memory.search.index import SearchIndex
from openprogram_memory.search.segment import document_text
from openprogram_memory.search.tokenize import tokenize

from .helpers import Rec, write_topic

WORDS = "bike shop tea oolong garden bees roof python rust billing metric units kite owl river train".split()
QUERIES = ["bike shop", "tea tea oolong", "metric units python", "owl", "nothing matches", "乌龙茶", "shop garden river"]


def _corpus(rng: random.Random, files: int, per_file: int, tag: str) -> dict[str, list[Rec]]:
    out = {}
    for f in range(files):
        recs = []
        for r in range(per_file):
            words = rng.choices(WORDS, k=rng.randint(2, 9))
            if rng.random() < 0.2:
                words.append("用户喜欢喝乌龙茶")
            recs.append(Rec(" ".join(words).capitalize() + ".", f"openprogram/{tag}{f}/u{r}",
                            (f"Section {r % 2}",)))
        out[f"topics/t{f}.md"] = recs
    return out


class LuceneBM25(BM25Okapi):
    """rank_bm25's Okapi scoring with Lucene's non-negative idf, the reference for the index."""

    def _calc_idf(self, nd):
        for word, freq in nd.items():
            self.idf[word] = math.log(1 + (self.corpus_size - freq + 0.5) / (freq + 0.5))


def _assert_same_scores(index: SearchIndex) -> None:
    """Compare with LuceneBM25 over the index's own documents, query by query."""
    keys, corpus = [], []
    for fid, rel in enumerate(index.paths):
        if rel is None:
            continue
        for position, doc in enumerate(index.files[fid].docs()):
            keys.append(fid << 24 | position)
            corpus.append(tokenize(document_text(rel, doc.headings, doc.content)))
    reference = LuceneBM25(corpus)
    for query in QUERIES:
        terms = tokenize(query)
        ours = index.scores(terms)
        expected = reference.get_scores(terms)
        for key, score in zip(keys, expected):
            if key in ours:
                assert ours[key] == pytest.approx(score, abs=1e-9, rel=1e-9)
            else:  # records without any query term: rank_bm25 gives exactly 0
                assert score == 0.0
        assert len(ours) == sum(1 for doc in corpus if set(doc) & set(terms))


def test_scores_equal_rank_bm25(root: Path):
    rng = random.Random(7)
    for rel, recs in _corpus(rng, 4, 8, "a").items():
        write_topic(root, rel, recs)
    index, _ = current_index(root)
    # the corpus has terms in more than half the records (negative under the Okapi idf)
    assert any((len(blob) >> 3) > index.n_docs / 2 for blob in index.postings.values())
    _assert_same_scores(index)


def test_scores_stay_equal_after_incremental_changes(root: Path):
    rng = random.Random(11)
    corpus = _corpus(rng, 5, 6, "b")
    for rel, recs in corpus.items():
        write_topic(root, rel, recs)
    current_index(root)
    write_topic(root, "topics/t1.md", _corpus(rng, 1, 9, "c")["topics/t0.md"])  # rewritten, longer
    (root / "topics/t3.md").unlink()
    write_topic(root, "topics/new.md", _corpus(rng, 1, 3, "d")["topics/t0.md"])
    index, report = current_index(root)
    assert sorted(report.indexed) == ["topics/new.md", "topics/t1.md"] and report.removed == ["topics/t3.md"]
    _assert_same_scores(index)
    # and the same as an index built from scratch
    fresh = SearchIndex(root)
    fresh.refresh()
    assert (fresh.n_docs, fresh.total_len) == (index.n_docs, index.total_len)
    assert {t: fresh.idf(t) for t in fresh.postings} == pytest.approx({t: index.idf(t) for t in index.postings})


def test_a_term_in_most_records_still_scores_above_zero(tmp_path: Path):
    # a small workspace: 17 records, 16 say "common" — the Okapi idf log((17-16+.5)/(16+.5)) is -2.4
    root = tmp_path / "memory"
    recs = [Rec(f"Common word {w}.", f"openprogram/e/u{i}") for i, w in enumerate(WORDS)]
    recs.append(Rec("Rare entry.", "openprogram/e/rare"))
    write_topic(root, "topics/t.md", recs)
    index, _ = current_index(root)
    assert (index.n_docs, len(index.postings["common"]) >> 3) == (17, 16)
    assert index.idf("common") == pytest.approx(math.log(1 + 1.5 / 16.5))
    assert index.idf("absent") == 0.0
    scores = index.scores(["common"])
    assert len(scores) == len(WORDS) and min(scores.values()) > 0
    # and through the public search, as a user sees it
    hits = search(root, "common word")
    assert hits and all(hit.score > 0 for hit in hits)
