"""Exact and near duplicates."""

from __future__ import annotations

import itertools
import random

from openprogram_memory.placement.similarity import (
    duplicate_groups,
    is_near_duplicate,
    jaccard,
    normalized,
    tokens,
)


def test_normalized_folds_case_punctuation_and_links():
    assert normalized("Always  answer, in METRIC units!") == normalized("always answer in metric units")
    assert tokens("See [Orbit](projects/orbit.md#^abc) now") == ["see", "orbit", "now"]


def test_near_duplicates():
    assert is_near_duplicate("Dana prefers short, direct answers.", "Dana prefers short and direct answers.")
    assert not is_near_duplicate("I prefer tea.", "I prefer coffee.")
    assert not is_near_duplicate("Dana likes spicy food a lot.", "Dana does not like spicy food a lot.")
    assert not is_near_duplicate("The team budget is 500 euros per month.", "The team budget is 600 euros per month.")
    assert is_near_duplicate("Ok.", "ok")  # short: exact only
    assert not is_near_duplicate("Go home.", "Go home now.")
    # the same said of two people (each opens on a word the other lacks) / a value changed further on
    assert not is_near_duplicate("Walter is the user's colleague and lives in Madrid.",
                                 "Trent is the user's colleague and lives in Madrid.")
    assert is_near_duplicate("We decided to use Flask for the billing service.",
                             "We decided to use FastAPI for the billing service.")


def test_groups_are_connected_components():
    texts = [
        "Always answer in metric units.",          # 0
        "The weather is nice in Lisbon today.",    # 1
        "always answer in metric units",           # 2 exact of 0
        "Dana prefers short, direct answers.",     # 3
        "Dana prefers short and direct answers.",  # 4 near of 3
        "Something else entirely.",                # 5
        "Walter is the user's colleague and lives in Madrid.",  # 6
        "Trent is the user's colleague and lives in Madrid.",   # 7 another person: no duplicate of 6
    ]
    assert sorted(duplicate_groups(texts)) == [[0, 2], [3, 4]]


def test_prefix_filter_finds_what_brute_force_finds():
    rng = random.Random(7)
    vocabulary = ["".join(letters) for letters in itertools.product("kmpst", "aeiou")][:40]
    texts = [" ".join(rng.sample(vocabulary, rng.randint(4, 9))) for _ in range(150)]
    texts += [t + " zzz" for t in texts[:20] if len(t.split()) >= 5]  # near-duplicates
    pairs = {(i, j) for i, j in itertools.combinations(range(len(texts)), 2)
             if jaccard(frozenset(tokens(texts[i])), frozenset(tokens(texts[j]))) >= 0.8}
    grouped = duplicate_groups(texts)
    together = {(i, j) for g in grouped for i, j in itertools.combinations(g, 2)}
    assert len(pairs) >= 10 and pairs <= together
