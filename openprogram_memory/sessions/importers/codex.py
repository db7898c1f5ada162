"""codex rollout JSONL (``session_meta`` then ``response_item`` lines) → the store.

A rollout is linear: each kept line's parent is the previous kept line.
Lines carry no ids, so a node's id is derived from the session id, the
line number and the line's timestamp (rollouts are append-only, so the
same line always gets the same id and re-import adds nothing).

``response_item`` messages are the conversation: ``user`` and
``assistant`` text (the injected ``AGENTS.md``/environment context user
messages are runtime-scheduled ``meta``), ``developer``/``system``
messages become ``system`` nodes; function and custom tool calls and their
outputs become ``tool`` nodes; ``compacted`` lines become runtime-scheduled
compaction summaries. Reasoning, ``event_msg`` (duplicates of the above)
and ``turn_context`` lines are skipped.
"""

from __future__ import annotations

import hashlib
import re
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

SOURCE = "codex"
CONTEXT_PREFIXES = ("<environment_context>", "# AGENTS.md instructions", "<user_instructions>",
                    "<permissions instructions>")
TEXT_TYPES = ("input_text", "output_text", "text")
_IMAGE_TAG = re.compile(r"</?image(\s[^>]*)?>")
TOOL_CALLS = {"function_call": "arguments", "custom_tool_call": "input", "local_shell_call": "action"}
TOOL_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})


def import_codex(store: SessionStore, paths: Iterable[str | Path]) -> ImportResult:
    """Import codex rollout files (or directories searched for ``*.jsonl``)."""
    result = EMPTY_RESULT
    for path in expand_paths(paths):
        tree = build_tree(path)
        if tree is not None:
            result = result + write_tree(store, tree)
    return result


def build_tree(path: Path) -> TranscriptTree | None:
    """The linear draft tree of one rollout file (None without a usable session id)."""
    lines = list(read_jsonl(path))
    meta = next((line.get("payload") or {} for _, line in lines if line.get("type") == "session_meta"), {})
    session_id = meta.get("id") if is_valid_id(meta.get("id")) else path.stem
    if not is_valid_id(session_id):
        return None
    tree = TranscriptTree(session_id, SOURCE)
    clock = safe_time(meta.get("timestamp"), now_iso())
    previous: str | None = None
    for number, line in lines:
        clock = safe_time(line.get("timestamp"), clock)
        payload = line.get("payload") if isinstance(line.get("payload"), dict) else {}
        role_content = _role_and_content(line.get("type"), payload)
        if role_content is None:
            continue
        role, content, metadata = role_content
        digest = hashlib.sha1(f"{session_id}\0{number}\0{line.get('timestamp')}".encode()).hexdigest()[:24]
        metadata.update(source=SOURCE, type=payload.get("type") or line.get("type"), line=number)
        if meta.get("cwd"):
            metadata["cwd"] = meta["cwd"]
        tree.add(DraftNode(f"codex-{digest}", previous, role, content, clock, clock, metadata))
        previous = f"codex-{digest}"
    return tree


def _role_and_content(line_type: Any, payload: dict[str, Any]) -> tuple[str, str, dict[str, Any]] | None:
    if line_type == "compacted":
        text = str(payload.get("message") or "")
        return "system", text, {"kind": "compaction_summary", "scheduled": True}
    if line_type != "response_item":
        return None
    item_type = payload.get("type")
    if item_type == "message":
        texts = [t for t in block_texts(payload.get("content"), TEXT_TYPES) if not _IMAGE_TAG.fullmatch(t.strip())]
        text = "\n\n".join(texts)
        role = payload.get("role")
        if role in ("developer", "system"):
            return "system", text, {"kind": "meta"}
        if role == "user":
            return "user", text, ({"kind": "meta"} if text.lstrip().startswith(CONTEXT_PREFIXES) else {})
        if role == "assistant":
            return "assistant", text, {}
        return None
    if item_type in TOOL_CALLS:
        name = payload.get("name") or item_type
        return "tool", render_tool_call(name, payload.get(TOOL_CALLS[item_type])), {"tool_uses": [str(name)]}
    if item_type in TOOL_OUTPUTS:
        output = payload.get("output")
        text = output if isinstance(output, str) else "\n".join(block_texts(output, TEXT_TYPES))
        return "tool", clip("[tool result] " + text), {}
    return None
