"""`openprogram memory sync` as a script sees it: JSON, exit codes, the recorded remote."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from openprogram_memory.cli.app import app
from openprogram_memory.config import load_settings

from .helpers import add, bare_remote, machine

runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_first_sync_records_the_remote_and_later_calls_use_it(tmp_path, monkeypatch):
    remote = bare_remote(tmp_path)
    other = machine(tmp_path, "other")
    rid = add(other, "topics/dana.md", "Dana runs a bike shop.")
    assert run("memory", "sync", "--remote", remote, "--json", "--state", str(other.settings.state_dir)).exit_code == 0
    assert run("memory", "sync", "--remote", remote, "--json").exit_code == 65  # no workspace here yet: init first
    assert run("memory", "init", "--json").exit_code == 0
    first = run("memory", "sync", "--remote", remote, "--json")
    assert first.exit_code == 0, first.output
    data = json.loads(first.output)
    assert data["merged"] and data["ok"] and set(data) >= {"fetched", "pushed", "conflicts", "revision"}
    assert load_settings()["memory.sync.remote"] == remote
    again = run("memory", "sync", "--json")
    assert again.exit_code == 0 and json.loads(again.output)["merged"] is False
    shown = run("memory", "show", "topics/dana.md", "--json")
    assert f"^{rid}" in json.loads(shown.output)["content"]


def test_no_remote_is_a_usage_error_and_unreachable_is_retryable(tmp_path):
    run("memory", "init")
    missing = run("memory", "sync", "--json")
    assert missing.exit_code == 64 and json.loads(missing.output)["code"] == "INVALID_ARGUMENT"
    gone = run("memory", "sync", "--remote", str(tmp_path / "nowhere.git"), "--json")
    assert gone.exit_code == 75, gone.output
    assert json.loads(gone.output)["code"] == "REMOTE_UNAVAILABLE"
    assert load_settings()["memory.sync.remote"] == ""  # an unreachable URL is not recorded
