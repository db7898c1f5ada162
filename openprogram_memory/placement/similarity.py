"""Duplicate detection: exact (normalized text) and near (token-set Jaccard).

Two records are duplicates when their normalized text is equal, or when
both have at least :data:`MIN_TOKENS` word tokens, their token sets have a
Jaccard similarity of at least :data:`JACCARD` — and they agree on every
negation word and every number (so "likes X" / "does not like X" and
"budget is 500" / "budget is 600" never merge). Candidate pairs come from
prefix filtering over tokens ordered by rarity, so the cost grows with the
number of similar pairs, not with the square of the record count.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Sequence

JACCARD = 0.8
MIN_TOKENS = 4
_LINK_RE = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_TOKEN_RE = re.compile(r"[^\W_]+(?:'[^\W_]+)?", re.UNICODE)
_NEGATIONS = frozenset({"no", "not", "never", "none", "nobody", "nothing", "neither", "nor", "without", "cannot",
                        "can't", "don't", "doesn't", "didn't", "won't", "isn't", "aren't", "wasn't", "shouldn't",
                        "mustn't", "dont", "doesnt", "cant", "wont"})


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens of a record's prose (link targets dropped)."""
    return _TOKEN_RE.findall(_LINK_RE.sub(r"\1", text).casefold().replace("’", "'"))


def normalized(text: str) -> str:
    """Case, punctuation and spacing folded away: the exact-duplicate key."""
    return " ".join(tokens(text))


def _guard(token_set: frozenset[str]) -> tuple[frozenset[str], frozenset[str]]:
    return (token_set & _NEGATIONS, frozenset(t for t in token_set if any(ch.isdigit() for ch in t)))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """``|a ∩ b| / |a ∪ b|`` (0 for two empty sets)."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def is_near_duplicate(a: str, b: str, threshold: float = JACCARD) -> bool:
    """Whether two statements are the same fact by the rules above."""
    if normalized(a) == normalized(b) and normalized(a):
        return True
    sa, sb = frozenset(tokens(a)), frozenset(tokens(b))
    if min(len(sa), len(sb)) < MIN_TOKENS or _guard(sa) != _guard(sb):
        return False
    return jaccard(sa, sb) >= threshold


def duplicate_groups(texts: Sequence[str], threshold: float = JACCARD) -> list[list[int]]:
    """Indices of ``texts`` grouped into duplicate clusters (size ≥ 2), each sorted.

    Clusters are connected components of the duplicate relation.
    """
    parent = list(range(len(texts)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(i: int, j: int) -> None:
        ri, rj = find(i), find(j)
        if ri != rj:
            parent[max(ri, rj)] = min(ri, rj)

    exact: dict[str, int] = {}
    for i, text in enumerate(texts):
        key = normalized(text)
        if not key:
            continue
        if key in exact:
            union(exact[key], i)
        else:
            exact[key] = i

    sets = [frozenset(tokens(t)) for t in texts]
    guards = [_guard(s) for s in sets]
    frequency = Counter(t for s in sets for t in s)
    index: dict[str, list[int]] = {}
    for i, token_set in enumerate(sets):
        if len(token_set) < MIN_TOKENS:
            continue
        ordered = sorted(token_set, key=lambda t: (frequency[t], t))
        prefix = len(ordered) - math.ceil(threshold * len(ordered)) + 1
        candidates: set[int] = set()
        for token in ordered[:prefix]:
            candidates.update(index.setdefault(token, []))
            index[token].append(i)
        for j in candidates:
            if guards[i] == guards[j] and jaccard(token_set, sets[j]) >= threshold:
                union(j, i)

    groups: dict[int, list[int]] = {}
    for i in range(len(texts)):
        groups.setdefault(find(i), []).append(i)
    return [sorted(g) for g in groups.values() if len(g) > 1]
