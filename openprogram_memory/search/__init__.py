"""Search over topic records: BM25 index with an on-disk cache, trust filter, recall fence.

Names resolve lazily, so importing :mod:`.fence` alone (the session-start
hook) does not load the index code.
"""

from __future__ import annotations

import importlib
from typing import Any

from .fence import fence as fence, is_fenced as is_fenced  # re-exported; cheap (one regex); the name ``fence`` is the function, not the module

_EXPORTS = {"SearchHit": ".query", "recall_block": ".query", "search": ".query"}

__all__ = sorted([*_EXPORTS, "fence", "is_fenced"])


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module, __name__), name)
