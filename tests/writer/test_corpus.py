"""The rules extractor against the labelled corpus: the corpus is the test (issue 8).

``train.jsonl`` is what the extractor was developed on; ``heldout.jsonl``
(and ``heldout-*.jsonl``) were written by separate authors and never read while writing the
extractor (only its aggregate figures were ever looked at), so its
thresholds measure how the extractor generalizes. Failures name only
figures, never held-out messages.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from openprogram_memory.writer.quality import load_corpus, score, split_lines, table
from openprogram_memory.writer.statements import Statement

CORPUS = Path(__file__).parent / "corpus"
# (recall, precision, recall and precision of what reaches the core) floors per split: what the extractor achieves,
# less a small margin. (Without the classifier's doubt keeping statements out of the core: core precision 0.891
# train, 0.841 held-out.)
THRESHOLDS = {
    "train": (0.74, 0.82, 0.67, 0.90),  # (0.751 / 0.843, core 0.693 / 0.914, over 15,659 records: each new
    # author's file scores below the rest when first added)
    "heldout": (0.61, 0.77, 0.57, 0.85),  # (heldout.jsonl alone: 0.705 / 0.848; the whole split: 0.627 / 0.783,
    # core 0.592 / 0.868)
}


@pytest.mark.parametrize("split", sorted(THRESHOLDS))
def test_the_extractor_meets_its_floors_on_each_split(split):
    result = score(split_lines(CORPUS, split))
    recall, precision, core_recall, core = THRESHOLDS[split]
    assert result.overall.recall >= recall, f"{split} recall below {recall}\n{table(result)}"
    assert result.overall.precision >= precision, f"{split} precision below {precision}\n{table(result)}"
    assert result.core.precision >= core, f"{split}: precision of what reaches the core below {core}\n{table(result)}"
    assert result.core.recall >= core_recall, f"{split}: core records filed in the core below {core_recall}\n" \
        f"{table(result)}"


def test_the_corpus_is_labelled_by_the_schema():
    kinds = {"identity", "people", "preference", "rule", "decision", "fact", "schedule", "personal"}
    for split in THRESHOLDS:
        lines = split_lines(CORPUS, split)
        assert len({line["id"] for line in lines}) == len(lines), f"{split}: duplicate ids"
        for line in lines:
            for record in line["expect"]:
                assert record["kind"] in kinds and record["keys"], (split, line["id"])


def test_the_scorer_rewards_the_labels_and_punishes_silence_and_noise():
    lines = load_corpus(CORPUS / "heldout.jsonl")
    labels = {line["text"]: line["expect"] for line in lines}

    def oracle(text):
        return [Statement(" ".join(r["keys"]), r["kind"], r["keys"][0]) for r in labels[text]]

    perfect = score(lines, oracle).overall
    assert (perfect.recall, perfect.precision) == (1.0, 1.0)
    assert score(lines, lambda text: []).overall.recall == 0.0
    noisy = score(lines, lambda text: oracle(text) + [Statement("noise", "fact", "noise")]).overall
    assert noisy.recall == 1.0 and noisy.precision < 0.6


def test_the_core_line_counts_core_records_only_when_they_are_filed_in_the_core():
    lines = [{"id": "t-1", "text": "Always answer in metric. Our CI runs on Buildkite.",
              "expect": [{"kind": "rule", "keys": ["metric"], "text": "Always answer in metric."},
                         {"kind": "fact", "keys": ["Buildkite"], "text": "The CI runs on Buildkite."}]}]
    fact = Statement("The CI runs on Buildkite.", "fact", "Buildkite")
    filed = score(lines, lambda text: [Statement("Always answer in metric.", "rule", "metric"), fact]).core
    assert (filed.expected, filed.found, filed.predicted, filed.correct) == (1, 1, 1, 1)
    doubted = Statement("Always answer in metric.", "rule", "metric", doubted=True)  # (found, but kept out of the core)
    kept_out = score(lines, lambda text: [doubted, fact])
    assert kept_out.overall.recall == 1.0 and (kept_out.core.found, kept_out.core.recall) == (0, 0.0)


def test_what_the_extractor_says_of_each_train_message_is_reviewed(snapshot):
    """Every statement made from the train split, message by message (a golden file): a change of the
    extractor shows as a diff of the records it would write — garbled ones too ("The user uses now."),
    which the aggregate figures above barely move. A statement the classifier doubts (kept out of the core) shows
    its kind with a "?". Review the diff, then ``pytest --snapshot-update``. (The held-out split is never printed.)"""
    from openprogram_memory.writer.statements import extract_statements

    snapshot.snapshot_dir = Path(__file__).parent / "snapshots"
    lines = []
    for line in split_lines(CORPUS, "train"):
        said = " ‖ ".join(f"{'?' * s.doubted}{s.kind}: {s.text}" for s in extract_statements(line["text"]))
        lines.append(f"{line['id']}\t{said}")
    snapshot.assert_match("\n".join(lines) + "\n", "train_statements.txt")
