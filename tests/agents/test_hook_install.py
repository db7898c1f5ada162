"""``memory hook install claude-code``: our entries merged in, and taken out byte for byte."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from openprogram_memory.agents.claude_code_hook import EVENTS
from openprogram_memory.agents.install import is_ours
from openprogram_memory.cli.app import app
from openprogram_memory.config import load_settings
from openprogram_memory.memory import MemoryWorkspace

runner = CliRunner()
OPENPROGRAM = str(Path(sys.executable).with_name("openprogram"))

USER_SETTINGS = {
    "model": "opus",
    "permissions": {"allow": ["Bash(npm test:*)"], "deny": []},
    "env": {"NAME": "Zoë"},
    "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./check.sh", "timeout": 30}]}],
    },
    "statusLine": {"type": "command", "command": "echo hi"},
}


def install(*args: str) -> dict:
    result = runner.invoke(app, ["memory", "hook", "install", "claude-code", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def our_commands(settings: dict) -> dict[str, list[str]]:
    return {event: [hook["command"] for group in groups for hook in group["hooks"] if is_ours(hook)]
            for event, groups in settings.get("hooks", {}).items()}


@pytest.mark.parametrize("indent", [2, 4, "\t"])
def test_install_then_uninstall_gives_back_the_same_bytes(tmp_path: Path, indent) -> None:
    path = tmp_path / "proj" / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    original = (json.dumps(USER_SETTINGS, indent=indent, ensure_ascii=False) + "\n").encode()
    path.write_bytes(original)
    os.chmod(path, 0o644)
    report = install("--project", str(tmp_path / "proj"))
    assert report["changed"] and report["events"] == list(EVENTS)
    merged = json.loads(path.read_text())
    assert {k: v for k, v in merged.items() if k != "hooks"} == {k: v for k, v in USER_SETTINGS.items() if k != "hooks"}
    assert merged["hooks"]["Stop"][0] == USER_SETTINGS["hooks"]["Stop"][0]  # the person's own hook is kept, first
    assert merged["hooks"]["PreToolUse"] == USER_SETTINGS["hooks"]["PreToolUse"]
    commands = our_commands(merged)
    assert all(len(commands[event]) == 1 for event in EVENTS)
    assert commands["SessionStart"][0].startswith(OPENPROGRAM) or commands["SessionStart"][0].startswith("'")
    assert Path(commands["SessionStart"][0].split(" memory hook")[0].strip("'")).is_absolute()
    installed = path.read_bytes()
    assert install("--project", str(tmp_path / "proj"))["changed"] is False  # idempotent
    assert path.read_bytes() == installed
    assert install("--project", str(tmp_path / "proj"), "--uninstall")["changed"] is True
    assert path.read_bytes() == original
    assert path.stat().st_mode & 0o777 == 0o644
    assert install("--project", str(tmp_path / "proj"), "--uninstall")["changed"] is False


def test_a_moved_executable_is_updated_in_place_not_duplicated(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    old = {"hooks": {event: [{"hooks": [{"type": "command", "command": "/old/venv/bin/openprogram memory hook "
                                          "claude-code"}]}] for event in EVENTS}}
    path.write_text(json.dumps(old, indent=2) + "\n")
    report = install("--project", str(tmp_path))
    assert report["changed"]
    commands = our_commands(json.loads(path.read_text()))
    assert all(len(commands[event]) == 1 and not commands[event][0].startswith("/old/") for event in EVENTS)


def test_user_settings_and_a_missing_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    report = install("--user")
    path = tmp_path / "home" / ".claude" / "settings.json"
    assert report["settings"] == str(path) and path.exists()
    assert set(our_commands(json.loads(path.read_text()))) == set(EVENTS)
    install("--user", "--uninstall")
    assert json.loads(path.read_text()) == {}


def test_a_broken_settings_file_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    for text in ('{"hooks": [1, 2]}\n', "{not json", "[]"):
        path.write_text(text)
        result = runner.invoke(app, ["memory", "hook", "install", "claude-code", "--project", str(tmp_path), "--json"])
        assert result.exit_code == 64 and json.loads(result.stdout)["code"] == "INVALID_ARGUMENT"
        assert path.read_text() == text


def test_a_state_other_than_the_default_is_named_in_the_command(tmp_path: Path) -> None:
    state = tmp_path / "elsewhere"
    MemoryWorkspace.open(load_settings(state), create=True)
    report = install("--project", str(tmp_path), "--state", str(state))
    assert report["changed"]
    command = our_commands(json.loads((tmp_path / ".claude" / "settings.json").read_text()))["SessionStart"][0]
    assert command.endswith(f"--state {state}")


def test_a_state_without_a_workspace_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    """A mistyped --state would point every hook at nothing (each would do nothing, silently, forever)."""
    typo = tmp_path / "stat"
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    kept = tmp_path / "kept"
    (kept / ".claude").mkdir(parents=True)
    (kept / ".claude" / "settings.json").write_text(json.dumps(USER_SETTINGS, indent=2) + "\n")
    before = (kept / ".claude" / "settings.json").read_bytes()
    for project in (fresh, kept):
        result = runner.invoke(app, ["memory", "hook", "install", "claude-code", "--project", str(project),
                                     "--state", str(typo), "--json"])
        assert result.exit_code == 65, result.output
        failure = json.loads(result.stdout)
        assert failure["code"] == "MEMORY_NOT_FOUND" and str(typo) in failure["message"]
    assert list(fresh.iterdir()) == [] and not typo.exists()
    assert (kept / ".claude" / "settings.json").read_bytes() == before
    # no --state: installed as before, whether or not the default state holds a workspace yet
    assert install("--project", str(fresh))["changed"] is True


def test_the_installed_command_runs_as_claude_code_would_run_it(tmp_path: Path) -> None:
    state = tmp_path / "state2"
    MemoryWorkspace.open(load_settings(state), create=True)
    install("--project", str(tmp_path), "--state", str(state))
    command = our_commands(json.loads((tmp_path / ".claude" / "settings.json").read_text()))["UserPromptSubmit"][0]
    event = json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": "s", "prompt": "anything"})
    result = subprocess.run(command, shell=True, input=event, capture_output=True, text=True, timeout=60,
                            env={k: v for k, v in os.environ.items() if k != "OPENPROGRAM_STATE"})
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")  # empty memory: nothing to say


def test_unknown_agent_and_both_targets_are_usage_errors(tmp_path: Path) -> None:
    for args in (["install", "codex", "--json"], ["install", "claude-code", "--user", "--project", ".", "--json"]):
        result = runner.invoke(app, ["memory", "hook", *args])
        assert result.exit_code == 64 and json.loads(result.stdout)["code"] == "INVALID_ARGUMENT"


@pytest.mark.parametrize("uninstall", [[], ["--uninstall"]])
def test_a_project_that_is_not_a_directory_is_refused_and_nothing_created(tmp_path: Path, uninstall) -> None:
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x")
    for project, said in ((tmp_path / "my-projcet", "does not exist"), (a_file, "is not a directory")):
        result = runner.invoke(app, ["memory", "hook", "install", "claude-code", "--project", str(project),
                                     *uninstall, "--json"])
        failure = json.loads(result.stdout)
        assert (result.exit_code, failure["code"]) == (64, "INVALID_ARGUMENT")
        assert f"--project {project} {said}" in failure["message"] and failure["details"]["path"] == str(project)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
