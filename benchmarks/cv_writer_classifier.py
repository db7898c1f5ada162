"""Cross-validation of the writer's sentence classifier on the train split (a script, not a test).

The train split's files are shuffled (seed 5) and dealt into folds, so that each
author (each file was written by one) is in one fold only: what is scored is how
the classifier does on people it never read. For each fold the
classifier is trained on the other folds, exactly as
``scripts/train_writer_model.py`` trains the shipped weights, and the whole
extractor (rules, then the classifier where the rules read nothing) is scored on
the fold at several thresholds. "rules alone" is a threshold no probability
reaches. The held-out split is never read.

Run: ``.venv/bin/python benchmarks/cv_writer_classifier.py [--folds 5] [--thresholds 0.4,0.5,0.6]``
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from train_writer_model import CLASSES, FEATURES_VERSION, train  # noqa: E402

from openprogram_memory.writer import learned  # noqa: E402
from openprogram_memory.writer.quality import labelled_sentences, load_corpus, score  # noqa: E402

RULES_ALONE = 1.01


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--thresholds", default="0.4,0.5,0.6")
    args = parser.parse_args()
    thresholds = [RULES_ALONE] + [float(t) for t in args.thresholds.split(",")]
    files = sorted((ROOT / "tests" / "writer" / "corpus").glob("train*.jsonl"))
    random.Random(5).shuffle(files)
    folds = [[line for path in files[i::args.folds] for line in load_corpus(path)] for i in range(args.folds)]
    lines = [line for fold in folds for line in fold]
    totals = {t: [0, 0, 0, 0] for t in thresholds}  # found, expected, correct, predicted
    shipped = learned.THRESHOLD
    try:
        for k, fold in enumerate(folds):
            rest = [line for j, other in enumerate(folds) if j != k for line in other]
            model = learned.model_from({"features_version": FEATURES_VERSION, "classes": list(CLASSES),
                                        **train(labelled_sentences(rest))})
            learned._model = lambda m=model: m  # type: ignore[assignment]
            for t in thresholds:
                learned.THRESHOLD = t
                tally = score(fold).overall
                for i, value in enumerate((tally.found, tally.expected, tally.correct, tally.predicted)):
                    totals[t][i] += value
            print(f"fold {k + 1}/{args.folds} done", flush=True)
    finally:
        learned.THRESHOLD = shipped
    print(f"{len(lines)} train messages in {len(files)} files, {args.folds} folds")
    for t in thresholds:
        found, expected, correct, predicted = totals[t]
        name = "rules alone" if t == RULES_ALONE else f"threshold {t}" + (" (shipped)" if t == shipped else "")
        print(f"{name:<24} recall {found / expected:.3f}  precision {correct / predicted:.3f}  ({predicted} predicted)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
