"""The five memory tools: their schemas and what a call answers.

Each answer is the JSON object the matching CLI verb prints with ``--json``
(``search``, ``get``, ``status``, ``core show``, ``apply``), so one contract
serves people, scripts and agents. A refused call raises
:class:`MemoryFailure` with a code of the closed enum; the server turns it
into a tool error. ``memory_update`` checks its arguments with the same
:func:`parse_update_request` as ``memory apply`` and ``POST
/api/memory/changes`` and runs the one transaction, ``MemoryWorkspace.update``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..config import MAX_TOP_K
from ..failures import FailureCode, MemoryFailure
from ..transaction.update_request import parse_update_request
from ..memory import CORE_JSON_KEYS
from .access import WorkspaceAccess


_OBJECT = {"type": "object"}
_UPDATE_PROPERTIES: dict[str, Any] = {
    "memory_changes": {
        "type": "array", "items": _OBJECT, "maxItems": 64,
        "description": "Structured ops: create_record {content, time, sources:[{source,label}], destination:"
                       "{topic_path, headings[], position: start|end|before|after, anchor_memory_id}}, "
                       "update_record {memory_id, content, time, sources}, delete_record {memory_id}, "
                       "move_records {memory_ids[], destination}.",
    },
    "changes": {
        "type": "array", "items": _OBJECT, "maxItems": 64,
        "description": "Whole-file changes [{path: topics/….md, action: write|delete, content}]. A write that "
                       "removes records needs base_revision.",
    },
    "patch": {"type": "string", "description": "A unified diff against topics/**.md."},
    "sources": {
        "type": "array", "items": _OBJECT, "maxItems": 64,
        "description": "New evidence cited as new-source-*: [{label: 'new-source-x', role: user|assistant, "
                       "content, observed_at}]. Goes with memory_changes only.",
    },
    "base_revision": {"type": "string",
                      "description": "Compare-and-set: refuse (CONCURRENT_UPDATE) if memory moved past this "
                                     "revision (from memory_status or a previous update)."},
    "commit_message": {"type": "string"},
}


@dataclass(frozen=True)
class ToolSpec:
    """One tool as listed to the client, and the function that answers it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool
    run: Callable[[WorkspaceAccess, dict[str, Any]], dict[str, Any]]


def _schema(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


def _check_keys(arguments: dict[str, Any], allowed: set[str]) -> None:
    unknown = sorted(set(arguments) - allowed)
    if unknown:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT,
                            f"unknown argument(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed)) or 'none'}")


def _string(arguments: dict[str, Any], key: str) -> str:
    value = arguments.get(key)
    if not isinstance(value, str) or not value.strip():
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"{key} must be a non-empty string")
    return value


def memory_search(access: WorkspaceAccess, arguments: dict[str, Any]) -> dict[str, Any]:
    """``{"results": [...]}``, the shape of ``memory search --json``."""
    from ..search import search

    _check_keys(arguments, {"query", "top_k", "include_pending"})
    query = _string(arguments, "query")
    ws = access.workspace()
    top_k = arguments.get("top_k", int(ws.settings["memory.retrieval.top_k"]))
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"top_k must be an integer from 1 to {MAX_TOP_K}, got {top_k!r}")
    include_pending = arguments.get("include_pending", False)
    if not isinstance(include_pending, bool):
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, "include_pending must be true or false")
    hits = search(ws.root, query, top_k, include_pending=include_pending)
    return {"results": [hit.to_json() for hit in hits]}


def memory_get(access: WorkspaceAccess, arguments: dict[str, Any]) -> dict[str, Any]:
    """The record, the shape of ``memory get --json``."""
    _check_keys(arguments, {"memory_id"})
    return access.workspace().get(_string(arguments, "memory_id").strip())


def memory_status(access: WorkspaceAccess, arguments: dict[str, Any]) -> dict[str, Any]:
    """The shape of ``memory status --json``."""
    _check_keys(arguments, set())
    return access.workspace().status()


def memory_core(access: WorkspaceAccess, arguments: dict[str, Any]) -> dict[str, Any]:
    """The shape of ``memory core show --json`` (without the CLI's ``view``)."""
    _check_keys(arguments, set())
    view = access.workspace().core_view()
    return {key: view[key] for key in CORE_JSON_KEYS}


def memory_update(access: WorkspaceAccess, arguments: dict[str, Any]) -> dict[str, Any]:
    """The shape of ``memory apply --json``; one transaction, all or nothing."""
    request = parse_update_request(arguments)  # refuse a malformed request before touching the workspace
    return access.workspace().update(**request).to_json()


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "memory_search",
        "Search long-term memory (BM25 over topic records). Returns {results:[{memory_id, topic, headings, "
        "content, score, sources, trust_state}]}, best first. Records citing unverified (pending) sources are "
        "left out unless include_pending is true.",
        _schema({"query": {"type": "string", "description": "Words to look for."},
                 "top_k": {"type": "integer", "minimum": 1, "maximum": MAX_TOP_K,
                           "description": "How many records (default: memory.retrieval.top_k)."},
                 "include_pending": {"type": "boolean", "default": False}}, ("query",)),
        True, memory_search),
    ToolSpec(
        "memory_get",
        "One record by block ID: {memory_id, topic, headings, content, time, sources, trust_state}. "
        "A deleted or unknown ID fails with MEMORY_NOT_FOUND.",
        _schema({"memory_id": {"type": "string", "description": "Block ID, with or without the leading ^."}},
                ("memory_id",)),
        True, memory_get),
    ToolSpec(
        "memory_status",
        "Workspace revision (use it as base_revision), topic and record counts, writer health, core budget.",
        _schema({}), True, memory_status),
    ToolSpec(
        "memory_core",
        "The core block injected into every session: canonical topics/core.md, rendered, effective "
        "(what is injected), inject switch, tokens, budget, excluded_block_ids.",
        _schema({}), True, memory_core),
    ToolSpec(
        "memory_update",
        "Change memory through the validated, git-versioned transaction. Give exactly one of memory_changes, "
        "changes or patch; optional sources, base_revision, commit_message. All or nothing: a refused request "
        "changes no file and fails with a code (INVALID_ARGUMENT, MISSING_SOURCE, MEMORY_NOT_FOUND, "
        "PATH_OUTSIDE_WORKSPACE, READ_ONLY_PATH, INVALID_TOPIC_FORMAT, PATCH_CONFLICT, CONCURRENT_UPDATE, …). "
        "Answers {ok, revision, changed_files, block_ids, evidence_ids, deleted_ids, memory_committed, "
        "git_committed}.",
        _schema(_UPDATE_PROPERTIES), False, memory_update),
)
TOOLS_BY_NAME = {tool.name: tool for tool in TOOLS}


def call_tool(access: WorkspaceAccess, name: str, arguments: Any) -> dict[str, Any]:
    """Answer one tool call; raises MemoryFailure for a refused or unknown call."""
    tool = TOOLS_BY_NAME.get(name)
    if tool is None:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT,
                            f"unknown tool {name!r}; the tools are {', '.join(TOOLS_BY_NAME)}")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"the arguments of {name} must be a JSON object, "
                                                          f"got {type(arguments).__name__} {arguments!r:.40}")
    return tool.run(access, arguments)
