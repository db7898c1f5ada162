"""Topic files moved or renamed outside the product (``mv``, a file manager, an editor): which, and the fix.

Recognised by identity (a file gone from disk whose block IDs are in a new one), read from the files and git
alone, so a search's fast path can ask without opening the workspace; and the one wording of the fix that
``memory check``, ``status``, ``memory edit`` of the old path and a refused write or sync give.
"""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..workspace.caches import edit_command
from .gitindex import index_key, read_stats

if TYPE_CHECKING:
    from .host import Workspace


def changed_topic_files(root: Path, on_disk: dict[str, tuple[int, int, int]] | None = None) -> list[str] | None:
    """:func:`~.adopt.changed_topics` of the memory directory ``root``, read without opening it (a search's fast path)."""
    from ..workspace.layout import Layout
    from ..workspace.scan import topic_files

    committed = read_stats(Layout(root).git)
    if committed is None:
        return None
    on_disk = topic_files(root) if on_disk is None else on_disk
    changed = [rel for rel, sig in on_disk.items() if committed.get(rel) != index_key(sig)]
    removed = [rel for rel in committed if rel.startswith("topics/") and rel.endswith(".md") and rel not in on_disk]
    return sorted(changed + removed)


def moved_outside(ws: "Workspace") -> dict[str, str]:
    """``{old: new}`` of the topic files moved or renamed outside the product (``mv``, a file manager, an editor),
    recognised by identity: ``old`` is gone from disk but still in the last commit, ``new`` is a file the last commit
    does not have that holds block IDs ``old`` held. Its relative links were written for ``old``'s folder
    (:func:`~.structured_markdown.rebase_moved_file` rewrites them for where it is now)."""
    if not any(not (ws.root / rel).exists() for rel in getattr(ws.cache, "held", {})):
        return {}  # (the file a move leaves is held back until the moved one is adopted: else nothing to do)
    return moved_on_disk(ws.root)


def moved_on_disk(root: Path) -> dict[str, str]:
    """:func:`moved_outside` of the memory directory ``root``, read from its files and git alone, without opening
    it (a search's fast path, before any command has held the old file back)."""
    from ..topics.model import parse_topic
    from ..workspace.caches import committed_text

    candidates = changed_topic_files(root) or []
    committed = {rel: committed_text(root, rel) for rel in candidates}
    gone = [rel for rel in candidates if committed[rel] is not None and not (root / rel).exists()]
    fresh = [rel for rel in candidates if committed[rel] is None and (root / rel).is_file()]
    if not gone or not fresh:
        return {}
    fresh_ids = {rel: ids_on_disk(root, rel) for rel in fresh}
    out: dict[str, str] = {}
    for old in gone:
        ids = set(parse_topic(committed[old] or "", old).block_ids())
        new = next((rel for rel in fresh if ids & fresh_ids[rel]), None)
        if new is not None:
            out[old] = new
    return out


def relinked_text(root: Path, old: str, new: str) -> str | None:
    """``new`` as it is on disk in the memory directory ``root``, moved there from ``old`` outside the product
    (:func:`moved_outside`), with its relative links rewritten for its folder; None when no link needs it (or it
    cannot be read as text)."""
    from ..topics.model import decode_topic
    from .structured_markdown import rebase_moved_file

    try:
        text = decode_topic((root / new).read_bytes())
    except (OSError, UnicodeDecodeError):
        return None
    rewritten = rebase_moved_file(text, old, new)
    return None if rewritten == text else rewritten


def ids_on_disk(root: Path, rel: str) -> set[str]:
    """The block IDs of the file ``rel`` as it is on disk, valid or not (none when it is gone or not text)."""
    from ..topics.model import decode_topic, parse_topic

    try:
        text = decode_topic((root / rel).read_bytes())
    except (OSError, UnicodeDecodeError):
        return set()
    return set(parse_topic(text, rel).block_ids())


# What a topic file moved to a folder of another depth breaks: its relative links, written for the old folder.
_LINK_RULES = frozenset({"bad-source-target", "unknown-source", "dangling-link"})


def move_fixes(ws: "Workspace") -> Callable[[str | None, str], str | None]:
    """The fix of a finding (file, rule) that a move made outside the product explains (:func:`moved_outside`),
    None for one it does not (rule ``moved``: the old path itself, asked for by name): the one wording ``check``,
    ``status`` and ``memory edit`` of the old path give. It names the moved file, never the old one: there is no old
    file left to edit. When its relative links still point from the old folder, that is the fix, and ``--repair``
    makes it (it needs no judgement)."""
    return moved_fixes(ws.root, moved_outside(ws))


def moved_fixes(root: "Path", moves: dict[str, str]) -> Callable[[str | None, str], str | None]:
    """:func:`move_fixes` of the moves ``{old: new}`` made outside the product in the memory directory ``root``
    (:func:`moved_on_disk` reads them without opening it: what a search's warning gives)."""
    fixes: dict[str, tuple[str, bool, str]] = {}  # {old or new: (fix, relink, "old" | "new")}
    for old, new in moves.items():
        relink = relinked_text(root, old, new) is not None
        if relink:
            fix = (f"{old} was moved to {new} outside the product (the same block IDs), and the relative links of "
                   f"{new} still point from {posixpath.dirname(old)}/: `openprogram memory check --repair` rewrites "
                   f"them, or correct them with `{edit_command(new)}`")
        else:
            fix = (f"{old} was moved to {new} outside the product (the same block IDs): correct the problem(s) named "
                   f"for {new} with `{edit_command(new)}`, and both are adopted together")
        fixes[old], fixes[new] = (fix, relink, "old"), (fix, relink, "new")

    def fix_of(rel: str | None, rule: str) -> str | None:
        fix, relink, side = fixes.get(rel or "", ("", False, ""))
        if (side == "old" and (relink or rule in ("lost-block-id", "moved"))) or (
                side == "new" and relink and (rule in _LINK_RULES or rule == "uncommitted")):
            return fix
        return None

    return fix_of
