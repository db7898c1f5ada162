"""A record pasted into another topic file with its block ID: which file is the copy (architecture §15).

``cp topics/bikes.md "topics/bikes copy.md"`` (Finder, Obsidian), or a
paragraph pasted footnote and block ID and all, leaves one block ID in two
files. The file that held the ID at its last commit is the original; the one
that took it since is the copy, held back until it gets an ID of its own.
Adoption decides it for the tree it judges (``transaction/adopt.py``); a
search, which opens no workspace, decides it here from the files and git
for the topic files its index meets for the first time, or finds holding a
block ID they did not hold when it last read them — one decision, one
wording, so both name the copy alike.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Callable, Iterable, Mapping


def original_of(rel: str, holders: Iterable[str], held_then: Callable[[str], bool]) -> str | None:
    """The file ``rel`` copied a block ID from: of the ``holders`` (the files that hold that ID now), the first
    other than ``rel`` that held it at its last commit (``held_then``), while ``rel`` did not. None when ``rel``
    held it then (it only kept it), or no other file did (an ID used twice, not a copy)."""
    if held_then(rel):
        return None
    return next((other for other in holders if other != rel and held_then(other)), None)


def copied_problem(block_id: str, original: str) -> str:
    """What a file that took ``block_id`` from ``original`` breaks, and the fix: the words adoption holds it back
    with, which ``status``, ``memory check``, search and recall show."""
    return (f"[duplicate-id] block ID ^{block_id} is already in {original}, which held it first: a copy of its "
            f"record keeps one ID in two files; give the copy here a new block ID or remove it")


def pasted_copies(root: Path, fresh: Mapping[str, Iterable[str]], in_hand: Iterable[tuple[str, Iterable[str]]],
                  indexed: Callable[[], Iterable[tuple[str, Iterable[str]]]] | None) -> dict[str, str]:
    """``{path: problem}`` of the files of ``fresh`` (path → the block IDs it holds now, in file order) that took
    a block ID another file held at its last commit (:func:`original_of`, :func:`copied_problem`). The block IDs
    every other topic file holds now: ``in_hand`` (already read) and ``indexed`` (None: no other; costly: asked only
    for IDs a fresh file did not hold at its last commit, so a new topic file the writer committed costs one git
    read, and an index built from scratch, all in hand, none). Git is read for IDs held twice."""
    committed = functools.cache(lambda rel: committed_ids(root, rel))
    holders: dict[str, list[str]] = {}
    for rel, ids in fresh.items():
        for block_id in dict.fromkeys(ids):
            holders.setdefault(block_id, []).append(rel)

    def add(files_ids: Iterable[tuple[str, Iterable[str]]]) -> None:
        for rel, ids in files_ids:
            for block_id in ids:
                files = holders.get(block_id)
                if files is not None and rel not in files:
                    files.append(rel)

    add(in_hand)
    if indexed is not None and any(len(holders[block_id]) < 2 and block_id not in committed(rel)
                                   for rel, ids in fresh.items() for block_id in ids):
        add(indexed())  # (an ID the fresh file held at its last commit cannot make it a copy: no need to look)
    if all(len(files) < 2 for files in holders.values()):
        return {}
    out: dict[str, str] = {}
    for rel, ids in fresh.items():
        for block_id in ids:  # (the first ID of the file that another file held first: as adoption names it)
            if len(holders[block_id]) < 2:
                continue
            original = original_of(rel, sorted(holders[block_id]), lambda other: block_id in committed(other))
            if original is not None:
                out[rel] = copied_problem(block_id, original)
                break
    return out


def committed_ids(root: Path, rel: str) -> frozenset[str]:
    """The block IDs topic file ``rel`` held at its last commit (none when it was not committed)."""
    from ..topics.model import parse_topic
    from .caches import committed_text

    text = committed_text(root, rel)
    return frozenset() if text is None else frozenset(parse_topic(text, rel).block_ids())
