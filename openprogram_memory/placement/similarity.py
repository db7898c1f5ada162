"""Duplicate detection: exact (normalized text) and near (token-set Jaccard).

Two records are duplicates when their normalized text is equal, or when
both have at least :data:`MIN_TOKENS` word tokens, their token sets have a
Jaccard similarity of at least :data:`JACCARD` — and they agree on every
negation word and every number (so "likes X" / "does not like X" and
"budget is 500" / "budget is 600" never merge), and open on the same subject
("Walter is …" / "Trent is …" never merge). Candidate pairs share that
guard and come from prefix filtering over tokens ordered by rarity, so the
cost grows with the number of similar pairs, not with the square of the
record count.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import TYPE_CHECKING, Callable, Sequence

from ..workspace.caches import register_index

if TYPE_CHECKING:
    from ..workspace.caches import FileSummary, RecordInfo, TreeState

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


def numbers(token_set: frozenset[str]) -> frozenset[str]:
    """The tokens that carry a digit: a number, a version, the number of a name ("svc-31070" → ``31070``).
    Two statements that differ in one of them name different things, however alike the rest."""
    return frozenset(t for t in token_set if any(ch.isdigit() for ch in t))


def _guard(token_set: frozenset[str]) -> tuple[frozenset[str], frozenset[str]]:
    return (token_set & _NEGATIONS, numbers(token_set))


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
    return jaccard(sa, sb) >= threshold and not _other_subject(a, b, sa, sb)


def _other_subject(a: str, b: str, sa: frozenset[str], sb: frozenset[str]) -> bool:
    """Whether ``a`` and ``b`` say the same of two different subjects: each opens on a word the other does not
    have ("Walter is the user's colleague and lives in Madrid" / "Trent is …": two people, however alike the
    rest). A value swapped further on is the same statement changed ("use Flask for X" / "use FastAPI for X")."""
    first_a, first_b = tokens(a)[:1], tokens(b)[:1]
    return bool(first_a and first_b) and first_a[0] not in sb and first_b[0] not in sa


def duplicate_groups(texts: Sequence[str], threshold: float = JACCARD, focus: set[int] | None = None,
                     token_sets: Sequence[frozenset[str]] | None = None) -> list[list[int]]:
    """Indices of ``texts`` grouped into duplicate clusters (size ≥ 2), each sorted.

    Clusters are connected components of the duplicate relation. With
    ``focus``, only pairs with at least one member in it are compared (the
    records that changed since the last organize: pairs of unchanged records
    were compared then). ``token_sets`` may give each text's token set (computed once per parse).

    Each record's features (tokens, guard, opening word) are computed once; records of one shape (the same
    token set and opening word, or for a short one the same text) are compared once, as one; and a pair is
    compared only when the two agree on every negation and number (the guard) and share one of the rarest
    tokens of either (prefix filtering): the cost grows with the similar pairs, not with the square of the
    record count.
    """
    records = [_Record(text, token_sets[i] if token_sets is not None else None) for i, text in enumerate(texts)]
    shapes: dict[object, list[int]] = {}
    for i, record in enumerate(records):
        if record.shape is not None:
            shapes.setdefault(record.shape, []).append(i)
    classes = list(shapes.values())
    focused = [focus is None or any(i in focus for i in members) for members in classes]
    components = _Components(len(texts))
    # near duplicates: only records long enough to have a guard, compared within their guard's block
    blocks: dict[tuple[frozenset[str], frozenset[str]], list[int]] = {}
    for c, members in enumerate(classes):
        guard = records[members[0]].guard
        if guard is not None:
            blocks.setdefault(guard, []).append(c)
    for block in blocks.values():
        if len(block) < 2 or not any(focused[c] for c in block):
            continue
        counts = Counter(t for c in block for t in records[classes[c][0]].tokens)
        # ordered alike, two records with Jaccard >= threshold share a token of their prefixes (prefix filtering)
        prefixes = {c: candidate_tokens(records[classes[c][0]].tokens, counts.__getitem__, threshold) for c in block}
        holders: dict[str, list[int]] = {}
        for c, prefix in prefixes.items():
            for token in prefix:
                holders.setdefault(token, []).append(c)
        for c, prefix in prefixes.items():
            if not focused[c]:
                continue
            a = records[classes[c][0]]
            for d in {d for token in prefix for d in holders[token]}:
                # a pair of two focused shapes is compared from the first: each holds one of the other's prefix
                if d == c or (focused[d] and d < c):
                    continue
                b = records[classes[d][0]]
                if components.find(classes[c][0]) != components.find(classes[d][0]) and _same_fact(a, b, threshold):
                    components.union(classes[c][0], classes[d][0])
    # records of one shape are duplicates of each other (and of what one of them is a duplicate of); a shape
    # with no focused record and no duplicate elsewhere is left alone (its pairs were compared before)
    for c, members in enumerate(classes):
        if len(members) > 1 and (focused[c] or members[0] in components.joined):
            for i in members[1:]:
                components.union(members[0], i)
    return components.groups()


class _Components:
    """Union-find over ``0..n-1``: the connected components of the duplicate relation."""

    def __init__(self, n: int) -> None:
        self.parent = list(range(n))
        self.joined: set[int] = set()  # members of some component of two or more

    def find(self, i: int) -> int:
        parent = self.parent
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(self, i: int, j: int) -> None:
        ri, rj = self.find(i), self.find(j)
        if ri != rj:
            self.parent[max(ri, rj)] = min(ri, rj)
            self.joined.update((i, j))

    def groups(self) -> list[list[int]]:
        """Components of two or more, each sorted (in the order of their smallest member)."""
        out: dict[int, list[int]] = {}
        for i in sorted(self.joined):
            out.setdefault(self.find(i), []).append(i)
        return [sorted(g) for g in out.values() if len(g) > 1]


def candidate_tokens(token_set: frozenset[str], frequency: Callable[[str], int],
                     threshold: float = JACCARD) -> list[str]:
    """The tokens a record's duplicate candidates are looked up by: the rarest ones, as many as a record
    sharing ``threshold`` of them must hold one of (an exact duplicate has the same tokens, the rarest too)."""
    ordered = sorted(token_set, key=lambda t: (frequency(t), t))
    return ordered[:len(ordered) - math.ceil(threshold * len(ordered)) + 1]


def _duplicates(texts: Sequence[str], sets: Sequence[frozenset[str]], i: int, j: int, threshold: float) -> bool:
    """The duplicate relation of :func:`duplicate_groups` for one pair, from the texts (the reference the
    per-record features of :class:`_Record` must agree with)."""
    a, b = sets[i], sets[j]
    if a == b and normalized(texts[i]) == normalized(texts[j]):
        return True
    if len(a) < MIN_TOKENS or len(b) < MIN_TOKENS or _guard(a) != _guard(b):
        return False
    return jaccard(a, b) >= threshold and not _other_subject(texts[i], texts[j], a, b)


class _Record:
    """What the duplicate relation reads of one record, computed once per pass, not once per pair: its token
    set, opening word, guard (None when too short for a near duplicate) and shape (records of one shape are
    duplicates of each other and alike to every other record; None for a record with no words)."""

    __slots__ = ("tokens", "first", "guard", "shape")

    def __init__(self, text: str, token_set: frozenset[str] | None = None) -> None:
        words = tokens(text)
        self.tokens = frozenset(words) if token_set is None else token_set
        self.first = words[0] if words else None
        long = len(self.tokens) >= MIN_TOKENS
        self.guard = _guard(self.tokens) if long else None
        self.shape: object = (self.tokens, self.first) if long else " ".join(words) or None


def _same_fact(a: _Record, b: _Record, threshold: float) -> bool:
    """:func:`_duplicates` for two records of different shapes (so not exact duplicates) and one guard (both long
    enough, the same negations and numbers), from their features."""
    small, large = sorted((len(a.tokens), len(b.tokens)))
    if small / large < threshold:  # (an upper bound of the Jaccard similarity)
        return False
    shared = len(a.tokens & b.tokens)
    if shared / (small + large - shared) < threshold:  # (:func:`jaccard`)
        return False
    return not (a.first is not None and b.first is not None and a.first not in b.tokens
                and b.first not in a.tokens)  # (:func:`_other_subject`)


# -- candidates through an inverted index (issue: writes cost what changed) --------------------------------------

def record_token_sets(summary: "FileSummary") -> list[frozenset[str]]:
    """The token set of each record of a parsed topic file, computed once per parse (kept on the summary)."""
    cached = summary.__dict__.get("_token_sets")
    if cached is None:
        cached = summary.__dict__["_token_sets"] = [frozenset(tokens(r.content)) for r in summary.records]
    return cached


def _file_tokens(summary: "FileSummary") -> frozenset[str]:
    return frozenset().union(*record_token_sets(summary))


# token → files holding a record with it; trees keep it up to date. Eager: the token sets are computed when a file
# is parsed and kept with the parse in the tree cache, so a cold process (every `memory write` from a hook) builds
# the index from them instead of unpacking and tokenizing every record of the tree (~250 ms at 10,000 records)
register_index("tokens", _file_tokens, eager=True)


def near_duplicate_prefix(token_set: frozenset[str], tree: "TreeState", threshold: float = JACCARD) -> list[str]:
    """The fewest tokens of which every record with Jaccard ≥ ``threshold`` to ``token_set`` holds one: its
    ``n - ceil(threshold * n) + 1`` rarest (prefix filtering; any order would do, the rarest find fewest)."""
    files = tree.index("tokens")
    return candidate_tokens(token_set, lambda t: len(files.get(t, ())), threshold)


def records_with_any(tree: "TreeState", wanted: Sequence[str]) -> list["RecordInfo"]:
    """Records holding at least one of ``wanted`` tokens, in tree order (file path, then place in the file)."""
    files = tree.index("tokens")
    paths = sorted({path for token in wanted for path in files.get(token, ())})
    found = []
    wanted_set = set(wanted)
    for path in paths:
        summary = tree.files[path]
        for record, token_set in zip(summary.records, record_token_sets(summary)):
            if token_set & wanted_set:
                found.append(record)
    return found
