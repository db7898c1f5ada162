"""The on-disk index cache: reused by a cold process, ignored when damaged or stale."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from openprogram_memory.search import cache, search
from openprogram_memory.search.cache import cache_path, current_index, forget

from .helpers import Rec, write_topic

RECS = [Rec("Dave runs a bike shop.", "openprogram/s1/u1"), Rec("用户喜欢喝乌龙茶", "openprogram/s1/u2")]


def _build(root: Path) -> list:
    write_topic(root, "topics/a.md", RECS)
    write_topic(root, "topics/b.md", [Rec("Dave keeps chickens.", "openprogram/s2/u1", trust_state="pending")])
    hits = search(root, "bike shop")
    assert cache_path(root).is_file()
    return hits


def test_cache_file_is_private_and_under_scriptorium(root: Path):
    _build(root)
    path = cache_path(root)
    assert path.relative_to(root).as_posix() == ".scriptorium/search/index.bin"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_cold_process_reuses_the_disk_cache(root: Path):
    hits = _build(root)
    forget()  # a new process: nothing in memory
    index, report = current_index(root)
    assert report.loaded_from_disk and report.indexed == [] and index.files_indexed == 0
    assert search(root, "bike shop") == hits
    assert search(root, "乌龙茶")[0].content == "用户喜欢喝乌龙茶"
    assert search(root, "chickens") == [] and search(root, "chickens", include_pending=True)
    assert index.files_indexed == 0


def test_cold_process_reindexes_only_what_changed_since_the_cache(root: Path):
    _build(root)
    forget()
    write_topic(root, "topics/a.md", [Rec("Dave sold the bike shop.", "openprogram/s1/u1")])
    index, report = current_index(root)
    assert report.loaded_from_disk and report.indexed == ["topics/a.md"]
    assert search(root, "bike shop")[0].content == "Dave sold the bike shop."
    forget()
    index, report = current_index(root)  # and the re-saved cache has it
    assert report.loaded_from_disk and report.indexed == []


@pytest.mark.parametrize("damage", ["garbage", "truncate", "flip", "empty", "version"])
def test_damaged_or_stale_cache_is_ignored_and_rebuilt(root: Path, damage: str):
    hits = _build(root)
    path = cache_path(root)
    data = path.read_bytes()
    if damage == "garbage":
        data = b"\x00\x01 not a cache \xff" * 50
    elif damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "flip":
        middle = len(data) // 2
        data = data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1 :]
    elif damage == "empty":
        data = b""
    else:
        head, _, rest = data.partition(b"\n")
        fields = head.split(b" ")
        fields[1] = b"0.0"
        data = b" ".join(fields) + b"\n" + rest
    path.write_bytes(data)
    forget()
    index, report = current_index(root)
    assert not report.loaded_from_disk and sorted(report.indexed) == ["topics/a.md", "topics/b.md", "topics/misc.md"]
    assert search(root, "bike shop") == hits
    forget()
    assert current_index(root)[1].loaded_from_disk  # rewritten whole


def test_unwritable_cache_only_costs_speed(root: Path, monkeypatch: pytest.MonkeyPatch):
    def refuse(*args, **kwargs):
        raise PermissionError("read-only file system")

    monkeypatch.setattr("openprogram_memory.fsutil.atomic_write_bytes", refuse)
    write_topic(root, "topics/a.md", RECS)
    assert search(root, "bike")[0].content == "Dave runs a bike shop."
    assert not cache_path(root).exists()


def test_in_process_cache_is_per_root(tmp_path: Path):
    one, two = tmp_path / "one", tmp_path / "two"
    write_topic(one, "topics/a.md", [Rec("Alpha fact about kites.", "openprogram/s1/u1")])
    write_topic(two, "topics/a.md", [Rec("Beta fact about kites.", "openprogram/s1/u1")])
    assert search(one, "kites")[0].content == "Alpha fact about kites."
    assert search(two, "kites")[0].content == "Beta fact about kites."
    assert cache.current_index(one)[0] is not cache.current_index(two)[0]


def test_a_link_pointed_at_another_workspace_searches_that_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # A long-lived process remembers where a path leads; a link re-pointed (or a relative path from another
    # directory) leads somewhere else, and the search follows it.
    one, two = tmp_path / "one", tmp_path / "two"
    write_topic(one, "topics/a.md", [Rec("Alpha fact about kites.", "openprogram/s1/u1")])
    write_topic(two, "topics/a.md", [Rec("Beta fact about kites.", "openprogram/s1/u1")])
    link = tmp_path / "memory"
    link.symlink_to(one)
    assert search(link, "kites")[0].content == "Alpha fact about kites."
    assert search(link, "kites")[0].content == "Alpha fact about kites."
    link.unlink()
    link.symlink_to(two)
    assert search(link, "kites")[0].content == "Beta fact about kites."
    monkeypatch.chdir(one)
    assert search(Path("topics/.."), "kites")[0].content == "Alpha fact about kites."
    monkeypatch.chdir(two)
    assert search(Path("topics/.."), "kites")[0].content == "Beta fact about kites."
