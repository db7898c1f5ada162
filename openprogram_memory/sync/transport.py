"""Talking to the remote: fetch and compare-and-swap push with dulwich's client.

Any URL dulwich understands works (a path or ``file://`` to a bare
repository, ``ssh://``, ``git://``, ``https://``). No lock is held here:
the network is slow and the write lock guards only the local install.
"""

from __future__ import annotations

import shlex
from contextlib import nullcontext
from pathlib import Path

from ..failures import FailureCode, MemoryFailure

BRANCH = b"refs/heads/main"
# Where the fetched head is kept locally (so its objects are reachable and
# ``git log --graph --all`` shows it).
TRACKING = b"refs/remotes/sync/main"


class PushRejected(Exception):
    """The remote branch moved since the fetch (someone else pushed)."""


def _unreachable(url: str, exc: BaseException) -> MemoryFailure:
    return MemoryFailure(FailureCode.REMOTE_UNAVAILABLE,
                         f"cannot reach the sync remote {url}: {type(exc).__name__}: {exc}; try again later",
                         retryable=True, details={"remote": url})


def _client(url: str):
    from dulwich.client import get_transport_and_path

    try:
        return get_transport_and_path(url)
    except Exception as exc:  # unsupported scheme, malformed URL
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"not a git remote URL dulwich can use: {url} ({exc})",
                            details={"remote": url}) from None


def fetch(root: Path, url: str, lock=None) -> str | None:
    """Fetch the remote's ``main`` into the local object store; its commit id, or None if empty."""
    from dulwich.repo import Repo

    client, path = _client(url)
    repo = Repo(str(root))
    try:
        def wants(refs, *_args, **_kwargs):
            head = refs.get(BRANCH)
            return [head] if head is not None and head not in repo.object_store else []

        if _is_local(client):
            head = _fetch_local(path, repo, wants, lock)
        else:
            head = client.fetch(path, repo, determine_wants=wants).refs.get(BRANCH)
    except MemoryFailure:
        raise
    except Exception as exc:
        raise _unreachable(url, exc) from None
    finally:
        repo.close()
    if head is None:
        return None
    with Repo(str(root)) as repo:
        repo.refs[TRACKING] = head
    return head.decode("ascii")


def _is_local(client) -> bool:
    from dulwich.client import LocalGitClient

    return isinstance(client, LocalGitClient)


def _fetch_local(path: str, target, wants, lock=None) -> bytes | None:
    """Fetch from a repository on this machine; the remote's ``main``, or None if it has none.

    dulwich's local client builds the pack by scanning every pack of the
    remote for reusable deltas, so each fetch cost the size of the remote's
    history; here the missing objects are found by walking from what the
    target has and sent whole (what a git server sends over the network is
    the server's business), so a fetch costs what it brings.
    """
    from dulwich.errors import NotGitRepository
    from dulwich.pack import generate_unpacked_objects
    from dulwich.repo import Repo

    try:
        opened = Repo(path)
    except NotGitRepository:
        # a mistyped or never created path: no later try will find it (not REMOTE_UNAVAILABLE, which a cron job
        # would retry forever)
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT,
                            f"the sync remote {path} is not a git repository (or does not exist): create it once "
                            f"with `git init --bare {shlex.quote(path)}`, or give the right --remote",
                            details={"remote": path}) from None
    with opened as remote:
        missing = remote.find_missing_objects(wants, target.get_graph_walker(), None)
        if missing is not None:
            object_ids = list(missing)
            if object_ids:
                with lock() if lock is not None else nullcontext():  # the store's files change under the write lock
                    target.object_store.add_pack_data(
                        len(object_ids), generate_unpacked_objects(remote.object_store, object_ids,
                                                                   reuse_deltas=False))
        return remote.refs.as_dict().get(BRANCH)


def push(root: Path, url: str, old: str | None, new: str) -> bool:
    """Set the remote's ``main`` from ``old`` to ``new``; False if nothing to do.

    Raises :class:`PushRejected` when the remote is no longer at ``old``.
    """
    from dulwich.repo import Repo

    if old == new:
        return False
    client, path = _client(url)
    expected = old.encode("ascii") if old else None
    target = new.encode("ascii")

    def update_refs(refs):
        if refs.get(BRANCH) != expected:
            raise PushRejected(f"the remote moved to {refs.get(BRANCH)!r}")
        return {**refs, BRANCH: target}

    with Repo(str(root)) as repo:
        try:
            result = client.send_pack(path, update_refs, generate_pack_data=repo.generate_pack_data)
        except PushRejected:
            raise
        except Exception as exc:
            raise _unreachable(url, exc) from None
        status = getattr(result, "ref_status", None) or {}
        if status.get(BRANCH):  # the server refused the update (non-fast-forward, hook)
            raise PushRejected(status[BRANCH].decode("utf-8", "replace") if isinstance(status[BRANCH], bytes)
                               else str(status[BRANCH]))
        repo.refs[TRACKING] = target
    if expected is None and _is_local(client):
        _point_head_at_branch(path)
    return True


def _point_head_at_branch(path: str) -> None:
    """Make a local remote's HEAD name ``main`` when sync just created it and HEAD names no branch that exists.

    ``git init --bare`` points HEAD at ``master``; left so, a ``git clone`` of the remote checks nothing out
    ("remote HEAD refers to nonexistent ref"). Only a repository on this machine can be changed: the git
    protocol (ssh, git, https) has no command to set a remote's HEAD, so there it is the server's setting
    (``git symbolic-ref HEAD refs/heads/main`` on the server, or the hosting site's default branch). A HEAD that
    names a branch that exists is someone's choice and is left alone.
    """
    from dulwich.repo import Repo

    try:
        with Repo(path) as remote:
            if remote.refs.follow(b"HEAD")[1] is None:  # HEAD names a branch that does not exist
                remote.refs.set_symbolic_ref(b"HEAD", BRANCH)
    except Exception:  # the push went through; a clone that warns is no reason to report a failed sync
        pass
