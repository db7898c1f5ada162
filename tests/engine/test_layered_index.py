"""A tree's whole-tree index is an earlier tree's index plus its own changes: every read answers as an index built
from scratch would, the earlier tree's index never changes, and the changes fold into a plain dict in time."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from openprogram_memory.workspace.caches import LayeredIndex, update_index


@dataclass(frozen=True)
class _File:
    path: str
    ids: tuple[str, ...]


def _keys(summary: _File) -> tuple[str, ...]:
    return summary.ids


def _scratch(files: dict[str, _File]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for path in sorted(files):
        for key in files[path].ids:
            out.setdefault(key, []).append(path)
    return {key: sorted(set(paths)) for key, paths in out.items()}


def test_every_read_answers_as_an_index_built_from_scratch():
    rng = random.Random(3)
    keys = [f"k{n}" for n in range(300)]
    files = {f"f{n}.md": _File(f"f{n}.md", tuple(rng.sample(keys, 3))) for n in range(150)}
    index = _scratch(files)
    history = [(index, dict(files))]
    folded = False
    for _ in range(250):
        path = f"f{rng.randrange(170)}.md"
        old = [files[path]] if path in files else []
        if rng.random() < 0.2:
            files.pop(path, None)
            new = []
        else:
            files[path] = _File(path, tuple(rng.sample(keys, rng.randrange(0, 4))))
            new = [files[path]]
        index = update_index(index, _keys, old, new)
        folded = folded or isinstance(index, dict)
        expected = _scratch(files)
        assert dict(index.items()) == expected and len(index) == len(expected)
        assert all(key in index for key in expected) and "absent" not in index and index.get("absent") is None
        history.append((index, dict(files)))
    for earlier, its_files in history[::37]:  # deriving later trees changed no earlier index
        assert dict(earlier.items()) == _scratch(its_files)
    assert folded  # the changes did not pile up over one base forever


def test_a_removed_key_is_gone_and_a_readded_one_back():
    base = {"a": ["x.md"], "b": ["x.md", "y.md"]}
    index = update_index(base, _keys, [_File("x.md", ("a", "b"))], [])
    assert isinstance(index, LayeredIndex) and "a" not in index and index["b"] == ["y.md"]
    with pytest.raises(KeyError):
        index["a"]
    assert sorted(index) == ["b"] and base == {"a": ["x.md"], "b": ["x.md", "y.md"]}
    again = update_index(index, _keys, [], [_File("z.md", ("a",))])
    assert again["a"] == ["z.md"] and sorted(again) == ["a", "b"] and "a" not in index
