"""Claude Code JSONL transcripts (``~/.claude/projects/**/*.jsonl``) → the store.

Rules:

* One store session per ``sessionId``; node id = the line's ``uuid``, parent
  = ``parentUuid`` — so re-importing adds nothing. A parent that is null or
  absent (not a line of the transcript, not in the store) is the previous
  line of the same conversation in file order: older transcripts have
  ``parentUuid: null`` on every line and are one linear conversation.
* A ``uuid`` seen twice keeps its well-formed line (message with content,
  readable timestamp); the other copy is counted as ``duplicate_id``.
* Consecutive lines of one assistant message (same ``message.id``, each the
  child of the previous) become ONE node: id = the first line's uuid,
  content = the text blocks joined; children of later lines attach to it.
  A message with tool calls but no text becomes a ``tool`` node.
* ``tool_result`` user lines become ``tool`` nodes; ``thinking`` blocks are
  never content. Tool nodes are not memory input.
* ``isMeta`` lines, the local-command caveat, system reminders,
  slash-command and ``!`` shell echoes with their output, interruption
  notices and the compaction summary (``isCompactSummary``, or in older
  transcripts only its opening words, ``COMPACTION_SUMMARY_STARTS``) stay as
  ``user`` nodes with a runtime-scheduled ``kind`` — kept for display,
  never memory input. A message is judged by what is left once whole
  wrapper elements are out (``sessions.wrappers``): a reminder before the
  person's own words (or in a block before theirs) leaves a turn of the
  person's. A user line carrying ``toolUseResult`` is a tool result
  whatever its content looks like.
* ``compact_boundary`` system lines become ``system`` nodes whose parent is
  ``logicalParentUuid``, so the conversation after a compaction continues
  the branch before it. Other system lines and non-message lines
  (``file-history-snapshot``, ``summary`` …) are dropped (``not_a_turn``),
  unknown line types too (``unknown_type``), and user/assistant lines
  without a message (``malformed_line``); children of a dropped line attach
  to its nearest kept ancestor. Skip reasons: see ``common``.
* Sidechain lines (``isSidechain: true``, a sub-agent's conversation) form
  their own branch, attached to the node holding the ``Task`` call whose
  prompt started it (a sidechain prompt line with an absent parent starts
  a new sub-agent branch; other sidechain lines chain within their agent).
  They are marked ``sidechain: true, scheduled: true``
  (kind ``subagent_prompt``/``subagent_report``): the prompt was written by
  the main agent and the report goes back to it, so neither is the
  person's input; what matters reaches the main branch as the assistant's
  answer.
* A sub-agent's own file (``<session>/subagents/agent-<id>.jsonl`` beside
  ``<session>.jsonl``, same ``sessionId``) joins its session the same way:
  importing the main transcript brings its sub-agent files along
  (:func:`with_subagent_files`), except ``agent-acompact-*`` (Claude Code's
  internal compaction runs, whose prompt is the conversation itself:
  :func:`internal_agent_file`, which every import and the watcher leave out).
  Read on its own (the hook's ``SubagentStop``, the watcher, ``memory import
  agent-<id>.jsonl``), its prompt hangs from the stored node holding the call
  (the node keeps a digest of each prompt it started, ``spawns``); a file
  read before its main transcript hangs there once the call arrives. Either
  way head stays on the main conversation.
* ``summary`` lines are trusted as the session title only when their
  ``leafUuid`` is a line of the same file.
* Head = the newest main-conversation leaf by timestamp. Every other
  main-conversation leaf is a branch the person rewound away from (Claude
  Code keeps it in the file): it is rewound as ``session rewind`` would —
  turns marked rewound, written ones superseded, the tip archived — and a
  sidechain spawned from an abandoned turn goes with it (:func:`abandon_rewound`).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from ...failures import MemoryFailure
from ..nodes import DETACHED_FROM_KEY
from ..store import SessionStore, is_valid_id
from ..wrappers import COMPACTION_SUMMARY_STARTS, injected_kind
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
    block_types,
    clip,
    keep_well_formed,
    render_tool_call,
    safe_time,
    write_tree,
)

SOURCE = "claude-code"
COMMAND_PREFIXES = ("<command-name>", "<command-message>", "<command-args>", "<local-command-stdout>",
                    "<local-command-stderr>", "<bash-input>", "<bash-stdout>", "<bash-stderr>")
META_PREFIXES = ("<local-command-caveat>", "Caveat: The messages below were generated by the user while running",
                 "<system-reminder>", "<user-prompt-submit-hook>")
INTERRUPT_PREFIX = "[Request interrupted by user"
# What an injected user message starts with once whole wrapper elements are out (see ``sessions.wrappers``).
# (A compaction summary is flagged ``isCompactSummary``; before the flag, only its words tell it.)
INJECTED_KINDS = ((COMMAND_PREFIXES, "local_command"), (META_PREFIXES, "meta"), ((INTERRUPT_PREFIX,), "interrupt"),
                  (COMPACTION_SUMMARY_STARTS, "compaction_summary"))
SPAWN_TOOLS = frozenset({"Task", "Agent"})
SPAWNS_KEY = "spawns"  # on the node holding Task calls: a digest of each prompt (:func:`prompt_key`)
TURN_TYPES = frozenset({"user", "assistant"})
# Known lines that carry no turn (a title, a file snapshot, hook/status lines).
NOT_A_TURN_TYPES = frozenset({"summary", "file-history-snapshot", "system", "queue-operation", "progress"})


def owns(line: dict[str, Any]) -> bool:
    """Whether ``line`` has Claude Code's shape (a top-level ``sessionId``, or a title/snapshot line)."""
    kind = line.get("type")
    return isinstance(line.get("sessionId"), str) or (kind == "summary" and "leafUuid" in line) or (
        kind == "file-history-snapshot" and "snapshot" in line)


FORMAT = TranscriptFormat("claude-code", "a Claude Code transcript", owns)


def with_subagent_files(files: list[Path]) -> list[Path]:
    """``files`` with each main transcript's sub-agent files after it; internal compaction runs left out."""
    chosen: list[Path] = []
    for path in files:
        if internal_agent_file(path) or path in chosen:
            continue
        chosen.append(path)
        companions = path.with_suffix("") / "subagents"
        if path.suffix == ".jsonl" and companions.is_dir():
            chosen.extend(sorted(p for p in companions.glob("agent-*.jsonl")
                                 if p.is_file() and not internal_agent_file(p) and p not in files))
    return chosen


def internal_agent_file(path: Path) -> bool:
    """Whether ``path`` is one of Claude Code's internal compaction runs (``subagents/agent-acompact-*``).

    Never imported — not by ``memory import``, the hook or the watcher: its
    prompt is the conversation itself, not a turn of anyone's.
    """
    return path.parent.name == "subagents" and path.name.startswith("agent-acompact")


def import_claude_code(store: SessionStore, transcripts: list[TranscriptFile],
                       aliases: dict[str, str | None] | None = None) -> ImportResult:
    """Import Claude Code transcripts (already read and checked to be of this format).

    ``aliases`` (dropped line id → parent) carries dropped lines from earlier
    reads of a growing file; it is extended in place.
    """
    result = EMPTY_RESULT
    lines_by_session: dict[str, list[tuple[int, dict[str, Any]]]] = {}  # (file number, line)
    titles: dict[str, str] = {}
    for file_number, transcript in enumerate(transcripts):
        result = result + transcript.result()
        lines = [line for _, line in transcript.lines]
        session_of_uuid = {
            line["uuid"]: line["sessionId"]
            for line in lines
            if is_valid_id(line.get("uuid")) and is_valid_id(line.get("sessionId"))
        }
        unsorted: Counter = Counter()
        for line in lines:
            kind = line.get("type")
            if kind == "summary":
                session = session_of_uuid.get(line.get("leafUuid"))
                if session and isinstance(line.get("summary"), str):
                    titles[session] = line["summary"]  # trusted: its leaf is in this file
                unsorted[NOT_A_TURN] += 1
            elif line.get("uuid") in session_of_uuid and is_valid_id(line.get("sessionId")):
                lines_by_session.setdefault(line["sessionId"], []).append((file_number, line))
            else:
                unsorted[NOT_A_TURN if kind in NOT_A_TURN_TYPES else MISSING_ID if kind in TURN_TYPES
                         else UNKNOWN_TYPE] += 1
        result = result + ImportResult([], 0, dict(unsorted))
    for session_id, numbered in lines_by_session.items():
        tree = build_tree(session_id, numbered, store, aliases)
        tree.title = titles.get(session_id)
        spawners = {key: draft.id for draft in tree.drafts.values() for key in draft.metadata.get(SPAWNS_KEY, ())
                    if key not in _stored_spawns(store, session_id, draft.id)}
        result = result + write_tree(store, tree)
        if store.exists(session_id):
            adopt_subagents(store, session_id, spawners)
            abandon_rewound(store, session_id)
    return result


def _stored_spawns(store: SessionStore, session_id: str, node_id: str) -> list[str]:
    """The prompt digests a stored node's calls started (none when it is not stored yet)."""
    if not store.has_node(session_id, node_id):
        return []
    return list(store.get_node(session_id, node_id).metadata.get(SPAWNS_KEY, ()))


def prompt_key(prompt: str) -> str:
    """The digest a sub-agent's prompt is matched by: its spawning node's ``spawns`` hold it."""
    return hashlib.sha1(prompt.strip().encode("utf-8")).hexdigest()[:16]


def adopt_subagents(store: SessionStore, session_id: str, spawners: dict[str, str]) -> None:
    """Hang each sub-agent branch stored before its call (a root) from the node now holding that call.

    ``spawners`` maps :func:`prompt_key` to the id of a node that holds the
    call since this import (added, or grown by the call's line). The root
    is reattached as any line imported before its parent is
    (:meth:`SessionStore.reattach_detached`). Reads ``index.jsonl`` and the
    root nodes, only when a call arrived.
    """
    if not spawners:
        return
    roots = [store.get_node(session_id, node_id)
             for node_id, parent in store.parent_map(session_id).items() if parent is None]
    orphans = [replace(root, metadata={**root.metadata, DETACHED_FROM_KEY: spawners[prompt_key(root.content)]})
               for root in roots if root.metadata.get("kind") == "subagent_prompt"
               and prompt_key(root.content) in spawners and not root.metadata.get(DETACHED_FROM_KEY)]
    if orphans:
        store.refresh_nodes(session_id, orphans)
        store.reattach_detached(session_id)


def abandon_rewound(store: SessionStore, session_id: str) -> None:
    """A rewind in Claude Code leaves the old branch in the file: rewind it here as ``session rewind`` would.

    Every main-conversation leaf but head is abandoned back to the head
    branch (rewound; superseded where already written). A sub-agent
    (sidechain) branch follows the turn that spawned it: abandoned only when
    that turn was. Reads ``index.jsonl`` and one node per leaf; writes nothing
    when every other branch is already rewound (re-import touches nothing).
    """
    head = store.head(session_id)
    parents = store.parent_map(session_id)
    has_child = {parent for parent in parents.values() if parent is not None}
    leaves = [store.get_node(session_id, node_id) for node_id in parents
              if node_id not in has_child and node_id != head]
    for leaf in [n for n in leaves if not n.rewound and not n.metadata.get("sidechain")]:
        store.abandon_branch(session_id, leaf.id)
    for leaf in [n for n in leaves if not n.rewound and n.metadata.get("sidechain")]:
        spawner = next((n for n in store.walk_back(session_id, leaf.id) if not n.metadata.get("sidechain")), None)
        if spawner is not None and spawner.rewound:
            store.abandon_branch(session_id, leaf.id)


def _line_quality(line: dict[str, Any]) -> int:
    """How complete a line is, to choose between two lines with one uuid."""
    content = _content(line)
    score = 4 if isinstance(content, (str, list)) else 0
    if isinstance(content, list) and all(isinstance(block, dict) for block in content):
        score += 1
    if safe_time(line.get("timestamp"), "") and is_valid_id(line.get("sessionId")):
        score += 2
    return score


def _lane(line: dict[str, Any]) -> str:
    """Which conversation a line continues: the main one, or one sub-agent's."""
    return f"sidechain:{line.get('agentId') or ''}" if line.get("isSidechain") else "main"


def build_tree(session_id: str, numbered: list[tuple[int, dict[str, Any]]],
               store: SessionStore | None = None, aliases: dict[str, str | None] | None = None) -> TranscriptTree:
    """The draft tree of one session's ``(file number, line)`` pairs, in transcript order.

    File order links lines of one file only: a session spread over several
    files (a sub-agent's own file) never chains one file's first line to
    another file's last. ``aliases`` as for :func:`import_claude_code`.
    """
    tree = TranscriptTree(session_id, SOURCE, store, aliases)
    numbered, duplicates = keep_well_formed(numbered, lambda pair: pair[1]["uuid"],
                                            lambda pair: _line_quality(pair[1]))
    tree.skipped[DUPLICATE_ID] += duplicates
    tree.line_ids = {line["uuid"] for _, line in numbered}
    line_by_uuid: dict[str, dict[str, Any]] = {}
    group_of: dict[str, str] = {}  # assistant line uuid → its message's node id
    spawn_node_by_prompt: dict[str, str] = {}
    pieces: dict[str, tuple[list[str], list[str]]] = {}  # assistant node id → (texts, tool calls)
    sidechain_roots: list[DraftNode] = []
    previous: dict[tuple[int, str], str] = {}  # (file, lane) → the uuid of its last line so far
    clock = now_iso()
    for file_number, line in numbered:
        uuid = line["uuid"]
        raw_parent = line.get("parentUuid") or line.get("logicalParentUuid")
        lane = (file_number, _lane(line))
        clock = safe_time(line.get("timestamp"), clock)
        kind = line.get("type")
        starts_sidechain = line.get("isSidechain") and kind == "user" and not tree.knows(raw_parent) and (
            lane not in previous or _user_text(line).strip() in spawn_node_by_prompt)
        parent = None if starts_sidechain else tree.parent_for(raw_parent, previous.get(lane))
        previous[lane] = uuid
        if kind in TURN_TYPES and not isinstance(_content(line), (str, list)):
            tree.drop(uuid, parent, MALFORMED_LINE)
        elif kind == "assistant":
            before = line_by_uuid.get(parent) if parent else None
            if before is not None and before.get("type") == "assistant" and parent in group_of and (
                _message_id(before) is not None and _message_id(before) == _message_id(line)
            ):
                group_of[uuid] = group_of[parent]
                tree.drafts[group_of[uuid]].may_grow = True
                _extend_assistant(tree.drafts[group_of[uuid]], line, clock, pieces)
                tree.drop(uuid, group_of[uuid])  # folded into its message's node: not skipped
            else:
                group_of[uuid] = uuid
                draft = tree.add(_new_draft(uuid, parent, "assistant", clock, line))
                _extend_assistant(draft, line, clock, pieces)
            for prompt in _spawn_prompts(line):
                spawn_node_by_prompt.setdefault(prompt, group_of[uuid])
                spawns = tree.drafts[group_of[uuid]].metadata.setdefault(SPAWNS_KEY, [])
                if prompt_key(prompt) not in spawns:
                    spawns.append(prompt_key(prompt))
        elif kind == "user":
            draft = tree.add(_user_draft(uuid, parent, clock, line))
            if starts_sidechain:
                sidechain_roots.append(draft)
        elif kind == "system" and line.get("subtype") == "compact_boundary":
            draft = tree.add(_new_draft(uuid, parent, "system", clock, line))
            draft.content = str(line.get("content") or "Conversation compacted")
            draft.metadata["kind"] = "compact_boundary"
            if isinstance(line.get("compactMetadata"), dict):
                draft.metadata["compact"] = line["compactMetadata"]
        else:
            tree.drop(uuid, parent, NOT_A_TURN if kind in NOT_A_TURN_TYPES else UNKNOWN_TYPE)
        if uuid in tree.drafts and raw_parent is not None and parent != raw_parent and not starts_sidechain:
            tree.drafts[uuid].metadata.setdefault("detached_from", raw_parent)
        line_by_uuid.setdefault(uuid, line)
    for node_id, (texts, calls) in pieces.items():
        _finish_assistant(tree.drafts[node_id], texts, calls)
    for root in sidechain_roots:  # attach each sub-agent branch to the call that started it
        root.parent = spawn_node_by_prompt.get(root.content.strip()) or _stored_spawner(tree, root)
    return tree


def _stored_spawner(tree: TranscriptTree, root: DraftNode) -> str | None:
    """The stored node whose call started the sub-agent ``root`` prompts (a sub-agent's file read on its own).

    Searched back from head (the call is on the conversation's branch, most
    often its last turn); None when the store holds no such call, or
    ``root`` is stored already (its place is kept).
    """
    store = tree.store
    if store is None or not store.exists(tree.session_id) or store.has_node(tree.session_id, root.id):
        return None
    key = prompt_key(root.content)
    try:
        return next((node.id for node in store.walk_back(tree.session_id)
                     if key in node.metadata.get(SPAWNS_KEY, ())), None)
    except MemoryFailure:  # a damaged branch: the sub-agent stays a root rather than fail the import
        return None


def _message_id(line: dict[str, Any]) -> str | None:
    message = line.get("message")
    return message.get("id") if isinstance(message, dict) else None


def _content(line: dict[str, Any]) -> Any:
    message = line.get("message")
    return message.get("content") if isinstance(message, dict) else None


def _user_text(line: dict[str, Any]) -> str:
    return "\n\n".join(block_texts(_content(line)))


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
    text = _user_text(line)
    if "toolUseResult" in line:  # a tool's answer, even when its blocks are not tool_result blocks
        draft.role = "tool"
        draft.content = clip("[tool result] " + text)
        return draft
    draft.content = text
    if isinstance(content, list) and "image" in block_types(content):
        draft.metadata["images"] = sum(1 for b in content if isinstance(b, dict) and b.get("type") == "image")
    if line.get("isSidechain"):
        draft.metadata["kind"] = "subagent_prompt"
    elif line.get("isMeta"):
        draft.metadata["kind"] = "meta"
    elif line.get("isCompactSummary"):
        draft.metadata["kind"] = "compaction_summary"
    elif kind := injected_kind(text, INJECTED_KINDS):
        draft.metadata["kind"] = kind
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
    message = line.get("message")
    message = message if isinstance(message, dict) else {}
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
