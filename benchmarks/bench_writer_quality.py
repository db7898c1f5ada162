"""Writer quality benchmark (a script, not a test): the rules extractor against the labelled corpus.

Runs :func:`openprogram_memory.writer.statements.extract_statements` — the
function the ``rules`` writer uses — on every message of
``tests/writer/corpus/{train,heldout}.jsonl`` (and ``train-*.jsonl`` / ``heldout-*.jsonl``, more
authors' files) and prints precision and recall per kind and overall, and
the precision of the statements the writer would file in ``topics/core.md``
(given to every session, so a wrong record costs most there).

The held-out split measures generalization: it was written by separate
authors and is never read while writing the extractor, so this script
prints only its aggregate figures — ``--misses`` is refused for it.

Targets (held-out): recall >= 0.90, precision >= 0.97.

Run: ``.venv/bin/python benchmarks/bench_writer_quality.py [--split train|heldout|all] [--misses]``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from openprogram_memory.writer.quality import score, split_lines, table

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "writer" / "corpus"
SPLITS = {"train": ["train"], "heldout": ["heldout"], "all": ["train", "heldout"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=sorted(SPLITS), default="all")
    parser.add_argument("--misses", action="store_true", help="print each disagreement (train split only)")
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="directory holding <split>.jsonl (and <split>-*.jsonl)")
    args = parser.parse_args(argv)
    if args.misses and args.split != "train":
        print("--misses is for the train split only: the held-out split is never read message by message",
              file=sys.stderr)
        return 2
    for split in SPLITS[args.split]:
        lines = split_lines(args.corpus, split)
        if not lines:
            print(f"{split}: no {split}.jsonl or {split}-*.jsonl in {args.corpus}", file=sys.stderr)
            continue
        result = score(lines)
        print(f"== {split}: {result.messages} messages ==")
        print(table(result))
        if args.misses and split == "train":
            for miss in result.misses:
                print(f"\n--- {miss.id}: {miss.text!r}")
                for record in miss.missed:
                    print(f"  MISSED {record['kind']:<10} keys={record['keys']}  ({record.get('text')})")
                for statement in miss.extra:
                    print(f"  EXTRA  {statement.kind:<10} {statement.text}")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
