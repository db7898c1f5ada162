"""pi session JSONL (``{"type": "session"}`` header, entries with ``id``/``parentId``) → the store.

One file is one session (the header's ``id``). ``message`` entries keep
their ids and parent edges, so branches (two entries with one parent)
survive and re-import adds nothing. ``user`` and ``assistant`` messages
carry the conversation; an assistant message with tool calls and no text,
``toolResult`` and ``bashExecution`` entries become ``tool`` nodes;
``compaction`` and ``branch_summary`` entries become runtime-scheduled
``system`` nodes. Other entries (model or thinking-level changes, labels…)
are dropped and their children attach to the nearest kept ancestor.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from ..store import SessionStore, is_valid_id
from ..timestamps import now_iso
from .common import (
    EMPTY_RESULT,
    DraftNode,
    ImportResult,
    TranscriptTree,
    block_texts,
    clip,
    expand_paths,
    read_jsonl,
    render_tool_call,
    safe_time,
    write_tree,
)

SOURCE = "pi"
SUMMARY_KINDS = {"compaction": "compaction_summary", "branch_summary": "branch_summary"}


def import_pi(store: SessionStore, paths: Iterable[str | Path]) -> ImportResult:
    """Import pi session files (or directories searched for ``*.jsonl``)."""
    result = EMPTY_RESULT
    for path in expand_paths(paths):
        tree = build_tree(path)
        if tree is not None:
            result = result + write_tree(store, tree)
    return result


def build_tree(path: Path) -> TranscriptTree | None:
    """The draft tree of one pi session file (None if it has no session id)."""
    entries = [entry for _, entry in read_jsonl(path)]
    header = next((e for e in entries if e.get("type") == "session"), {})
    session_id = header.get("id") if is_valid_id(header.get("id")) else path.stem
    if not is_valid_id(session_id):
        return None
    tree = TranscriptTree(session_id, SOURCE)
    clock = safe_time(header.get("timestamp"), now_iso())
    for entry in entries:
        entry_id, parent = entry.get("id"), entry.get("parentId")
        if entry.get("type") == "session" or not is_valid_id(entry_id):
            continue
        clock = safe_time(entry.get("timestamp"), clock)
        draft = _draft(entry, clock, header.get("cwd"))
        if draft is None:
            tree.drop(entry_id, parent)
        else:
            tree.add(draft)
    return tree


def _draft(entry: dict[str, Any], clock: str, cwd: Any) -> DraftNode | None:
    metadata: dict[str, Any] = {"source": SOURCE, "type": entry.get("type")}
    if cwd:
        metadata["cwd"] = cwd
    entry_type = entry.get("type")
    if entry_type in SUMMARY_KINDS:
        metadata.update(kind=SUMMARY_KINDS[entry_type], scheduled=True)
        content = str(entry.get("summary") or "")
        return DraftNode(entry["id"], entry.get("parentId"), "system", content, clock, clock, metadata)
    message = entry.get("message")
    if entry_type != "message" or not isinstance(message, dict):
        return None
    role, content = _role_and_content(message, metadata)
    if role is None:
        return None
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
