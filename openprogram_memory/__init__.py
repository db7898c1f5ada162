"""openprogram-memory: long-term memory for AI agents, kept as plain files.

The public library API. Names resolve lazily, so ``import openprogram_memory``
is cheap and does no I/O::

    from openprogram_memory import get_provider, MemoryWorkspace, load_settings
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "FailureCode": "openprogram_memory.failures",
    "MemoryFailure": "openprogram_memory.failures",
    "WriteFailure": "openprogram_memory.failures",
    "Settings": "openprogram_memory.config",
    "load_settings": "openprogram_memory.config",
    "MemoryWorkspace": "openprogram_memory.memory",
    "Policy": "openprogram_memory.transaction.engine",
    "TxResult": "openprogram_memory.transaction.engine",
    "MemoryBackend": "openprogram_memory.provider",
    "FilesMemory": "openprogram_memory.provider",
    "NullMemory": "openprogram_memory.provider",
    "get_provider": "openprogram_memory.provider",
    "search": "openprogram_memory.search.query",
    "recall_block": "openprogram_memory.search.query",
    "SessionStore": "openprogram_memory.sessions.store",
    "import_paths": "openprogram_memory.sessions.importers",
    "write": "openprogram_memory.writer.pipeline",
    "reorganize": "openprogram_memory.organizer",
    "count_tokens": "openprogram_memory.tokens",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'openprogram_memory' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
