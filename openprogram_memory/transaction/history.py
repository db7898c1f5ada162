"""Git history with dulwich: commits that cost what changed.

``porcelain.add`` + ``commit`` walks the whole work tree (≈340 ms for 10,000
files). Here a commit writes blobs for the changed paths only, rebuilds the
trees along those paths from HEAD's tree, and updates the index entries of
those paths, so ``git status`` stays clean and ``git fsck --strict`` is
happy.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from ..failures import FailureCode, MemoryFailure
from ..workspace.layout import GIT_EXCLUDE, is_memory_file
from .gitindex import update_index
from .update_request import check_envelope_values

AUTHOR = b"OpenProgram Memory <memory@openprogram.local>"
FILE_MODE = 0o100644
TREE_MODE = 0o040000


_HEX = re.compile(r"[0-9a-fA-F]{4,40}")


def _repo(root: Path):
    try:
        from dulwich.repo import Repo
    except ImportError as exc:  # pragma: no cover - dulwich is a dependency
        raise MemoryFailure(FailureCode.GIT_UNAVAILABLE, f"dulwich is not importable: {exc}") from None
    try:
        repo = Repo(str(root))
    except Exception as exc:
        raise MemoryFailure(FailureCode.GIT_UNAVAILABLE, f"no git repository at {root}: {exc}") from None
    # Archives are append-only files that grow all day: every commit stores one whole as a new loose
    # object. zlib level 1 writes it 3x faster than the default 6 (any git reads any level);
    # `git gc` packs and recompresses later. A level the person configured is kept.
    if getattr(repo.object_store, "loose_compression_level", None) == -1:
        repo.object_store.loose_compression_level = 1
    return repo


def init_repo(root: Path) -> None:
    """Create the repository and exclude runtime state from it."""
    from dulwich.repo import Repo

    if not (root / ".git").is_dir():
        Repo.init(str(root), default_branch=b"main")
    os.chmod(root / ".git", 0o700)  # history holds every past memory: owner only (architecture §1), like the tree
    exclude = root / ".git" / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    current = exclude.read_text() if exclude.exists() else ""
    if GIT_EXCLUDE.strip() not in current.splitlines():
        exclude.write_text(current + ("" if current.endswith("\n") or not current else "\n") + GIT_EXCLUDE)


def _sync_index(root: Path, stats: dict) -> None:
    update_index(root / ".git", {path: (None if value is None else (value[0], value[1], FILE_MODE))
                                 for path, value in stats.items()})


def _head(root: Path, repo) -> tuple[bytes | None, bytes | None]:
    """HEAD's commit and tree, (None, None) before the first commit; damage is GIT_UNAVAILABLE.

    A HEAD at a missing commit must not be mistaken for "no commit yet":
    that would start a new root history and report it as committed.
    """
    try:
        head = repo.refs[b"HEAD"]
    except KeyError:
        return None, None
    except Exception as exc:  # noqa: BLE001 - a garbled ref file
        raise _damaged(root, f"HEAD is unreadable ({type(exc).__name__})") from None
    try:
        tree = repo.object_store[head].tree
        repo.object_store[tree]
    except Exception as exc:  # noqa: BLE001 - missing or corrupt object
        name = head.decode("ascii", "replace")[:40] if isinstance(head, bytes) else repr(head)
        raise _damaged(root, f"HEAD points at commit {name}, which is missing or damaged "
                             f"({type(exc).__name__})") from None
    return head, tree


def _damaged(root: Path, what: str) -> MemoryFailure:
    from .gitcheck import repair_hint

    return MemoryFailure(FailureCode.GIT_UNAVAILABLE, f"{what}; history is not written until it is repaired: "
                         + repair_hint(root), retryable=False)


# Tree entries by (object store, tree id): git objects never change, so a commit reads each directory it
# rewrites from memory instead of opening, inflating and parsing the loose object the last commit wrote.
_TREES: dict[tuple[str, bytes], list] = {}
_TREES_MAX = 256  # (a few MB at most: emptied when it grows past this many trees)


def _tree_key(store, tree_sha: bytes) -> tuple[str, bytes]:
    return str(getattr(store, "path", id(store))), tree_sha


def _keep_tree(key: tuple[str, bytes], items: list) -> list:
    if len(_TREES) >= _TREES_MAX:
        _TREES.clear()
    _TREES[key] = items
    return items


def _remember_trees(store, objects: list) -> None:
    """Keep the entries of the trees just written to ``store``."""
    from dulwich.objects import Tree

    for obj in objects:
        if isinstance(obj, Tree):
            _keep_tree(_tree_key(store, obj.id), list(obj.items()))


def _tree_items(store, tree_sha: bytes | None) -> list:
    """The entries of an existing tree (none for ``None``); GIT_UNAVAILABLE if it cannot be read."""
    if tree_sha is None:
        return []
    key = _tree_key(store, tree_sha)
    known = _TREES.get(key)
    if known is not None:
        return known
    try:
        return _keep_tree(key, list(store[tree_sha].items()))
    except Exception as exc:  # noqa: BLE001 - a truncated or missing tree object is damage, not a retry
        raise MemoryFailure(FailureCode.GIT_UNAVAILABLE, f"tree {tree_sha.decode('ascii', 'replace')} in HEAD "
                            f"is missing or damaged ({type(exc).__name__}); run `git fsck`",
                            retryable=False) from None


def _update_tree(store, tree_sha: bytes | None, changes: dict[tuple[bytes, ...], bytes | None], new_objects: list) -> bytes | None:
    """Apply ``{path parts: blob sha or None}`` below ``tree_sha``; None if empty."""
    from dulwich.objects import Tree

    tree = Tree()
    for entry in _tree_items(store, tree_sha):
        tree.add(entry.path, entry.mode, entry.sha)
    direct: dict[bytes, bytes | None] = {}
    nested: dict[bytes, dict[tuple[bytes, ...], bytes | None]] = {}
    for parts, sha in changes.items():
        if len(parts) == 1:
            direct[parts[0]] = sha
        else:
            nested.setdefault(parts[0], {})[parts[1:]] = sha
    for name, sha in direct.items():
        if sha is None:
            if name in tree:
                del tree[name]
        else:
            tree.add(name, FILE_MODE, sha)
    for name, sub in nested.items():
        existing = tree[name][1] if name in tree and tree[name][0] == TREE_MODE else None
        new_sha = _update_tree(store, existing, sub, new_objects)
        if new_sha is None:
            if name in tree:
                del tree[name]
        else:
            tree.add(name, TREE_MODE, new_sha)
    if not len(tree):
        return None
    new_objects.append(tree)
    return tree.id


@dataclass(frozen=True)
class CommitInfo:
    id: str
    message: str
    time: int
    author: str


def _blobs_of(root: Path, paths: list[str]) -> tuple[list, dict[tuple[bytes, ...], bytes | None],
                                                      dict[bytes, tuple[os.stat_result, bytes] | None]]:
    """Blobs of the files at ``paths`` (a missing file or a symlink is a deletion), the tree changes, and stats."""
    from dulwich.objects import Blob

    new_objects: list = []
    changes: dict[tuple[bytes, ...], bytes | None] = {}
    stats: dict[bytes, tuple[os.stat_result, bytes] | None] = {}
    for rel in sorted(set(paths)):
        full = root / rel
        key = tuple(rel.encode("utf-8").split(b"/"))
        if full.is_file() and not full.is_symlink():
            blob = Blob.from_string(full.read_bytes())
            new_objects.append(blob)
            changes[key] = blob.id
            stats[rel.encode("utf-8")] = (os.stat(full), blob.id)
        else:
            changes[key] = None
            stats[rel.encode("utf-8")] = None
    return new_objects, changes, stats


def _new_commit(tree_id: bytes, parents: list[bytes], message: str):
    """A commit object of ``tree_id`` by the memory's author, now, in local time."""
    from dulwich.objects import Commit

    now = int(time.time())
    commit = Commit()
    commit.tree = tree_id
    commit.parents = parents
    commit.author = commit.committer = AUTHOR
    commit.author_time = commit.commit_time = now
    offset = -time.timezone if not time.localtime(now).tm_isdst else -time.altzone
    commit.author_timezone = commit.commit_timezone = offset
    commit.encoding = b"UTF-8"
    commit.message = message.encode("utf-8") + (b"" if message.endswith("\n") else b"\n")
    return commit


def commit_paths(root: Path, paths: list[str], message: str, merge_parent: str | None = None) -> str | None:
    """Commit the current bytes of ``paths`` (missing → deleted). Returns the id.

    Returns None when nothing differs from HEAD. Raises GIT_COMMIT_FAILED.
    With ``merge_parent`` (``memory sync``) the commit gets it as second
    parent; when HEAD is its ancestor and the tree is exactly its tree, HEAD
    moves to it instead (a fast-forward: no commit that only repeats it).
    """
    check_envelope_values(None, message)  # a NUL would corrupt history (fsck: nulInCommit)
    try:
        repo = _repo(root)
        store = repo.object_store
        head, parent_tree = _head(root, repo)
        new_objects, changes, stats = _blobs_of(root, paths)
        tree_id = _update_tree(store, parent_tree, changes, new_objects)
        if tree_id is None:
            from dulwich.objects import Tree

            empty = Tree()
            new_objects.append(empty)
            tree_id = empty.id
        merge = merge_parent.encode("ascii") if merge_parent else None
        if merge is not None and head is not None and _contains(repo, head, merge):
            merge = None  # already merged (a note left by a crash after the commit)
        if tree_id == parent_tree and merge is None:
            # already committed (a commit killed between its ref update and
            # its index write): bring the index in line all the same
            _sync_index(root, stats)
            return None
        if merge is not None and _fast_forwards(repo, head, merge, tree_id):
            new_id = merge
            for obj in new_objects:
                store.add_object(obj)
            _move_head(repo, head, new_id)
            _sync_index(root, stats)
            return new_id.decode("ascii")
        commit = _new_commit(tree_id, ([head] if head else []) + ([merge] if merge is not None else []), message)
        new_objects.append(commit)
        for obj in new_objects:  # loose objects: a pack per commit would pile up thousands of packs
            store.add_object(obj)
        _remember_trees(store, new_objects)
        _move_head(repo, head, commit.id)
        _sync_index(root, stats)
        return commit.id.decode("ascii")
    except MemoryFailure as failure:
        if failure.code is FailureCode.GIT_UNAVAILABLE:
            raise
        raise MemoryFailure(FailureCode.GIT_COMMIT_FAILED, failure.message, retryable=True) from None
    except Exception as exc:
        raise MemoryFailure(FailureCode.GIT_COMMIT_FAILED, f"git commit failed: {type(exc).__name__}: {exc}",
                            retryable=True) from None


def _move_head(repo, head: bytes | None, new_id: bytes) -> None:
    if head is None:
        repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
        repo.refs.add_if_new(b"refs/heads/main", new_id)
    elif not repo.refs.set_if_equals(b"HEAD", head, new_id):
        raise MemoryFailure(FailureCode.GIT_COMMIT_FAILED, "HEAD moved during commit")


def _contains(repo, head: bytes, commit: bytes) -> bool:
    from dulwich.graph import can_fast_forward

    return head == commit or can_fast_forward(repo, commit, head)


def _fast_forwards(repo, head: bytes | None, target: bytes, tree_id: bytes) -> bool:
    """HEAD is an ancestor of ``target`` and ``tree_id`` is its tree."""
    from dulwich.graph import can_fast_forward

    if repo.object_store[target].tree != tree_id:
        return False
    return head is None or can_fast_forward(repo, head, target)


def log(root: Path, limit: int = 50) -> list[CommitInfo]:
    repo = _repo(root)
    try:
        head = repo.refs[b"HEAD"]
    except KeyError:
        return []
    out: list[CommitInfo] = []
    for entry in repo.get_walker(include=[head], max_entries=limit):
        c = entry.commit
        out.append(CommitInfo(c.id.decode(), c.message.decode("utf-8", "replace").strip(), c.commit_time,
                              c.author.decode("utf-8", "replace")))
    return out


def resolve_rev(root: Path, rev: str) -> bytes:
    """The commit id ``rev`` names in the memory history, as git reads a revision: a commit id or a unique prefix
    of at least 4 hex digits, ``HEAD``, a branch or tag, each followed by any ``~N`` / ``^N`` (``HEAD~1``,
    ``HEAD^``, ``3f9a0c1e~2``). ``MEMORY_NOT_FOUND`` (exit 65) when it names no commit here, for every verb that
    takes a revision."""
    from dulwich.objectspec import AmbiguousShortId, parse_commit, parse_object

    repo = _repo(root)
    spec = rev.strip() or "HEAD"
    # dulwich reads a short id only on its own and ~/^ only after a full id or a name: the start is read first
    cut = min((spec.find(sep) for sep in "~^" if sep in spec), default=len(spec))
    start, after = spec[:cut], spec[cut:]
    if _HEX.fullmatch(start):
        start = start.lower()  # (as `memory log` prints it, or typed in capitals)
    try:
        commit = parse_commit(repo, start)
        if after:
            commit = parse_commit(repo, parse_object(repo, commit.id + after.encode("ascii")).id)
        return commit.id
    except AmbiguousShortId as exc:
        raise MemoryFailure(FailureCode.MEMORY_NOT_FOUND,
                            f"{start!r} is the start of {len(exc.options)} commits in the memory history; give more of "
                            "its digits (see `openprogram memory log`)") from None
    except (KeyError, ValueError, NotImplementedError):  # (no such name or id, past the first commit, not a commit)
        pass
    raise MemoryFailure(FailureCode.MEMORY_NOT_FOUND,
                        f"no commit {rev!r} in the memory history: give a commit id (or its first 4+ digits) from "
                        "`openprogram memory log`, HEAD, or HEAD~N / HEAD^ for one before it")


def files_at(root: Path, rev: str, prefix: str) -> dict[str, bytes]:
    """Every file under ``prefix`` at commit ``rev``: ``{relpath: bytes}``."""
    repo = _repo(root)
    commit = repo.object_store[resolve_rev(root, rev)]
    out: dict[str, bytes] = {}

    def walk(tree_sha: bytes, base: str) -> None:
        for entry in repo.object_store[tree_sha].items():
            name = base + entry.path.decode("utf-8")
            if entry.mode == TREE_MODE:
                walk(entry.sha, name + "/")
            elif name.startswith(prefix):
                out[name] = repo.object_store[entry.sha].data

    walk(commit.tree, "")
    return out


def head_id(root: Path) -> str | None:
    try:
        return _repo(root).refs[b"HEAD"].decode()
    except (KeyError, MemoryFailure):
        return None


def differing_paths(root: Path, paths: list[str]) -> list[str]:
    """Those of ``paths`` whose bytes (missing → deleted) differ from HEAD: a file whose stat moved while its
    bytes stayed as committed (``touch``, ``cp -a``, an editor saving it unchanged) is not among them."""
    from dulwich.object_store import tree_lookup_path

    repo = _repo(root)
    _head_id, tree = _head(root, repo)
    _objects, changes, _stats = _blobs_of(root, paths)
    out = []
    for key, sha in changes.items():
        try:
            committed = tree_lookup_path(repo.object_store.__getitem__, tree, b"/".join(key))[1] if tree else None
        except KeyError:
            committed = None
        if committed != sha:
            out.append(b"/".join(key).decode("utf-8"))
    return sorted(out)


def tree_differences(root: Path, areas: tuple[str, ...]) -> list[str]:
    """Paths under ``areas`` (directories or files) whose bytes differ from HEAD: a full scan, for repairs.
    What an editor or vault app leaves beside the memory files (``.obsidian/``, ``x.md~`` …) is not memory."""
    from dulwich.objects import Blob

    repo = _repo(root)
    head, tree = _head(root, repo)
    committed: dict[str, bytes] = {}
    if tree is not None:
        for path, _mode, sha in repo.object_store.iter_tree_contents(tree):
            rel = path.decode("utf-8", "surrogateescape")
            if rel in areas or rel.split("/", 1)[0] in areas:
                committed[rel] = sha
    on_disk: dict[str, bytes] = {}
    for area in areas:
        top = root / area
        if top.is_file() and not top.is_symlink():
            on_disk[area] = Blob.from_string(top.read_bytes()).id
            continue
        for dirpath, _dirs, names in os.walk(top):
            for name in names:
                full = Path(dirpath) / name
                if full.is_file() and not full.is_symlink():
                    on_disk[full.relative_to(root).as_posix()] = Blob.from_string(full.read_bytes()).id
    return sorted(rel for rel in set(committed) | set(on_disk)
                  if committed.get(rel) != on_disk.get(rel) and is_memory_file(rel))
