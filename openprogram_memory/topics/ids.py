"""Identity derivations: block IDs, evidence IDs, source anchors."""

from __future__ import annotations

import hashlib
import re
from typing import Container, Iterable

EVIDENCE_ID_RE = re.compile(r"^e-[0-9a-f]{10}$")
SOURCE_ANCHOR_PREFIX = "source-"


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def new_block_id(file: str, body: str, taken: Container[str]) -> str:
    """8 hex of sha256(``block|<file>|<body>|n``), the first n not taken."""
    n = 0
    while True:
        candidate = sha256_hex(f"block|{file}|{body}|{n}")[:8]
        if candidate not in taken:
            return candidate
        n += 1


def evidence_id(time: str, source_ids: Iterable[str], labels: Iterable[tuple[str, str]] | None = None) -> str:
    """``e-`` + 10 hex derived from the time and the (sorted) source targets.

    ``labels`` (``(source, keyword)`` pairs) qualify the id when a file
    already defines the plain id with other keywords: one footnote per set of
    keywords, so two records citing one source each keep their own label.
    Without ``labels`` the derivation is the original one, so every id
    written before keeps resolving the same way.
    """
    joined = "|".join(sorted(set(source_ids)))
    if labels is None:
        return "e-" + sha256_hex(f"evidence|{time}|{joined}")[:10]
    keywords = "|".join(sorted(f"{source}={label}" for source, label in labels))
    return "e-" + sha256_hex(f"evidence|{time}|{joined}|labels|{keywords}")[:10]


def source_anchor(source_id: str) -> str:
    """``source-`` + the first 16 hex of sha256(source id)."""
    return SOURCE_ANCHOR_PREFIX + sha256_hex(source_id)[:16]


def keyword_evidence_id(time: str | None, links: Iterable[tuple[str, str]]) -> str:
    """The keyword-qualified evidence id of ``(keyword, archive path#anchor)`` links.

    Every write path qualifies the same way (from memory-root-relative
    targets), so one time + sources + keywords gets one id in any file.
    """
    links = list(links)
    return evidence_id(time or "undated", [target for _, target in links],
                       [(target, keyword) for keyword, target in links])
