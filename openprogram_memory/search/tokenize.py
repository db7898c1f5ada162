"""Tokens for BM25: one function for documents and queries, any script.

* Latin, Cyrillic, Greek, digits… — NFKC, case-folded, split on anything that
  is not a letter or digit, very common English stopwords dropped, and a
  light plural ("S") stemmer so ``answers`` finds ``answer``.
* Chinese, Japanese and Korean have no spaces between words, so a run of
  ideographs / kana / hangul yields every character bigram of the run and
  every single character. Bigrams carry the ranking (``乌龙茶`` → ``乌龙``,
  ``龙茶``); unigrams of ideographs and hangul keep one-character words
  (``猫``) findable. Single kana are particles, not words, so they become
  unigrams only when they stand alone. Common characters get a low idf by
  themselves, so no CJK stopword list is needed.

Mixed text ("用户喜欢 Python 和乌龙茶") is split into script runs first.
Queries and documents go through the same function, so they always agree.
"""

from __future__ import annotations

import re
import unicodedata

# Bump when the same text would give other terms (invalidates stored indexes).
TOKENIZER_VERSION = 1

# Han (+ext A, compat, ext B…), kana (incl. half-width via NFKC), hangul.
_CJK = (
    "\u3005\u3006\u3007"  # 々 〆 〇
    "\u3040-\u30ff"  # hiragana, katakana (incl. ー)
    "\u31f0-\u31ff"  # katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK ext A
    "\u4e00-\u9fff"  # CJK unified
    "\uf900-\ufaff"  # compatibility ideographs
    "\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff"  # hangul
    "\U00020000-\U0003134f"  # CJK ext B…G
)
_RUN_PATTERN = f"([{_CJK}]+)|([^\\W_{_CJK}]+)"
_KANA_PATTERN = "[\u3040-\u30ff\u31f0-\u31ff]"
# ASCII text holds no CJK, and its letters and digits are exactly [a-z0-9]
# once lower-cased: a small pattern that compiles in microseconds, where the
# Unicode one above costs milliseconds — paid by every hook process.
_ASCII_WORD_RE = re.compile("[a-z0-9]+")
_compiled: dict[str, re.Pattern[str]] = {}


def _pattern(source: str) -> re.Pattern[str]:
    """The Unicode patterns, compiled on first use (only text that is not ASCII needs them)."""
    compiled = _compiled.get(source)
    if compiled is None:
        compiled = _compiled[source] = re.compile(source)
    return compiled

STOPWORDS = frozenset(
    """
    a about above after again all also am an and any are as at be been before being below between both but by
    can could did do does doing down during each few for from further had has have having he her here hers
    herself him himself his how i if in into is it its itself just me more most my myself no nor not of off
    on once only or other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    s t d ll m re ve
    """.split()
)


def stem(word: str) -> str:
    """Harman's "S" stemmer: strip plural endings only (cheap, predictable)."""
    if len(word) <= 3 or not word.endswith("s") or not word.isalpha():
        return word
    if word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
        return word[:-1]
    if word.endswith(("ss", "us", "is")):
        return word
    return word[:-1]


def _cjk_tokens(run: str, out: list[str]) -> None:
    if len(run) == 1:
        out.append(run)
        return
    # Single kana are particles and syllables, not words: bigrams only.
    out.extend(_pattern(_KANA_PATTERN).sub("", run))
    out.extend(run[i : i + 2] for i in range(len(run) - 1))


def tokenize(text: str) -> list[str]:
    """Index terms of ``text``, in order, repeats kept (BM25 counts them)."""
    if not text:
        return []
    out: list[str] = []
    if text.isascii():
        for word in _ASCII_WORD_RE.findall(text.lower()):
            if word not in STOPWORDS:
                out.append(stem(word))
        return out
    text = unicodedata.normalize("NFKC", text).lower()
    for cjk, word in _pattern(_RUN_PATTERN).findall(text):
        if cjk:
            _cjk_tokens(cjk, out)
        elif word not in STOPWORDS:
            out.append(stem(word))
    return out
