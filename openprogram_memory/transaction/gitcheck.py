"""Git damage a crash (or a person) can leave, found at open and repaired where it is safe.

- **stale lock files**: every commit is made under the workspace write
  lock, so a ``.git/*.lock`` seen while holding it was left by a killed
  process; it is removed (otherwise every later commit fails with
  "File exists" and history silently stops);
- **a damaged index** (bad header or checksum): rewritten from HEAD's tree;
- **HEAD at a missing or unreadable commit or tree**: not repaired at
  open (that chooses history for the person); reported (status warnings,
  ``GIT_UNAVAILABLE`` on commit) — never a ``git_committed: true`` lie —
  and repaired on request by ``memory check --repair``
  (:func:`newest_sound_commit`, :mod:`.repair`).
"""

from __future__ import annotations

import hashlib
import os
import re
import zlib
from pathlib import Path

from .gitindex import entry_from_stat, write_index

_TOP_LOCKS = ("index.lock", "HEAD.lock", "packed-refs.lock", "config.lock")


def stale_locks(git_dir: Path, deep: bool = False) -> list[Path]:
    """Lock files in ``git_dir``: the index, HEAD, refs and pack indexes always; loose objects when ``deep``.

    A pack index lock is left by a ``memory sync`` fetch killed while
    storing what it fetched (the fetch of a remote on this machine stores
    under the write lock; one over the network does not, and a concurrent
    one that loses its lock fails and is retried by the next sync).
    """
    found = [git_dir / name for name in _TOP_LOCKS if (git_dir / name).exists()]
    try:
        with os.scandir(git_dir / "objects" / "pack") as it:
            found.extend(Path(entry.path) for entry in it if entry.name.endswith(".lock"))
    except OSError:
        pass
    refs = git_dir / "refs"
    for dirpath, _dirs, names in os.walk(refs):
        found.extend(Path(dirpath) / name for name in names if name.endswith(".lock"))
    if deep:
        objects = git_dir / "objects"
        try:
            fans = [entry for entry in os.scandir(objects) if len(entry.name) == 2 and entry.is_dir()]
        except OSError:
            fans = []
        for fan in fans:
            with os.scandir(fan.path) as it:
                found.extend(Path(entry.path) for entry in it if entry.name.endswith(".lock"))
    return found


def remove_locks(locks: list[Path]) -> list[str]:
    removed = []
    for path in locks:
        try:
            path.unlink()
            removed.append(path.name)
        except FileNotFoundError:
            pass
    return removed


_SOUND: dict[str, tuple[int, int, int]] = {}  # index path → the signature it had when its checksum held


def index_damaged(git_dir: Path) -> bool:
    """Whether ``.git/index`` exists but fails its header or trailing checksum. An index this process found
    sound is not read again while its signature holds (every writer replaces the file: a new inode)."""
    from ..workspace.scan import signature

    path = git_dir / "index"
    sig = signature(path)
    if sig is not None and _SOUND.get(str(path)) == sig:
        return False
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return False
    except OSError:
        return True
    if len(data) < 32 or data[:4] != b"DIRC" or int.from_bytes(data[4:8], "big") not in (2, 3, 4):
        return True
    damaged = hashlib.sha1(data[:-20]).digest() != data[-20:]
    if not damaged and sig is not None and sig[1] == len(data):
        _SOUND[str(path)] = sig
    return damaged


def rebuild_index(root: Path) -> None:
    """Rewrite the index from HEAD's tree (work-tree stat where the bytes match)."""
    from dulwich.objects import Blob, Commit
    from dulwich.repo import Repo

    repo = Repo(str(root))
    entries: dict[bytes, bytes] = {}
    try:
        head = repo.object_store[repo.head()]
    except KeyError:
        head = None
    tree = head.tree if isinstance(head, Commit) else None
    if tree is not None:
        for path, mode, sha in repo.object_store.iter_tree_contents(tree):
            full = root / os.fsdecode(path)
            try:
                st = os.lstat(full)
                same = Blob.from_string(full.read_bytes()).id == sha
            except OSError:
                st, same = None, False
            if st is None or not same:
                st = os.stat_result((mode, 0, 0, 0, 0, 0, 0, 0, 0, 0))  # no stat: git re-hashes it
            entries[path] = entry_from_stat(path, st, mode, sha)
    write_index(root / ".git", entries)


_SHA_RE = re.compile(rb"[0-9a-f]{40}")


def _loose_object(git_dir: Path, sha: bytes) -> tuple[bytes, bytes] | None:
    """``(type, body)`` of a loose object that decompresses whole with the size its header says, else None."""
    try:
        raw = zlib.decompress((git_dir / "objects" / sha[:2].decode() / sha[2:].decode()).read_bytes())
    except (OSError, zlib.error):
        return None
    header, sep, body = raw.partition(b"\0")
    kind, _, size = header.partition(b" ")
    if not sep or not size.isdigit() or int(size) != len(body):
        return None
    return kind, body


def _healthy_loose_head(root: Path) -> bool:
    """HEAD's commit, its tree and the tree's entries all read whole as loose objects (no dulwich import:
    ``status`` pays ~110 ms for it). False means "not shown this way": the full check decides."""
    git_dir = root / ".git"
    try:
        head = (git_dir / "HEAD").read_bytes().strip()
        if head.startswith(b"ref: "):
            head = (git_dir / head[5:].decode("utf-8", "surrogateescape")).read_bytes().strip()
    except (OSError, ValueError):
        return False
    if not _SHA_RE.fullmatch(head):
        return False
    commit = _loose_object(git_dir, head)
    if commit is None or commit[0] != b"commit" or not commit[1].startswith(b"tree "):
        return False
    tree_sha = commit[1][5:45]
    tree = _loose_object(git_dir, tree_sha) if _SHA_RE.fullmatch(tree_sha) else None
    if tree is None or tree[0] != b"tree":
        return False
    body, at = tree[1], 0
    while at < len(body):  # entries: b"<mode> <name>\0" + 20-byte binary sha
        end = body.find(b"\0", at)
        if end < 0 or end + 21 > len(body):
            return False
        if _loose_object(git_dir, body[end + 1 : end + 21].hex().encode()) is None:
            return False
        at = end + 21
    return True


def head_problem(root: Path) -> str | None:
    """Why HEAD cannot carry a new commit (missing or unreadable commit or tree), or None."""
    if _healthy_loose_head(root):
        return None
    from dulwich.objects import Commit, Tree
    from dulwich.repo import Repo

    try:
        repo = Repo(str(root))
    except Exception as exc:  # noqa: BLE001 - any failure to open is the finding
        return f"the git repository cannot be opened ({type(exc).__name__}: {exc})"
    try:
        head = repo.head()
    except KeyError:
        return None  # no commit yet
    except Exception as exc:  # noqa: BLE001
        return f"HEAD is unreadable ({type(exc).__name__}: {exc})"
    try:
        commit = repo.object_store[head]
        if not isinstance(commit, Commit):
            raise TypeError(f"HEAD names a {commit.type_name.decode()}, not a commit")
        tree = repo.object_store[commit.tree]
        if not isinstance(tree, Tree):
            raise TypeError(f"the commit's tree is a {tree.type_name.decode()}")
        for entry in tree.items():  # top-level entries must be readable too
            repo.object_store[entry.sha]
    except Exception as exc:  # noqa: BLE001
        name = head.decode("ascii", "replace")[:40] if isinstance(head, bytes) else str(head)
        return f"HEAD points at commit {name}, which is missing or damaged ({type(exc).__name__})"
    return None


def repair_hint(root: Path) -> str:
    from ..fsutil import shell_args

    git_dir = shell_args(root)
    return (f"`openprogram memory check --repair` points HEAD at the newest sound commit and commits the installed "
            f"files on top; or inspect with `git -C {git_dir} fsck` and `git -C {git_dir} reset --soft <commit>`; "
            "memory files are intact")


def newest_sound_commit(repo) -> bytes | None:
    """The newest commit in the object store whose whole tree reads (what HEAD can be pointed back at)."""
    from dulwich.objects import Commit

    commits = []
    for sha in repo.object_store:
        try:
            obj = repo.object_store[sha]
        except Exception:  # noqa: BLE001 - an unreadable object is not a candidate
            continue
        if isinstance(obj, Commit):
            commits.append(obj)
    for commit in sorted(commits, key=lambda c: (c.commit_time, c.id), reverse=True):
        try:
            for _entry in repo.object_store.iter_tree_contents(commit.tree):
                repo.object_store[_entry.sha]  # every blob must read too
        except Exception:  # noqa: BLE001 - damaged: try the one before
            continue
        return commit.id
    return None
