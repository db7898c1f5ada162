"""What every transcript importer shares: reading JSONL, counting what is
skipped, telling formats apart, a tree of draft nodes with aliases for
dropped lines, and writing it into the store once.

Idempotence comes from stable ids: a draft whose id is already a node of
the session is skipped (and counted), so importing the same transcript
twice adds nothing, and importing a transcript that grew adds only the
new lines.

Absent parents: a line whose parent is null, or an id neither in the
transcript nor in the store, chains to the previous line of its
conversation in file order (:meth:`TranscriptTree.parent_for`) — older
Claude Code transcripts have ``parentUuid: null`` on every line and are
one linear conversation, not a forest of one-line roots.

Every line that does not become a node of its own is counted by reason in
``ImportResult.skipped`` (``memory import --json`` → ``"skipped"``). The
reasons are stable strings:

``blank``
    a whitespace-only line.
``malformed_json``
    not parsable as JSON.
``not_an_object``
    valid JSON that is not an object (``42``, ``[1]``).
``missing_id``
    a line that should carry an id (or session id) and has no valid one.
``duplicate_id``
    a second line with an id already seen in the file; the well-formed
    copy is kept (:func:`keep_well_formed`), the other is counted here.
``malformed_line``
    a line of a known type missing what that type needs (a message
    without content, a content that is neither text nor blocks).
``unknown_type``
    a line type (or message role) this importer does not know.
``not_a_turn``
    a known line that carries no turn: titles and summaries, snapshots,
    session headers, events duplicating response items, reasoning,
    model changes, hook and status lines.
``already_present``
    a node already in the store (re-import, or a transcript that grew).
``fork_prefix``
    a line of a forked transcript that repeats its parent's conversation
    and maps to the parent's node (codex forks).

Lines folded into a node built from several lines (the streamed lines of
one Claude Code assistant message) are neither imported nor skipped.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, TypeVar

from ...failures import FailureCode, MemoryFailure
from ...fsutil import shell_args
from ..markers import MARKER_KEY
from ..store import Node, SessionStore, is_valid_id, validate_role
from ...timeutil import normalize_time

Line = TypeVar("Line")
TOOL_CONTENT_LIMIT = 2000  # tool calls/results are kept for display, never memory input

BLANK = "blank"
MALFORMED_JSON = "malformed_json"
NOT_AN_OBJECT = "not_an_object"
MISSING_ID = "missing_id"
DUPLICATE_ID = "duplicate_id"
MALFORMED_LINE = "malformed_line"
UNKNOWN_TYPE = "unknown_type"
NOT_A_TURN = "not_a_turn"
ALREADY_PRESENT = "already_present"
FORK_PREFIX = "fork_prefix"
SKIP_REASONS = (BLANK, MALFORMED_JSON, NOT_AN_OBJECT, MISSING_ID, DUPLICATE_ID, MALFORMED_LINE, UNKNOWN_TYPE,
                NOT_A_TURN, ALREADY_PRESENT, FORK_PREFIX)


@dataclass(frozen=True)
class ImportResult:
    """Sessions touched, nodes added, and lines skipped by reason.

    ``updated`` counts present nodes whose message had grown since an earlier
    import, in text or metadata (they are also counted as ``already_present``).
    """

    sessions: list[str]
    imported: int
    skipped: Mapping[str, int] = field(default_factory=dict)
    updated: int = 0
    interrupted: bool = False  # stopped by Ctrl-C between two files
    remaining: int = 0  # files not imported because of it
    skipped_files: list[dict[str, str]] = field(default_factory=list)  # {path, reason}: found in a directory, not
    # importable (another format, unreadable)

    def to_json(self) -> dict[str, Any]:
        """The ``memory import --json`` object: ``{"sessions", "imported", "skipped": {reason: n}}``
        (plus ``"skipped_files": [{"path", "reason"}]`` for files of a directory left out, and
        ``"interrupted": true, "remaining": n`` when Ctrl-C stopped it)."""
        out: dict[str, Any] = {"sessions": list(self.sessions), "imported": self.imported,
                               "skipped": {reason: self.skipped[reason] for reason in sorted(self.skipped)
                                           if self.skipped[reason]}}
        if self.skipped_files:
            out["skipped_files"] = list(self.skipped_files)
        if self.interrupted:
            out.update(interrupted=True, remaining=self.remaining)
        return out

    @property
    def skipped_total(self) -> int:
        """Every skipped line, whatever the reason."""
        return sum(self.skipped.values())

    def __add__(self, other: "ImportResult") -> "ImportResult":
        sessions = list(dict.fromkeys([*self.sessions, *other.sessions]))
        return ImportResult(sessions, self.imported + other.imported,
                            dict(Counter(self.skipped) + Counter(other.skipped)), self.updated + other.updated)


EMPTY_RESULT = ImportResult([], 0, {})


@dataclass
class TranscriptFile:
    """One transcript file read whole: its JSON-object lines and what was skipped reading it."""

    path: Path
    lines: list[tuple[int, dict[str, Any]]]
    skipped: Counter = field(default_factory=Counter)
    raw_lines: int = 0

    def result(self) -> ImportResult:
        """The lines this file lost before any importer saw them."""
        return ImportResult([], 0, dict(self.skipped))


@dataclass
class DraftNode:
    """A node being assembled from one or more transcript lines."""

    id: str
    parent: str | None  # a raw transcript id; resolved through aliases on write
    role: str
    content: str
    created_at: str
    updated_at: str
    metadata: dict[str, Any] = field(default_factory=dict)
    # Assembled from several transcript lines (one streamed assistant message):
    # an import made mid-stream may have stored only its first lines.
    may_grow: bool = False


def safe_time(value: Any, fallback: str) -> str:
    """``value`` normalised, or ``fallback`` when it is missing or not a time."""
    if value is None:
        return fallback
    try:
        return normalize_time(value)
    except MemoryFailure:
        return fallback


def clip(text: str, limit: int = TOOL_CONTENT_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, marking the cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def expand_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Files as given, directories searched recursively for ``*.jsonl`` (sorted).

    A path that does not exist or cannot be read is ``INVALID_ARGUMENT`` naming it.
    """
    files: list[Path] = []
    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*.jsonl") if p.is_file()))
        elif path.is_file():
            files.append(path)
        else:
            raise MemoryFailure(
                FailureCode.INVALID_ARGUMENT, f"cannot read {path}: no such file or directory",
                details={"path": str(path)},
            )
    return files


def read_transcript(path: Path) -> TranscriptFile:
    """Every JSON-object line of ``path`` with its number; other lines are counted by reason."""
    try:
        handle = open(path, encoding="utf-8", errors="replace")
    except OSError as exc:
        raise MemoryFailure(
            FailureCode.INVALID_ARGUMENT, f"cannot read {path}: {exc.strerror or exc}", details={"path": str(path)}
        ) from None
    transcript = TranscriptFile(path, [])
    with handle:
        for number, line in enumerate(handle, start=1):
            transcript.raw_lines = number
            if not line.strip():
                transcript.skipped[BLANK] += 1
                continue
            try:
                data = json.loads(line)
            except ValueError:
                transcript.skipped[MALFORMED_JSON] += 1
                continue
            if isinstance(data, dict):
                transcript.lines.append((number, data))
            else:
                transcript.skipped[NOT_AN_OBJECT] += 1
    return transcript


@dataclass(frozen=True)
class TranscriptFormat:
    """A format the importers know: its name, what a person calls it, and its line shape."""

    name: str
    description: str  # "a codex rollout"
    owns: Callable[[dict[str, Any]], bool]  # whether a line has this format's shape


def check_format(transcript: TranscriptFile, wanted: TranscriptFormat, known: Iterable[TranscriptFormat]) -> None:
    """Refuse a file whose lines have another format's shape (``INVALID_ARGUMENT``, exit 64).

    A file is ``wanted`` when at least as many of its lines have that
    format's shape as any other's. A file with no object line at all (empty,
    or only blank lines) passes: a transcript that was just created.
    """
    if not transcript.lines and not transcript.skipped[MALFORMED_JSON] + transcript.skipped[NOT_AN_OBJECT]:
        return
    counts = {fmt.name: sum(1 for _, line in transcript.lines if fmt.owns(line)) for fmt in known}
    best = max(known, key=lambda fmt: (counts[fmt.name], fmt.name == wanted.name))
    if counts[wanted.name] and best.name == wanted.name:
        return
    path = transcript.path
    if counts[best.name]:
        message = (f"{path} looks like {best.description}, not {wanted.description}; "
                   f"run `openprogram memory import {best.name} {shell_args(path)}`")
    else:
        names = ", ".join(fmt.name for fmt in known)
        message = (f"{path} is not {wanted.description}: none of its {transcript.raw_lines} line(s) has the shape "
                   f"of a known transcript format ({names})")
    raise MemoryFailure(FailureCode.INVALID_ARGUMENT, message,
                        details={"path": str(path), "format": wanted.name,
                                 "looks_like": best.name if counts[best.name] else None})


def keep_well_formed(lines: list[Line], id_of: Callable[[Line], Any],
                     quality: Callable[[Line], int]) -> tuple[list[Line], int]:
    """``lines`` with one line per id: of duplicates, the best ``quality`` (the earliest on a tie).

    Returns the kept lines in their file order and how many were dropped.
    A torn or hand-damaged copy of a line must never win over the good one.
    """
    best: dict[Any, int] = {}
    for index, line in enumerate(lines):
        key = id_of(line)
        if key is None:
            continue
        if key not in best or quality(line) > quality(lines[best[key]]):
            best[key] = index
    kept = [line for index, line in enumerate(lines) if id_of(line) is None or best[id_of(line)] == index]
    return kept, len(lines) - len(kept)


class TranscriptTree:
    """The drafts of one session, in transcript order, plus aliases and skip counts.

    A transcript line that does not become a node is *dropped* with an
    alias to its parent, so its children attach to its nearest kept
    ancestor and the tree stays connected. ``line_ids`` holds every id the
    transcript's lines carry (kept or not): a parent outside it and outside
    the store is absent.
    """

    def __init__(self, session_id: str, source: str, store: SessionStore | None = None,
                 aliases: dict[str, str | None] | None = None) -> None:
        self.session_id = session_id
        self.source = source
        self.store = store
        self.drafts: dict[str, DraftNode] = {}
        # Shared with the caller when given: an incremental import (``tail``) keeps
        # the aliases of lines dropped in earlier reads, which later lines may name.
        self.aliases: dict[str, str | None] = {} if aliases is None else aliases
        self.line_ids: set[str] = set()
        self.skipped: Counter = Counter()
        self.title: str | None = None
        self.session_metadata: dict[str, Any] = {}

    def add(self, draft: DraftNode) -> DraftNode:
        """Keep ``draft`` and return it; a second draft with a kept id is counted and ignored."""
        kept = self.drafts.setdefault(draft.id, draft)
        if kept is not draft:
            self.skipped[DUPLICATE_ID] += 1
        return kept

    def drop(self, raw_id: str, parent: str | None, reason: str | None = None) -> None:
        """Line ``raw_id`` is not a node (counted under ``reason``); its children attach to ``parent``."""
        if reason is not None:
            self.skipped[reason] += 1
        if raw_id not in self.drafts:
            self.aliases.setdefault(raw_id, parent)

    def knows(self, raw_id: Any) -> bool:
        """Whether ``raw_id`` is a line of this transcript or a node the store already holds."""
        if not is_valid_id(raw_id):
            return False
        if raw_id in self.line_ids or raw_id in self.aliases:
            return True
        return self.store is not None and self.store.has_node(self.session_id, raw_id)

    def parent_for(self, raw_parent: Any, previous: str | None) -> str | None:
        """``raw_parent`` if it exists, else ``previous`` (the line before, in file order)."""
        return raw_parent if self.knows(raw_parent) else previous

    def resolve(self, raw_id: str | None) -> str | None:
        """Follow aliases from ``raw_id`` to a kept id (or an id the store may hold)."""
        seen: set[str] = set()
        while raw_id is not None and raw_id not in self.drafts and raw_id in self.aliases and raw_id not in seen:
            seen.add(raw_id)
            raw_id = self.aliases[raw_id]
        return raw_id


def _parents_first(drafts: dict[str, DraftNode], parents: dict[str, str | None]) -> list[DraftNode]:
    ordered: list[DraftNode] = []
    placed: set[str] = set()
    for start in drafts:
        chain = []
        node_id: str | None = start
        while node_id is not None and node_id in drafts and node_id not in placed and node_id not in chain:
            chain.append(node_id)
            node_id = parents[node_id]
        for node_id in reversed(chain):
            placed.add(node_id)
            ordered.append(drafts[node_id])
    return ordered


def _break_cycles(drafts: dict[str, DraftNode], parents: dict[str, str | None]) -> None:
    """Cut every parent cycle (damaged or stitched-together transcripts) so the tree can be stored.

    Walking from each draft in transcript order, the edge that closes a loop
    is cut: that node becomes a root, its lost parent kept in ``detached_from``.
    """
    settled: set[str] = set()
    for start in drafts:
        path: list[str] = []
        node_id: str | None = start
        while node_id is not None and node_id in drafts and node_id not in settled:
            if node_id in path:
                closing = path[-1]
                drafts[closing].metadata.setdefault("detached_from", parents[closing])
                parents[closing] = None
                break
            path.append(node_id)
            node_id = parents[node_id]
        settled.update(path)


def _pick_head(drafts: dict[str, DraftNode], parents: dict[str, str | None]) -> str | None:
    """The newest main-conversation leaf; None (head stays) when the drafts hold none.

    A sub-agent's branch is never head: a run of sidechain lines alone (a
    sub-agent's own file, read without its main transcript) leaves the
    session where its main conversation is.
    """
    has_child = {parent for parent in parents.values() if parent is not None}
    main = [d for d in drafts.values() if d.id not in has_child and not d.metadata.get("sidechain")]
    if not main:
        return None
    order = {node_id: index for index, node_id in enumerate(drafts)}
    return max(main, key=lambda d: (d.created_at, order[d.id])).id


def write_tree(store: SessionStore, tree: TranscriptTree) -> ImportResult:
    """Add the tree's new nodes to the store; nodes already there are skipped.

    Parents are resolved through aliases (importers have already chained
    absent parents to the previous line); a parent still found neither in
    the transcript nor in the store makes the node a root (the lost parent
    id is kept in ``metadata.detached_from``). With nothing new the session
    is not touched at all; otherwise head becomes the newest
    main-conversation leaf (a sidechain-only tree leaves head where it is).
    """
    if not tree.drafts:
        return ImportResult([], 0, dict(tree.skipped))
    session_id = tree.session_id
    first_time = min(d.created_at for d in tree.drafts.values())
    store.create_session(session_id, created_at=first_time, exist_ok=True)
    parents: dict[str, str | None] = {}
    for draft in tree.drafts.values():
        parent = tree.resolve(draft.parent)
        if parent == draft.id:
            parent = None
        if parent is not None and parent not in tree.drafts and not (
            is_valid_id(parent) and store.has_node(session_id, parent)
        ):
            draft.metadata.setdefault("detached_from", draft.parent)
            parent = None
        parents[draft.id] = parent
    _break_cycles(tree.drafts, parents)
    ordered = _parents_first(tree.drafts, parents)
    present = {d.id for d in ordered if store.has_node(session_id, d.id)}
    new_nodes = [
        Node(d.id, parents[d.id], validate_role(d.role), d.content, d.created_at, d.updated_at, d.metadata)
        for d in ordered
        if d.id not in present
    ]
    grown = _grown_nodes(store, session_id, [d for d in ordered if d.id in present and d.may_grow])
    if grown:
        store.refresh_nodes(session_id, grown)
    if new_nodes:
        store.insert_nodes(session_id, new_nodes, head=_pick_head(tree.drafts, parents))
        store.reattach_detached(session_id)  # lines imported before these parents: the tree of one import
    session_metadata: dict[str, Any] = {"source": tree.source, **tree.session_metadata}
    if tree.title:
        session_metadata["title"] = tree.title
    store.set_session_metadata(session_id, session_metadata)
    skipped = tree.skipped + Counter({ALREADY_PRESENT: len(present)})
    return ImportResult([session_id], len(new_nodes), dict(skipped), len(grown))


def _grown_nodes(store: SessionStore, session_id: str, drafts: list[DraftNode]) -> list[Node]:
    """Stored nodes whose message gained lines since they were imported, with the new text and metadata.

    The written marker is dropped from a node whose text grew, so its full
    text is pending again; a node that gained only metadata (a tool call
    after its text: ``tool_uses``, the sub-agents it started) keeps it. Every
    other stored metadata key (rewound, …) is kept.
    """
    grown = []
    for draft in drafts:
        old = store.get_node(session_id, draft.id)
        text_grew = (old.role, old.content) != (draft.role, draft.content)
        if not text_grew and all(old.metadata.get(key) == value for key, value in draft.metadata.items()):
            continue
        metadata = {key: value for key, value in old.metadata.items() if key != MARKER_KEY or not text_grew}
        metadata.update(draft.metadata)
        grown.append(Node(old.id, old.predecessor, validate_role(draft.role), draft.content, old.created_at,
                          max(old.updated_at, draft.updated_at), metadata))
    return grown


def block_texts(content: Any, text_types: tuple[str, ...] = ("text",)) -> list[str]:
    """The text of a message's content: a plain string, or its text blocks."""
    if isinstance(content, str):
        return [content] if content else []
    if not isinstance(content, list):
        return []
    texts = []
    for block in content:
        if isinstance(block, str) and block:  # a bare string among blocks (older or hand-made lines)
            texts.append(block)
        elif isinstance(block, dict) and block.get("type") in text_types and isinstance(block.get("text"), str) \
                and block["text"]:
            texts.append(block["text"])
    return texts


def block_types(content: Any) -> list[str]:
    """The distinct block types of a message's content, in order."""
    if not isinstance(content, list):
        return ["text"] if content else []
    return list(dict.fromkeys(str(b.get("type")) for b in content if isinstance(b, dict)))


def render_tool_call(name: Any, arguments: Any) -> str:
    """A short, readable line for a tool call (display only)."""
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
    return clip(f"[tool call] {name}: {arguments}")
