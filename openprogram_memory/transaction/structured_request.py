"""Parsing and validating a structured ``memory_changes`` request and its sources.

The whole request is checked here, before any workspace access; a failure
names the offending ``changes[i]`` (see :mod:`.structured` for the format).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Mapping

from ..failures import FailureCode, MemoryFailure
from ..sources.archive import SourceMessage, make_source_id, split_source_id
from ..topics.model import DEFINITION_RE, FENCE_RE, HEADING_RE
from ..topics.normalize import valid_time
from ..workspace.layout import check_topic_path

MAX_CHANGES = 64
MAX_SOURCES = 64
MAX_SOURCE_BYTES = 256 * 1024
MAX_CHANGES_BYTES = 512 * 1024
MAX_HEADINGS = 6
POSITIONS = ("start", "end", "before", "after")
NEW_SOURCE_PREFIX = "new-source-"
API_PROVIDER = "openprogram"
# + "-YYYY-MM-DD-<h>": per day of observed_at, in 16 shards by the first hex digit of the message's content hash
# (a busy agent writing thousands of sources a day grows 16 files, each a sixteenth; a source keeps its id)
API_THREAD = "api"
SOURCE_ROLES = ("user", "assistant")
SOURCE_KEYS = frozenset({"label", "role", "content", "observed_at"})

CREATE, UPDATE, DELETE, MOVE, MERGE = "create_record", "update_record", "delete_record", "move_records", "merge_records"
_OP_ALIASES = {"create": CREATE, "update": UPDATE, "delete": DELETE, "move": MOVE}
_BLOCK_ID_TOKEN_RE = re.compile(r"(?:^|\s)\^[A-Za-z0-9][A-Za-z0-9_-]*")


# -- the request ---------------------------------------------------------
@dataclass(frozen=True)
class Destination:
    """Where records go: a topic, a heading chain and a position in it."""

    topic: str
    headings: tuple[str, ...] = ()
    position: str = "end"
    anchor: str | None = None


@dataclass(frozen=True)
class SourceRef:
    """One cited source: an archived id or a ``new-source-*`` label, and its link text."""

    source: str
    label: str


@dataclass(frozen=True)
class Op:
    """One validated operation; ``index`` is its place in ``memory_changes``."""

    index: int
    kind: str
    memory_id: str | None = None
    memory_ids: tuple[str, ...] = ()
    content: str | None = None
    time: str = "undated"
    sources: tuple[SourceRef, ...] = ()
    destination: Destination | None = None


@dataclass
class Request:
    """A validated request: operations plus the sources it declares."""

    ops: list[Op]
    new_sources: dict[str, SourceMessage] = field(default_factory=dict)


def invalid_request(message: str, index: int | None = None, code: FailureCode = FailureCode.INVALID_ARGUMENT,
                    **details: Any) -> MemoryFailure:
    """A failure for the request, naming ``changes[index]`` when one change is at fault."""
    prefix = f"changes[{index}]: " if index is not None else ""
    if index is not None:
        details.setdefault("change", index)
    return MemoryFailure(code, prefix + message, details=details)


def parse_request(memory_changes: Any, sources: Any = None, *, internal: bool = False) -> Request:
    """Validate a ``memory_changes`` request whole; no workspace access.

    ``internal`` (the organizer) allows ``merge_records``, an empty list
    and several moves of one ID; public callers get none of these.
    Raises INVALID_ARGUMENT (naming ``changes[i]``) or MISSING_SOURCE.
    """
    if not isinstance(memory_changes, list) or (not memory_changes and not internal):
        raise invalid_request("memory_changes must be a non-empty list of operations")
    if len(memory_changes) > MAX_CHANGES and not internal:
        raise invalid_request(f"at most {MAX_CHANGES} memory_changes per call (got {len(memory_changes)})")
    size = len(json.dumps(memory_changes, ensure_ascii=False, default=str).encode("utf-8"))
    if size > MAX_CHANGES_BYTES and not internal:
        raise invalid_request(f"memory_changes exceed {MAX_CHANGES_BYTES // 1024} kB ({size} bytes)")
    new_sources = parse_new_sources(sources)
    ops = [_parse_op(index, change, new_sources, internal) for index, change in enumerate(memory_changes)]
    _check_per_id(ops, internal)
    return Request(ops, new_sources)


def _source_fields(item: Any, where: str, declared: Mapping[str, Any]) -> tuple[str, str, str]:
    """``(label, role, content)`` of one declared source, each checked."""
    if not isinstance(item, dict):
        raise invalid_request(f"{where} must be an object {{label, role, content, observed_at}}")
    extra = sorted(set(item) - SOURCE_KEYS)
    if extra:
        raise invalid_request(f"{where}: unknown key(s) {', '.join(extra)}; callers cannot supply provenance, "
                              "trust state or owner identity (allowed: label, role, content, observed_at)")
    label = item.get("label")
    if not isinstance(label, str) or not label.startswith(NEW_SOURCE_PREFIX) or label == NEW_SOURCE_PREFIX:
        raise invalid_request(f"{where}: label must be a string starting with {NEW_SOURCE_PREFIX!r}")
    if label in declared:
        raise invalid_request(f"{where}: label {label!r} is declared twice")
    role = item.get("role", "user")
    if role not in SOURCE_ROLES:
        raise invalid_request(f"{where}: role must be one of {', '.join(SOURCE_ROLES)}")
    content = item.get("content")
    if not isinstance(content, str) or not content.strip():
        raise invalid_request(f"{where}: content must be non-empty text")
    if "\x00" in content:
        raise invalid_request(f"{where}: content contains a NUL byte")
    return label, role, content


def parse_new_sources(sources: Any) -> dict[str, SourceMessage]:
    """``sources[{label: "new-source-x", role, content, observed_at}]`` → messages.

    Provenance is the runtime's: provider ``openprogram``, thread
    ``api-<day of observed_at>-<first hex of the content hash>`` (a full archive file goes on in ``…-p2``, …:
    the editor places each source), a message id from the content hash,
    speaker from ``role``, trust state ``trusted``. Any other key
    (provenance, trust, owner) is refused.
    """
    if sources is None:
        return {}
    if not isinstance(sources, list):
        raise invalid_request("sources must be a list of {label, role, content, observed_at}")
    if len(sources) > MAX_SOURCES:
        raise invalid_request(f"at most {MAX_SOURCES} sources per call (got {len(sources)})")
    out: dict[str, SourceMessage] = {}
    total = 0
    for index, item in enumerate(sources):
        where = f"sources[{index}]"
        label, role, content = _source_fields(item, where, out)
        total += len(content.encode("utf-8"))
        if total > MAX_SOURCE_BYTES:
            raise invalid_request(f"source text exceeds {MAX_SOURCE_BYTES // 1024} kB")
        observed = _observed_at(item.get("observed_at"), where)
        digest = hashlib.sha256(f"{role}\0{observed}\0{content}".encode("utf-8")).hexdigest()[:16]
        out[label] = SourceMessage(
            source_id=make_source_id(API_PROVIDER, f"{API_THREAD}-{_day(observed)}-{digest[0]}", "m-" + digest),
            speaker=role,
            speaker_id=f"api-{role}",
            timestamp=observed,
            text=content,
            trust_state="trusted",
            speaker_kind=role,
        )
    return out


def _day(observed: str) -> str:
    """``YYYY-MM-DD`` of an ISO 8601 timestamp already validated by :func:`_observed_at`, in its own offset."""
    return datetime.fromisoformat(observed.replace("Z", "+00:00")).date().isoformat()


def _observed_at(value: Any, where: str) -> str:
    if value is None:
        return datetime.now(timezone.utc).replace(microsecond=0).isoformat()
    if not isinstance(value, str):
        raise invalid_request(f"{where}: observed_at must be an ISO 8601 timestamp")
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise invalid_request(f"{where}: observed_at {value!r} is not an ISO 8601 timestamp") from None
    return value


def _parse_op(index: int, change: Any, new_sources: dict[str, SourceMessage], internal: bool) -> Op:
    if not isinstance(change, dict):
        raise invalid_request("each change must be an object with an 'op'", index)
    raw_kind = change.get("op", change.get("type", change.get("action")))
    kind = _OP_ALIASES.get(raw_kind, raw_kind) if isinstance(raw_kind, str) else raw_kind  # [] is unhashable
    allowed = (CREATE, UPDATE, DELETE, MOVE) + ((MERGE,) if internal else ())
    if raw_kind is None:  # "unknown op None" did not say which key was missing
        nested = [key for key in change if _OP_ALIASES.get(key, key) in allowed]
        hint = f'; write {{"op": "{nested[0]}", …its fields}}, not {{"{nested[0]}": {{…}}}}' if nested else ""
        raise invalid_request(f'no "op": each change is an object whose "op" is one of {", ".join(allowed)}, '
                              f"beside that op's fields{hint}", index)
    if kind not in allowed:
        raise invalid_request(f"unknown op {raw_kind!r}; use one of {', '.join(allowed)}", index)
    if kind == CREATE:
        if change.get("memory_id") is not None:
            raise invalid_request("create_record takes no memory_id; the runtime assigns block IDs", index)
        return Op(index, kind, content=_content(change.get("content"), index), time=_time(change, index),
                  sources=_sources(change, index, new_sources),
                  destination=_destination(change.get("destination"), index))
    if kind == UPDATE:
        return Op(index, kind, memory_id=_memory_id(change.get("memory_id"), index),
                  content=_content(change.get("content"), index), time=_time(change, index),
                  sources=_sources(change, index, new_sources))
    if kind == DELETE:
        return Op(index, kind, memory_id=_memory_id(change.get("memory_id"), index))
    ids = change.get("memory_ids")
    if not isinstance(ids, list) or not ids:
        raise invalid_request(f"{kind} needs a non-empty list memory_ids", index)
    memory_ids = tuple(_memory_id(i, index) for i in ids)
    if len(set(memory_ids)) != len(memory_ids):
        raise invalid_request(f"{kind}: memory_ids name an ID twice", index)
    if kind == MERGE:
        if len(memory_ids) < 2:
            raise invalid_request("merge_records needs the kept ID and at least one other", index)
        return Op(index, kind, memory_ids=memory_ids)
    return Op(index, kind, memory_ids=memory_ids, destination=_destination(change.get("destination"), index))


def _memory_id(value: Any, index: int) -> str:
    if not isinstance(value, str) or not value.strip().lstrip("^"):
        raise invalid_request("memory_id must be a block ID string", index)
    return value.strip().lstrip("^")


def _content(value: Any, index: int) -> str:
    """One paragraph of prose: no blank line, heading, code, footnote or ``^id``."""
    if not isinstance(value, str) or not value.strip():
        raise invalid_request("content must be non-empty text", index)
    text = value.replace("\r\n", "\n").replace("\r", "\n").strip()
    lines = text.split("\n")
    if any(not line.strip() for line in lines):
        raise invalid_request("content must be one paragraph (no blank line); use several create_record ops", index)
    if any(HEADING_RE.match(line) for line in lines):
        raise invalid_request("content must not contain a heading; use destination.headings", index)
    if any(FENCE_RE.match(line) for line in lines) or text.startswith("<!--"):
        raise invalid_request("content must be prose, not a code fence or HTML comment", index)
    if "[^" in text or any(DEFINITION_RE.match(line) for line in lines):
        raise invalid_request("content must not contain footnotes; give evidence in sources[]", index)
    if _BLOCK_ID_TOKEN_RE.search(text):
        raise invalid_request("content must not contain ^block-ids; the runtime assigns and keeps them", index)
    return text


def _time(change: dict, index: int) -> str:
    value = change.get("time")
    if value is None:
        return "undated"
    if not isinstance(value, str) or not valid_time(value.strip()):
        raise invalid_request(
            f"time must be YYYY, YYYY-MM, a real YYYY-MM-DD date, 'undated' or null (got {value!r})", index)
    return value.strip()


def _sources(change: dict, index: int, new_sources: dict[str, SourceMessage]) -> tuple[SourceRef, ...]:
    items = change.get("sources")
    legacy = change.get("source_refs")
    if items is not None and legacy is not None:
        raise invalid_request("give sources or the legacy source_refs, not both", index)
    refs = _legacy_refs(legacy, index) if legacy is not None else _source_refs(items, index)
    if not refs:
        raise invalid_request("a record needs at least one source", index)
    seen: set[str] = set()
    for ref in refs:
        if ref.source in seen:
            raise invalid_request(f"source {ref.source!r} is cited twice", index)
        seen.add(ref.source)
        if ref.source.startswith(NEW_SOURCE_PREFIX) and ref.source not in new_sources:
            raise invalid_request(f"{ref.source!r} is not declared in the request's top-level sources", index,
                                  FailureCode.MISSING_SOURCE)
    return tuple(refs)


def _legacy_refs(legacy: Any, index: int) -> list[SourceRef]:
    """``source_refs: [source id, …]`` (older callers): the id is its own label."""
    if not isinstance(legacy, list):
        raise invalid_request("source_refs must be a list of source ids", index)
    refs = []
    for ref in legacy:
        if not isinstance(ref, str) or not ref.strip():
            raise invalid_request("source_refs items must be non-empty strings", index)
        refs.append(SourceRef(_source_handle(ref.strip(), index), ref.strip()))
    return refs


def _source_refs(items: Any, index: int) -> list[SourceRef]:
    """``sources: [{source, label}, …]``."""
    if not isinstance(items, list):
        raise invalid_request("sources must be a non-empty list of {source, label}", index)
    refs = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("source"), str):
            raise invalid_request("sources items must be objects {source, label}", index)
        refs.append(SourceRef(_source_handle(item["source"].strip(), index), _label(item.get("label"), index)))
    return refs


def _source_handle(value: str, index: int) -> str:
    if value.startswith(NEW_SOURCE_PREFIX):
        return value
    value = value.removeprefix("source:")
    try:
        split_source_id(value)
    except MemoryFailure:
        raise invalid_request(f"source {value!r} is neither provider/thread/message nor a new-source-* label",
                              index) from None
    return value


def _label(value: Any, index: int) -> str:
    """Link text, kept verbatim; only Markdown structure is checked."""
    if not isinstance(value, str) or not value.strip():
        raise invalid_request("every source needs a label: a non-empty string", index)
    if any(ch in value for ch in "[]\n\r"):
        raise invalid_request(f"label {value!r} must not contain brackets or line breaks", index)
    return value


def _destination(value: Any, index: int) -> Destination:
    if not isinstance(value, dict):
        raise invalid_request("destination must be an object {topic_path, headings, position, anchor_memory_id}", index)
    raw_path = value.get("topic_path")
    if not isinstance(raw_path, str):
        raise invalid_request("destination.topic_path must be a string", index)
    try:
        topic = check_topic_path(raw_path)
    except MemoryFailure as failure:
        raise invalid_request(failure.message, index, failure.code) from None
    headings = value.get("headings") or []
    if not isinstance(headings, list) or len(headings) > MAX_HEADINGS:
        raise invalid_request(f"destination.headings must be a list of at most {MAX_HEADINGS} titles", index)
    titles = tuple(_heading_title(h, index) for h in headings)
    position = value.get("position", "end")
    if position not in POSITIONS:
        raise invalid_request(f"destination.position must be one of {', '.join(POSITIONS)}", index)
    anchor = value.get("anchor_memory_id")
    if position in ("before", "after"):
        if anchor is None:
            raise invalid_request(f"position {position!r} needs anchor_memory_id", index)
        anchor = _memory_id(anchor, index)
    elif anchor is not None:
        raise invalid_request("anchor_memory_id goes with position before or after only", index)
    return Destination(topic, titles, position, anchor)


def _heading_title(value: Any, index: int) -> str:
    if not isinstance(value, str) or not value.strip() or "\n" in value:
        raise invalid_request("heading titles must be non-empty single-line strings", index)
    title = value.strip()
    match = HEADING_RE.match("# " + title)
    if match is None or match.group(2) != title:
        raise invalid_request(f"heading title {title!r} cannot be written as a Markdown heading", index)
    return title


def _check_per_id(ops: list[Op], internal: bool) -> None:
    """At most one content op and one move per ID; never delete + move."""
    content: dict[str, int] = {}
    deleted: dict[str, int] = {}
    moves: dict[str, int] = {}
    for op in ops:
        if op.kind in (UPDATE, DELETE):
            memory_id = op.memory_id
            assert memory_id is not None  # updates and deletes always name their record
            earlier = content.get(memory_id)
            if earlier is not None:
                raise invalid_request(f"^{memory_id} already has a content op in changes[{earlier}]", op.index)
            content[memory_id] = op.index
            if op.kind == DELETE:
                deleted[memory_id] = op.index
        if op.kind == MOVE:
            for memory_id in op.memory_ids:
                earlier = moves.get(memory_id)
                if earlier is not None and not internal:
                    raise invalid_request(f"^{memory_id} is already moved by changes[{earlier}]", op.index)
                moves.setdefault(memory_id, op.index)
    for memory_id, index in sorted(moves.items(), key=lambda item: item[1]):
        if memory_id in deleted:
            raise invalid_request(f"^{memory_id} is both moved and deleted (changes[{deleted[memory_id]}]); "
                                  "delete and move cannot name the same ID", index)
