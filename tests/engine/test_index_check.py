"""A damaged git index is found however often it is checked; a sound one is not read again while it stays the
same file."""

from __future__ import annotations

import os

from openprogram_memory.transaction import gitcheck

from .helpers import make_workspace, record


def test_a_sound_index_is_read_once_and_a_damaged_replacement_is_found(tmp_path, monkeypatch):
    ws = make_workspace(tmp_path / "state")
    ws.update(changes=[{"path": "topics/shop.md", "content": record("Dana runs a bike shop.")}])
    index = ws.layout.git / "index"
    assert not gitcheck.index_damaged(ws.layout.git)
    reads = []
    real = type(index).read_bytes
    monkeypatch.setattr(type(index), "read_bytes", lambda self: reads.append(self.name) or real(self))
    assert not gitcheck.index_damaged(ws.layout.git) and reads == []
    data = bytearray(index.read_bytes())
    data[40] ^= 0xFF  # a flipped byte: the trailing checksum no longer holds
    (index.parent / "index.bad").write_bytes(bytes(data))
    os.replace(index.parent / "index.bad", index)  # (a new file, as every writer of the index leaves it)
    assert gitcheck.index_damaged(ws.layout.git)
