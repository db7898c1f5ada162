"""Identity derivations: block IDs, evidence IDs, source anchors."""

from __future__ import annotations

import hashlib
import re
from typing import Container, Iterable

BLOCK_ID_RE = re.compile(r"^[0-9a-f]{8}$")
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


def evidence_id(time: str, source_ids: Iterable[str]) -> str:
    """``e-`` + 10 hex derived from the time and the (sorted) source targets."""
    joined = "|".join(sorted(set(source_ids)))
    return "e-" + sha256_hex(f"evidence|{time}|{joined}")[:10]


def source_anchor(source_id: str) -> str:
    """``source-`` + the first 16 hex of sha256(source id)."""
    return SOURCE_ANCHOR_PREFIX + sha256_hex(source_id)[:16]
