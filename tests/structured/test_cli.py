"""``memory apply`` and ``memory get`` through the real Typer app."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from openprogram_memory.cli.app import app
from structured.helpers import SOURCES, create_op

runner = CliRunner()


def _run(state, *args, input=None):
    result = runner.invoke(app, ["memory", *args, "--state", str(state), "--json"], input=input)
    return result.exit_code, json.loads(result.stdout.strip().splitlines()[-1])


def test_apply_get_delete_get(ws, tmp_path):
    state = tmp_path / "state"
    request = tmp_path / "req.json"
    request.write_text(json.dumps({"memory_changes": [create_op("Dana runs a bike shop.", topic="people/dana.md",
                                                                  headings=("Dana",),
                                                                  sources=((SOURCES[0], "bike shop"),))],
                                   "commit_message": "from the cli"}))
    code, out = _run(state, "apply", str(request))
    assert code == 0 and out["ok"] is True
    assert {"revision", "changed_files", "block_ids", "evidence_ids", "memory_committed", "git_committed"} <= set(out)
    (block_id,) = out["block_ids"]

    code, record = _run(state, "get", block_id)
    assert code == 0
    assert {k: record[k] for k in ("memory_id", "topic", "headings", "content", "time", "sources")} == {
        "memory_id": block_id, "topic": "topics/people/dana.md", "headings": ["Dana"],
        "content": "Dana runs a bike shop.", "time": "2026-08-01",
        "sources": [{"source": SOURCES[0], "label": "bike shop"}]}

    code, out = _run(state, "apply", "-", input=json.dumps(
        {"memory_changes": [{"op": "delete_record", "memory_id": block_id}]}))
    assert code == 0 and out["deleted_ids"] == [block_id]

    code, error = _run(state, "get", block_id)
    assert code == 65
    assert error == {"ok": False, "code": "MEMORY_NOT_FOUND", "retryable": False, "message": error["message"]}


def test_apply_errors_and_exit_codes(ws, tmp_path):
    state = tmp_path / "state"
    revision = ws.revision()
    code, error = _run(state, "apply", "-", input=json.dumps({"memory_changes": [create_op("x", time="soon")]}))
    assert code == 64 and error["code"] == "INVALID_ARGUMENT" and error["message"].startswith("changes[0]")
    code, error = _run(state, "apply", "-", input=json.dumps(
        {"memory_changes": [create_op("x", sources=(("openprogram/s1/none", "n"),))]}))
    assert code == 65 and error["code"] == "MISSING_SOURCE"
    code, error = _run(state, "apply", "-", input="{not json")
    assert code == 64 and error["code"] == "INVALID_ARGUMENT"
    code, error = _run(state, "apply", "-", input=json.dumps({"memory_changes": [create_op("x")], "owner": "me"}))
    assert code == 64 and "owner" in error["message"]
    code, error = _run(state, "apply", "--base-revision", "0" * 32, "-",
                       input=json.dumps({"memory_changes": [create_op("x")]}))
    assert code == 75 and error["code"] == "CONCURRENT_UPDATE" and error["retryable"] is True
    assert ws.revision() == revision


def test_apply_whole_file_changes_and_sources(ws, tmp_path):
    state = tmp_path / "state"
    code, out = _run(state, "apply", "-", input=json.dumps({
        "changes": [{"path": "topics/x.md", "content": f"A fact.[^e1]\n\n[^e1]: Sources: [k]({SOURCES[0]})\n"}]}))
    assert code == 0 and out["changed_files"] == ["topics/x.md"]
    code, out = _run(state, "apply", "-", input=json.dumps({
        "memory_changes": [create_op("Said via the API.", sources=(("new-source-a", "api"),))],
        "sources": [{"label": "new-source-a", "role": "assistant", "content": "noted"}]}))
    assert code == 0 and out["new_sources"]["new-source-a"] in out["source_ids"]


def test_get_human_output(ws, tmp_path):
    state = tmp_path / "state"
    _, out = _run(state, "apply", "-", input=json.dumps({"memory_changes": [create_op("Plain output.")]}))
    result = runner.invoke(app, ["memory", "get", out["block_ids"][0], "--state", str(state)])
    assert result.exit_code == 0 and "Plain output." in result.stdout
