"""pi session JSONL (``{"type": "session"}`` header, entries with ``id``/``parentId``) → the store.

One file is one session (the header's ``id``). ``message`` entries keep
their ids and parent edges, so branches (two entries with one parent)
survive and re-import adds nothing. ``user`` and ``assistant`` messages
carry the conversation; an assistant message with tool calls and no text,
``toolResult`` and ``bashExecution`` entries become ``tool`` nodes;
``compaction`` and ``branch_summary`` entries become runtime-scheduled
``system`` nodes. Other entries (model or thinking-level changes, labels…)
are dropped (``not_a_turn``; unknown entry types and message roles
``unknown_type``) and their children attach to the nearest kept ancestor.
An entry whose ``parentId`` is null or absent from the file continues the
previous entry in file order; of two entries with one id the well-formed
one is kept (``duplicate_id``). Skip reasons: see ``common``.

pi records where a session was forked from (the header's ``parentSession``,
the parent session file's path): kept as ``forked_from`` in the session's
metadata. pi's format records no sub-agents.
"""

from __future__ import annotations

from typing import Any

from ..store import SessionStore, is_valid_id
from ...timeutil import now_iso
from .common import (
    DUPLICATE_ID,
    EMPTY_RESULT,
    MALFORMED_LINE,
    MISSING_ID,
    NOT_A_TURN,
    UNKNOWN_TYPE,
    DraftNode,
    ImportResult,
    TranscriptFile,
    TranscriptFormat,
    TranscriptTree,
    block_texts,
    clip,
    keep_well_formed,
    render_tool_call,
    safe_time,
    write_tree,
)

SOURCE = "pi"
SUMMARY_KINDS = {"compaction": "compaction_summary", "branch_summary": "branch_summary"}
MESSAGE_ROLES = frozenset({"user", "assistant", "toolResult", "bashExecution"})
NOT_A_TURN_TYPES = frozenset({"session", "model_change", "thinking_level_change", "label", "custom",
                              "custom_message", "session_info"})


def owns(line: dict[str, Any]) -> bool:
    """Whether ``line`` has pi's shape (the ``session`` header, or an entry with ``id`` and ``parentId``)."""
    if line.get("type") == "session":
        return "id" in line and "payload" not in line and "sessionId" not in line
    return "id" in line and "parentId" in line and isinstance(line.get("type"), str)


FORMAT = TranscriptFormat("pi", "a pi session", owns)


def import_pi(store: SessionStore, transcripts: list[TranscriptFile],
              aliases: dict[str, str | None] | None = None) -> ImportResult:
    """Import pi session files (already read and checked to be of this format); ``aliases`` as for Claude Code."""
    result = EMPTY_RESULT
    for transcript in transcripts:
        tree = build_tree(transcript, store, aliases)
        result = result + transcript.result() + write_tree(store, tree)
    return result


def _entry_quality(entry: dict[str, Any]) -> int:
    message = entry.get("message")
    score = 4 if entry.get("type") != "message" or (
        isinstance(message, dict) and message.get("role") in MESSAGE_ROLES) else 0
    return score + (2 if safe_time(entry.get("timestamp"), "") else 0)


def build_tree(transcript: TranscriptFile, store: SessionStore | None = None,
               aliases: dict[str, str | None] | None = None) -> TranscriptTree:
    """The draft tree of one pi session file (every line skipped if it has no usable session id)."""
    entries = [entry for _, entry in transcript.lines]
    header = next((e for e in entries if e.get("type") == "session"), {})
    session_id = header.get("id") if is_valid_id(header.get("id")) else transcript.path.stem
    if not is_valid_id(session_id):
        tree = TranscriptTree("-", SOURCE)
        tree.skipped[MISSING_ID] += len(entries)
        return tree
    tree = TranscriptTree(session_id, SOURCE, store, aliases)
    if isinstance(header.get("parentSession"), str) and header["parentSession"].strip():
        tree.session_metadata["forked_from"] = header["parentSession"]
    entries, duplicates = keep_well_formed(
        [e for e in entries if e.get("type") != "session"],
        lambda entry: entry.get("id") if is_valid_id(entry.get("id")) else None, _entry_quality)
    tree.skipped[DUPLICATE_ID] += duplicates
    tree.skipped[NOT_A_TURN] += sum(1 for e in transcript.lines if e[1].get("type") == "session")
    tree.line_ids = {entry["id"] for entry in entries if is_valid_id(entry.get("id"))}
    clock = safe_time(header.get("timestamp"), now_iso())
    previous: str | None = None
    for entry in entries:
        entry_id = entry.get("id")
        if not is_valid_id(entry_id):
            tree.skipped[MISSING_ID] += 1
            continue
        parent = tree.parent_for(entry.get("parentId"), previous)
        previous = entry_id
        clock = safe_time(entry.get("timestamp"), clock)
        draft = _draft(entry, clock, header.get("cwd"))
        if isinstance(draft, str):
            tree.drop(entry_id, parent, draft)
        else:
            draft.parent = parent
            if entry.get("parentId") is not None and parent != entry.get("parentId"):
                draft.metadata["detached_from"] = entry.get("parentId")
            tree.add(draft)
    return tree


def _draft(entry: dict[str, Any], clock: str, cwd: Any) -> DraftNode | str:
    """The entry's draft node, or the reason it is skipped."""
    metadata: dict[str, Any] = {"source": SOURCE, "type": entry.get("type")}
    if cwd:
        metadata["cwd"] = cwd
    entry_type = entry.get("type")
    if entry_type in SUMMARY_KINDS:
        metadata.update(kind=SUMMARY_KINDS[entry_type], scheduled=True)
        content = str(entry.get("summary") or "")
        return DraftNode(entry["id"], entry.get("parentId"), "system", content, clock, clock, metadata)
    message = entry.get("message")
    if entry_type != "message":
        return NOT_A_TURN if entry_type in NOT_A_TURN_TYPES else UNKNOWN_TYPE
    if not isinstance(message, dict):
        return MALFORMED_LINE
    role, content = _role_and_content(message, metadata)
    if role is None:
        return UNKNOWN_TYPE
    return DraftNode(entry["id"], entry.get("parentId"), role, content, clock, clock, metadata)


def _role_and_content(message: dict[str, Any], metadata: dict[str, Any]) -> tuple[str | None, str]:
    role = message.get("role")
    content = message.get("content")
    if role == "user":
        return "user", "\n\n".join(block_texts(content))
    if role == "assistant":
        calls = [b for b in content if isinstance(b, dict) and b.get("type") == "toolCall"] if isinstance(
            content, list) else []
        if calls:
            metadata["tool_uses"] = [str(call.get("name")) for call in calls]
        if any(isinstance(b, dict) and b.get("type") == "thinking" for b in content or []):
            metadata["thinking"] = True
        if message.get("model"):
            metadata["model"] = message["model"]
        texts = block_texts(content)
        if texts or not calls:
            return "assistant", "\n\n".join(texts)
        return "tool", clip("\n".join(render_tool_call(c.get("name"), c.get("arguments")) for c in calls))
    if role == "toolResult":
        metadata["tool"] = message.get("toolName")
        prefix = "[tool error] " if message.get("isError") else "[tool result] "
        return "tool", clip(prefix + "\n".join(block_texts(content)))
    if role == "bashExecution":
        metadata["kind"] = "bash"
        return "tool", clip(f"$ {message.get('command', '')}\n{message.get('output', '')}".rstrip())
    return None, ""
