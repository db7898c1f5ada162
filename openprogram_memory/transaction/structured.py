"""Structured ``memory_changes``: record operations rendered into topic Markdown.

SPEC §8 and design §10 (统一修改接口). A request is validated whole before
anything is touched — INVALID_ARGUMENT names the offending ``changes[i]`` —
and then ONE :func:`staged_edit` (policy STRUCTURED, ``allowed_deletes`` =
exactly the IDs the delete ops remove) applies the operations *in request
order* to the staging copy:

``create_record {content, time, sources, destination}``
    a new paragraph ``content[^e-…]`` at the destination; the runtime
    assigns its block ID (a caller-supplied ``memory_id`` is refused).
``update_record {memory_id, content, time, sources}``
    the paragraph keeps its block ID(s) and place; its text and evidence
    are replaced by the final values; evidence nobody cites any more goes.
``delete_record {memory_id}``
    removes the record and its unused evidence. An *alias* of a merged
    paragraph (any ID but the last) removes only that alias; deleting the
    identity removes the paragraph with all its IDs. A link still pointing
    at a deleted ID makes the engine reject the whole transaction.
``move_records {memory_ids, destination}``
    moves whole paragraphs (every ID of a merged paragraph, consecutively,
    in paragraph order), in exactly the given order, with their evidence;
    links pointing at moved records are rewritten to the new file.

``destination = {topic_path, headings[≤6], position: start|end|before|after,
anchor_memory_id}``: the heading chain is created when missing; ``start``
/``end`` place the records among the records directly under the chain;
``before``/``after`` need an anchor that sits under that chain and is not
itself moving. ``time`` is ``YYYY``, ``YYYY-MM``, a real ``YYYY-MM-DD``,
``undated`` or null (= undated). ``sources`` items are ``{source, label}``
where ``source`` is an archived ``provider/thread/message`` or a
``new-source-*`` label declared in the request's top-level ``sources``;
the label is kept verbatim as the link text. Legacy ``source_refs:
[string]`` is accepted (label = the string).

The organizer uses one more, internal operation (``merge_records``:
the first ID's paragraph absorbs the others as aliases and unions their
citations); public callers cannot use it.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable

from ..failures import FailureCode, MemoryFailure
from ..sources.archive import SourceMessage, archive_relpath_for, make_source_id, split_source_id
from ..topics.ids import evidence_id, source_anchor
from ..topics.model import (
    DEFINITION_RE,
    FENCE_RE,
    HEADING_RE,
    LINK_RE,
    RECORD_LINK_RE,
    Blank,
    Block,
    Definition,
    Heading,
    Paragraph,
    SourceLink,
    TopicDoc,
    parse_topic,
)
from ..topics.normalize import valid_time
from ..workspace.layout import check_topic_path
from ..workspace.state import RuntimeState
from ..workspace.tree import TreeState, resolve_relative
from .engine import Policy, TxResult, staged_edit
from .staging import Staging

if TYPE_CHECKING:
    from ..workspace.api import MemoryWorkspace

MAX_CHANGES = 64
MAX_SOURCES = 64
MAX_SOURCE_BYTES = 256 * 1024
MAX_CHANGES_BYTES = 512 * 1024
MAX_HEADINGS = 6
POSITIONS = ("start", "end", "before", "after")
NEW_SOURCE_PREFIX = "new-source-"
API_PROVIDER = "openprogram"
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


def _invalid(message: str, index: int | None = None, code: FailureCode = FailureCode.INVALID_ARGUMENT,
             **details: Any) -> MemoryFailure:
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
        raise _invalid("memory_changes must be a non-empty list of operations")
    if len(memory_changes) > MAX_CHANGES and not internal:
        raise _invalid(f"at most {MAX_CHANGES} memory_changes per call (got {len(memory_changes)})")
    size = len(json.dumps(memory_changes, ensure_ascii=False, default=str).encode("utf-8"))
    if size > MAX_CHANGES_BYTES and not internal:
        raise _invalid(f"memory_changes exceed {MAX_CHANGES_BYTES // 1024} kB ({size} bytes)")
    new_sources = parse_new_sources(sources)
    ops = [_parse_op(index, change, new_sources, internal) for index, change in enumerate(memory_changes)]
    _check_per_id(ops, internal)
    return Request(ops, new_sources)


def parse_new_sources(sources: Any) -> dict[str, SourceMessage]:
    """``sources[{label: "new-source-x", role, content, observed_at}]`` → messages.

    Provenance is the runtime's: provider ``openprogram``, thread ``api``, a
    message id from the content hash, speaker from ``role``, trust state
    ``trusted``. Any other key (provenance, trust, owner) is refused.
    """
    if sources is None:
        return {}
    if not isinstance(sources, list):
        raise _invalid("sources must be a list of {label, role, content, observed_at}")
    if len(sources) > MAX_SOURCES:
        raise _invalid(f"at most {MAX_SOURCES} sources per call (got {len(sources)})")
    out: dict[str, SourceMessage] = {}
    total = 0
    for index, item in enumerate(sources):
        where = f"sources[{index}]"
        if not isinstance(item, dict):
            raise _invalid(f"{where} must be an object {{label, role, content, observed_at}}")
        extra = sorted(set(item) - SOURCE_KEYS)
        if extra:
            raise _invalid(f"{where}: unknown key(s) {', '.join(extra)}; callers cannot supply provenance, "
                           "trust state or owner identity (allowed: label, role, content, observed_at)")
        label = item.get("label")
        if not isinstance(label, str) or not label.startswith(NEW_SOURCE_PREFIX) or label == NEW_SOURCE_PREFIX:
            raise _invalid(f"{where}: label must be a string starting with {NEW_SOURCE_PREFIX!r}")
        if label in out:
            raise _invalid(f"{where}: label {label!r} is declared twice")
        role = item.get("role", "user")
        if role not in SOURCE_ROLES:
            raise _invalid(f"{where}: role must be one of {', '.join(SOURCE_ROLES)}")
        content = item.get("content")
        if not isinstance(content, str) or not content.strip():
            raise _invalid(f"{where}: content must be non-empty text")
        total += len(content.encode("utf-8"))
        if total > MAX_SOURCE_BYTES:
            raise _invalid(f"source text exceeds {MAX_SOURCE_BYTES // 1024} kB")
        observed = _observed_at(item.get("observed_at"), where)
        digest = hashlib.sha256(f"{role}\0{observed}\0{content}".encode("utf-8")).hexdigest()[:16]
        out[label] = SourceMessage(
            source_id=make_source_id(API_PROVIDER, API_THREAD, "m-" + digest),
            speaker=role,
            speaker_id=f"api-{role}",
            timestamp=observed,
            text=content,
            trust_state="trusted",
            speaker_kind=role,
        )
    return out


def _observed_at(value: Any, where: str) -> str:
    if value is None:
        return datetime.now(timezone.utc).replace(microsecond=0).isoformat()
    if not isinstance(value, str):
        raise _invalid(f"{where}: observed_at must be an ISO 8601 timestamp")
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise _invalid(f"{where}: observed_at {value!r} is not an ISO 8601 timestamp") from None
    return value


def _parse_op(index: int, change: Any, new_sources: dict[str, SourceMessage], internal: bool) -> Op:
    if not isinstance(change, dict):
        raise _invalid("each change must be an object with an 'op'", index)
    raw_kind = change.get("op", change.get("type", change.get("action")))
    kind = _OP_ALIASES.get(raw_kind, raw_kind)
    allowed = (CREATE, UPDATE, DELETE, MOVE) + ((MERGE,) if internal else ())
    if kind not in allowed:
        raise _invalid(f"unknown op {raw_kind!r}; use one of {', '.join(allowed)}", index)
    if kind == CREATE:
        if change.get("memory_id") is not None:
            raise _invalid("create_record takes no memory_id; the runtime assigns block IDs", index)
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
        raise _invalid(f"{kind} needs a non-empty list memory_ids", index)
    memory_ids = tuple(_memory_id(i, index) for i in ids)
    if len(set(memory_ids)) != len(memory_ids):
        raise _invalid(f"{kind}: memory_ids name an ID twice", index)
    if kind == MERGE:
        if len(memory_ids) < 2:
            raise _invalid("merge_records needs the kept ID and at least one other", index)
        return Op(index, kind, memory_ids=memory_ids)
    return Op(index, kind, memory_ids=memory_ids, destination=_destination(change.get("destination"), index))


def _memory_id(value: Any, index: int) -> str:
    if not isinstance(value, str) or not value.strip().lstrip("^"):
        raise _invalid("memory_id must be a block ID string", index)
    return value.strip().lstrip("^")


def _content(value: Any, index: int) -> str:
    """One paragraph of prose: no blank line, heading, code, footnote or ``^id``."""
    if not isinstance(value, str) or not value.strip():
        raise _invalid("content must be non-empty text", index)
    text = value.replace("\r\n", "\n").replace("\r", "\n").strip()
    lines = text.split("\n")
    if any(not line.strip() for line in lines):
        raise _invalid("content must be one paragraph (no blank line); use several create_record ops", index)
    if any(HEADING_RE.match(line) for line in lines):
        raise _invalid("content must not contain a heading; use destination.headings", index)
    if any(FENCE_RE.match(line) for line in lines) or text.startswith("<!--"):
        raise _invalid("content must be prose, not a code fence or HTML comment", index)
    if "[^" in text or any(DEFINITION_RE.match(line) for line in lines):
        raise _invalid("content must not contain footnotes; give evidence in sources[]", index)
    if _BLOCK_ID_TOKEN_RE.search(text):
        raise _invalid("content must not contain ^block-ids; the runtime assigns and keeps them", index)
    return text


def _time(change: dict, index: int) -> str:
    value = change.get("time")
    if value is None:
        return "undated"
    if not isinstance(value, str) or not valid_time(value.strip()):
        raise _invalid(f"time must be YYYY, YYYY-MM, a real YYYY-MM-DD date, 'undated' or null (got {value!r})", index)
    return value.strip()


def _sources(change: dict, index: int, new_sources: dict[str, SourceMessage]) -> tuple[SourceRef, ...]:
    items = change.get("sources")
    legacy = change.get("source_refs")
    if items is not None and legacy is not None:
        raise _invalid("give sources or the legacy source_refs, not both", index)
    refs: list[SourceRef] = []
    if legacy is not None:
        if not isinstance(legacy, list):
            raise _invalid("source_refs must be a list of source ids", index)
        for ref in legacy:
            if not isinstance(ref, str) or not ref.strip():
                raise _invalid("source_refs items must be non-empty strings", index)
            refs.append(SourceRef(_source_handle(ref.strip(), index), ref.strip()))
    else:
        if not isinstance(items, list):
            raise _invalid("sources must be a non-empty list of {source, label}", index)
        for item in items:
            if not isinstance(item, dict) or not isinstance(item.get("source"), str):
                raise _invalid("sources items must be objects {source, label}", index)
            refs.append(SourceRef(_source_handle(item["source"].strip(), index), _label(item.get("label"), index)))
    if not refs:
        raise _invalid("a record needs at least one source", index)
    seen: set[str] = set()
    for ref in refs:
        if ref.source in seen:
            raise _invalid(f"source {ref.source!r} is cited twice", index)
        seen.add(ref.source)
        if ref.source.startswith(NEW_SOURCE_PREFIX) and ref.source not in new_sources:
            raise _invalid(f"{ref.source!r} is not declared in the request's top-level sources", index,
                           FailureCode.MISSING_SOURCE)
    return tuple(refs)


def _source_handle(value: str, index: int) -> str:
    if value.startswith(NEW_SOURCE_PREFIX):
        return value
    value = value.removeprefix("source:")
    try:
        split_source_id(value)
    except MemoryFailure:
        raise _invalid(f"source {value!r} is neither provider/thread/message nor a new-source-* label",
                       index) from None
    return value


def _label(value: Any, index: int) -> str:
    """Link text, kept verbatim; only Markdown structure is checked."""
    if not isinstance(value, str) or not value.strip():
        raise _invalid("every source needs a label: a non-empty string", index)
    if any(ch in value for ch in "[]\n\r"):
        raise _invalid(f"label {value!r} must not contain brackets or line breaks", index)
    return value


def _destination(value: Any, index: int) -> Destination:
    if not isinstance(value, dict):
        raise _invalid("destination must be an object {topic_path, headings, position, anchor_memory_id}", index)
    raw_path = value.get("topic_path")
    if not isinstance(raw_path, str):
        raise _invalid("destination.topic_path must be a string", index)
    try:
        topic = check_topic_path(raw_path)
    except MemoryFailure as failure:
        raise _invalid(failure.message, index, failure.code) from None
    headings = value.get("headings") or []
    if not isinstance(headings, list) or len(headings) > MAX_HEADINGS:
        raise _invalid(f"destination.headings must be a list of at most {MAX_HEADINGS} titles", index)
    titles = tuple(_heading_title(h, index) for h in headings)
    position = value.get("position", "end")
    if position not in POSITIONS:
        raise _invalid(f"destination.position must be one of {', '.join(POSITIONS)}", index)
    anchor = value.get("anchor_memory_id")
    if position in ("before", "after"):
        if anchor is None:
            raise _invalid(f"position {position!r} needs anchor_memory_id", index)
        anchor = _memory_id(anchor, index)
    elif anchor is not None:
        raise _invalid("anchor_memory_id goes with position before or after only", index)
    return Destination(topic, titles, position, anchor)


def _heading_title(value: Any, index: int) -> str:
    if not isinstance(value, str) or not value.strip() or "\n" in value:
        raise _invalid("heading titles must be non-empty single-line strings", index)
    title = value.strip()
    match = HEADING_RE.match("# " + title)
    if match is None or match.group(2) != title:
        raise _invalid(f"heading title {title!r} cannot be written as a Markdown heading", index)
    return title


def _check_per_id(ops: list[Op], internal: bool) -> None:
    """At most one content op and one move per ID; never delete + move."""
    content: dict[str, int] = {}
    deleted: dict[str, int] = {}
    moves: dict[str, int] = {}
    for op in ops:
        if op.kind in (UPDATE, DELETE):
            earlier = content.get(op.memory_id)
            if earlier is not None:
                raise _invalid(f"^{op.memory_id} already has a content op in changes[{earlier}]", op.index)
            content[op.memory_id] = op.index
            if op.kind == DELETE:
                deleted[op.memory_id] = op.index
        if op.kind == MOVE:
            for memory_id in op.memory_ids:
                earlier = moves.get(memory_id)
                if earlier is not None and not internal:
                    raise _invalid(f"^{memory_id} is already moved by changes[{earlier}]", op.index)
                moves.setdefault(memory_id, op.index)
    for memory_id, index in sorted(moves.items(), key=lambda item: item[1]):
        if memory_id in deleted:
            raise _invalid(f"^{memory_id} is both moved and deleted (changes[{deleted[memory_id]}]); "
                           "delete and move cannot name the same ID", index)


# -- entry points --------------------------------------------------------
def apply_memory_changes(
    ws: "MemoryWorkspace",
    memory_changes: list[dict],
    *,
    sources: list[dict] | None = None,
    base_revision: str | None = None,
    commit_message: str | None = None,
    lock_timeout: float = 5.0,
) -> TxResult:
    """Apply structured ``memory_changes`` as one transaction (SPEC §8).

    Returns the engine's :class:`TxResult`; ``result.extra`` adds
    ``source_ids`` (archived new sources), ``new_sources`` (label → id),
    ``deleted_ids`` and ``created`` (``[{change, memory_id}]``).
    """
    request = parse_request(memory_changes, sources)
    message = commit_message or f"memory: apply {len(request.ops)} structured change(s)"
    return run_request(ws, request, base_revision=base_revision, message=message, lock_timeout=lock_timeout)


def run_request(
    ws: "MemoryWorkspace",
    request: Request | Callable[[TreeState], Request],
    *,
    base_revision: str | None = None,
    message: str,
    lock_timeout: float = 5.0,
    runtime_update: Callable[[RuntimeState, TxResult], None] | None = None,
    force_views: bool = False,
) -> TxResult:
    """Run a validated request (or a planner called with the locked baseline tree).

    The planner form lets the organizer plan under the write lock, against
    exactly the tree the engine validates against.
    """
    deletes: set[str] = set()  # filled by the edit; the engine reads it after
    applied: dict[str, Request] = {}

    def edit(staging: Staging) -> dict[str, Any]:
        tree = ws.cache.snapshot()
        req = request(tree) if callable(request) else request
        applied["request"] = req
        editor = TopicEditor(staging, tree, ws)
        editor.apply(req)
        deletes.update(editor.deleted)
        return {"deleted_ids": sorted(editor.deleted), "source_ids": sorted(editor.new_source_ids.values()),
                "new_sources": dict(sorted(editor.new_source_ids.items()))}

    result = staged_edit(ws, edit, policy=Policy.STRUCTURED, allowed_deletes=deletes,  # type: ignore[arg-type]
                         base_revision=base_revision, message=message, lock_timeout=lock_timeout,
                         runtime_update=runtime_update, force_views=force_views)
    if "request" in applied:
        result.extra["created"] = _created_ids(ws, applied["request"], result) if result.memory_committed else []
    return result


def _created_ids(ws: "MemoryWorkspace", request: Request, result: TxResult) -> list[dict[str, Any]]:
    """Which new block ID each create op got (matched by topic and content)."""
    fresh = set(result.block_ids)
    tree = ws.tree()
    out = []
    for op in request.ops:
        if op.kind != CREATE or op.destination is None:
            continue
        summary = tree.files.get(op.destination.topic)
        for record in summary.records if summary else []:
            if record.memory_id in fresh and record.content == op.content:
                fresh.discard(record.memory_id)
                out.append({"change": op.index, "memory_id": record.memory_id})
                break
    return out


# -- rendering ops into topic documents ----------------------------------
def _rebase_target(target: str, old_file: str, new_file: str) -> str:
    """A relative link target written in ``old_file``, rewritten for ``new_file``.

    Only links into the memory tree are rebased: same-file anchors and
    relative ``.md`` paths; URLs and anything else stay as written.
    """
    path, sep, anchor = target.partition("#")
    if "://" in target or target.startswith(("/", "mailto:")) or (path and not path.endswith(".md")):
        return target
    absolute = old_file if not path else posixpath.normpath(posixpath.join(posixpath.dirname(old_file), path))
    return _link_path(absolute, new_file) + sep + anchor


def _link_path(target_file: str, from_file: str) -> str:
    if target_file == from_file:
        return ""
    return posixpath.relpath(target_file, posixpath.dirname(from_file) or ".")


def rebase_body(body: str, old_file: str, new_file: str) -> str:
    """Every relative link in ``body`` rewritten from ``old_file`` to ``new_file``."""
    if old_file == new_file:
        return body

    def fix(match: re.Match[str]) -> str:
        return f"[{match.group(1)}]({_rebase_target(match.group(2), old_file, new_file)})"

    return LINK_RE.sub(fix, body)


@dataclass(frozen=True)
class _Evidence:
    """A definition detached from its file: absolute targets, for moving and comparing."""

    label: str
    time: str | None
    links: tuple[tuple[str, str], ...]  # (link text, memory-root-relative target with anchor)

    @property
    def meaning(self) -> tuple:
        return (self.time, tuple(sorted(target for _, target in self.links)))

    def links_for(self, rel: str) -> list[SourceLink]:
        return [SourceLink(text, _link_path(target.partition("#")[0], rel) + "#" + target.partition("#")[2])
                for text, target in self.links]


def definition_meaning(definition: Definition, rel: str) -> tuple:
    """What an evidence definition in ``rel`` says: ``(time, sorted absolute source targets)``.

    Two definitions with one label conflict only when their meanings differ
    (relative link paths that resolve alike are the same meaning).
    """
    return _detach(definition, rel).meaning


def _detach(definition: Definition, rel: str) -> _Evidence:
    links = []
    for link in definition.sources:
        path, _, anchor = link.target.partition("#")
        links.append((link.label, resolve_relative(rel, path) + "#" + anchor))
    return _Evidence(definition.label, definition.time, tuple(links))


class TopicEditor:
    """Applies validated operations to parsed topic documents of one staging copy."""

    def __init__(self, staging: Staging, tree: TreeState, ws: "MemoryWorkspace") -> None:
        self.staging = staging
        self.tree = tree
        self.ws = ws
        self.docs: dict[str, TopicDoc] = {}
        self.touched: set[str] = set()
        self.origin: dict[str, str] = {i: files[0] for i, files in tree.id_files().items()}
        self.where: dict[str, str] = dict(self.origin)
        self.deleted: set[str] = set()
        self.deleted_by: dict[str, int] = {}
        self.new_source_ids: dict[str, str] = {}
        self.new_sources: dict[str, SourceMessage] = {}

    # -- documents ------------------------------------------------------
    def doc(self, rel: str) -> TopicDoc:
        """The parsed document of ``rel`` as edited so far (empty if it does not exist yet)."""
        if rel not in self.docs:
            text = self.staging.read(rel) if self.staging.exists(rel) else ""
            self.docs[rel] = parse_topic(text, rel)
        return self.docs[rel]

    def locate(self, memory_id: str, index: int) -> tuple[str, TopicDoc, Paragraph]:
        """Where ``memory_id`` is now: ``(topic, document, paragraph)``; MEMORY_NOT_FOUND if nowhere."""
        rel = self.where.get(memory_id)
        if rel is None:
            if memory_id in self.deleted_by:
                raise _invalid(f"^{memory_id} was deleted by changes[{self.deleted_by[memory_id]}]", index,
                               FailureCode.MEMORY_NOT_FOUND, memory_id=memory_id)
            raise _invalid(f"no record with block ID ^{memory_id}", index, FailureCode.MEMORY_NOT_FOUND,
                           memory_id=memory_id)
        doc = self.doc(rel)
        for paragraph in doc.paragraphs():
            if memory_id in paragraph.ids:
                return rel, doc, paragraph
        raise _invalid(f"no record with block ID ^{memory_id}", index, FailureCode.MEMORY_NOT_FOUND,
                       memory_id=memory_id)

    # -- the operations ------------------------------------------------
    def apply(self, request: Request) -> None:
        """Apply every operation in order, fix links to moved records, write touched topics."""
        self.new_sources = request.new_sources
        for op in request.ops:
            getattr(self, "_" + op.kind)(op)
        self._rewrite_links()
        for rel in sorted(self.touched):
            doc = self.docs[rel]
            _separate_blocks(doc)
            self.staging.write(rel, doc.render())

    def _create_record(self, op: Op) -> None:
        dest = op.destination
        doc = self.doc(dest.topic)
        label = self._write_evidence(doc, op, overwrite_labels=True)
        paragraph = Paragraph(lines=[], body="", ids=[])
        paragraph.set(f"{op.content}[^{label}]", [])
        at = self._insertion_index(doc, dest, op.index, frozenset())
        doc.blocks[at:at] = [paragraph]
        self.touched.add(dest.topic)

    def _update_record(self, op: Op) -> None:
        rel, doc, paragraph = self.locate(op.memory_id, op.index)
        old = set(paragraph.citations)
        label = self._write_evidence(doc, op, overwrite_labels=True)
        paragraph.set(f"{op.content}[^{label}]", paragraph.ids)
        _drop_unused_definitions(doc, old - {label})
        self.touched.add(rel)

    def _delete_record(self, op: Op) -> None:
        rel, doc, paragraph = self.locate(op.memory_id, op.index)
        if len(paragraph.ids) > 1 and op.memory_id != paragraph.identity:
            gone = [op.memory_id]  # an alias: the merged record stays
            paragraph.set(paragraph.body, [i for i in paragraph.ids if i != op.memory_id])
        else:
            gone = list(paragraph.ids)
            doc.blocks.remove(paragraph)
            _drop_unused_definitions(doc, set(paragraph.citations))
        for memory_id in gone:
            self.where.pop(memory_id, None)
            self.deleted.add(memory_id)
            self.deleted_by[memory_id] = op.index
        self.touched.add(rel)

    def _move_records(self, op: Op) -> None:
        dest = op.destination
        moving = self._whole_paragraphs(op)
        if dest.anchor is not None and dest.anchor in op.memory_ids:
            raise _invalid(f"anchor ^{dest.anchor} is itself being moved", op.index)
        detached = []
        for rel, doc, paragraph in moving:
            definitions = doc.definitions()
            evidence = [_detach(definitions[label], rel) for label in dict.fromkeys(paragraph.citations)
                        if label in definitions]
            doc.blocks.remove(paragraph)
            detached.append((rel, paragraph, evidence))
            self.touched.add(rel)
        target = self.doc(dest.topic)
        for rel, paragraph, evidence in detached:
            for item in evidence:
                self._adopt_evidence(target, item, op.index)
            body = rebase_body(paragraph.body, rel, dest.topic)
            if body != paragraph.body:
                paragraph.set(body, paragraph.ids)
            for memory_id in paragraph.ids:
                self.where[memory_id] = dest.topic
        at = self._insertion_index(target, dest, op.index, frozenset(op.memory_ids))
        target.blocks[at:at] = [paragraph for _, paragraph, _ in detached]
        for rel, paragraph, _evidence in detached:
            _drop_unused_definitions(self.doc(rel), set(paragraph.citations))
        self.touched.add(dest.topic)

    def _merge_records(self, op: Op) -> None:
        """Organizer only: the first ID's paragraph absorbs the others as aliases."""
        keep_rel, keep_doc, keep = self.locate(op.memory_ids[0], op.index)
        ids = list(keep.ids[:-1])
        citations = list(keep.citations)
        for memory_id in op.memory_ids[1:]:
            rel, doc, paragraph = self.locate(memory_id, op.index)
            if paragraph is keep:
                raise _invalid(f"^{memory_id} is already part of the kept record", op.index)
            definitions = doc.definitions()
            for label in dict.fromkeys(paragraph.citations):
                if label in definitions:
                    self._adopt_evidence(keep_doc, _detach(definitions[label], rel), op.index)
                if label not in citations:
                    citations.append(label)
            doc.blocks.remove(paragraph)
            _drop_unused_definitions(doc, set(paragraph.citations) - (set(citations) if doc is keep_doc else set()))
            ids.extend(paragraph.ids)
            for alias in paragraph.ids:
                self.where[alias] = keep_rel
            self.touched.add(rel)
        ids.append(keep.ids[-1])
        extra = "".join(f"[^{label}]" for label in citations if label not in keep.citations)
        keep.set(keep.body + extra, ids)
        self.touched.add(keep_rel)

    def _whole_paragraphs(self, op: Op) -> list[tuple[str, TopicDoc, Paragraph]]:
        """The paragraphs a move names; a merged paragraph must be named whole, in order."""
        out: list[tuple[str, TopicDoc, Paragraph]] = []
        i = 0
        ids = op.memory_ids
        while i < len(ids):
            rel, doc, paragraph = self.locate(ids[i], op.index)
            run = list(ids[i:i + len(paragraph.ids)])
            if run != paragraph.ids:
                raise _invalid(
                    f"^{ids[i]} shares a paragraph with other IDs; move all of them together, consecutively, "
                    f"in paragraph order: {' '.join('^' + x for x in paragraph.ids)}", op.index)
            out.append((rel, doc, paragraph))
            i += len(paragraph.ids)
        return out

    # -- evidence ------------------------------------------------------
    def _write_evidence(self, doc: TopicDoc, op: Op, *, overwrite_labels: bool) -> str:
        """Define the evidence of ``op`` (time + its sources) in ``doc``; return its label."""
        source_ids = []
        links = []
        for ref in op.sources:
            source_id = self._resolve_source(ref, op.index)
            source_ids.append(source_id)
            links.append((ref.label, archive_relpath_for(source_id) + "#" + source_anchor(source_id)))
        label = evidence_id(op.time, source_ids)
        self._adopt_evidence(doc, _Evidence(label, op.time, tuple(links)), op.index, overwrite_labels)
        return label

    def _resolve_source(self, ref: SourceRef, index: int) -> str:
        if ref.source.startswith(NEW_SOURCE_PREFIX):
            message = self.new_sources[ref.source]
            self.staging.add_source(message)
            self.new_source_ids[ref.source] = message.source_id
            return message.source_id
        if self.ws.cache.sources.lookup(archive_relpath_for(ref.source), source_anchor(ref.source)) is None:
            raise _invalid(f"source {ref.source!r} is not in the source archive", index,
                           FailureCode.MISSING_SOURCE, source=ref.source)
        return ref.source

    def _adopt_evidence(self, doc: TopicDoc, evidence: _Evidence, index: int, overwrite_labels: bool = False) -> None:
        """Make ``evidence`` defined in ``doc``; a same label with another meaning is refused."""
        existing = doc.definitions().get(evidence.label)
        if existing is not None:
            if _detach(existing, doc.path).meaning != evidence.meaning:
                raise _invalid(
                    f"evidence [^{evidence.label}] already exists in {doc.path} with a different time or sources",
                    index, evidence=evidence.label, file=doc.path)
            if overwrite_labels and [s.label for s in existing.sources] != [t for t, _ in evidence.links]:
                existing.set(existing.label, existing.time or "undated", evidence.links_for(doc.path))
            return
        definition = Definition(lines=[], label=evidence.label)
        definition.set(evidence.label, evidence.time or "undated", evidence.links_for(doc.path))
        doc.blocks.append(definition)
        self.touched.add(doc.path)

    # -- places --------------------------------------------------------
    def _insertion_index(self, doc: TopicDoc, dest: Destination, index: int, moving: frozenset[str]) -> int:
        if dest.position in ("before", "after"):
            rel, anchor_doc, anchor = self.locate(dest.anchor, index)
            if anchor.ids and set(anchor.ids) & moving:
                raise _invalid(f"anchor ^{dest.anchor} is itself being moved", index)
            if rel != dest.topic or _chain_of(doc, anchor) != dest.headings:
                raise _invalid(
                    f"anchor ^{dest.anchor} is not under {' > '.join(dest.headings) or '(no heading)'} in {dest.topic}",
                    index, anchor=dest.anchor)
            at = doc.blocks.index(anchor)
            return at if dest.position == "before" else at + 1
        start, end = _direct_region(doc, _ensure_chain(doc, dest.headings))
        if dest.position == "start":
            return start
        last = start
        for i in range(start, end):
            if isinstance(doc.blocks[i], Paragraph) or doc.blocks[i].kind == "code":
                last = i + 1
        return last

    # -- links ---------------------------------------------------------
    def _rewrite_links(self) -> None:
        """Point every link at a moved record to its new file."""
        relocated = {i: rel for i, rel in self.where.items() if self.origin.get(i) != rel}
        if not relocated:
            return
        files = set(self.touched)
        files.update(r.topic for r in self.tree.records() if any(block_id in relocated for _, block_id in r.links))
        for rel in sorted(files):
            if rel not in self.touched and not self.staging.exists(rel):
                continue
            doc = self.doc(rel)
            for paragraph in doc.paragraphs():
                def fix(match: re.Match[str], rel: str = rel) -> str:
                    block_id = match.group(3)
                    if block_id not in relocated:
                        return match.group(0)
                    return f"[{match.group(1)}]({_link_path(relocated[block_id], rel)}#^{block_id})"

                body = RECORD_LINK_RE.sub(fix, paragraph.body)
                if body != paragraph.body:
                    paragraph.set(body, paragraph.ids)
                    self.touched.add(rel)


def _drop_unused_definitions(doc: TopicDoc, labels: set[str]) -> None:
    if not labels:
        return
    cited = {label for paragraph in doc.paragraphs() for label in paragraph.citations}
    doc.blocks = [b for b in doc.blocks
                  if not (isinstance(b, Definition) and b.label in labels and b.label not in cited)]


def _chains(doc: TopicDoc) -> list[tuple[tuple[str, ...], int]]:
    """For each block: the heading chain it sits under, and the chain's heading index (-1: none)."""
    out = []
    stack: list[tuple[int, str, int]] = []
    for i, block in enumerate(doc.blocks):
        if isinstance(block, Heading):
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            stack.append((block.level, block.title, i))
        out.append((tuple(t for _, t, _ in stack), stack[-1][2] if stack else -1))
    return out


def _chain_of(doc: TopicDoc, block: Block) -> tuple[str, ...]:
    return _chains(doc)[doc.blocks.index(block)][0]


def _find_heading(doc: TopicDoc, headings: tuple[str, ...]) -> int | None:
    for i, (chain, heading_index) in enumerate(_chains(doc)):
        if heading_index == i and chain == headings:
            return i
    return None


def _ensure_chain(doc: TopicDoc, headings: tuple[str, ...]) -> int:
    """Index of the chain's last heading (-1 for no heading), creating missing headings."""
    if not headings:
        return -1
    found = _find_heading(doc, headings)
    if found is not None:
        return found
    depth, parent = 0, None
    for k in range(len(headings) - 1, 0, -1):
        parent = _find_heading(doc, headings[:k])
        if parent is not None:
            depth = k
            break
    if parent is None:
        at, level = len(doc.blocks), 0
    else:
        level = doc.blocks[parent].level
        at = len(doc.blocks)
        for i in range(parent + 1, len(doc.blocks)):
            block = doc.blocks[i]
            if isinstance(block, Heading) and block.level <= level:
                at = i
                break
    while at > (parent if parent is not None else -1) + 1 and isinstance(doc.blocks[at - 1], (Definition, Blank)):
        at -= 1  # new headings go before a trailing run of definitions
    new = []
    for offset, title in enumerate(headings[depth:], start=1):
        lvl = min(level + offset, 6)
        new.append(Heading(lines=[f"{'#' * lvl} {title}"], level=lvl, title=title))
    doc.blocks[at:at] = new
    return at + len(new) - 1


def _direct_region(doc: TopicDoc, heading_index: int) -> tuple[int, int]:
    """Blocks directly under a heading (up to the next heading of any level)."""
    start = heading_index + 1
    end = start
    while end < len(doc.blocks) and not isinstance(doc.blocks[end], Heading):
        end += 1
    return start, end


def _separate_blocks(doc: TopicDoc) -> None:
    """A blank line between neighbouring blocks (consecutive definitions excepted)."""
    out: list[Block] = []
    for block in doc.blocks:
        if out and not isinstance(block, Blank) and not isinstance(out[-1], Blank):
            if not (isinstance(block, Definition) and isinstance(out[-1], Definition)):
                out.append(Blank(lines=[""]))
        out.append(block)
    doc.blocks = out
    doc.trailing_newline = True
