"""runtime.json keeps the creation order as one string of block IDs (version 2); a version-1 file (a list) reads the
same, gaps that deletes left keep their numbers, and a damaged value reads as no order at all."""

from __future__ import annotations

import json

from openprogram_memory.workspace import state as state_module
from openprogram_memory.workspace.state import RuntimeState

from .helpers import make_workspace, record


def _load(ws) -> RuntimeState:
    state_module._RUNTIME_CACHE.clear()  # what a new process reads
    return RuntimeState.load(ws.layout)


def _workspace(tmp_path):
    ws = make_workspace(tmp_path / "state")
    for n, text in enumerate(("Dana runs a bike shop.", "Dana prefers tea.", "Dana lives in Oslo.")):
        ws.update(changes=[{"path": f"topics/t{n}.md", "content": record(text)}])
    return ws


def test_the_order_is_one_string_and_reads_back_the_same(tmp_path):
    ws = _workspace(tmp_path)
    data = json.loads((ws.root / ".scriptorium/runtime.json").read_text())
    order = _load(ws).created_order
    assert data["version"] == 2 and data["order"] == " ".join(order) and "created" not in data
    assert list(order.values()) == [0, 1, 2] and "order_numbers" not in data


def test_a_version_1_file_reads_the_same_order_with_its_gaps(tmp_path):
    ws = _workspace(tmp_path)
    ids = list(_load(ws).created_order)
    path = ws.root / ".scriptorium/runtime.json"
    path.write_text(json.dumps({"version": 1, "created": [ids[0], ids[2]], "created_numbers": [0, 2]}))
    assert _load(ws).created_order == {ids[0]: 0, ids[2]: 2}
    path.write_text(json.dumps({"version": 1, "created": ids}))
    assert _load(ws).created_order == {ids[0]: 0, ids[1]: 1, ids[2]: 2}


def test_gaps_keep_their_numbers_through_a_write(tmp_path):
    ws = _workspace(tmp_path)
    ids = list(_load(ws).created_order)
    ws.update(memory_changes=[{"op": "delete_record", "memory_id": ids[1]}])  # the middle record goes
    data = json.loads((ws.root / ".scriptorium/runtime.json").read_text())
    assert data["order"] == f"{ids[0]} {ids[2]}" and data["order_numbers"] == "0 2"
    assert _load(ws).created_order == {ids[0]: 0, ids[2]: 2}


def test_damaged_numbers_read_as_a_plain_count(tmp_path):
    ws = _workspace(tmp_path)
    ids = list(_load(ws).created_order)
    path = ws.root / ".scriptorium/runtime.json"
    for numbers in ("0 x 2", "2 1 0", "0 1", 7):
        path.write_text(json.dumps({"version": 2, "order": " ".join(ids), "order_numbers": numbers}))
        assert list(_load(ws).created_order.values()) == [0, 1, 2], numbers
    path.write_text(json.dumps({"version": 2, "order": ["not", "a", "string"]}))
    assert _load(ws).created_order == {}
