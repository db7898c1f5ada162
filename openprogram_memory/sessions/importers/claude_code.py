"""Claude Code JSONL transcripts (``~/.claude/projects/**/*.jsonl``) → the store.

Rules:

* One store session per ``sessionId``; node id = the line's ``uuid``, parent
  = ``parentUuid`` — so re-importing adds nothing.
* Consecutive lines of one assistant message (same ``message.id``, each the
  child of the previous) become ONE node: id = the first line's uuid,
  content = the text blocks joined; children of later lines attach to it.
  A message with tool calls but no text becomes a ``tool`` node.
* ``tool_result`` user lines become ``tool`` nodes; ``thinking`` blocks are
  never content. Tool nodes are not memory input.
* ``isMeta`` lines, slash-command echoes, interruption notices and the
  compaction summary (``isCompactSummary``) stay as ``user`` nodes with a
  runtime-scheduled ``kind`` — kept for display, never memory input.
* ``compact_boundary`` system lines become ``system`` nodes whose parent is
  ``logicalParentUuid``, so the conversation after a compaction continues
  the branch before it. Other system lines and non-message lines
  (``file-history-snapshot``, ``summary`` …) are dropped; children of a
  dropped line attach to its nearest kept ancestor.
* Sidechain lines (``isSidechain: true``, a sub-agent's conversation) form
  their own branch, attached to the node holding the ``Task`` call whose
  prompt started it. They are marked ``sidechain: true, scheduled: true``
  (kind ``subagent_prompt``/``subagent_report``): the prompt was written by
  the main agent and the report goes back to it, so neither is the
  person's input; what matters reaches the main branch as the assistant's
  answer.
* ``summary`` lines are trusted as the session title only when their
  ``leafUuid`` is a line of the same file.
* Head = the newest main-conversation leaf by timestamp.
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
    block_types,
    clip,
    expand_paths,
    read_jsonl,
    render_tool_call,
    safe_time,
    write_tree,
)

SOURCE = "claude-code"
COMMAND_PREFIXES = ("<command-name>", "<command-message>", "<command-args>", "<local-command-stdout>",
                    "<local-command-stderr>")
INTERRUPT_PREFIX = "[Request interrupted by user"
SPAWN_TOOLS = frozenset({"Task", "Agent"})


def import_claude_code(store: SessionStore, paths: Iterable[str | Path]) -> ImportResult:
    """Import Claude Code transcripts (files, or directories searched for ``*.jsonl``)."""
    lines_by_session: dict[str, list[dict[str, Any]]] = {}
    titles: dict[str, str] = {}
    for path in expand_paths(paths):
        lines = [line for _, line in read_jsonl(path)]
        session_of_uuid = {
            line["uuid"]: line["sessionId"]
            for line in lines
            if is_valid_id(line.get("uuid")) and is_valid_id(line.get("sessionId"))
        }
        for line in lines:
            if line.get("type") == "summary":
                session = session_of_uuid.get(line.get("leafUuid"))
                if session and isinstance(line.get("summary"), str):
                    titles[session] = line["summary"]  # trusted: its leaf is in this file
            elif line.get("uuid") in session_of_uuid:
                lines_by_session.setdefault(line["sessionId"], []).append(line)
    result = EMPTY_RESULT
    for session_id, lines in lines_by_session.items():
        tree = build_tree(session_id, lines)
        tree.title = titles.get(session_id)
        result = result + write_tree(store, tree)
    return result


def build_tree(session_id: str, lines: list[dict[str, Any]]) -> TranscriptTree:
    """The draft tree of one session's lines (in transcript order)."""
    tree = TranscriptTree(session_id, SOURCE)
    line_by_uuid: dict[str, dict[str, Any]] = {}
    group_of: dict[str, str] = {}  # assistant line uuid → its message's node id
    spawn_node_by_prompt: dict[str, str] = {}
    pieces: dict[str, tuple[list[str], list[str]]] = {}  # assistant node id → (texts, tool calls)
    sidechain_roots: list[DraftNode] = []
    clock = now_iso()
    for line in lines:
        uuid = line["uuid"]
        parent = line.get("parentUuid") or line.get("logicalParentUuid")
        clock = safe_time(line.get("timestamp"), clock)
        kind = line.get("type")
        if kind == "assistant":
            previous = line_by_uuid.get(parent) if parent else None
            if previous is not None and previous.get("type") == "assistant" and parent in group_of and (
                _message_id(previous) is not None and _message_id(previous) == _message_id(line)
            ):
                group_of[uuid] = group_of[parent]
                tree.drafts[group_of[uuid]].may_grow = True
                _extend_assistant(tree.drafts[group_of[uuid]], line, clock, pieces)
                tree.drop(uuid, group_of[uuid])
            else:
                group_of[uuid] = uuid
                draft = tree.add(_new_draft(uuid, parent, "assistant", clock, line))
                _extend_assistant(draft, line, clock, pieces)
            for prompt in _spawn_prompts(line):
                spawn_node_by_prompt.setdefault(prompt, group_of[uuid])
        elif kind == "user":
            draft = tree.add(_user_draft(uuid, parent, clock, line))
            if line.get("isSidechain") and parent is None:
                sidechain_roots.append(draft)
        elif kind == "system" and line.get("subtype") == "compact_boundary":
            draft = tree.add(_new_draft(uuid, parent, "system", clock, line))
            draft.content = str(line.get("content") or "Conversation compacted")
            draft.metadata["kind"] = "compact_boundary"
            if isinstance(line.get("compactMetadata"), dict):
                draft.metadata["compact"] = line["compactMetadata"]
        else:
            tree.drop(uuid, parent)
        line_by_uuid.setdefault(uuid, line)
    for node_id, (texts, calls) in pieces.items():
        _finish_assistant(tree.drafts[node_id], texts, calls)
    for root in sidechain_roots:  # attach each sub-agent branch to the call that started it
        root.parent = spawn_node_by_prompt.get(root.content.strip())
    return tree


def _message_id(line: dict[str, Any]) -> str | None:
    message = line.get("message")
    return message.get("id") if isinstance(message, dict) else None


def _content(line: dict[str, Any]) -> Any:
    message = line.get("message")
    return message.get("content") if isinstance(message, dict) else None


def _new_draft(uuid: str, parent: str | None, role: str, clock: str, line: dict[str, Any]) -> DraftNode:
    metadata: dict[str, Any] = {"source": SOURCE, "type": line.get("type")}
    for key, name in (("cwd", "cwd"), ("gitBranch", "git_branch"), ("agentId", "agent_id")):
        if line.get(key):
            metadata[name] = line[key]
    if line.get("isSidechain"):
        metadata["sidechain"] = True
        metadata["scheduled"] = True
    return DraftNode(uuid, parent, role, "", clock, clock, metadata)


def _user_draft(uuid: str, parent: str | None, clock: str, line: dict[str, Any]) -> DraftNode:
    content = _content(line)
    draft = _new_draft(uuid, parent, "user", clock, line)
    results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"] if isinstance(
        content, list) else []
    if results:
        draft.role = "tool"
        draft.content = clip("\n".join(_tool_result_text(block) for block in results))
        return draft
    text = "\n\n".join(block_texts(content))
    draft.content = text
    if isinstance(content, list) and "image" in block_types(content):
        draft.metadata["images"] = sum(1 for b in content if isinstance(b, dict) and b.get("type") == "image")
    stripped = text.lstrip()
    if line.get("isSidechain"):
        draft.metadata["kind"] = "subagent_prompt"
    elif line.get("isMeta"):
        draft.metadata["kind"] = "meta"
    elif line.get("isCompactSummary"):
        draft.metadata["kind"] = "compaction_summary"
    elif stripped.startswith(COMMAND_PREFIXES):
        draft.metadata["kind"] = "local_command"
    elif stripped.startswith(INTERRUPT_PREFIX):
        draft.metadata["kind"] = "interrupt"
    return draft


def _tool_result_text(block: dict[str, Any]) -> str:
    inner = block.get("content")
    text = "\n".join(block_texts(inner)) if inner is not None else ""
    if isinstance(inner, list) and "image" in block_types(inner):
        text = (text + "\n[image]").strip()
    prefix = "[tool error] " if block.get("is_error") else "[tool result] "
    return prefix + text


def _extend_assistant(draft: DraftNode, line: dict[str, Any], clock: str,
                      pieces: dict[str, tuple[list[str], list[str]]]) -> None:
    content = _content(line)
    texts, calls = pieces.setdefault(draft.id, ([], []))
    texts.extend(block_texts(content))
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "tool_use":
            draft.metadata.setdefault("tool_uses", []).append(str(block.get("name")))
            calls.append(render_tool_call(block.get("name"), block.get("input")))
        elif isinstance(block, dict) and block.get("type") == "thinking":
            draft.metadata["thinking"] = True
    message = line.get("message") if isinstance(line.get("message"), dict) else {}
    for key in ("id", "model"):
        if message.get(key):
            draft.metadata.setdefault("message_id" if key == "id" else "model", message[key])
    if line["uuid"] != draft.id:
        draft.metadata.setdefault("uuids", [draft.id]).append(line["uuid"])
    draft.updated_at = max(draft.updated_at, clock)


def _finish_assistant(draft: DraftNode, texts: list[str], calls: list[str]) -> None:
    if texts:
        draft.content = "\n\n".join(texts)
    elif calls:
        draft.role = "tool"
        draft.content = clip("\n".join(calls))
    if draft.metadata.get("sidechain") and draft.role == "assistant":
        draft.metadata["kind"] = "subagent_report"


def _spawn_prompts(line: dict[str, Any]) -> list[str]:
    if line.get("isSidechain"):
        return []
    content = _content(line)
    prompts = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("name") in SPAWN_TOOLS:
            prompt = (block.get("input") or {}).get("prompt") if isinstance(block.get("input"), dict) else None
            if isinstance(prompt, str) and prompt.strip():
                prompts.append(prompt.strip())
    return prompts
