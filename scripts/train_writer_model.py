"""Train the writer's sentence classifier on the labelled corpus and write its weights.

The rules writer passes each sentence the rules read nothing in to
:mod:`openprogram_memory.writer.learned`; this script makes that module's
weights (``openprogram_memory/writer/model/sentences.json``) from the
train split of ``tests/writer/corpus/`` (``train.jsonl`` and any
``train-*.jsonl``). The held-out split is never read.

Softmax regression over :func:`~openprogram_memory.writer.learned.features`
and the sentence's word vector (:func:`~openprogram_memory.writer.learned.vector`,
each axis standardised over the corpus while training; the shipped weights
take the standardising in, so inference multiplies the raw vector),
full-batch Adam in float64 for a fixed number of steps from zero weights,
so the same corpus gives the same weights. A sentence stating records of
two kinds counts half for each.

Run: ``.venv/bin/python scripts/train_writer_model.py [--check]`` — ``--check``
trains and compares with the shipped file instead of writing it (exit 1
when they differ by more than rounding).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np

from openprogram_memory.writer.learned import FEATURES_VERSION, MODEL_PATH, NONE, features, vector
from openprogram_memory.writer.quality import labelled_sentences, split_lines
from openprogram_memory.writer.statements import KINDS

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "writer" / "corpus"
CLASSES = (NONE, *KINDS)
L2, STEPS, RATE = 1.0, 300, 0.05
DIGITS, FLOOR = 3, 0.02  # weights are rounded; a feature whose every weight is below FLOOR is left out
TOLERANCE = 0.01
MIN_COUNT = 2  # a feature seen in one sentence only names that sentence, it teaches nothing general


def train(examples: list[tuple[str, frozenset[str]]]) -> dict:
    """``{"weights": {feature: a weight per class}, "dense": [a weight per class, per word-vector axis]}``; the
    features as a sparse matrix (a sentence has a few dozen of some fifteen thousand): a full training takes half a
    minute where the dense matrix took three."""
    rows = [features(sentence) for sentence, _kinds in examples]
    seen = Counter(f for row in rows for f in set(row))
    vocab = {name: i for i, name in enumerate(sorted(f for f, n in seen.items() if n >= MIN_COUNT))}
    cells = [(i, vocab[name]) for i, row in enumerate(rows) for name in row if name in vocab]
    at_row, at_col = np.array([i for i, _j in cells]), np.array([j for _i, j in cells])  # x, a row per sentence
    vectors = np.array([vector(sentence) for sentence, _kinds in examples]).reshape(len(rows), -1)
    mean, spread = vectors.mean(axis=0), vectors.std(axis=0) + 1e-9
    standard = (vectors - mean) / spread
    y = np.zeros((len(rows), len(CLASSES)))
    for i, (_sentence, kinds) in enumerate(examples):
        for kind in kinds or (NONE,):
            y[i, CLASSES.index(kind)] = 1 / max(len(kinds), 1)
    w = np.zeros((len(vocab) + standard.shape[1], len(CLASSES)))  # the word features' rows, then the axes'
    m, v = np.zeros_like(w), np.zeros_like(w)
    for step in range(1, STEPS + 1):
        z = standard @ w[len(vocab):]
        np.add.at(z, at_row, w[at_col])  # + x @ w, over the features a sentence has
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        error = (p - y)[at_row]
        grad = np.concatenate([
            np.stack([np.bincount(at_col, weights=error[:, c], minlength=len(vocab))
                      for c in range(len(CLASSES))], axis=1),  # x.T @ (p - y)
            standard.T @ (p - y)])
        grad = (grad + L2 * w) / len(rows)
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad * grad
        w -= RATE * (m / (1 - 0.9 ** step)) / (np.sqrt(v / (1 - 0.999 ** step)) + 1e-8)
    axes = w[len(vocab):]
    w[vocab["bias"]] -= (mean / spread) @ axes  # (x - mean) / spread @ axes == x @ (axes / spread) - this
    weights = {name: [round(float(a), DIGITS) for a in w[i]] for name, i in vocab.items()
               if np.abs(w[i]).max() >= FLOOR}
    return {"weights": weights, "dense": [[round(float(a), DIGITS) for a in row] for row in axes / spread[:, None]]}


def _rows(model: dict) -> dict[str, list[float]]:
    """Every weight row of ``model``, its word-vector axes named ``axis:N``."""
    return {**model["weights"], **{f"axis:{i}": row for i, row in enumerate(model.get("dense", []))}}


def corpus_examples(corpus: Path) -> list[tuple[str, frozenset[str]]]:
    return labelled_sentences(split_lines(corpus, "train"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped weights, write nothing")
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    args = parser.parse_args(argv)
    examples = corpus_examples(args.corpus)
    trained = train(examples)
    weights = trained["weights"]
    model = {"features_version": FEATURES_VERSION, "classes": list(CLASSES), "examples": len(examples), **trained}
    if args.check:
        shipped = json.loads(MODEL_PATH.read_text(encoding="utf-8"))
        old, new = (_rows(model) for model in (shipped, model))
        zero = [0.0] * len(CLASSES)
        moved = {name: max(abs(a - b) for a, b in zip(old.get(name, zero), new.get(name, zero)))
                 for name in set(old) | set(new)}
        drift = sorted((name for name, by in moved.items() if by > TOLERANCE), key=lambda n: (-moved[n], n))
        same = shipped["classes"] == list(CLASSES) and shipped["features_version"] == FEATURES_VERSION
        if drift or not same:
            print(f"{MODEL_PATH.name} is stale: {len(drift)} features differ, most: {drift[:5]}; "
                  "run scripts/train_writer_model.py", file=sys.stderr)
            return 1
        print(f"{MODEL_PATH.name} matches the corpus ({len(examples)} sentences, {len(weights)} features)")
        return 0
    MODEL_PATH.parent.mkdir(parents=True, exist_ok=True)
    MODEL_PATH.write_text(json.dumps(model, sort_keys=True, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {MODEL_PATH} ({len(examples)} sentences, {len(weights)} features)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
