"""Scoring the rules extractor against a labelled corpus (tests/writer/corpus/).

One corpus line is one user message and the records it should yield
(see the corpus README for the schema). A predicted statement matches an
expected record when the kinds are equal and every one of the record's
``keys`` occurs in the statement's text (case-insensitive); each
prediction matches at most one record and vice versa. Recall is matched
records over expected records, precision matched predictions over all
predictions — a prediction on a message that expects nothing is a false
positive. The core line counts the predictions the writer would file in
``topics/core.md`` (:func:`~.rules_backend.reaches_core`), which every
session is given: its precision is what a wrong record there costs, and
its recall counts the expected rules, preferences and identity records
whose match the writer files there (one filed in notes.md reaches no
session unasked).

The scorer calls :func:`~openprogram_memory.writer.statements.extract_statements`,
the very function the ``rules`` writer uses, so the figures are the
writer's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from .rules_backend import CORE_SECTIONS, reaches_core
from .statements import KINDS, Statement, extract_by_sentence, extract_statements


@dataclass
class Tally:
    """Counts for one kind (or all kinds)."""

    expected: int = 0
    found: int = 0  # expected records matched
    predicted: int = 0
    correct: int = 0  # predictions that matched a record

    @property
    def recall(self) -> float:
        return self.found / self.expected if self.expected else 1.0

    @property
    def precision(self) -> float:
        return self.correct / self.predicted if self.predicted else 1.0


@dataclass
class Miss:
    """One message where the extractor and the labels disagree."""

    id: str
    text: str
    missed: list[dict[str, Any]] = field(default_factory=list)  # expected, not found
    extra: list[Statement] = field(default_factory=list)  # predicted, matching nothing


@dataclass
class Score:
    """Per-kind tallies, the overall tally and the disagreements."""

    kinds: dict[str, Tally]
    overall: Tally
    misses: list[Miss]
    messages: int
    core: Tally = field(default_factory=Tally)  # the predictions the writer files in topics/core.md


def split_lines(corpus: Path, split: str) -> list[dict[str, Any]]:
    """The lines of one split: ``<split>.jsonl`` and any ``<split>-*.jsonl`` (more authors' files), in name order."""
    paths = sorted(p for p in corpus.glob(f"{split}*.jsonl") if p.stem == split or p.stem.startswith(f"{split}-"))
    return [line for path in paths for line in load_corpus(path)]


def load_corpus(path: Path) -> list[dict[str, Any]]:
    """The corpus lines of ``path`` (blank lines skipped)."""
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def labelled_sentences(lines: Iterable[dict[str, Any]]) -> list[tuple[str, frozenset[str]]]:
    """Each sentence of each corpus message with the kinds of the records it states (empty: not durable).

    A record belongs to the sentence holding the most of its keys (the first such); a record none of whose
    keys is in any sentence (agent text, a key spelled differently) teaches nothing and is left out.
    """
    out: list[tuple[str, frozenset[str]]] = []
    for line in lines:
        sentences = [sentence for sentence, _found in extract_by_sentence(line["text"])]
        kinds: list[set[str]] = [set() for _ in sentences]
        for record in line.get("expect") or []:
            keys = [key.casefold() for key in record["keys"]]
            held = [sum(key in sentence.casefold() for key in keys) for sentence in sentences]
            if held and max(held) > 0:
                kinds[held.index(max(held))].add(record["kind"])
        out.extend((sentence, frozenset(k)) for sentence, k in zip(sentences, kinds))
    return out


def _matches(statement: Statement, record: dict[str, Any]) -> bool:
    text = statement.text.casefold()
    return statement.kind == record["kind"] and all(key.casefold() in text for key in record["keys"])


def score(lines: Iterable[dict[str, Any]],
          extract: Callable[[str], list[Statement]] = extract_statements) -> Score:
    """Precision and recall of ``extract`` over corpus ``lines``."""
    kinds = {kind: Tally() for kind in KINDS}
    overall, core = Tally(), Tally()
    misses: list[Miss] = []
    count = 0
    for line in lines:
        count += 1
        predicted = extract(line["text"])
        expected = list(line.get("expect") or [])
        used: set[int] = set()
        missed = []
        for record in expected:
            tally = kinds.setdefault(record["kind"], Tally())
            tally.expected += 1
            overall.expected += 1
            hit = next((i for i, s in enumerate(predicted) if i not in used and _matches(s, record)), None)
            if record["kind"] in CORE_SECTIONS:  # core material: found only when its match is filed in the core
                core.expected += 1
                core.found += hit is not None and reaches_core(predicted[hit])
            if hit is None:
                missed.append(record)
                continue
            used.add(hit)
            tally.found += 1
            overall.found += 1
        extra = []
        for i, statement in enumerate(predicted):
            tally = kinds.setdefault(statement.kind, Tally())
            tally.predicted += 1
            overall.predicted += 1
            to_core = reaches_core(statement)
            core.predicted += to_core
            if i in used:
                tally.correct += 1
                overall.correct += 1
                core.correct += to_core
            else:
                extra.append(statement)
        if missed or extra:
            misses.append(Miss(line["id"], line["text"], missed, extra))
    return Score(kinds, overall, misses, count, core)


def table(result: Score) -> str:
    """The per-kind precision/recall table, as plain text."""
    rows = [f"{'kind':<11} {'expected':>8} {'found':>6} {'recall':>7} {'predicted':>9} {'correct':>7} {'precision':>9}"]
    for name, tally in [*result.kinds.items(), ("overall", result.overall)]:
        rows.append(f"{name:<11} {tally.expected:>8} {tally.found:>6} {tally.recall:>7.3f} "
                    f"{tally.predicted:>9} {tally.correct:>7} {tally.precision:>9.3f}")
    core = result.core
    rows.append(f"{'(core)':<11} {core.expected:>8} {core.found:>6} {core.recall:>7.3f} "
                f"{core.predicted:>9} {core.correct:>7} {core.precision:>9.3f}"
                "   <- rules, preferences and identity filed in topics/core.md")
    return "\n".join(rows)
