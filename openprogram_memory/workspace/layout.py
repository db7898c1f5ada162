"""Where things live under ``<state>/memory`` — the only module that knows names."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

from ..failures import FailureCode, MemoryFailure
from ..frozen import Frozen

TOPICS = "topics"
SOURCES = "sources"
CORE_TOPIC = "topics/core.md"
CORE_RENDER = "core.md"
TIMELINE = "timeline"
RECENT = "recent_events.jsonl"
RELATIONS = "relations.json"
SCRIPTORIUM = ".scriptorium"
RUNTIME = ".scriptorium/runtime.json"
MANIFEST = ".scriptorium/manifest.sqlite"  # workspace/manifest.py
DERIVED_FILES = (CORE_RENDER, RECENT, RELATIONS)
GIT_EXCLUDE = "/.scriptorium*\n"
MAX_TOPIC_DEPTH = 16  # directories and file below topics/
MAX_COMPONENT_BYTES = 255  # NAME_MAX on every common file system
# Bidirectional controls make a name display as another one (U+202E "RLO").
_BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


class Layout(Frozen):
    """Paths of one memory workspace rooted at ``root`` (immutable, hashable; no dataclass: see ``Settings``)."""

    __slots__ = ("root",)
    root: Path

    def __init__(self, root: Path) -> None:
        self._init(root)

    def __hash__(self) -> int:  # type: ignore[override]  # a layout is a dict key (one per root)
        return hash((Layout, self.root))

    @property
    def topics(self) -> Path:
        return self.root / TOPICS

    @property
    def sources(self) -> Path:
        return self.root / SOURCES

    @property
    def scriptorium(self) -> Path:
        return self.root / SCRIPTORIUM

    @property
    def git(self) -> Path:
        return self.root / ".git"

    def state(self, name: str) -> Path:
        """A runtime-state file under ``.scriptorium/``."""
        return self.scriptorium / name

    @property
    def lock_file(self) -> Path:
        return self.state("write.lock")

    @property
    def install_dir(self) -> Path:
        return self.state("install")

    def path(self, rel: str) -> Path:
        return self.root / rel

    def exists(self) -> bool:
        return self.git.is_dir() and self.scriptorium.is_dir()


def is_derived(rel: str) -> bool:
    return rel in DERIVED_FILES or rel.startswith(TIMELINE + "/")


# What editors, file managers and vault apps leave beside the files they open (Obsidian's .obsidian/ and .trash/,
# vim's .x.md.swp and x.md~, macOS's .DS_Store, Windows' Thumbs.db): hidden names are caught by their dot.
_LEFTOVER_NAMES = frozenset({"Thumbs.db", "desktop.ini"})
_LEFTOVER_SUFFIXES = ("~", ".swp", ".swo")


def is_memory_file(rel: str) -> bool:
    """Whether ``rel`` (relative, ``/`` separators) is a file the product owns and reads: a topic
    (``topics/**/*.md``), an archive file under ``sources/``, a derived view. Hidden names at any depth and
    editor leftovers are not, wherever they sit: they are never reported, committed, read as memory or part of
    the revision. (String tests, no split: the revision asks this of every file before each transaction.)"""
    if rel.startswith(".") or "/." in rel:
        return False
    name = rel[rel.rfind("/") + 1:]
    if name in _LEFTOVER_NAMES or name.endswith(_LEFTOVER_SUFFIXES):
        return False
    if rel.startswith(TOPICS + "/"):
        return name.endswith(".md")
    return rel.startswith((SOURCES + "/", TIMELINE + "/")) or rel in DERIVED_FILES


def resolves_inside(root: Path, rel: str) -> bool:
    """Whether ``root/rel``, symlinks followed, stays inside ``root``."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(os.path.join(real_root, rel))
    return real == real_root or real.startswith(real_root + os.sep)


def state_path(layout: Layout, rel: object, allow_runtime: bool = False) -> str | None:
    """A memory-tree path read from runtime state (install journal, git ledger), or None if unsafe.

    Our own state files can still be damaged or planted: a path is used only
    when it is a relative, normalized path inside ``topics/``, ``sources/``,
    ``timeline/`` or a derived file (or ``runtime.json``, which installs
    with the tree, when ``allow_runtime``), that resolves inside the workspace.
    """
    if not isinstance(rel, str) or not rel or "\0" in rel or "\\" in rel or rel.startswith("/"):
        return None
    parts = rel.split("/")
    if any(part in ("", ".", "..") for part in parts) or os.path.isabs(rel):
        return None
    if parts[0] not in (TOPICS, SOURCES, TIMELINE) and not (len(parts) == 1 and rel in DERIVED_FILES) \
            and not (allow_runtime and rel == RUNTIME):
        return None
    root = os.path.realpath(layout.root)
    parent = os.path.realpath(os.path.join(root, *parts[:-1]))
    if parent != root and not parent.startswith(root + os.sep):
        return None
    return rel


def check_topic_path(path: str) -> str:
    """Normalize a caller-supplied path to ``topics/…md`` or refuse it.

    Absolute paths and ``..`` → PATH_OUTSIDE_WORKSPACE; anything that is not a
    Markdown file under ``topics/`` (sources, derived views, state) →
    READ_ONLY_PATH. A path without the ``topics/`` prefix is taken as
    relative to ``topics/`` only when it names no other top-level area.
    """
    if not isinstance(path, str):
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"a topic path must be a string, got {type(path).__name__}")
    raw = path.strip().replace("\\", "/")
    if raw.startswith("/") or os.path.isabs(raw) or (len(raw) > 1 and raw[1] == ":"):
        raise MemoryFailure(FailureCode.PATH_OUTSIDE_WORKSPACE, f"absolute path not allowed: {path}")
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise MemoryFailure(FailureCode.PATH_OUTSIDE_WORKSPACE, f"path leaves the workspace: {path}")
    if not parts:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"empty path: {path!r}")
    top = parts[0]
    if top != TOPICS:
        if top in (SOURCES, TIMELINE, SCRIPTORIUM, ".git") or "/".join(parts) in DERIVED_FILES:
            raise MemoryFailure(
                FailureCode.READ_ONLY_PATH,
                f"{'/'.join(parts)} is not editable: only topics/**/*.md are (sources are append-only, views are derived)",
            )
        parts = [TOPICS, *parts]
    if len(parts) < 2 or not parts[-1].endswith(".md") or parts[-1] == ".md":
        raise MemoryFailure(FailureCode.READ_ONLY_PATH, f"only Markdown topic files under topics/ are editable: {path}")
    if any(p.startswith(".") for p in parts):
        raise MemoryFailure(FailureCode.READ_ONLY_PATH, f"hidden paths are not topic files: {path}")
    _check_components(parts[1:], path)
    return "/".join(parts)


def _check_components(parts: list[str], path: str) -> None:
    """Names every file system, shell and terminal shows as what they are."""
    def refuse(why: str) -> MemoryFailure:
        return MemoryFailure(FailureCode.INVALID_ARGUMENT, f"topic path {path!r} {why}")

    if len(parts) > MAX_TOPIC_DEPTH:
        raise refuse(f"is {len(parts)} levels deep; at most {MAX_TOPIC_DEPTH} below topics/")
    for part in parts:
        if part.startswith("~"):
            raise refuse(f"has a component starting with '~' ({part!r}); shells expand it to a home directory")
        if len(part.encode("utf-8", "surrogatepass")) > MAX_COMPONENT_BYTES:
            raise refuse(f"has a component longer than {MAX_COMPONENT_BYTES} bytes")
        for ch in part:
            if ch in _BIDI_CONTROLS or unicodedata.category(ch) in ("Cc", "Cs", "Zl", "Zp"):
                raise refuse(f"contains the control character U+{ord(ch):04X}; names must be printable")
