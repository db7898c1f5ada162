"""Chat messages in, session nodes out: what ``write(session, messages=[…])`` appends.

A library user's messages (``{"role": "user"|"assistant", "content": …,
"id"?: …, "created_at"?: …}``; content as text or Messages-API text
blocks) become nodes chained on the session's head, in order, in one
store write; the session is created if it does not exist. Every message is
checked before anything is written, so a bad one appends nothing.

Idempotency rides on ids: a message whose ``id`` is already in the session
with the same role and text is skipped, so re-sending a transcript adds
nothing; the same id with other text is refused (it would silently lose a
message). Messages without an ``id`` are new every time.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..failures import FailureCode, MemoryFailure
from .nodes import Node, new_id, validate_id
from .store import SessionStore
from ..timeutil import normalize_time, now_iso

ROLES = ("user", "assistant")


def message_text(content: Any, index: int) -> str:
    """The text of a message: a string, or the joined ``text`` of its content blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence) and all(isinstance(block, Mapping) for block in content):
        return "\n".join(str(block.get("text", "")) for block in content if block.get("type", "text") == "text")
    raise _bad(index, "content must be text or a list of {type: text, text: …} blocks")


def append_messages(store: SessionStore, session_id: str, messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """Append ``messages`` on the head of ``session_id``; return the ids of the nodes added."""
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence):
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT,
                            "messages must be a list of {role, content} objects")
    store.create_session(session_id, exist_ok=True)
    head = store.head(session_id)
    nodes: list[Node] = []
    seen: dict[str, tuple[str, str]] = {}
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise _bad(index, "each message must be an object {role, content}")
        role = message.get("role")
        if role not in ROLES:
            raise _bad(index, f"role {role!r}: only user and assistant messages are memory input")
        text = message_text(message.get("content"), index)
        node_id = validate_id(message["id"], "message id") if message.get("id") is not None else None
        if node_id is not None:
            known = seen.get(node_id)
            if known is None and store.has_node(session_id, node_id):
                node = store.get_node(session_id, node_id)
                known = (node.role, node.content)
            if known is not None:
                if known != (role, text):
                    raise _bad(index, f"message id {node_id!r} is already in session {session_id!r} with other "
                                      "content; give the new message a new id")
                continue  # already stored: idempotent
        when = message.get("created_at", message.get("time"))
        stamp = normalize_time(when) if when is not None else now_iso()
        node = Node(node_id or new_id(), nodes[-1].id if nodes else head, role, text, stamp, stamp, {})
        seen[node.id] = (role, text)
        nodes.append(node)
    if nodes:
        store.insert_nodes(session_id, nodes, head=nodes[-1].id)
    return [node.id for node in nodes]


def _bad(index: int, message: str) -> MemoryFailure:
    return MemoryFailure(FailureCode.INVALID_ARGUMENT, f"messages[{index}]: {message}", details={"index": index})
