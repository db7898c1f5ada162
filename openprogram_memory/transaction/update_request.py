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

import json
import re
from typing import Any

from ..failures import FailureCode, MemoryFailure


UPDATE_FORMS = ("memory_changes", "changes", "patch")
UPDATE_KEYS = frozenset(UPDATE_FORMS) | {"sources", "base_revision", "commit_message"}
_KINDS: dict[str, type] = {"memory_changes": list, "changes": list, "patch": str, "sources": list,
                           "base_revision": str, "commit_message": str}
_REVISION_RE = re.compile(r"[0-9a-f]{8,128}")
MAX_JSON_DEPTH = 32  # a real request nests about 5 deep
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
    check_json_shape(body)
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
    check_envelope_values(kwargs.get("base_revision"), kwargs.get("commit_message"))
    return kwargs


def check_json_shape(value: Any, limit: int = MAX_JSON_DEPTH) -> None:
    """Refuse nesting deeper than ``limit`` and strings that are not Unicode text.

    Iterative, so no input can exhaust the recursion limit; a lone surrogate
    (``"\\ud800"`` in JSON) would fail much later, while writing a file.
    """
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise MemoryFailure(FailureCode.INVALID_ARGUMENT,
                                    "the request holds a string that is not valid Unicode (a lone surrogate)") from None
        elif isinstance(item, (dict, list)):
            if depth > limit:
                raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"the request nests deeper than {limit} levels")
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)


def load_request_json(data: bytes | str, what: str = "request") -> Any:
    """Decode and parse a JSON request; every malformed input is INVALID_ARGUMENT."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MemoryFailure(FailureCode.INVALID_ARGUMENT,
                                f"the {what} is not valid UTF-8 (byte {exc.start})") from None
    try:
        return json.loads(data)
    except json.JSONDecodeError as exc:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"the {what} is not valid JSON: {exc}") from None
    except RecursionError:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT,
                            f"the {what} nests deeper than {MAX_JSON_DEPTH} levels") from None


def check_envelope_values(base_revision: Any, commit_message: Any) -> None:
    """``base_revision`` and ``commit_message`` as the transaction takes them.

    Checked before anything is staged: a wrong type is the caller's mistake
    (INVALID_ARGUMENT, never a retryable conflict), and a NUL or control
    byte in a message would corrupt the git commit after the install.
    """
    if base_revision is not None and not isinstance(base_revision, str):
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, "base_revision must be a string (a revision you read)")
    if base_revision is not None and not _REVISION_RE.fullmatch(base_revision):
        # garbage would be a CONCURRENT_UPDATE forever: retrying can never fix it
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT,
                            f"base_revision {base_revision[:40]!r} is not a revision (hex, as reads report it)")
    if commit_message is None:
        return
    if not isinstance(commit_message, str):
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, "commit_message must be a string")
    bad = next((ch for ch in commit_message if ord(ch) < 32 and ch not in "\n\t"), None)
    if bad is not None:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT,
                            f"commit_message contains the control character U+{ord(bad):04X}")
    try:
        commit_message.encode("utf-8")
    except UnicodeEncodeError:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, "commit_message is not valid Unicode") from None
