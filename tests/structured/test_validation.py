"""Request validation and atomicity: a failing op anywhere changes no byte."""

from __future__ import annotations

import pytest

from openprogram_memory.failures import FailureCode, MemoryFailure
from structured.helpers import SOURCES, create, create_op, dest, tree_digest

INVALID = FailureCode.INVALID_ARGUMENT


def _expect(ws, code, memory_changes, *, sources=None, contains=None, **kwargs):
    digest, revision = tree_digest(ws.root), ws.revision()
    with pytest.raises(MemoryFailure) as info:
        ws.update(memory_changes=memory_changes, sources=sources, **kwargs)
    assert info.value.code is code, info.value.message
    if contains:
        assert contains in info.value.message
    assert ws.revision() == revision
    assert tree_digest(ws.root) == digest
    return info.value


def _with(op, **changes):
    out = dict(op)
    out.update(changes)
    return out


def test_request_shape(ws):
    _expect(ws, INVALID, [], contains="non-empty list")
    _expect(ws, INVALID, [create_op(f"Fact {n}.") for n in range(65)], contains="at most 64")
    _expect(ws, INVALID, [create_op("x" * (513 * 1024))], contains="512 kB")
    _expect(ws, INVALID, [{"op": "merge_records", "memory_ids": ["a", "b"]}], contains="changes[0]: unknown op")
    _expect(ws, INVALID, ["not an object"], contains="changes[0]")
    nested = {"create_record": {k: v for k, v in create_op("Fact.").items() if k != "op"}}  # it said "unknown op None"
    _expect(ws, INVALID, [nested], contains='changes[0]: no "op": each change is an object whose "op" is one of '
                                            'create_record, update_record')
    _expect(ws, INVALID, [nested], contains='write {"op": "create_record", …its fields}, not {"create_record": {…}}')


@pytest.mark.parametrize("content, message", [
    ("", "non-empty"),
    ("Para one.\n\nPara two.", "one paragraph"),
    ("Text\n## Heading", "heading"),
    ("# Heading only", "heading"),
    ("Text with a note[^e1]", "footnotes"),
    ("Text ^abcdef12", "block-id"),
    ("```\ncode\n```", "code fence"),
    ("<!-- comment -->", "HTML comment"),
    (42, "non-empty text"),
])
def test_content_must_be_one_plain_paragraph(ws, content, message):
    ok = create_op("A valid first op.")
    error = _expect(ws, INVALID, [ok, _with(create_op("x"), content=content)], contains=message)
    assert error.message.startswith("changes[1]: ") and error.details["change"] == 1


@pytest.mark.parametrize("time", ["2026-02-30", "2026-13", "yesterday", "2026-08-01T10:00", 2026])
def test_time_must_be_a_real_date_form(ws, time):
    _expect(ws, INVALID, [create_op("Fact.", time=time)], contains="changes[0]: time")


def test_create_refuses_caller_memory_id(ws):
    _expect(ws, INVALID, [_with(create_op("Fact."), memory_id="abcdef12")], contains="assigns block IDs")


@pytest.mark.parametrize("sources, message", [
    ([], "at least one source"),
    (None, "non-empty list"),
    ([{"source": SOURCES[0]}], "label"),
    ([{"source": SOURCES[0], "label": "  "}], "label"),
    ([{"source": SOURCES[0], "label": "a]b"}], "brackets"),
    ([{"source": "not-a-source", "label": "x"}], "neither"),
    ([{"source": SOURCES[0], "label": "a"}, {"source": SOURCES[0], "label": "b"}], "twice"),
])
def test_source_items(ws, sources, message):
    _expect(ws, INVALID, [_with(create_op("Fact."), sources=sources)], contains=message)


def test_missing_sources(ws):
    _expect(ws, FailureCode.MISSING_SOURCE, [create_op("Fact.", sources=(("openprogram/s1/nope", "x"),))],
            contains="not in the source archive")
    _expect(ws, FailureCode.MISSING_SOURCE, [create_op("Fact.", sources=(("new-source-x", "x"),))],
            contains="not declared")


@pytest.mark.parametrize("declared, message", [
    ([{"label": "new-source-1", "content": "hi", "trust_state": "trusted"}], "provenance"),
    ([{"label": "new-source-1", "content": "hi", "owner": "me"}], "unknown key"),
    ([{"label": "source-1", "content": "hi"}], "new-source-"),
    ([{"label": "new-source-1", "content": ""}], "content"),
    ([{"label": "new-source-1", "content": "hi", "role": "tool"}], "role"),
    ([{"label": "new-source-1", "content": "hi", "observed_at": "soon"}], "ISO 8601"),
    ([{"label": "new-source-1", "content": "a"}, {"label": "new-source-1", "content": "b"}], "twice"),
    ([{"label": f"new-source-{n}", "content": "a"} for n in range(65)], "at most 64"),
    ([{"label": "new-source-1", "content": "x" * (257 * 1024)}], "256 kB"),
])
def test_declared_sources(ws, declared, message):
    _expect(ws, INVALID, [create_op("Fact.", sources=(("new-source-1", "x"),))], sources=declared, contains=message)


@pytest.mark.parametrize("destination, code, message", [
    (None, INVALID, "destination must be an object"),
    ({"topic_path": "../escape.md"}, FailureCode.PATH_OUTSIDE_WORKSPACE, "leaves the workspace"),
    ({"topic_path": "/abs.md"}, FailureCode.PATH_OUTSIDE_WORKSPACE, "absolute"),
    ({"topic_path": "sources/x.md"}, FailureCode.READ_ONLY_PATH, "not editable"),
    ({"topic_path": "core.md"}, FailureCode.READ_ONLY_PATH, "not editable"),
    ({"topic_path": "t.txt"}, FailureCode.READ_ONLY_PATH, "Markdown"),
    ({"topic_path": "t.md", "headings": list("abcdefg")}, INVALID, "at most 6"),
    ({"topic_path": "t.md", "headings": ["ok", ""]}, INVALID, "heading titles"),
    ({"topic_path": "t.md", "headings": ["C#"]}, INVALID, "cannot be written"),
    ({"topic_path": "t.md", "position": "middle"}, INVALID, "position"),
    ({"topic_path": "t.md", "position": "before"}, INVALID, "needs anchor_memory_id"),
    ({"topic_path": "t.md", "position": "end", "anchor_memory_id": "abcdef12"}, INVALID, "before or after only"),
])
def test_destination(ws, destination, code, message):
    error = _expect(ws, code, [_with(create_op("Fact."), destination=destination)], contains=message)
    assert error.message.startswith("changes[0]: ")


def test_per_id_rules(ws):
    a = create(ws, "A.")
    update = {"op": "update_record", "memory_id": a, "content": "A2.", "time": None,
              "sources": [{"source": SOURCES[0], "label": "x"}]}
    delete = {"op": "delete_record", "memory_id": a}
    move = {"op": "move_records", "memory_ids": [a], "destination": dest("topics/o.md")}
    _expect(ws, INVALID, [update, delete], contains="changes[1]: ^" + a + " already has a content op in changes[0]")
    _expect(ws, INVALID, [move, dict(move)], contains="already moved by changes[0]")
    _expect(ws, INVALID, [delete, move], contains="both moved and deleted")
    _expect(ws, INVALID, [{"op": "move_records", "memory_ids": [a, a], "destination": dest()}], contains="twice")
    _expect(ws, INVALID, [{"op": "move_records", "memory_ids": [], "destination": dest()}], contains="non-empty")


def test_unknown_ids_are_memory_not_found(ws):
    create(ws, "A.")
    for op in ({"op": "delete_record", "memory_id": "deadbeef"},
               {"op": "update_record", "memory_id": "deadbeef", "content": "x", "sources": [{"source": SOURCES[0], "label": "x"}]},
               {"op": "move_records", "memory_ids": ["deadbeef"], "destination": dest()}):
        error = _expect(ws, FailureCode.MEMORY_NOT_FOUND, [create_op("Valid first."), op], contains="changes[1]")
        assert error.details["memory_id"] == "deadbeef"


def test_op_on_an_id_deleted_earlier_in_the_request(ws, merged):
    identity, alias = merged
    _expect(ws, FailureCode.MEMORY_NOT_FOUND, [
        {"op": "delete_record", "memory_id": identity},
        {"op": "update_record", "memory_id": alias, "content": "x", "sources": [{"source": SOURCES[0], "label": "x"}]},
    ], contains="was deleted by changes[0]")


def test_late_failure_leaves_every_byte(ws):
    a = create(ws, "A.")
    b = create(ws, "B.", topic="topics/other.md")
    _expect(ws, FailureCode.MISSING_SOURCE, [
        create_op("New one.", topic="topics/new.md", sources=(("new-source-1", "fresh"),)),
        {"op": "update_record", "memory_id": a, "content": "A changed.", "sources": [{"source": SOURCES[1], "label": "y"}]},
        {"op": "delete_record", "memory_id": b},
        {"op": "move_records", "memory_ids": [a], "destination": dest("topics/moved.md")},
        create_op("Bad source.", sources=(("openprogram/s1/missing", "m"),)),
    ], sources=[{"label": "new-source-1", "content": "never archived", "observed_at": "2026-08-01T00:00:00Z"}])
    assert not list((ws.root / "sources").rglob("api*.md"))


def test_rejected_by_the_engine_changes_nothing(ws):
    target = create(ws, "Target.", topic="topics/a.md")
    create(ws, f"Links [there](a.md#^{target}).", topic="topics/b.md")
    error = _expect(ws, FailureCode.INVALID_TOPIC_FORMAT, [
        create_op("Something new.", sources=(("new-source-1", "n"),)),
        {"op": "delete_record", "memory_id": target},
    ], sources=[{"label": "new-source-1", "content": "new text"}], contains=target)
    assert error.details["block_id"] == target and error.details["rule"] == "dangling-link"
    assert not list((ws.root / "sources").rglob("api*.md"))


def test_base_revision(ws):
    revision = ws.revision()
    create(ws, "Moves the revision.")
    _expect(ws, FailureCode.CONCURRENT_UPDATE, [create_op("Stale.")], base_revision=revision)
    result = ws.update(memory_changes=[create_op("Fresh.")], base_revision=ws.revision())
    assert result.memory_committed


def test_declared_but_uncited_source_is_not_archived(ws):
    ws.update(memory_changes=[create_op("Fact.")],
              sources=[{"label": "new-source-unused", "content": "nobody cites me"}])
    assert not list((ws.root / "sources").rglob("api*.md"))


def test_one_exact_form_per_call(ws):
    with pytest.raises(MemoryFailure) as info:
        ws.update(memory_changes=[create_op("x")], changes=[])
    assert info.value.code is INVALID
