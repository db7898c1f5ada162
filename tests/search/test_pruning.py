"""Top-k with MaxScore pruning returns exactly what full scoring ranks first.

The hook answers each prompt in a fresh process, so ``top`` stops scoring
common terms once they cannot change the ``k`` best (``best_scores``). A
user would notice a pruned search as a different, worse answer: these
tests compare it, hit for hit and score for score, with the ranking of
every matching record.
"""

from __future__ import annotations

import heapq
import random
from pathlib import Path

from openprogram_memory.search import cache
from openprogram_memory.search.cache import current_index
from openprogram_memory.search.index import SearchIndex
from openprogram_memory.search.tokenize import tokenize

from .helpers import Rec, write_topic

VOCAB = [f"w{i:03d}" for i in range(400)]
ZIPF = [1 / (rank + 1) for rank in range(len(VOCAB))]


def _zipf_corpus(rng: random.Random, pending: float = 0.15) -> dict[str, list[Rec]]:
    """Files of records whose words follow a Zipf law; some are long and repeat common words; some pending."""
    out: dict[str, list[Rec]] = {}
    for f in range(12):
        recs = []
        for r in range(25):
            words = rng.choices(VOCAB, weights=ZIPF, k=rng.randint(3, 30))
            if rng.random() < 0.1:  # dense records: one common word many times
                words += [rng.choice(VOCAB[:5])] * rng.randint(5, 40)
            trust = "pending" if rng.random() < pending else "trusted"
            recs.append(Rec(" ".join(words) + ".", f"openprogram/z{f}/u{r}", trust_state=trust))
        out[f"topics/z{f}.md"] = recs
    return out


def _queries(rng: random.Random) -> list[list[str]]:
    out = []
    for _ in range(150):
        common = rng.choices(VOCAB[:20], k=rng.randint(1, 6))
        rare = rng.choices(VOCAB[20:], k=rng.randint(0, 4))
        out.append(tokenize(" ".join(common + rare)))
    return out


def _full_top(index: SearchIndex, terms: list[str], k: int, include_pending: bool) -> list[tuple]:
    """The reference: every matching record scored, sorted, filtered by trust."""
    ranked = sorted(index.scores(terms).items(), key=index._order)
    out = []
    for key, score in ranked:
        match = index._match(key, score)
        if include_pending or match.trust_state == "trusted":
            out.append((match.topic, match.doc.memory_id, match.score))
            if len(out) == k:
                break
    return out


def _build(root: Path, pending: float = 0.15) -> SearchIndex:
    for rel, recs in _zipf_corpus(random.Random(11), pending).items():
        write_topic(root, rel, recs)
    index, _ = current_index(root)
    return index


def test_top_k_equals_full_scoring_and_pruning_happens(root: Path):
    index = _build(root)
    pruned = 0
    for n, terms in enumerate(_queries(random.Random(5))):
        k = 1 + n % 13
        include_pending = n % 3 == 0
        got = [(m.topic, m.doc.memory_id, m.score) for m in index.top(terms, k, include_pending=include_pending)]
        assert got == _full_top(index, terms, k, include_pending), terms
        _scores, complete = index.best_scores(terms, k + 8)
        pruned += not complete
    assert pruned > 30  # the comparison above covered the pruned path, not only the exhaustive one


def test_mostly_pending_corpus_still_gives_k_trusted_hits(root: Path):
    """The best-scored records are mostly pending: the search widens until it has k trusted ones."""
    index = _build(root, pending=0.85)
    for terms in _queries(random.Random(8))[:60]:
        got = [(m.topic, m.doc.memory_id, m.score) for m in index.top(terms, 12)]
        assert got == _full_top(index, terms, 12, False), terms


def test_pruned_scores_are_the_full_scores_of_the_best(root: Path):
    index = _build(root)
    for terms in _queries(random.Random(9))[:60]:
        full = index.scores(terms)
        best, _complete = index.best_scores(terms, 10)
        assert all(best[key] == full[key] for key in best)  # bit-identical sums
        top10 = heapq.nlargest(10, full.values())
        assert heapq.nlargest(10, best.values()) == top10


def test_index_loaded_from_disk_answers_the_same(root: Path):
    index = _build(root)
    queries = _queries(random.Random(3))[:40]
    before = [[(m.topic, m.doc.memory_id, m.score) for m in index.top(q, 7)] for q in queries]
    cache.forget()
    loaded, report = current_index(root)
    assert report.loaded_from_disk and loaded is not index
    assert [[(m.topic, m.doc.memory_id, m.score) for m in loaded.top(q, 7)] for q in queries] == before
