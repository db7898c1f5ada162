"""What a word is like: word-piece vectors for the sentence classifier, so a word no corpus message used still
counts for what it resembles ("sister-in-law" like "sister", "bakery" like "shop").

The table (``model/pieces.bin``) holds 64 numbers for each of about 27,600 lower-case word pieces. It was
distilled once, by ``scripts/distill_word_vectors.py``, from the input word embeddings of the sentence model
all-MiniLM-L6-v2 (Apache-2.0; its word pieces and their order are BERT's uncased vocabulary): the 384 numbers
of each piece projected on the table's 64 main axes (PCA) and stored as signed bytes with one scale per axis.
Nothing here runs that model: a sentence's vector is the mean of its pieces' rows, in plain Python.

The file: one line of JSON (``format``, ``dims``, ``count``, ``scales``, ``source``), then ``count`` lines each
naming one piece, then ``count`` × ``dims`` signed bytes, row by row.
"""

from __future__ import annotations

import json
import logging
import unicodedata
from array import array
from functools import lru_cache
from pathlib import Path

TABLE_PATH = Path(__file__).resolve().parent / "model" / "pieces.bin"
FORMAT = 1
_MAX_WORD = 100  # a longer run of letters is no word (a hash, a pasted blob): it has no pieces
_SYMBOLS = frozenset("$+<=>^`|~")  # ASCII symbols the uncased vocabulary splits off like punctuation


def words(text: str) -> list[str]:
    """``text`` cut as BERT's uncased tokenizer cuts it before word pieces: lower case, accents off, split at
    spaces and at every punctuation mark or symbol (each its own word)."""
    text = unicodedata.normalize("NFD", text.casefold())
    out: list[str] = []
    current: list[str] = []
    for char in text:
        category = unicodedata.category(char)
        if category == "Mn":
            continue
        if char.isspace() or category[0] in "PC" or char in _SYMBOLS:
            if current:
                out.append("".join(current))
                current = []
            if not char.isspace() and category[0] != "C":
                out.append(char)
        else:
            current.append(char)
    if current:
        out.append("".join(current))
    return out


def pieces(word: str, known: dict[str, int]) -> list[str]:
    """``word`` as the longest known pieces from its start ("bakeries" → "bakeries" or "baker", "##ies"); none
    when some part of it is no known piece."""
    if len(word) > _MAX_WORD:
        return []
    out, start = [], 0
    while start < len(word):
        for end in range(len(word), start, -1):
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in known:
                out.append(piece)
                start = end
                break
        else:
            return []
    return out


@lru_cache(maxsize=1)
def _table() -> tuple[dict[str, int], array, list[float], int]:
    """``(piece → row, the signed bytes, the scale of each axis, dims)``; without a usable table, no pieces (the
    classifier then goes on with its word features alone, and says so once in the log)."""
    try:
        data = TABLE_PATH.read_bytes()
        head, rest = data.split(b"\n", 1)
        header = json.loads(head)
        if header.get("format") != FORMAT:
            raise ValueError(f"format {header.get('format')}, this code reads format {FORMAT}")
        count, dims, scales = int(header["count"]), int(header["dims"]), [float(s) for s in header["scales"]]
        parts = rest.split(b"\n", count)
        names, blob = parts[:count], parts[count] if len(parts) > count else b""
        if len(scales) != dims or len(names) != count or len(blob) != count * dims:
            raise ValueError(f"{count} pieces of {dims} numbers announced, {len(names)} names and {len(blob)} "
                             "bytes found")
        return {name.decode("utf-8"): row for row, name in enumerate(names)}, array("b", blob), scales, dims
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError) as error:
        logging.getLogger(__name__).warning("word vectors off: %s: %s (run scripts/distill_word_vectors.py)",
                                            TABLE_PATH, error)
        return {}, array("b"), [], 0


def known_share(text: str) -> float | None:
    """The share of ``text``'s words (runs of letters) that are whole words of the table's English vocabulary: low
    for a sentence in another language ("kami mohon maaf atas …": 0.0); None without words or without a table."""
    known = _table()[0]
    said = [word for word in words(text) if word.isalpha()]
    if not said or not known:
        return None
    return sum(word in known for word in said) / len(said)


def dims() -> int:
    """How many numbers a sentence vector has (0 without a usable table)."""
    return _table()[3]


def vector(text: str) -> list[float]:
    """The mean of the rows of ``text``'s word pieces (all zeros when it has none, or without a table)."""
    known, rows, scales, size = _table()
    total = [0] * size
    found = 0
    for word in words(text):
        for piece in pieces(word, known):
            start = known[piece] * size
            row = rows[start:start + size]
            total = [t + r for t, r in zip(total, row)]
            found += 1
    if not found:
        return [0.0] * size
    return [t * s / found for t, s in zip(total, scales)]
