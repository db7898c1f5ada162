"""The CLI under malformed input and races: a stable code and exit status, never exit 1."""

from __future__ import annotations

import json
import os

import pytest
from typer.testing import CliRunner

from openprogram_memory.cli.app import app
from openprogram_memory.config import load_settings
from openprogram_memory.sources.archive import SourceMessage
from openprogram_memory.memory import MemoryWorkspace

runner = CliRunner()
TOPIC = "topics/value.md"


def run(*args: str, input: str | bytes | None = None):
    return runner.invoke(app, list(args), input=input, catch_exceptions=False)


def value_text(n: int) -> str:
    return f"# Value\n\nThe value is {n}.[^e1]\n\n[^e1]: Sources: [value](openprogram/s1/u1)\n"


@pytest.fixture
def ws():
    run("memory", "init")
    ws = MemoryWorkspace.open(load_settings())
    ws.archive([SourceMessage("openprogram/s1/u1", "Dana", "user-1", "2026-08-09T10:00:00+08:00", "The value.")])
    ws.update(changes=[{"path": TOPIC, "content": value_text(0)}])
    return ws


def editor(tmp_path, monkeypatch, script: str) -> None:
    path = tmp_path / "editor.sh"
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)
    monkeypatch.setenv("EDITOR", str(path))


def test_edit_never_overwrites_an_update_that_lands_while_it_reads(ws, tmp_path, monkeypatch):
    editor(tmp_path, monkeypatch, "sed -i 's/value is [0-9]*/value is 1/' \"$1\"\n")
    real_read = MemoryWorkspace.read_topic

    def read_then_concurrent_update(self, path):
        text = real_read(self, path)
        other = MemoryWorkspace.open(load_settings())
        current = real_read(other, path)
        other.update(changes=[{"path": TOPIC, "content": current.replace("value is 0", "value is 100")}])
        return text

    monkeypatch.setattr(MemoryWorkspace, "read_topic", read_then_concurrent_update)
    result = run("memory", "edit", TOPIC, "--json", "--no-reopen")
    assert result.exit_code == 75, result.output
    assert json.loads(result.stdout)["code"] == "CONCURRENT_UPDATE"
    assert "The value is 100." in (ws.root / TOPIC).read_text()


def test_edit_with_a_missing_editor_is_a_clear_error(ws, monkeypatch):
    monkeypatch.setenv("EDITOR", "/nonexistent/editor-for-test")
    monkeypatch.delenv("VISUAL", raising=False)
    result = run("memory", "edit", TOPIC, "--json")
    assert result.exit_code == 64, result.output
    body = json.loads(result.stdout)
    assert body["code"] == "INVALID_ARGUMENT" and "EDITOR" in body["message"]


@pytest.mark.parametrize("script", [
    "printf '\\377\\376 not utf-8\\n' >> \"$1\"\n",
    "printf 'NUL \\000 inside.[^e1]\\n' >> \"$1\"\n",
])
def test_edit_drafts_with_bad_bytes_are_rejected_and_kept(ws, tmp_path, monkeypatch, script):
    editor(tmp_path, monkeypatch, script)
    before = (ws.root / TOPIC).read_bytes()
    result = run("memory", "edit", TOPIC, "--json", "--no-reopen")
    assert result.exit_code in (64, 65), result.output
    body = json.loads(result.stdout)
    assert body["code"] == "INVALID_ARGUMENT" and os.path.exists(body["details"]["draft"])
    assert (ws.root / TOPIC).read_bytes() == before


@pytest.mark.parametrize("payload", [
    b"\xff\xfe{}",
    b"[" * 100_000 + b"]" * 100_000,
    json.dumps({"changes": [{"path": TOPIC, "content": "x"}], "commit_message": {"a": [[[[[[]]]]]]}}).encode(),
    json.dumps({"changes": [{"path": TOPIC, "content": value_text(5)}], "commit_message": "a\u0000b"}).encode(),
    json.dumps({"changes": [{"path": TOPIC, "content": value_text(5)}], "base_revision": 5}).encode(),
])
def test_apply_refuses_malformed_requests_with_exit_64(ws, payload):
    before = (ws.root / TOPIC).read_bytes()
    result = run("memory", "apply", "-", "--json", input=payload)
    assert result.exit_code == 64, result.output
    assert json.loads(result.stdout)["code"] == "INVALID_ARGUMENT"
    assert (ws.root / TOPIC).read_bytes() == before


def test_show_refuses_a_symlink_out_of_the_workspace(ws, tmp_path):
    outside = tmp_path / "passwd"
    outside.write_text("root:x:0:0:root:/root:/bin/bash\n")
    os.symlink(outside, ws.root / "topics" / "passwd.md")
    result = run("memory", "show", "topics/passwd.md", "--json")
    assert result.exit_code == 64, result.output
    assert json.loads(result.stdout)["code"] == "PATH_OUTSIDE_WORKSPACE"
    assert "root:x" not in result.stdout
