"""Odd input found by fault injection and fuzzing: refused with a stable code, nothing changed."""

from __future__ import annotations

import os

import pytest

from engine.helpers import make_workspace, record, tree_digest
from openprogram_memory.failures import FailureCode, MemoryFailure
from openprogram_memory.workspace import state as runtime_state
from openprogram_memory.workspace.layout import RECENT, TIMELINE

DANA = "topics/people/dana.md"


@pytest.fixture
def ws():
    ws = make_workspace()
    ws.update(changes=[{"path": DANA, "content": "# Dana\n\n" + record("Dana runs a bike shop.")
                        + "\n" + record("Dana likes metric units.", "openprogram/s1/u2", "e2")}])
    return ws


def rejected(ws, code, **update):
    before_bytes, before_rev = tree_digest(ws.root), ws.revision()
    with pytest.raises(MemoryFailure) as info:
        ws.update(**update)
    assert info.value.code is code, info.value.to_json()
    assert tree_digest(ws.root) == before_bytes
    assert ws.revision() == before_rev
    return info.value


def test_a_block_id_twice_in_one_file_is_refused(ws):
    first, second = ws.tree().files[DANA].ids
    text = ws.read_topic(DANA).replace(f"^{second}", f"^{first}")
    failure = rejected(ws, FailureCode.INVALID_TOPIC_FORMAT, changes=[{"path": DANA, "content": text}])
    assert failure.details["rule"] == "duplicate-id" and failure.details["block_id"] == first


def test_an_alias_naming_another_record_is_refused_and_get_stays_right(ws):
    first, second = ws.tree().files[DANA].ids
    text = ws.read_topic(DANA).replace(f"^{second}", f"^{first} ^{second}")
    failure = rejected(ws, FailureCode.INVALID_TOPIC_FORMAT, changes=[{"path": DANA, "content": text}])
    assert failure.details["block_id"] == first
    assert ws.get(first)["content"] == "Dana runs a bike shop."


@pytest.mark.parametrize("path", [
    "topics/a\nb.md",
    "topics/notes\u202egpj.md",
    "topics/x\x00y.md",
    "topics/~/notes.md",
    "topics/~root.md",
    "topics/" + "d/" * 16 + "deep.md",
    "topics/" + "n" * 253 + ".md",
])
def test_odd_topic_paths_are_invalid_arguments(ws, path):
    rejected(ws, FailureCode.INVALID_ARGUMENT, changes=[{"path": path, "content": record("A fact.")}])


def test_paths_at_the_limits_are_accepted(ws):
    deep = "topics/" + "d/" * 15 + "deep.md"
    long_name = "topics/" + "n" * 252 + ".md"
    ws.update(changes=[{"path": deep, "content": record("A deep fact.")},
                       {"path": long_name, "content": record("A long-named fact.", "openprogram/s1/u2")}])
    assert {deep, long_name} <= set(ws.tree().files)


def test_non_string_path_is_an_invalid_argument(ws):
    rejected(ws, FailureCode.INVALID_ARGUMENT, changes=[{"path": 7, "content": record("A fact.")}])


def test_nul_in_content_is_refused(ws):
    rejected(ws, FailureCode.INVALID_ARGUMENT, changes=[{"path": "topics/n.md", "content": record("A\x00fact.")}])
    rejected(ws, FailureCode.INVALID_ARGUMENT, memory_changes=[{
        "op": "create_record", "content": "A fact.", "sources": [{"source": "new-source-a", "label": "said"}],
        "destination": {"topic_path": "topics/n.md"}}],
        sources=[{"label": "new-source-a", "role": "user", "content": "said\x00so"}])


def test_lone_surrogate_in_content_is_refused(ws):
    rejected(ws, FailureCode.INVALID_ARGUMENT, changes=[{"path": "topics/n.md", "content": record("A \ud800 fact.")}])


def test_a_hunk_header_must_match_its_hunk(ws):
    lines = ws.read_topic(DANA).splitlines()
    patch = (f"--- a/{DANA}\n+++ b/{DANA}\n@@ -1,99999 +1,99999 @@\n-{lines[0]}\n+# Dana Smith\n")
    rejected(ws, FailureCode.INVALID_ARGUMENT, patch=patch)
    honest = f"--- a/{DANA}\n+++ b/{DANA}\n@@ -1,1 +1,1 @@\n-{lines[0]}\n+# Dana Smith\n"
    ws.update(patch=honest)
    assert ws.read_topic(DANA).startswith("# Dana Smith\n")


@pytest.mark.parametrize("update", [
    {"commit_message": "memory: a\x00b"},
    {"commit_message": 42},
    {"commit_message": ["x"]},
    {"base_revision": 42},
    {"base_revision": "not a revision"},
])
def test_bad_envelope_values_are_refused_before_install(ws, update):
    failure = rejected(ws, FailureCode.INVALID_ARGUMENT,
                       changes=[{"path": "topics/new.md", "content": record("A new fact.")}], **update)
    assert failure.exit_code == 64 and not failure.retryable


def test_rebuild_after_a_delete_is_byte_identical_in_a_fresh_process(ws):
    ws.update(changes=[{"path": "topics/b.md", "content": record("Billing uses FastAPI.", "openprogram/s1/u3")}])
    first, second = ws.tree().files[DANA].ids
    ws.update(changes=[{"path": DANA, "action": "delete"}], base_revision=ws.revision())
    assert first not in ws.tree().by_id
    views = {rel: data for rel, data in tree_digest(ws.root).items() if rel == RECENT or rel.startswith(TIMELINE)}
    runtime_state._RUNTIME_CACHE.clear()  # what a new process sees: runtime.json as written
    (ws.root / RECENT).unlink()
    ws.rebuild()
    assert {rel: data for rel, data in tree_digest(ws.root).items() if rel == RECENT or rel.startswith(TIMELINE)} == views


def test_symlinked_topic_leaving_the_workspace_is_not_read(ws, tmp_path):
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\n\nThe vault code is 1234.[^e1] ^deadbeef\n\n[^e1]: Sources: [x](openprogram/s1/u1)\n")
    os.symlink(secret, ws.root / "topics" / "passwd.md")
    with pytest.raises(MemoryFailure) as info:
        ws.read_topic("topics/passwd.md")
    assert info.value.code is FailureCode.PATH_OUTSIDE_WORKSPACE
    assert "topics/passwd.md" not in ws.tree().files
    assert all("vault" not in r.content for r in ws.records())


def test_symlink_inside_the_workspace_still_reads(ws):
    os.symlink("people/dana.md", ws.root / "topics" / "alias.md")
    assert ws.read_topic("topics/alias.md") == ws.read_topic(DANA)


@pytest.mark.parametrize("form", ["changes", "patch", "delete"])
def test_removing_records_by_whole_file_or_patch_needs_base_revision(ws, form):
    first, second = ws.tree().files[DANA].ids
    text = ws.read_topic(DANA)
    kept = "# Dana\n\n" + text.split("\n\n", 1)[1].split("\n\n", 1)[0] + "\n"
    kept_defs = [line for line in text.splitlines() if line.startswith("[^") and line.split("]")[0][2:] in kept]
    kept += "\n" + "\n".join(kept_defs) + "\n"
    if form == "changes":
        update = {"changes": [{"path": DANA, "content": kept}]}
    elif form == "delete":
        update = {"changes": [{"path": DANA, "action": "delete"}]}
    else:
        import difflib

        diff = difflib.unified_diff(text.splitlines(True), kept.splitlines(True), f"a/{DANA}", f"b/{DANA}")
        update = {"patch": "".join(diff)}
    failure = rejected(ws, FailureCode.INVALID_ARGUMENT, **update)
    removed = [first, second] if form == "delete" else [second]
    assert failure.details["deleted_ids"] == sorted(removed) and f"^{removed[0]}" in failure.message
    result = ws.update(**update, base_revision=ws.revision())
    assert sorted(result.deleted_ids) == sorted(removed)


def test_adding_records_needs_no_base_revision(ws):
    text = ws.read_topic(DANA) + "\n" + record("Dana rides to work.", "openprogram/s1/u3", "e9")
    assert ws.update(changes=[{"path": DANA, "content": text}]).block_ids


def test_a_write_through_a_symlinked_topic_is_refused(ws):
    os.symlink("people/dana.md", ws.root / "topics" / "alias.md")
    text = ws.read_topic(DANA).replace("bike shop", "car shop")
    failure = rejected(ws, FailureCode.INVALID_TOPIC_FORMAT, changes=[{"path": "topics/alias.md", "content": text}],
                       base_revision=ws.revision())
    assert failure.details["rule"] == "symlink"
    assert (ws.root / "topics" / "alias.md").is_symlink()


def test_hand_edits_refuse_text_that_is_not_unicode_or_not_text(ws):
    before = tree_digest(ws.root)
    text = ws.read_topic(DANA)
    for content, message in ((text.replace("shop", "sh\ud800op"), None), (text, "edit \ud800"), (b"bytes", None)):
        with pytest.raises(MemoryFailure) as info:
            ws.write_topic(DANA, content, message=message)
        assert info.value.code is FailureCode.INVALID_ARGUMENT
    assert tree_digest(ws.root) == before


def test_a_deeply_nested_request_is_refused_by_depth():
    from openprogram_memory.transaction.update_request import parse_update_request

    deep: list = []
    for _ in range(40):
        deep = [deep]
    with pytest.raises(MemoryFailure) as info:
        parse_update_request({"changes": deep})
    assert info.value.code is FailureCode.INVALID_ARGUMENT and "nests deeper" in info.value.message
