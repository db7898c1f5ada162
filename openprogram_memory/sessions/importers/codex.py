"""codex rollout JSONL (``session_meta`` then ``response_item`` lines) → the store.

A rollout is linear: each kept line's parent is the previous kept line.
Lines carry no ids, so a node's id is derived from the thread id, the
line number and the line's timestamp (rollouts are append-only, so the
same line always gets the same id and re-import adds nothing).

``response_item`` messages are the conversation: ``user`` and
``assistant`` text (the user messages codex injects are runtime-scheduled:
``AGENTS.md``, environment context, skills and the like ``meta``, the
``<user_shell_command>`` echo ``local_command``, ``<turn_aborted>``
``interrupt``, the compaction hand-off "Another language model started to
solve this problem…" ``compaction_summary``; judged as Claude Code's, by
what is left once whole wrapper elements are out), ``developer``/``system``
messages become ``system`` nodes; function, custom, shell and web-search
tool calls and their outputs become ``tool`` nodes; ``compacted`` lines
become runtime-scheduled compaction summaries. Reasoning, ``event_msg``
(duplicates of the above), ``turn_context`` and ``session_meta`` lines are
skipped as ``not_a_turn`` (skip reasons: see ``common``).

Legacy rollouts. Older codex CLI versions wrote a bare session header
(``{"id", "timestamp"}``, sometimes ``instructions``/``git``) as the first
line, then the response items themselves, unwrapped, and ``{"record_type":
"state"}`` lines. :func:`modern` reads each such line as the
``session_meta``/``response_item``/``turn_context`` line it became, so both
shapes go through the same code. Their items carry no timestamps: every
turn gets the header's time and the line order keeps the conversation's;
ids derive from the thread id and line number as above, so they are stable.

Forks. codex records a fork's origin in the new rollout's first
``session_meta``: ``payload.forked_from_id`` is the parent thread, and the
fork's file starts with a copy of the parent's rollout items up to the
fork point (timestamps rewritten, so the copied lines get new derived
ids). When the parent thread is already in the store, the fork is imported
as a branch of the parent's store session: its leading lines that repeat
the parent's branch (same role, type and content, in order) map to the
parent's nodes (counted as ``fork_prefix``), and the fork's own turns hang
off the last shared node — so written markers on the shared prefix hold
and only the turns after the fork are written. Within one import, parents
are imported before their forks; an incremental import (``tail``) keeps
the prefix aliases between reads, so a fork read as it grows lands in the
same place. A fork whose parent is not in the store
(or shares nothing with it) is imported as its own session, with
``forked_from`` in its session metadata. Each store session lists the
codex threads it holds and their tips in ``metadata.codex_threads``.

Sub-agents. A thread spawned by another (``session_meta.payload.source =
{"subagent": {"thread_spawn": {"parent_thread_id": …}}}``) is a session of
its own, spawn-linked (``session new --parent-session/--parent-node``) to
the parent's turn it was started from: the node of the parent's branch its
copied history (when spawned with a fork of the context) ends on, else the
last parent turn not newer than the sub-agent's start. Its copied history
is not imported again (``fork_prefix``). Its user messages were written by
the parent agent and its answers go back to it, so they are kept as
runtime-scheduled ``subagent_prompt``/``subagent_report`` turns, like
Claude Code's sidechains: never the person's input. A sub-agent whose
parent thread is not in the store keeps ``spawned_from_thread`` in its
session metadata and no link. Review and compaction sub-agents
(``{"subagent": "review"}`` …) are plain sessions.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from ..store import Node, SessionStore, is_valid_id
from ..wrappers import COMPACTION_SUMMARY_STARTS, injected_kind
from ...timeutil import now_iso
from .common import (
    EMPTY_RESULT,
    FORK_PREFIX,
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
    render_tool_call,
    safe_time,
    write_tree,
)

SOURCE = "codex"
CONTEXT_PREFIXES = ("<environment_context>", "# AGENTS.md instructions", "<user_instructions>",
                    "<permissions instructions>")
# What an injected user message starts with once whole wrapper elements are out (see ``sessions.wrappers``).
INJECTED_KINDS = ((CONTEXT_PREFIXES, "meta"), (("<user_shell_command>",), "local_command"),
                  (("<turn_aborted>",), "interrupt"), (COMPACTION_SUMMARY_STARTS, "compaction_summary"))
TEXT_TYPES = ("input_text", "output_text", "text")
_IMAGE_TAG = re.compile(r"</?image(\s[^>]*)?>")
TOOL_CALLS = {"function_call": "arguments", "custom_tool_call": "input", "local_shell_call": "action",
              "web_search_call": "action"}
TOOL_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})
LINE_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
NOT_A_TURN_LINES = frozenset({"session_meta", "event_msg", "turn_context"})
NOT_A_TURN_ITEMS = frozenset({"reasoning", "ghost_snapshot"})
THREADS_KEY = "codex_threads"
# The response item types a legacy rollout wrote bare, one per line.
LEGACY_ITEMS = frozenset({"message", *NOT_A_TURN_ITEMS, *TOOL_CALLS, *TOOL_OUTPUTS})


def modern(line: dict[str, Any]) -> dict[str, Any]:
    """``line`` in today's rollout shape: a legacy rollout's line wrapped as the line type it became.

    The legacy session header becomes ``session_meta``, a bare response item
    ``response_item``, a ``record_type`` state line ``turn_context`` (runtime
    state, not a turn). Any other line (today's, or another format's: a pi
    ``message`` entry wraps its role in ``message``) is returned as it is.
    """
    if "record_type" in line:
        return {"type": "turn_context", "payload": line}
    kind = line.get("type")
    if kind in LEGACY_ITEMS and (kind != "message" or "role" in line):
        return {"type": "response_item", "payload": line}
    if kind is None and is_valid_id(line.get("id")) and isinstance(line.get("timestamp"), str):
        return {"type": "session_meta", "payload": line}
    return line


def owns(line: dict[str, Any]) -> bool:
    """Whether ``line`` has a codex rollout's shape (a known line type wrapping a ``payload`` object),
    today's or a legacy rollout's (:func:`modern`)."""
    line = modern(line)
    return line.get("type") in LINE_TYPES and isinstance(line.get("payload"), dict)


FORMAT = TranscriptFormat("codex", "a codex rollout", owns)


def import_codex(store: SessionStore, transcripts: list[TranscriptFile],
                 aliases: dict[str, str | None] | None = None) -> ImportResult:
    """Import codex rollouts (already read and checked to be of this format), parents before forks.

    ``aliases`` carries the lines of a growing fork found to repeat its parent in earlier reads.
    """
    result = EMPTY_RESULT
    for transcript in parents_first(transcripts):
        tree, thread_id, tip, spawn = build_tree(transcript, store, aliases)
        result = result + transcript.result() + write_tree(store, tree)
        if spawn is not None and store.exists(tree.session_id) and store.parent_link(tree.session_id) != {
                "session": spawn[0], "node": spawn[1]}:
            store.link_spawn(tree.session_id, *spawn)
        if tip is not None and store.exists(tree.session_id):
            threads = _threads(store, tree.session_id)
            if threads.get(thread_id) != tip:
                store.set_session_metadata(tree.session_id, {THREADS_KEY: {**threads, thread_id: tip}})
    return result


def _lines(transcript: TranscriptFile) -> list[tuple[int, dict[str, Any]]]:
    """The rollout's lines with their numbers, each in today's shape (:func:`modern`)."""
    return [(number, modern(line)) for number, line in transcript.lines]


def _session_meta(transcript: TranscriptFile) -> dict[str, Any]:
    """The rollout's own ``session_meta`` payload: the first one (a fork also copies its parent's)."""
    return next((line["payload"] for _, line in _lines(transcript)
                 if line.get("type") == "session_meta" and isinstance(line.get("payload"), dict)), {})


def parents_first(transcripts: list[TranscriptFile]) -> list[TranscriptFile]:
    """``transcripts`` ordered so that a fork comes after its parent when both are given."""
    by_thread = {_session_meta(t).get("id"): t for t in transcripts}
    ordered: list[TranscriptFile] = []
    placed: set[int] = set()

    def place(transcript: TranscriptFile, seen: frozenset[int]) -> None:
        if id(transcript) in placed or id(transcript) in seen:  # seen: a cycle of forked_from ids
            return
        meta = _session_meta(transcript)
        parent = by_thread.get(meta.get("forked_from_id")) or by_thread.get(_spawned_by(meta))
        if parent is not None:
            place(parent, seen | {id(transcript)})
        placed.add(id(transcript))
        ordered.append(transcript)

    for transcript in transcripts:
        place(transcript, frozenset())
    return ordered


def _spawned_by(meta: dict[str, Any]) -> str | None:
    """The parent thread of a sub-agent spawned by another thread, from ``session_meta.source``."""
    source = meta.get("source")
    spawn = source.get("subagent") if isinstance(source, dict) else None
    spawn = spawn.get("thread_spawn") if isinstance(spawn, dict) else None
    parent = spawn.get("parent_thread_id") if isinstance(spawn, dict) else None
    return parent if is_valid_id(parent) else None


Spawn = tuple[str, str]  # (store session, node) a sub-agent was spawned from


def build_tree(transcript: TranscriptFile, store: SessionStore, aliases: dict[str, str | None] | None = None
               ) -> tuple[TranscriptTree, str, str | None, Spawn | None]:
    """One rollout's linear draft tree, its thread id, the id of its last kept line, and its spawn link.

    A fork whose parent thread is in the store is built into the parent's
    session, its shared prefix aliased to the parent's nodes. ``aliases``
    (kept by an incremental import between reads) remembers which lines
    were prefix, so a read that starts mid-file continues the match.
    """
    meta = _session_meta(transcript)
    thread_id = meta.get("id") if is_valid_id(meta.get("id")) else transcript.path.stem
    if not is_valid_id(thread_id):
        tree = TranscriptTree("-", SOURCE)
        tree.skipped[MISSING_ID] += len(transcript.lines)
        return tree, "-", None, None
    drafts, skipped = _drafts(transcript, thread_id, meta)
    if _spawned_by(meta) is not None:
        return _sub_agent_tree(transcript, store, aliases, thread_id, meta, drafts, skipped)
    forked_from = meta.get("forked_from_id") if is_valid_id(meta.get("forked_from_id")) else None
    host: str | None = None
    branch: list[Node] = []
    if forked_from is not None and not store.exists(thread_id):  # imported alone before: it stays alone
        host, branch = _parent_branch(store, forked_from)
    tree = TranscriptTree(host or thread_id, SOURCE, store, aliases)
    own = _link_fork(tree, drafts, branch) if host else drafts
    if host and drafts and len(own) == len(drafts) and thread_id not in _threads(store, host):
        host = None  # it repeats nothing of its parent: a conversation of its own
        tree = TranscriptTree(thread_id, SOURCE, store, aliases)
    tree.skipped.update(skipped)
    if forked_from and not host:
        tree.session_metadata["forked_from"] = forked_from
    previous: str | None = None
    for draft in drafts:
        if not host or draft in own:
            draft.parent = previous
            if host:
                draft.metadata.update(thread=thread_id, forked_from=forked_from)
            tree.add(draft)
        previous = draft.id
    return tree, thread_id, tree.resolve(previous), None


def _sub_agent_tree(transcript: TranscriptFile, store: SessionStore, aliases: dict[str, str | None] | None,
                    thread_id: str, meta: dict[str, Any], drafts: list[DraftNode], skipped: dict
                    ) -> tuple[TranscriptTree, str, str | None, Spawn | None]:
    """A spawned thread: its own session, its copied history skipped, linked to the parent's turn."""
    parent_thread = _spawned_by(meta)
    assert parent_thread is not None
    host, branch = _parent_branch(store, parent_thread)
    tree = TranscriptTree(thread_id, SOURCE, store, aliases)
    tree.skipped.update(skipped)
    own = _link_fork(tree, drafts, branch) if meta.get("forked_from_id") and branch else drafts
    copied = {tree.aliases[d.id] for d in drafts if d not in own and tree.aliases.get(d.id)}
    spawn: Spawn | None = None
    if host is not None:
        start = safe_time(meta.get("timestamp"), "")
        older = [node for node in branch if node.created_at <= start] if start else []
        node = next((n for n in reversed(branch) if n.id in copied), None) or (older or branch)[-1]
        spawn = (host, node.id)
    else:
        tree.session_metadata["spawned_from_thread"] = parent_thread
    previous: str | None = None
    for draft in drafts:
        if draft in own:
            draft.parent = previous if previous not in tree.aliases else None
            if draft.role in ("user", "assistant") and not draft.metadata.get("kind"):
                draft.metadata.update(kind="subagent_prompt" if draft.role == "user" else "subagent_report",
                                      scheduled=True)
            tree.add(draft)
        previous = draft.id
    return tree, thread_id, tree.resolve(previous), spawn


def _link_fork(tree: TranscriptTree, drafts: list[DraftNode], branch: list[Node]) -> list[DraftNode]:
    """Alias the fork's leading drafts that repeat ``branch`` (the parent's, root first); return the others.

    Matching goes in order and stops at the first difference: from there on
    every line is the fork's own. A draft aliased by an earlier read, or
    already stored as the fork's own node, says where an incremental read
    that starts mid-file stands.
    """
    position = {node.id: index for index, node in enumerate(branch)}
    at, diverged, own = -1, False, []
    for draft in drafts:
        earlier = tree.aliases.get(draft.id)
        if not diverged and earlier in position:
            at = position[earlier]
            tree.skipped[FORK_PREFIX] += 1
        elif not diverged and not tree.knows(draft.id) and at + 1 < len(branch) and _same_line(draft, branch[at + 1]):
            at += 1
            tree.drop(draft.id, branch[at].id, FORK_PREFIX)
        else:
            diverged = True
            own.append(draft)
    return own


def _same_line(draft: DraftNode, node: Node) -> bool:
    """Whether a fork's line repeats a parent's node (times are rewritten in the copy, so not compared)."""
    return (draft.role, draft.content, draft.metadata.get("type")) == (node.role, node.content,
                                                                        node.metadata.get("type"))


def _drafts(transcript: TranscriptFile, thread_id: str, meta: dict[str, Any]) -> tuple[list[DraftNode], dict]:
    """The rollout's kept lines as parentless drafts, and the other lines counted by reason."""
    skipped: dict[str, int] = {}
    drafts: list[DraftNode] = []
    clock = safe_time(meta.get("timestamp"), now_iso())
    for number, line in _lines(transcript):
        clock = safe_time(line.get("timestamp"), clock)
        outcome = _role_and_content(line)
        if isinstance(outcome, str):
            skipped[outcome] = skipped.get(outcome, 0) + 1
            continue
        role, content, metadata = outcome
        payload = line["payload"]
        digest = hashlib.sha1(f"{thread_id}\0{number}\0{line.get('timestamp')}".encode()).hexdigest()[:24]
        metadata.update(source=SOURCE, type=payload.get("type") or line.get("type"), line=number)
        if meta.get("cwd"):
            metadata["cwd"] = meta["cwd"]
        drafts.append(DraftNode(f"codex-{digest}", None, role, content, clock, clock, metadata))
    return drafts, skipped


def _parent_branch(store: SessionStore, parent_thread: str) -> tuple[str | None, list[Node]]:
    """The store session holding ``parent_thread`` and that thread's branch (root first), or ``(None, [])``."""
    host, tip = _thread_home(store, parent_thread)
    if host is None or tip is None:
        return None, []
    return host, list(reversed(list(store.walk_back(host, tip))))


def _threads(store: SessionStore, session_id: str) -> dict[str, str]:
    """``{codex thread id: tip node}`` of the threads a store session holds."""
    return dict(store.session_info(session_id).metadata.get(THREADS_KEY) or {}) if store.exists(session_id) else {}


def _thread_home(store: SessionStore, thread_id: str) -> tuple[str | None, str | None]:
    """``(store session, tip node)`` of an imported codex thread, or ``(None, None)``."""
    if store.exists(thread_id):
        info = store.session_info(thread_id)
        tip = (info.metadata.get(THREADS_KEY) or {}).get(thread_id) or info.head  # imports before threads were listed
        return thread_id, tip
    for info in store.list_sessions():  # a fork of a fork lives in its first ancestor's session
        tip = (info.metadata.get(THREADS_KEY) or {}).get(thread_id)
        if tip is not None:
            return info.session, tip
    return None, None


def _role_and_content(line: dict[str, Any]) -> tuple[str, str, dict[str, Any]] | str:
    """``(role, content, metadata)`` of a kept line, or the reason the line is skipped."""
    line_type = line.get("type")
    payload = line.get("payload")
    if line_type not in LINE_TYPES:
        return UNKNOWN_TYPE
    if not isinstance(payload, dict):
        return MALFORMED_LINE
    if line_type in NOT_A_TURN_LINES:
        return NOT_A_TURN
    if line_type == "compacted":
        text = str(payload.get("message") or "")
        return "system", text, {"kind": "compaction_summary", "scheduled": True}
    item_type = payload.get("type")
    if item_type == "message":
        texts = [t for t in block_texts(payload.get("content"), TEXT_TYPES) if not _IMAGE_TAG.fullmatch(t.strip())]
        text = "\n\n".join(texts)
        role = payload.get("role")
        if role in ("developer", "system"):
            return "system", text, {"kind": "meta"}
        if role == "user":
            kind = injected_kind(text, INJECTED_KINDS)
            return "user", text, ({"kind": kind} if kind else {})
        if role == "assistant":
            return "assistant", text, {}
        return UNKNOWN_TYPE
    if item_type in TOOL_CALLS:
        name = payload.get("name") or item_type
        return "tool", render_tool_call(name, payload.get(TOOL_CALLS[item_type])), {"tool_uses": [str(name)]}
    if item_type in TOOL_OUTPUTS:
        output = payload.get("output")
        text = output if isinstance(output, str) else "\n".join(block_texts(output, TEXT_TYPES))
        return "tool", clip("[tool result] " + text), {}
    return NOT_A_TURN if item_type in NOT_A_TURN_ITEMS else UNKNOWN_TYPE
