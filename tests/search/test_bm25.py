"""The inverted index scores exactly as rank_bm25.BM25Okapi (get_scores)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from rank_bm25 import BM25Okapi

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


def _assert_same_scores(index: SearchIndex) -> None:
    """Compare with BM25Okapi over the index's own documents, query by query."""
    keys, corpus = [], []
    for fid, rel in enumerate(index.paths):
        if rel is None:
            continue
        for position, doc in enumerate(index.files[fid].docs()):
            keys.append(fid << 24 | position)
            corpus.append(tokenize(document_text(rel, doc.headings, doc.content)))
    reference = BM25Okapi(corpus)
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
    # the corpus exercises the idf floor (terms in more than half the records)
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
    assert fresh.avg_idf == pytest.approx(index.avg_idf, abs=1e-12)
    assert (fresh.n_docs, fresh.total_len, fresh.df_counts) == (index.n_docs, index.total_len, index.df_counts)


def test_idf_floor_applies_to_terms_in_more_than_half_the_records(root: Path):
    write_topic(root, "topics/t.md", [Rec(f"Common word {w}.", f"openprogram/e/u{i}") for i, w in enumerate(WORDS)])
    index, _ = current_index(root)
    assert index.idf("common") == pytest.approx(0.25 * index.avg_idf)
    assert index.idf("absent") == 0.0
