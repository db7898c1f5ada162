"""Word-piece vectors behind the sentence classifier (openprogram_memory/writer/wordvectors.py)."""

from __future__ import annotations

import json
import math

import pytest

from openprogram_memory.writer import learned, wordvectors
from openprogram_memory.writer.statements import extract_statements


def _cosine(a: str, b: str) -> float:
    va, vb = wordvectors.vector(a), wordvectors.vector(b)
    return sum(x * y for x, y in zip(va, vb)) / math.sqrt(sum(x * x for x in va) * sum(y * y for y in vb))


@pytest.fixture
def table(tmp_path, monkeypatch):
    """Point the module at a table file of the test's own (and forget the cached one before and after)."""
    path = tmp_path / "pieces.bin"
    monkeypatch.setattr(wordvectors, "TABLE_PATH", path)
    wordvectors._table.cache_clear()
    yield path
    wordvectors._table.cache_clear()


def _write(path, rows: dict[str, list[int]], scales: list[float], **header) -> None:
    head = {"format": 1, "dims": len(scales), "count": len(rows), "scales": scales, "source": "test", **header}
    body = bytes(b & 0xFF for row in rows.values() for b in row)
    path.write_bytes(("\n".join([json.dumps(head), *rows]) + "\n").encode() + body)


def test_text_is_cut_as_the_uncased_vocabulary_expects():
    assert wordvectors.words("Naïve C++ fans—don't!") == ["naive", "c", "+", "+", "fans", "—", "don", "'", "t", "!"]


def test_a_word_is_cut_into_the_longest_known_pieces_and_an_unknown_part_spoils_it():
    known = dict.fromkeys(["bake", "baker", "##ies", "##y"], 0)
    assert wordvectors.pieces("bakeries", known) == ["baker", "##ies"]
    assert wordvectors.pieces("bakery", known) == ["baker", "##y"]
    assert wordvectors.pieces("bakerxq", known) == []


def test_a_sentence_vector_is_the_mean_of_its_pieces_rows_times_each_axis_scale(table):
    _write(table, {"sister": [10, -4], "##s": [2, 2], "run": [-6, 0]}, [0.5, 0.25])
    assert wordvectors.dims() == 2
    assert wordvectors.vector("Sisters run") == pytest.approx([(10 + 2 - 6) / 3 * 0.5, (-4 + 2 + 0) / 3 * 0.25])
    assert wordvectors.vector("zzz qqq") == [0.0, 0.0]  # (no known piece)


@pytest.mark.parametrize("damage", ["truncate", "format", "names"])
def test_a_damaged_table_turns_the_vectors_off_and_the_writer_goes_on(table, damage, caplog):
    _write(table, {"always": [1, 2], "run": [3, 4]}, [1.0, 1.0], **({"format": 9} if damage == "format" else {}))
    data = table.read_bytes()
    if damage == "truncate":
        table.write_bytes(data[:-1])
    elif damage == "names":
        table.write_bytes(data.replace(b"\nrun\n", b"\n"))
    assert wordvectors.dims() == 0 and wordvectors.vector("always run") == []
    assert "word vectors off" in caplog.text
    assert [s.kind for s in extract_statements("Always run ruff before committing.")] == ["rule"]


def test_the_shipped_table_puts_alike_words_near_each_other():
    """(Its names and rows are in step: a shifted row would pair a word with another's numbers.)"""
    assert wordvectors.dims() == 64
    assert _cosine("my sister", "my brother") > 0.5 > _cosine("my sister", "kubernetes cluster")
    assert _cosine("I hate long replies", "I loathe verbose answers") > _cosine("I hate long replies",
                                                                              "the build runs nightly")


def test_the_classifier_weighs_the_sentence_vector(monkeypatch):
    model = learned.Model(("none", "fact"), {"bias": [0.0, 0.0]}, [[0.0, 2.0], [0.0, -1.0]])
    monkeypatch.setattr(learned, "_model", lambda: model)
    monkeypatch.setattr(wordvectors, "vector", lambda text: [1.5, 1.0] if "kiln" in text else [0.0, 0.0])
    assert learned.probabilities("The kiln is fired weekly.")["fact"] == pytest.approx(1 / (1 + math.exp(-2.0)))
    assert learned.probabilities("The oven is fired weekly.")["fact"] == pytest.approx(0.5)


def test_weights_trained_on_vectors_of_another_size_are_refused():
    data = {"features_version": learned.FEATURES_VERSION, "classes": ["none", "fact"], "weights": {},
            "dense": [[0.0, 0.0]] * 3}
    with pytest.raises(ValueError, match="3 numbers"):
        learned.model_from(data)


def test_the_share_of_english_words_tells_another_language(table):
    _write(table, {"we": [1], "ship": [1], "on": [1], "friday": [1], "##s": [1]}, [1.0])
    assert wordvectors.known_share("We ship on Fridays!") == 0.75  # (a whole word only: "fridays" is two pieces)
    assert wordvectors.known_share("Kami kirim hari Jumat") == 0.0
    assert wordvectors.known_share("42 — !") is None  # (no word)
    _write(table, {}, [1.0], format=9)
    wordvectors._table.cache_clear()
    assert wordvectors.known_share("We ship on Fridays") is None  # (no table: nothing is told)


@pytest.mark.parametrize("said", [
    "make this formal: mohon maaf atas keterlambatan pembayaran tagihan bulan lalu",
    "in English please: wir schicken immer montags früh die offenen Rechnungen",
    "in English please: siempre enviamos las facturas pendientes cada lunes temprano",
])
def test_text_in_another_language_given_to_work_on_is_no_record(said):
    assert extract_statements(said) == []
    # (the same said in English is read: the guard is the language's, not the wording's)
    assert extract_statements("FYI: we always close the shop on Sundays") != []
    assert extract_statements("our stack: django 4.2, postgres 15, redis for caching") != []  # (names, not a language)
    assert extract_statements("style rules: short answers, bullet points, plain language, British spelling") != []  # (all
    # English words, though not one "the" or "is")
