"""What every transcript importer shares: reading JSONL, a tree of draft
nodes with aliases for dropped lines, and writing it into the store once.

Idempotence comes from stable ids: a draft whose id is already a node of
the session is skipped (and counted), so importing the same transcript
twice adds nothing, and importing a transcript that grew adds only the
new lines.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from ...failures import FailureCode, MemoryFailure
from ..markers import MARKER_KEY
from ..store import Node, SessionStore, is_valid_id, validate_role
from ..timestamps import normalize_time

TOOL_CONTENT_LIMIT = 2000  # tool calls/results are kept for display, never memory input


@dataclass(frozen=True)
class ImportResult:
    """Sessions touched, nodes added, nodes already present.

    ``updated`` counts present nodes whose message had grown since an earlier
    import (they are also counted in ``skipped``).
    """

    sessions: list[str]
    imported: int
    skipped: int
    updated: int = 0

    def to_json(self) -> dict[str, Any]:
        """The ``memory import --json`` object (SPEC §12.1)."""
        return {"sessions": list(self.sessions), "imported": self.imported, "skipped": self.skipped}

    def __add__(self, other: "ImportResult") -> "ImportResult":
        sessions = list(dict.fromkeys([*self.sessions, *other.sessions]))
        return ImportResult(sessions, self.imported + other.imported, self.skipped + other.skipped,
                            self.updated + other.updated)


EMPTY_RESULT = ImportResult([], 0, 0)


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


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for every JSON-object line; malformed lines are skipped."""
    try:
        handle = open(path, encoding="utf-8", errors="replace")
    except OSError as exc:
        raise MemoryFailure(
            FailureCode.INVALID_ARGUMENT, f"cannot read {path}: {exc.strerror or exc}", details={"path": str(path)}
        ) from None
    with handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except ValueError:
                continue
            if isinstance(data, dict):
                yield number, data


class TranscriptTree:
    """The drafts of one session, in transcript order, plus aliases.

    A transcript line that does not become a node is *dropped* with an
    alias to its parent, so its children attach to its nearest kept
    ancestor and the tree stays connected.
    """

    def __init__(self, session_id: str, source: str) -> None:
        self.session_id = session_id
        self.source = source
        self.drafts: dict[str, DraftNode] = {}
        self.aliases: dict[str, str | None] = {}
        self.title: str | None = None

    def add(self, draft: DraftNode) -> DraftNode:
        """Keep ``draft`` (the first of duplicate ids wins) and return the kept one."""
        return self.drafts.setdefault(draft.id, draft)

    def drop(self, raw_id: str, parent: str | None) -> None:
        """Line ``raw_id`` is not a node; its children attach to ``parent``."""
        if raw_id not in self.drafts:
            self.aliases.setdefault(raw_id, parent)

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


def _pick_head(drafts: dict[str, DraftNode], parents: dict[str, str | None]) -> str | None:
    """The newest leaf, preferring the main conversation over sub-agent branches."""
    has_child = {parent for parent in parents.values() if parent is not None}
    leaves = [d for d in drafts.values() if d.id not in has_child]
    main = [d for d in leaves if not d.metadata.get("sidechain")] or leaves
    if not main:
        return None
    order = {node_id: index for index, node_id in enumerate(drafts)}
    return max(main, key=lambda d: (d.created_at, order[d.id])).id


def write_tree(store: SessionStore, tree: TranscriptTree) -> ImportResult:
    """Add the tree's new nodes to the store; nodes already there are skipped.

    Parents are resolved through aliases; a parent found neither in the
    transcript nor in the store makes the node a root (the lost parent id is
    kept in ``metadata.detached_from``). With nothing new the session is not
    touched at all; otherwise head becomes the newest main-conversation leaf.
    """
    if not tree.drafts:
        return EMPTY_RESULT
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
    session_metadata: dict[str, Any] = {"source": tree.source}
    if tree.title:
        session_metadata["title"] = tree.title
    store.set_session_metadata(session_id, session_metadata)
    return ImportResult([session_id], len(new_nodes), len(present), len(grown))


def _grown_nodes(store: SessionStore, session_id: str, drafts: list[DraftNode]) -> list[Node]:
    """Stored nodes whose message gained lines since they were imported, with the new text.

    The written marker is dropped from a grown node, so its full text is
    pending again; every other metadata key (rewound, …) is kept.
    """
    grown = []
    for draft in drafts:
        old = store.get_node(session_id, draft.id)
        if (old.role, old.content) == (draft.role, draft.content):
            continue
        metadata = {key: value for key, value in old.metadata.items() if key != MARKER_KEY}
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
    return [
        block["text"]
        for block in content
        if isinstance(block, dict) and block.get("type") in text_types and isinstance(block.get("text"), str)
        and block["text"]
    ]


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
