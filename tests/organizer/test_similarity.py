"""Exact and near duplicates."""

from __future__ import annotations

import itertools
import random

from openprogram_memory.placement import similarity
from openprogram_memory.placement.similarity import (
    _Components,
    _duplicates,
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


def _pairwise_groups(texts: list[str], focus: set[int] | None) -> list[list[int]]:
    """The slow path: every pair with a focused member, by the duplicate relation read from the texts (a record
    with no words is nobody's duplicate)."""
    sets = [frozenset(tokens(t)) for t in texts]
    components = _Components(len(texts))
    for i, j in itertools.combinations(range(len(texts)), 2):
        if (focus is None or i in focus or j in focus) and sets[i] and _duplicates(texts, sets, i, j, 0.8):
            components.union(i, j)
    return components.groups()


def test_the_groups_of_look_alike_records_are_what_comparing_every_pair_finds():
    # a tester's big topic: 12-word records from the 26 words of the NATO alphabet, most alike, some one word
    # away from an earlier one, some with a number or a negation, one opening on another name, short ones, copies
    rng = random.Random(11)
    nato = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa "
            "quebec romeo sierra tango uniform victor whiskey xray yankee zulu").split()
    for _ in range(12):
        texts: list[str] = []
        for _ in range(120):
            roll = rng.random()
            if texts and roll < 0.35:
                words = rng.choice(texts).split()
                if words:
                    words[rng.randrange(len(words))] = rng.choice(nato + ["not", "3", "4", "Walter", "Trent"])
                texts.append(" ".join(words))
            elif texts and roll < 0.45:  # the same words, other case, punctuation or order
                words = rng.choice(texts).split()
                texts.append(" ".join(rng.sample(words, len(words))) if rng.random() < 0.5
                             else ", ".join(words).upper() + ".")
            elif roll < 0.5:
                texts.append(" ".join(rng.choice(nato) for _ in range(rng.randint(0, 3))))  # short (or empty)
            else:
                texts.append(" ".join(rng.choice(nato[:rng.choice((8, 26))]) for _ in range(12)))
        focus = {i for i in range(len(texts)) if rng.random() < 0.3}
        for given in (None, focus):
            expected = _pairwise_groups(texts, given)
            assert duplicate_groups(texts, focus=given) == expected
            sets = [frozenset(tokens(t)) for t in texts]
            assert duplicate_groups(texts, focus=given, token_sets=sets) == expected
        assert any(len(g) > 2 for g in expected)


def test_records_naming_different_numbers_are_never_compared(monkeypatch):
    # the tester's topic ("Fact 17: alpha …", 12 words of 26): every pair shares most words, none names the same
    # number, so none can be a duplicate; comparing them all took 42 s at 2,000 records, the write lock held
    rng = random.Random(3)
    nato = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa "
            "quebec romeo sierra tango uniform victor whiskey xray yankee zulu").split()
    texts = [f"Fact {i}: " + " ".join(rng.choice(nato) for _ in range(12)) + "." for i in range(2_000)]
    compared = []
    real = similarity._same_fact
    monkeypatch.setattr(similarity, "_same_fact", lambda a, b, threshold: compared.append(1) or real(a, b, threshold))
    assert duplicate_groups(texts + texts[:1]) == [[0, 2_000]]  # (a copy is still found)
    assert duplicate_groups(texts, focus=set(range(1_000))) == []
    assert len(compared) == 0
