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


def _encoded_whole(state: RuntimeState) -> str:
    """runtime.json as encoded from nothing: what the kept encoding must equal byte for byte."""
    data = {name: getattr(state, name) for name in ("batches_since_organize", "tokens_since_organize",
                                                    "writes_since_global", "last_global_at", "last_local_at",
                                                    "last_write_at", "views_version")}
    data["version"] = 2
    data["order"] = " ".join(state.created_order)
    numbers = list(state.created_order.values())
    if numbers != list(range(len(numbers))):
        data["order_numbers"] = " ".join(map(str, numbers))
    return json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n"


def test_the_kept_encoding_of_the_order_matches_encoding_it_whole_after_any_changes():
    """Transactions add IDs, delete them, re-add a deleted one, copy the state (load and remember do), or
    replace the order (sync): the text written is always what encoding the whole order gives."""
    import random

    rng = random.Random(7)
    state = RuntimeState(last_write_at="2026-12-01T10:00:00+00:00 \u00e9\"")
    pool = [f"id{n:04x}" for n in range(400)]
    for step in range(600):
        move = rng.random()
        order = state.created_order
        if move < 0.45:
            state.assign_order(rng.sample(pool, rng.randint(1, 4)))
        elif move < 0.65 and order:
            order.pop(rng.choice(list(order)))
        elif move < 0.75 and order:
            gone = rng.choice(list(order))  # deleted and written again: moves to the end with a new number
            order.pop(gone)
            state.assign_order([gone])
        elif move < 0.85:
            state = state.copy()
        elif move < 0.9 and order:
            ids = list(order)
            rng.shuffle(ids)
            state.created_order = {block_id: n for n, block_id in enumerate(ids)}  # a new order, same length
        elif move < 0.93:
            state.created_order = {}
        state.batches_since_organize = step
        assert state.to_text() == _encoded_whole(state), step
        assert state.to_text() == _encoded_whole(state), step  # and again from what it kept
