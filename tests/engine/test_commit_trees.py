"""A commit rewrites the directories it changed from the tree entries it already knows: the next commit reads no
tree object the last one wrote (git objects never change), and the history it writes is the same."""

from __future__ import annotations

from dulwich.object_store import DiskObjectStore
from dulwich.objects import Tree
from dulwich.repo import Repo

from openprogram_memory.transaction import history

from .helpers import make_workspace, record


def test_the_next_commit_reads_no_tree_the_last_one_wrote(tmp_path, monkeypatch):
    monkeypatch.setattr(history, "_TREES", {})  # (as a fresh process: trees the tests before left fill the cache up to
    # its limit, and the clear-out that follows would land between the two commits)
    ws = make_workspace(tmp_path / "state")
    ws.update(changes=[{"path": "topics/a/shop.md", "content": record("Dana runs a bike shop.")}])
    read: list[bytes] = []
    real = DiskObjectStore.__getitem__

    def counting(self, sha):
        obj = real(self, sha)
        if isinstance(obj, Tree):
            read.append(sha)
        return obj

    monkeypatch.setattr(DiskObjectStore, "__getitem__", counting)
    ws.update(changes=[{"path": "topics/a/tea.md", "content": record("Dana prefers green tea.")}])
    repo = Repo(str(ws.root))
    root = repo[repo[repo.head()].parents[0]].tree
    assert read == [root]  # HEAD's own tree, checked as before every commit; no subtree read back
    tree = repo[repo[repo.head()].tree]
    names = sorted(entry.path for entry in repo[repo[tree[b"topics"][1]][b"a"][1]].items())
    assert names == [b"shop.md", b"tea.md"]


def test_a_fresh_process_reads_the_trees_from_the_repository(tmp_path, monkeypatch):
    ws = make_workspace(tmp_path / "state")
    ws.update(changes=[{"path": "topics/a/shop.md", "content": record("Dana runs a bike shop.")}])
    monkeypatch.setattr(history, "_TREES", {})  # what a new process knows
    ws.update(changes=[{"path": "topics/a/tea.md", "content": record("Dana prefers green tea.")}])
    repo = Repo(str(ws.root))
    tree = repo[repo[repo.head()].tree]
    assert sorted(e.path for e in repo[repo[tree[b"topics"][1]][b"a"][1]].items()) == [b"shop.md", b"tea.md"]
