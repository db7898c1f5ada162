"""The one file scanner every cache of the installed tree uses: paths and their signatures.

A *signature* is ``(mtime_ns, size, inode)`` from one ``lstat``: a file whose
signature is unchanged is not read again (topic summaries, archive parses,
the search index, the revision's per-file digests). One directory walk,
iterative, that never follows a symlinked directory and steps over entries
that vanish or cannot be read while it runs.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, Collection, Iterable

Signature = tuple[int, int, int]  # (mtime_ns, size, inode)


def signature(path: str | Path) -> Signature | None:
    """The signature of one file (None when it cannot be stat'ed); a symlink's own."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def scan(root: str | Path, top: str = "", *, suffix: str | None = None, skip_hidden: bool = False,
         skip: frozenset[str] = frozenset(), unlisted: list[str] | None = None) -> list[tuple[str, bool, Signature]]:
    """``(relative path, is a symlink, signature)`` of every file under ``root/top``.

    Paths are relative to ``root`` with ``/`` separators. ``suffix`` keeps
    only names ending in it, ``skip_hidden`` leaves out names starting with
    a dot (files and directories), ``skip`` names relative directory paths
    not to enter. Symlinks are reported as files (their own signature), never
    followed. ``unlisted`` (when given) gets each directory whose files the
    walk could not see because permission was denied (``chmod 000``): what
    is in it is not known to be gone.

    Where the platform allows, directories are walked by file descriptor, so each
    ``lstat`` resolves one name against its open directory instead of the whole
    path again (about 15 % of the stat pass on a 900-file tree). The walk is one
    loop that fills a list (no generator per level: at 10,000 records the pass
    runs before every transaction and search, and the Python around each
    ``lstat`` costs more than the call).
    """
    base = os.fspath(root)
    start = os.path.join(base, top) if top else base
    prefix = f"{top}/" if top else ""
    found: list[tuple[str, bool, Signature]] = []
    by_fd = _BY_FD
    flags = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0) if by_fd else 0
    stack: list[tuple[str, Any]] = []  # (relative prefix, open descriptor or path)
    try:
        if by_fd:  # (the start may be a symlink, as a path would follow it; a directory below never is)
            try:
                stack.append((prefix, os.open(start, flags)))
            except OSError as exc:
                _denied(unlisted, exc, top)
                return found
            flags |= getattr(os, "O_NOFOLLOW", 0)
        else:
            stack.append((prefix, start))
        while stack:
            here, where = stack.pop()
            try:
                with os.scandir(where) as entries:
                    for entry in entries:
                        name = entry.name
                        if skip_hidden and name[0] == ".":
                            continue
                        rel = here + name
                        try:
                            if entry.is_dir(follow_symlinks=False):
                                if rel not in skip:
                                    try:
                                        stack.append((rel + "/", os.open(name, flags, dir_fd=where) if by_fd
                                                      else entry.path))
                                    except OSError as exc:
                                        _denied(unlisted, exc, rel)
                                continue
                            if suffix is not None and not name.endswith(suffix):
                                continue
                            st = entry.stat(follow_symlinks=False)
                            found.append((rel, entry.is_symlink(), (st.st_mtime_ns, st.st_size, st.st_ino)))
                        except OSError as exc:
                            _denied(unlisted, exc, here.rstrip("/"))  # (a folder that can be read, not entered)
                            continue  # (vanished, or cannot be looked at or opened: stepped over)
            except OSError as exc:
                _denied(unlisted, exc, here.rstrip("/"))
            finally:
                if by_fd:
                    os.close(where)
    finally:
        for _here, where in stack:  # (an error left directories open)
            if by_fd:
                os.close(where)
    return found


def _denied(unlisted: list[str] | None, exc: OSError, rel: str) -> None:
    """Note directory ``rel`` in ``unlisted`` when ``exc`` is a permission refused (not a name that vanished)."""
    if unlisted is not None and isinstance(exc, PermissionError) and rel and rel not in unlisted:
        unlisted.append(rel)


_BY_FD = os.scandir in os.supports_fd and os.open in os.supports_dir_fd and hasattr(os, "O_DIRECTORY")


def topic_files(root: str | Path) -> dict[str, Signature]:
    """``topics/**/*.md`` with signatures: hidden names left out, symlinked directories not entered,
    a symlinked file only when it resolves inside the workspace (memory is never read from outside).

    This runs before every search (and the prompt hook), so it imports nothing beyond ``os`` until it
    meets a symlink."""
    out: dict[str, Signature] = {}
    unlisted: list[str] = []
    for rel, link, sig in scan(root, "topics", suffix=".md", skip_hidden=True, unlisted=unlisted):
        if link:
            from .layout import resolves_inside

            if not resolves_inside(Path(root), rel):
                continue
        out[rel] = sig
    if unlisted:
        out.update(unseen_topics(root, unlisted, out))
    return out


# The signature of a topic file inside a folder that cannot be opened: it is there, but cannot be looked at.
UNSEEN: Signature = (0, 0, 0)


def unseen_topics(root: str | Path, unlisted: list[str], seen: Collection[str]) -> dict[str, Signature]:
    """The committed topic files under the folders of ``unlisted`` (permission denied) that the walk could not
    see, each with :data:`UNSEEN` as signature: present, not read (the caches serve their last commit and name
    the folder), never taken for files removed. Reads HEAD's tree only when a folder refused the walk."""
    folders = tuple(rel + "/" for rel in unlisted if rel == "topics" or rel.startswith("topics/"))
    if not folders:
        return {}
    try:
        from dulwich.repo import Repo

        repo = Repo(os.fspath(root))
        paths = [os.fsdecode(entry.path) for entry in
                 repo.object_store.iter_tree_contents(repo[repo.head()].tree)]  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - no history to read: nothing is known to be there
        return {}
    return {rel: UNSEEN for rel in paths if rel.startswith(folders) and rel.endswith(".md") and rel not in seen
            and "/." not in rel}


def closed_folder(root: str | Path, rel: str) -> str | None:
    """The first folder above ``rel`` (relative to ``root``) that refuses to be listed or entered (permission
    denied), or None when every one opens: why a file in it cannot be read."""
    parts = rel.split("/")
    for depth in range(1, len(parts)):
        folder = "/".join(parts[:depth])
        try:
            os.listdir(os.path.join(root, folder))
            os.stat(os.path.join(root, folder, parts[depth]), follow_symlinks=False)
        except PermissionError:
            return folder
        except OSError:
            return None
    return None


class TreeScan:
    """One stat pass over every memory file of a workspace (all but ``.git/`` and ``.scriptorium/``).

    A transaction scans once (architecture §2.5): the topic files and the
    archives it reads, and the revision it reports, all come from this
    pass; after its install only the files it wrote are looked at again
    (:meth:`updated`). What :meth:`topics` and :meth:`under` return is
    worked out once per scan (do not change it).
    """

    __slots__ = ("root", "files", "_topics", "_under", "_dirs")

    def __init__(self, root: str | Path, files: dict[str, tuple[str, Signature, bool]] | None = None) -> None:
        self.root = os.fspath(root)
        self._topics: dict[str, Signature] | None = None
        self._under: dict[str, dict[str, Signature]] = {}
        self._dirs: set[str] | None = None
        if files is None:
            files = self._walk()
        self.files = files  # rel → (path, signature, is a symlink)

    def _walk(self) -> dict[str, tuple[str, Signature, bool]]:
        """The stat pass: every file, and in the same walk what :meth:`topics` and ``under("sources")``
        return (no second pass over the paths)."""
        files: dict[str, tuple[str, Signature, bool]] = {}
        topics: dict[str, Signature] = {}
        sources: dict[str, Signature] = {}
        base = self.root + os.sep
        unlisted: list[str] = []
        for rel, link, sig in scan(self.root, skip=frozenset({".git", ".scriptorium"}), unlisted=unlisted):
            files[rel] = (base + rel if os.sep == "/" else os.path.join(self.root, rel), sig, link)
            if rel.startswith("sources/"):
                sources[rel] = sig
            elif self._is_topic(rel, link):
                topics[rel] = sig
        for rel, sig in unseen_topics(self.root, unlisted, topics).items() if unlisted else ():
            files[rel], topics[rel] = (os.path.join(self.root, rel), sig, False), sig
        self._topics, self._under["sources/"] = topics, sources
        return files

    def _is_topic(self, rel: str, link: bool) -> bool:
        if not rel.startswith("topics/") or not rel.endswith(".md") or "/." in rel:
            return False  # (a hidden name at any depth below topics/)
        if link:
            from .layout import resolves_inside

            return resolves_inside(Path(self.root), rel)
        return True

    def topics(self) -> dict[str, Signature]:
        """What :func:`topic_files` finds: ``topics/**/*.md``, hidden names left out, a symlink only when it
        resolves inside the workspace."""
        if self._topics is None:
            self._topics = {rel: sig for rel, (_path, sig, link) in self.files.items()
                            if rel.startswith("topics/") and self._is_topic(rel, link)}
        return self._topics

    def under(self, top: str) -> dict[str, Signature]:
        """Every file under ``top/`` with its signature (what ``scan(root, top)`` gives)."""
        prefix = top.rstrip("/") + "/"
        found = self._under.get(prefix)
        if found is None:
            found = self._under[prefix] = {rel: sig for rel, (_path, sig, _link) in self.files.items()
                                           if rel.startswith(prefix)}
        return found

    def directories(self) -> set[str]:
        """Every directory holding a file of this scan (relative, no trailing ``/``), worked out once."""
        if self._dirs is None:
            dirs: set[str] = set()
            for rel in self.files:
                _add_parents(dirs, rel)
            self._dirs = dirs
        return self._dirs

    def updated(self, rels: Iterable[str]) -> "TreeScan":
        """This scan with ``rels`` looked at again (written, created or removed since)."""
        out = self._updated(rels, strict=False)
        assert out is not None
        return out

    def reported(self, rels: Iterable[str]) -> "TreeScan | None":
        """This scan with the paths a file watch reported looked at again; None when one of them is, or was,
        a directory (what moved inside it is not known from its path alone: a full pass must find it)."""
        return self._updated(rels, strict=True)

    def _updated(self, rels: Iterable[str], strict: bool) -> "TreeScan | None":
        files = dict(self.files)
        looked: list[str] = []
        for rel in rels:
            if rel.split("/", 1)[0] in (".git", ".scriptorium"):
                continue  # not memory files (runtime.json is looked at by the revision itself)
            looked.append(rel)
            path = os.path.join(self.root, rel)
            try:
                st = os.stat(path, follow_symlinks=False)
            except OSError:
                if strict and rel in self.directories():
                    return None  # a directory removed or renamed away
                files.pop(rel, None)
                continue
            if stat.S_ISDIR(st.st_mode):
                if strict:
                    return None  # a directory made or renamed here: its files were never reported
                files.pop(rel, None)
                continue
            files[rel] = (path, (st.st_mtime_ns, st.st_size, st.st_ino), stat.S_ISLNK(st.st_mode))
        out = TreeScan(self.root, files)
        if self._dirs is not None:
            dirs = set(self._dirs)
            for rel in looked:
                if rel in files:
                    _add_parents(dirs, rel)
            out._dirs = dirs
        if self._topics is not None:  # what was worked out already, with the files looked at again
            out._topics = dict(self._topics)
            for rel in looked:
                entry = files.get(rel)
                if entry is not None and out._is_topic(rel, entry[2]):
                    out._topics[rel] = entry[1]
                else:
                    out._topics.pop(rel, None)
        for prefix, found in self._under.items():
            moved = dict(found)
            for rel in looked:
                if rel.startswith(prefix):
                    if rel in files:
                        moved[rel] = files[rel][1]
                    else:
                        moved.pop(rel, None)
            out._under[prefix] = moved
        return out


def _add_parents(dirs: set[str], rel: str) -> None:
    """Add every directory above ``rel`` to ``dirs`` (stopping at one already there: its parents are too)."""
    cut = rel.rfind("/")
    while cut > 0 and rel[:cut] not in dirs:
        dirs.add(rel[:cut])
        cut = rel.rfind("/", 0, cut)
