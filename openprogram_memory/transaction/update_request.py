"""The envelope of a unified modify request, as every caller receives it.

``memory apply`` (a JSON file), ``POST /api/memory/changes`` (a JSON body)
and the MCP tool ``memory_update`` (tool arguments) all take the same
object: one of ``memory_changes``, ``changes`` or ``patch``, plus optional
``sources``, ``base_revision`` and ``commit_message``. This module checks
that envelope — keys and JSON types — in one place, so the three doors
refuse the same requests with the same ``INVALID_ARGUMENT`` messages; the
contents of each form are checked further in by the transaction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..failures import FailureCode, MemoryFailure

if TYPE_CHECKING:  # the engine is heavy; the CLI imports this module at start
    from .engine import TxResult

UPDATE_FORMS = ("memory_changes", "changes", "patch")
UPDATE_KEYS = frozenset(UPDATE_FORMS) | {"sources", "base_revision", "commit_message"}
_KINDS: dict[str, type] = {"memory_changes": list, "changes": list, "patch": str, "sources": list,
                           "base_revision": str, "commit_message": str}
SHAPE_HINT = '{"memory_changes": […]} | {"changes": […]} | {"patch": "…"}'


def parse_update_request(body: Any) -> dict[str, Any]:
    """Keyword arguments for ``MemoryWorkspace.update`` from a request object.

    Refuses (``INVALID_ARGUMENT``) anything but a JSON object, unknown keys —
    callers cannot smuggle provenance, trust or owner fields in — and values
    of the wrong JSON type. ``null`` counts as absent. Which form is given,
    and whether exactly one is, the transaction decides.
    """
    if not isinstance(body, dict):
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"the request must be a JSON object: {SHAPE_HINT}")
    unknown = sorted(str(key) for key in set(body) - UPDATE_KEYS)
    if unknown:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT,
                            f"unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(UPDATE_KEYS))}")
    kwargs: dict[str, Any] = {}
    for key, kind in _KINDS.items():
        value = body.get(key)
        if value is None:
            continue
        if not isinstance(value, kind):
            raise MemoryFailure(FailureCode.INVALID_ARGUMENT,
                                f"{key} must be a JSON {'array' if kind is list else 'string'}")
        kwargs[key] = value
    return kwargs


def update_json(result: "TxResult") -> dict[str, Any]:
    """The answer to an update: the transaction's JSON plus the record IDs it deleted."""
    data = result.to_json()
    data.setdefault("deleted_ids", result.deleted_ids)
    return data
