"""The one file scanner every cache of the installed tree uses: paths and their signatures.

A *signature* is ``(mtime_ns, size, inode)`` from one ``lstat``: a file whose
signature is unchanged is not read again (topic summaries, archive parses,
the search index, the revision's per-file digests). One directory walk,
iterative, that never follows a symlinked directory and steps over entries
that vanish or cannot be read while it runs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

Signature = tuple[int, int, int]  # (mtime_ns, size, inode)


def scan(root: str | Path, top: str = "", *, suffix: str | None = None, skip_hidden: bool = False,
         skip: frozenset[str] = frozenset()) -> Iterator[tuple[str, os.DirEntry, Signature]]:
    """``(relative path, entry, signature)`` of every file under ``root/top``.

    Paths are relative to ``root`` with ``/`` separators. ``suffix`` keeps
    only names ending in it, ``skip_hidden`` leaves out names starting with
    a dot (files and directories), ``skip`` names relative directory paths
    not to enter. Symlinks are reported as files (their own signature), never
    followed.
    """
    base = os.fspath(root)
    stack = [(f"{top}/" if top else "", os.path.join(base, top) if top else base)]
    while stack:
        prefix, path = stack.pop()
        try:
            entries = os.scandir(path)
        except OSError:
            continue
        with entries:
            for entry in entries:
                name = entry.name
                if skip_hidden and name.startswith("."):
                    continue
                rel = prefix + name
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if rel not in skip:
                            stack.append((rel + "/", entry.path))
                        continue
                    if suffix is not None and not name.endswith(suffix):
                        continue
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                yield rel, entry, (st.st_mtime_ns, st.st_size, st.st_ino)


def topic_files(root: str | Path) -> dict[str, Signature]:
    """``topics/**/*.md`` with signatures: hidden names left out, symlinked directories not entered,
    a symlinked file only when it resolves inside the workspace (memory is never read from outside).

    This runs before every search (and the prompt hook), so it imports nothing beyond ``os`` until it
    meets a symlink."""
    out: dict[str, Signature] = {}
    for rel, entry, sig in scan(root, "topics", suffix=".md", skip_hidden=True):
        if entry.is_symlink():
            from .layout import resolves_inside

            if not resolves_inside(Path(root), rel):
                continue
        out[rel] = sig
    return out
