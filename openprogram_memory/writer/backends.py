"""Which writer answers a ``memory.writer.model`` name: the registry above every backend.

``rules`` is the offline extractor (:mod:`.rules`), ``anthropic:<model>``
the Messages API writer (:mod:`.anthropic_backend`); tests register their
fakes with :func:`register_backend` and so walk the real path. Kept apart
from :mod:`.backend` (the request/run shapes every backend imports) so no
backend imports the module that imports it.
"""

from __future__ import annotations

from typing import Callable

from ..failures import FailureCode, MemoryFailure
from .backend import WriterBackend

BackendFactory = Callable[[str], WriterBackend]
_BACKENDS: dict[str, BackendFactory] = {}


def register_backend(name: str, factory: BackendFactory) -> None:
    """Make ``factory(model)`` answer ``model == name`` (or every ``name…`` model if ``name`` ends in ``:``).

    The built-in ``rules`` and ``anthropic:`` backends are resolved the same
    way; tests register their fakes here, so they walk the real path.
    """
    _BACKENDS[name] = factory


def _rules(_model: str) -> WriterBackend:
    from .rules_backend import RulesWriter

    return RulesWriter()


def _anthropic(model: str) -> WriterBackend:
    from .anthropic_backend import AnthropicWriter

    return AnthropicWriter(model.split(":", 1)[1])


register_backend("rules", _rules)
register_backend("anthropic:", _anthropic)


def resolve_backend(model: str) -> WriterBackend:
    """``rules`` → the offline writer; ``anthropic:<model>`` → the Messages API writer."""
    model = str(model or "").strip()
    factory = _BACKENDS.get(model)
    if factory is None and ":" in model and not model.endswith(":"):
        factory = _BACKENDS.get(model.split(":", 1)[0] + ":")
    if factory is None:
        raise MemoryFailure(
            FailureCode.MEMORY_PROVIDER_RESOLUTION_FAILED,
            f"unknown writer model {model!r}; use 'rules' or 'anthropic:<model>'",
        )
    try:
        return factory(model)
    except ImportError as exc:  # a backend module or its SDK is not installed
        raise MemoryFailure(
            FailureCode.MEMORY_PROVIDER_RESOLUTION_FAILED,
            f"writer model {model!r} is not available here ({exc}); use 'rules' or install its dependencies",
        ) from None
