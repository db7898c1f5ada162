"""File tools a model writer uses on the staging copy (design §10, "direct file edit").

The tools only ever touch ``topics/**/*.md`` of the :class:`Staging` copy:
every path goes through ``check_topic_path`` inside ``Staging``, so
``sources/x.md`` is READ_ONLY_PATH and ``../x.md`` PATH_OUTSIDE_WORKSPACE.
Such failures, like a non-unique ``old_str``, are *tool errors*: they come
back to the model as ``is_error`` text it can act on, and never end the run.

Nothing here is specific to one provider: :data:`TOOLS` is a list of
name/description/JSON-schema entries (the Messages API's ``tools`` shape,
which other providers' function-calling schemas map onto one to one), and
:func:`run_tool` is a plain dispatcher. ``commit_edits`` does nothing to the
files — it tells the backend that the model is done; the pipeline then
normalizes, validates and installs.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Callable

from ..failures import FailureCode, MemoryFailure

if TYPE_CHECKING:
    from ..transaction.staging import Staging
    from ..memory import MemoryWorkspace
    from .backend import WriterRequest

COMMIT_TOOL = "commit_edits"
GREP_MAX_MATCHES = 200
GREP_MAX_LINE = 300

_PATH = {"type": "string", "description": "Topic path, e.g. topics/projects/atlas.md (the topics/ prefix may be omitted)."}

TOOLS: list[dict[str, Any]] = [
    {
        "name": "list_topics",
        "description": "List every topic file as it stands in this edit, one path per line.",
        "input_schema": {"type": "object", "properties": {}},
    },
    {
        "name": "read_topic",
        "description": "Return the full Markdown text of one topic file.",
        "input_schema": {"type": "object", "properties": {"path": _PATH}, "required": ["path"]},
    },
    {
        "name": "write_topic",
        "description": (
            "Create a topic file or replace its whole content. Keep every existing ^block-id of records "
            "you keep; new records get no ^id (the runtime assigns them)."
        ),
        "input_schema": {
            "type": "object",
            "properties": {"path": _PATH, "content": {"type": "string", "description": "The complete new file text."}},
            "required": ["path", "content"],
        },
    },
    {
        "name": "edit_topic",
        "description": (
            "Replace one exact passage of a topic file. old_str must occur exactly once in the file "
            "(add surrounding lines to make it unique); new_str replaces it."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "path": _PATH,
                "old_str": {"type": "string", "description": "Exact text to replace; must occur exactly once."},
                "new_str": {"type": "string", "description": "Replacement text (may be empty to remove the passage)."},
            },
            "required": ["path", "old_str", "new_str"],
        },
    },
    {
        "name": "move_topic",
        "description": "Rename a topic file. Block IDs travel with the text; fix links that pointed at the old path.",
        "input_schema": {
            "type": "object",
            "properties": {"src": _PATH, "dst": _PATH},
            "required": ["src", "dst"],
        },
    },
    {
        "name": "delete_topic",
        "description": "Delete a topic file. Remove every link to its records from other topics in the same edit.",
        "input_schema": {"type": "object", "properties": {"path": _PATH}, "required": ["path"]},
    },
    {
        "name": "grep_topics",
        "description": (
            f"Search all topic files with a Python regular expression; returns path:line: text, "
            f"at most {GREP_MAX_MATCHES} matches."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression (Python syntax)."},
                "ignore_case": {"type": "boolean", "description": "Match case-insensitively (default false)."},
            },
            "required": ["pattern"],
        },
    },
    {
        "name": COMMIT_TOOL,
        "description": (
            "Finish: hand your edits to the runtime, which assigns IDs, resolves [keyword](source id) "
            "links, validates and installs them. Call it exactly once, last. When you read every turn and "
            "nothing in the batch is worth recording, change nothing and call it with nothing_durable=true."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "nothing_durable": {
                    "type": "boolean",
                    "description": "true: you reviewed the whole batch and it holds nothing durable (no edits made).",
                },
            },
        },
    },
]

_SOURCES = {
    "type": "array",
    "description": "Every source the record rests on after the change: {source: a batch source id, label: keyword}.",
    "items": {"type": "object", "properties": {"source": {"type": "string"}, "label": {"type": "string"}},
              "required": ["source", "label"]},
}

# Offered only when a pass reconsiders records from an abandoned branch (writer/superseded.py):
# structured changes name a record by block ID, so the model cannot lose one by rewriting a file.
RECORD_TOOLS: list[dict[str, Any]] = [
    {
        "name": "update_record",
        "description": (
            "Rewrite one record in place by its block ID (it keeps its ^id and place). content is the new "
            "paragraph text without citation or ^id; sources replace the record's evidence."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "memory_id": {"type": "string", "description": "Block ID of the record, without ^."},
                "content": {"type": "string"},
                "time": {"type": "string", "description": "YYYY, YYYY-MM, YYYY-MM-DD or undated."},
                "sources": _SOURCES,
            },
            "required": ["memory_id", "content", "sources"],
        },
    },
    {
        "name": "delete_record",
        "description": "Delete one record by its block ID, with its unused evidence. Links to it must go too.",
        "input_schema": {
            "type": "object",
            "properties": {"memory_id": {"type": "string", "description": "Block ID of the record, without ^."}},
            "required": ["memory_id"],
        },
    },
]

TOOL_NAMES = frozenset(tool["name"] for tool in TOOLS + RECORD_TOOLS)


def tools_for(request: "WriterRequest") -> list[dict[str, Any]]:
    """The tools of one run: the file tools, plus the record tools when records are reconsidered."""
    return TOOLS[:-1] + RECORD_TOOLS + TOOLS[-1:] if request.superseded else TOOLS


def record_change(staging: "Staging", ws: "MemoryWorkspace | None", change: dict[str, Any]) -> str:
    """Apply one structured ``update_record``/``delete_record`` to the staging copy."""
    from ..transaction.structured import TopicEditor, parse_request

    if ws is None:
        raise ValueError(f"{change['op']} is not available in this run")
    request = parse_request([change])
    TopicEditor(staging, ws.cache.snapshot(), ws).apply(request)
    return f"{change['op']} ^{str(change.get('memory_id', '')).lstrip('^')}: done"


def _record_op(op: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    change: dict[str, Any] = {"op": op, "memory_id": _text(tool_input, "memory_id").lstrip("^")}
    if op == "update_record":
        change.update(content=_text(tool_input, "content"), time=tool_input.get("time"),
                      sources=tool_input.get("sources"))
    return change


def _text(tool_input: dict[str, Any], key: str, *, allow_empty: bool = False) -> str:
    value = tool_input.get(key)
    if not isinstance(value, str):
        raise ValueError(f"missing or non-text argument {key!r}")
    if not allow_empty and not value:
        raise ValueError(f"argument {key!r} must not be empty")
    return value


def list_topics(staging: "Staging") -> str:
    """Every topic path of the edit, one per line."""
    paths = staging.list_topics()
    return "\n".join(paths) if paths else "(no topic files yet)"


def read_topic(staging: "Staging", path: str) -> str:
    """The text of one topic."""
    return staging.read(path)


def write_topic(staging: "Staging", path: str, content: str) -> str:
    """Create or replace a topic file."""
    rel = staging.write(path, content)
    return f"wrote {rel} ({len(content.encode('utf-8'))} bytes)"


def edit_topic(staging: "Staging", path: str, old_str: str, new_str: str) -> str:
    """Replace the single occurrence of ``old_str``; ValueError if it is not unique."""
    text = staging.read(path)
    count = text.count(old_str)
    if count == 0:
        raise ValueError(f"old_str does not occur in {path}; read the file and copy the passage exactly")
    if count > 1:
        raise ValueError(f"old_str occurs {count} times in {path}; include more surrounding text so it is unique")
    rel = staging.write(path, text.replace(old_str, new_str, 1))
    return f"edited {rel}"


def move_topic(staging: "Staging", src: str, dst: str) -> str:
    """Rename a topic file."""
    rel = staging.move(src, dst)
    return f"moved {src} -> {rel}"


def delete_topic(staging: "Staging", path: str) -> str:
    """Delete a topic file."""
    rel = staging.delete(path)
    return f"deleted {rel}"


def grep_topics(staging: "Staging", pattern: str, ignore_case: bool = False) -> str:
    """``path:line: text`` for every matching line, capped at GREP_MAX_MATCHES."""
    regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    hits: list[str] = []
    for rel in staging.list_topics():
        for number, line in enumerate(staging.read(rel).splitlines(), start=1):
            if regex.search(line):
                if len(hits) == GREP_MAX_MATCHES:
                    hits.append(f"… more than {GREP_MAX_MATCHES} matches; narrow the pattern")
                    return "\n".join(hits)
                shown = line if len(line) <= GREP_MAX_LINE else line[:GREP_MAX_LINE] + "…"
                hits.append(f"{rel}:{number}: {shown}")
    return "\n".join(hits) if hits else "no matches"


_DISPATCH: dict[str, Callable[["Staging", dict[str, Any]], str]] = {
    "list_topics": lambda s, i: list_topics(s),
    "read_topic": lambda s, i: read_topic(s, _text(i, "path")),
    "write_topic": lambda s, i: write_topic(s, _text(i, "path"), _text(i, "content", allow_empty=True)),
    "edit_topic": lambda s, i: edit_topic(s, _text(i, "path"), _text(i, "old_str"), _text(i, "new_str", allow_empty=True)),
    "move_topic": lambda s, i: move_topic(s, _text(i, "src"), _text(i, "dst")),
    "delete_topic": lambda s, i: delete_topic(s, _text(i, "path")),
    "grep_topics": lambda s, i: grep_topics(s, _text(i, "pattern"), bool(i.get("ignore_case", False))),
    COMMIT_TOOL: lambda s, i: "edits handed to the runtime for validation",
}


def run_tool(staging: "Staging", name: str, tool_input: Any, ws: "MemoryWorkspace | None" = None) -> tuple[str, bool]:
    """Run one tool call; return ``(result text, is_error)``; record tools need ``ws``.

    MemoryFailure, ValueError and bad regular expressions become error text
    (``CODE: message``) for the model; anything else is a bug and propagates.
    """
    handler = _DISPATCH.get(name)
    if handler is None and name in ("update_record", "delete_record"):
        handler = lambda s, i: record_change(s, ws, _record_op(name, i))  # noqa: E731
    if handler is None:
        return f"{FailureCode.INVALID_ARGUMENT.value}: unknown tool {name!r}; use one of {', '.join(sorted(TOOL_NAMES))}", True
    if not isinstance(tool_input, dict):
        return f"{FailureCode.INVALID_ARGUMENT.value}: tool input must be a JSON object", True
    try:
        return handler(staging, tool_input), False
    except MemoryFailure as failure:
        return f"{failure.code.value}: {failure.message}", True
    except (ValueError, re.error) as exc:
        return f"{FailureCode.INVALID_ARGUMENT.value}: {exc}", True
