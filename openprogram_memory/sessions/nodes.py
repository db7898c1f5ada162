"""What a session is made of: ids, roles and the :class:`Node` record.

Ids become file names, so they are checked here once for every caller.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping, TypeGuard

from ..failures import FailureCode, MemoryFailure

REWOUND_KEY = "rewound"
# The written marker (architecture §4.2): the key names the memory provider, the value is a workspace id.
MARKER_KEY = "memory_written_scriptorium"
# Beside it, keyed the same way so exported sessions carry it: a written turn whose branch a rewind
# abandoned (architecture §15 "Superseded branches"). The value is the workspace id its marker named.
SUPERSEDED_KEY = "memory_superseded_scriptorium"
# On a spawned session's turns: "<parent session>/<parent node>" whose abandonment rewound them,
# so switching the parent back restores exactly these (and not turns the child rewound itself).
SUPERSEDED_BY_PARENT_KEY = "superseded_by_parent"
# An importer's node whose parent line was not in the store yet: the lost parent's id (the node is a root
# until that parent arrives, see SessionStore.reattach_detached).
DETACHED_FROM_KEY = "detached_from"
# A written turn put back under ancestors that were not written yet: its marker moves here (same value),
# so a pending walk passes it to reach them without writing it again (architecture §4.2 "Pending").
WRITTEN_BEFORE_ANCESTORS_KEY = "memory_written_before_ancestors_scriptorium"

_ID_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}")
_ROLE_RE = re.compile(r"[a-z][a-z0-9_-]{0,63}")


def is_valid_id(value: Any) -> TypeGuard[str]:
    """Whether ``value`` is a safe session/node id (see :func:`validate_id`)."""
    return isinstance(value, str) and bool(_ID_RE.fullmatch(value)) and ".." not in value


def validate_id(value: Any, what: str = "id") -> str:
    """Return ``value`` if it is a safe session/node id, else ``INVALID_ARGUMENT``.

    Ids become file names, so path separators, ``..`` and leading dots are
    refused: letters, digits, ``_``, ``-`` and ``.``, at most 128 characters.
    """
    if not is_valid_id(value):
        raise MemoryFailure(
            FailureCode.INVALID_ARGUMENT,
            f"invalid {what} {value!r}: use letters, digits, '_', '-' or '.' "
            "(no path separators, no '..', at most 128 characters)",
        )
    return value


def new_id() -> str:
    """A fresh node or session id (uuid4 hex)."""
    import uuid

    return uuid.uuid4().hex


@dataclass(frozen=True)
class Node:
    """One message of a session. ``metadata`` is a free map; treat it as read-only."""

    id: str
    predecessor: str | None
    role: str
    content: str
    created_at: str
    updated_at: str
    metadata: dict[str, Any] = field(default_factory=dict, hash=False)

    @property
    def rewound(self) -> bool:
        """Whether a rewind abandoned this turn."""
        return bool(self.metadata.get(REWOUND_KEY))

    @property
    def written_to(self) -> str | None:
        """The workspace id this turn was written into, if any (whether or not its ancestors were)."""
        return self.metadata.get(MARKER_KEY) or self.metadata.get(WRITTEN_BEFORE_ANCESTORS_KEY)

    def superseded_for(self, workspace_id: str) -> bool:
        """Whether a rewind abandoned this turn after it was written into ``workspace_id``."""
        return self.rewound and self.metadata.get(SUPERSEDED_KEY) == workspace_id

    def to_json(self) -> dict[str, Any]:
        """The node file's JSON object."""
        return {
            "id": self.id,
            "predecessor": self.predecessor,
            "role": self.role,
            "content": self.content,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "metadata": dict(self.metadata),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Node":
        """Build a node from a node file's object (``KeyError``/``TypeError`` if malformed)."""
        return cls(
            id=str(data["id"]),
            predecessor=data.get("predecessor"),
            role=str(data["role"]),
            content=str(data.get("content") or ""),
            created_at=str(data["created_at"]),
            updated_at=str(data.get("updated_at") or data["created_at"]),
            metadata=dict(data.get("metadata") or {}),
        )


@dataclass(frozen=True)
class SessionInfo:
    """What ``meta.json`` says about a session."""

    session: str
    head: str | None
    created_at: str
    updated_at: str
    node_count: int
    metadata: dict[str, Any] = field(default_factory=dict, hash=False)


def validate_role(role: Any) -> str:
    """Return ``role`` if it is a lowercase word (``user``, ``tool``, ``merge_hint``…)."""
    if not isinstance(role, str) or not _ROLE_RE.fullmatch(role):
        raise MemoryFailure(
            FailureCode.INVALID_ARGUMENT,
            f"invalid role {role!r}: use a lowercase word such as user, assistant, tool or system",
        )
    return role
