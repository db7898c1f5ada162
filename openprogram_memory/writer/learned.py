"""A sentence classifier learned from the labelled corpus: which kind of durable statement a sentence is, if any.

The rules (:mod:`~openprogram_memory.writer.statements`) read what they
were written for exactly; a sentence they read nothing in is passed to
this classifier, which was trained on the corpus instead of written by
hand (``tests/writer/corpus/``; ``scripts/train_writer_model.py`` makes
``writer/model/sentences.json`` from it). It is softmax regression over
the sentence's words, word pairs, first words, a few shape marks
(capitals, digits, a question mark, length) and the extractor's word
classes (roles, family, colleagues, days, recurrence, clock times, events,
system nouns), with the negative filters' verdict as one more feature — and
the sentence's word vector (:mod:`~openprogram_memory.writer.wordvectors`,
the mean of its word pieces' rows), so that a word no corpus message used
still counts for the words it is like.

Inference is plain Python (a sum of weights per kind), deterministic and
offline; the weights are read once, on the first call.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
import sys
from functools import lru_cache
from pathlib import Path
from typing import Iterable, NamedTuple

from ..config import user_cache_dir
from ..fsutil import marshalled
from . import lexicon as lx
from . import wordvectors
from .negatives import is_negative
from .segment import strip_lead

MODEL_PATH = Path(__file__).resolve().parent / "model" / "sentences.json"
FEATURES_VERSION = 2
NONE = "none"
THRESHOLD = 0.55  # a kind this likely or more is kept
ALONE = 0.9  # … and this likely, in a clause the rules read nothing in beside one they read something in
SURE, UNLIKELY = 0.8, 0.1  # a kind this likely, over one the rules read that is this unlikely, replaces it
DOUBT = 0.2  # a core kind less likely than this in its sentence (and a kind not for the core likelier) is doubted

_TOKEN_RE = re.compile(r"[a-z0-9]+(?:['’][a-z]+)?|[?!`/@:$%]")
_WORD_CLASSES = (
    ("role", lx.ROLE_RE),
    ("family", re.compile(rf"\b(?:{lx.FAMILY})\b", re.I)),
    ("colleague", re.compile(rf"\b(?:{lx.COLLEAGUES})\b", re.I)),
    ("day", re.compile(rf"\b(?:{lx.DAYS})s?\b", re.I)),
    ("month", re.compile(rf"\b(?:{lx.MONTHS})\b", re.I)),
    ("recur", lx.RECURRENCE_RE),
    ("clock", lx.CLOCK_RE),
    ("event", lx.EVENT_RE),
    ("thing", lx.THING_RE),
)


def features(sentence: str, lead: tuple[str, str | None] | None = None) -> list[str]:
    """The classifier's features of one sentence (lead-in stripped; its hint is a feature; ``lead``: what
    :func:`strip_lead` gives for it, when the caller has it already)."""
    body, hint = lead or strip_lead(sentence)
    tokens = _TOKEN_RE.findall(body.casefold())
    out = ["bias"]
    out += ["w:" + t for t in tokens]
    out += ["b:" + a + "_" + b for a, b in zip(tokens, tokens[1:])]
    if tokens:
        out += ["f:" + tokens[0], "f2:" + " ".join(tokens[:2])]
    words = body.split()
    if any(w[:1].isupper() for w in words[1:]):
        out.append("cap")
    if re.search(r"\d", body):
        out.append("digit")
    if body.rstrip().endswith("?"):
        out.append("q")
    out.append(f"len:{min(len(words) // 4, 6)}")
    if hint:
        out.append("h:" + hint)
    out += ["lx:" + name for name, pattern in _WORD_CLASSES if pattern.search(body)]
    if is_negative(body.rstrip(" .!")):
        out.append("neg")
    return out


def vector(sentence: str) -> list[float]:
    """The word vector of ``sentence`` as :func:`features` reads it (lead-in stripped)."""
    return wordvectors.vector(strip_lead(sentence)[0])


class Model(NamedTuple):
    classes: tuple[str, ...]
    weights: dict[str, list[float]]  # feature -> a weight per class
    dense: list[list[float]]  # word-vector axis -> a weight per class ([] for none)


def model_from(data: dict) -> Model:
    """The weights in ``data`` (the JSON the trainer writes); ValueError when they are not for this code."""
    if data.get("features_version") != FEATURES_VERSION:
        raise ValueError(f"trained on features version {data.get('features_version')}, this code makes "
                         f"version {FEATURES_VERSION}")
    classes, weights, dense = tuple(data["classes"]), data["weights"], data.get("dense", [])
    if NONE not in classes or not isinstance(weights, dict):
        raise ValueError("no 'none' class or no weights")
    if dense and wordvectors.dims() and len(dense) != wordvectors.dims():
        raise ValueError(f"trained on word vectors of {len(dense)} numbers, the table has {wordvectors.dims()}")
    return Model(classes, weights, dense)


@lru_cache(maxsize=1)
def _model() -> Model:
    """The shipped weights; without usable ones (missing, unreadable, another features version) the writer goes on
    with its rules alone and says so once in the log — memory never takes down the caller. (Without the word-vector
    table, every sentence reads as one with no known word: the word features still count.)"""
    try:
        return model_from(_weights())
    except (OSError, ValueError, KeyError, TypeError) as error:
        logging.getLogger(__name__).warning("writer classifier off, rules only: %s: %s (run "
                                            "scripts/train_writer_model.py)", MODEL_PATH, error)
        return Model((NONE,), {}, [])


def _weights() -> dict:
    """The JSON of :data:`MODEL_PATH`, read from a marshal copy in the user's cache when there is one for these
    very bytes: decoding the JSON costs a fresh process (every ``memory write`` from a hook) ~100 ms, the copy
    ~30 ms. The copy is named by a hash of the file, so a retrained model is never read from the old one's."""
    data = MODEL_PATH.read_bytes()
    digest = hashlib.blake2b(data, digest_size=12).hexdigest()
    cache = user_cache_dir() / f"writer-model-{digest}-py{sys.version_info[0]}{sys.version_info[1]}.marshal"
    return marshalled(cache, lambda: json.loads(data.decode("utf-8")), lambda value: isinstance(value, dict))


def probabilities(sentence: str) -> dict[str, float]:
    """How likely ``sentence`` is each kind of durable statement, or ``"none"``."""
    classes, weights, dense = _model()
    lead = strip_lead(sentence)
    scores = [0.0] * len(classes)
    for feature in features(sentence, lead):
        row = weights.get(feature)
        if row is not None:
            scores = [s + w for s, w in zip(scores, row)]
    if dense:
        for x, row in zip(wordvectors.vector(lead[0]), dense):
            scores = [s + x * w for s, w in zip(scores, row)]
    top = max(scores)
    exps = [math.exp(s - top) for s in scores]
    total = sum(exps)
    return {name: e / total for name, e in zip(classes, exps)}


def likely_kind(sentence: str) -> str | None:
    """The kind ``sentence`` states, when the classifier gives it at least :data:`THRESHOLD`; else None."""
    return _kind_at(sentence, THRESHOLD)


def certain_kind(sentence: str) -> str | None:
    """The kind ``sentence`` states, when the classifier gives it at least :data:`ALONE`; else None."""
    return _kind_at(sentence, ALONE)


def _kind_at(sentence: str, least: float) -> str | None:
    probs = probabilities(sentence)
    kind = max((k for k in probs if k != NONE), key=probs.__getitem__, default=None)
    return kind if kind is not None and probs[kind] >= least else None


def sure_kind(probs: dict[str, float], read: str) -> str | None:
    """The kind a sentence states when the classifier is sure of it (:data:`SURE`, its :func:`probabilities`
    ``probs``) and gives the kind the rules ``read`` in it almost no chance (:data:`UNLIKELY`); else None (the
    rules' kind stands)."""
    kind = max((k for k in probs if k != NONE), key=probs.__getitem__, default=None)
    if kind is None or probs[kind] < SURE or probs.get(read, 0.0) >= UNLIKELY:
        return None
    return kind


def doubts(probs: dict[str, float], read: str, core: Iterable[str]) -> bool:
    """Whether the classifier, weighing a sentence (its :func:`probabilities` ``probs``), gives the kind the rules
    ``read`` in it less than :data:`DOUBT` and a kind that is not for the ``core`` more than all the core's kinds
    together; without weights it doubts nothing.

    ("none" is no rival: the classifier tells kinds apart far better than it tells a short standing instruction
    from a one-off command — "Always run the tests before pushing." is mostly "none" to it. And the core's kinds
    count together: where it hesitates between identity and preference, the statement is the person's.)"""
    core = frozenset(core)
    rival = max((p for kind, p in probs.items() if kind != NONE and kind not in core), default=0.0)
    return probs.get(read, 0.0) < DOUBT and rival > sum(probs.get(kind, 0.0) for kind in core)
