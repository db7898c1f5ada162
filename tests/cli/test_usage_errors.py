"""Mistakes on the command line: exit 64 with the one error object under --json; a mistyped --state creates nothing."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
import pytest
import typer.main

from openprogram_memory.cli import app as app_module

TRANSCRIPT = Path(__file__).resolve().parents[2] / "fixtures" / "sessions" / "claude-code" / "rewind.jsonl"


def _leaf_commands():
    def walk(command, path):
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                yield from walk(sub, [*path, name])
        else:
            yield path, command

    return list(walk(typer.main.get_command(app_module.app), []))


def run(monkeypatch, capsys, *argv: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["openprogram", *argv])
    with pytest.raises(SystemExit) as exit_:
        app_module.main()
    out = capsys.readouterr()
    return exit_.value.code, out.out, out.err


REQUIRED = [(path, command) for path, command in _leaf_commands()
            if any(isinstance(p, click.Argument) and p.required for p in command.params)]


def test_there_are_verbs_with_required_arguments_to_check():
    names = {" ".join(path) for path, _ in REQUIRED}
    assert {"memory get", "memory restore", "memory search", "session append"} <= names


@pytest.mark.parametrize("path,command", REQUIRED, ids=[" ".join(p) for p, _ in REQUIRED])
def test_every_required_argument_is_refused_with_exit_64(path, command, monkeypatch, capsys, tmp_path):
    takes_json = any(isinstance(p, click.Option) and "--json" in p.opts for p in command.params)
    argv = [*path, *(["--json"] if takes_json else [])]
    code, out, err = run(monkeypatch, capsys, *argv, "--state", str(tmp_path / "state"))
    assert code == 64
    missing = next(p for p in command.params if isinstance(p, click.Argument) and p.required)
    if takes_json:
        error = json.loads(out)
        assert error["code"] == "INVALID_ARGUMENT" and error["ok"] is False
        assert f"Missing argument '{missing.human_readable_name}" in error["message"]  # (a list: 'NAMES...')
    else:
        assert "Missing argument" in err
    assert not (tmp_path / "state").exists()


@pytest.mark.parametrize("argv,message", [
    (["memory", "bogus", "--json"], "No such command 'bogus'"),
    (["memory", "search", "x", "--top-k", "abc", "--json"], "'abc' is not a valid integer"),
    (["memory", "status", "--jsn", "--json"], "No such option: --jsn"),
])
def test_usage_errors_are_json_under_json(argv, message, monkeypatch, capsys):
    code, out, _err = run(monkeypatch, capsys, *argv)
    error = json.loads(out)
    assert code == 64 and error["code"] == "INVALID_ARGUMENT" and message in error["message"]
    assert "env var" not in error["message"]


def test_usage_errors_for_people_name_the_mistake_and_the_help(monkeypatch, capsys):
    code, out, err = run(monkeypatch, capsys, "memory", "search", "x", "--top-k", "abc")
    assert code == 64 and out == ""
    assert "Usage: openprogram memory search" in err and "--help" in err and "'abc' is not a valid integer" in err


@pytest.mark.parametrize("argv,near", [
    (["memory", "serch", "foo"], "search"), (["memory", "core", "shwo"], "show"), (["sesion", "new"], "session"),
])
def test_a_mistyped_command_gets_the_nearest_one(argv, near, monkeypatch, capsys):
    code, out, err = run(monkeypatch, capsys, *argv)
    assert code == 64 and out == "" and f"Did you mean '{near}'?" in err
    code, out, _err = run(monkeypatch, capsys, *argv, "--json")
    assert code == 64 and f"Did you mean '{near}'?" in json.loads(out)["message"]


def test_a_command_far_from_every_verb_gets_no_guess(monkeypatch, capsys):
    code, _out, err = run(monkeypatch, capsys, "memory", "xyzzy")
    assert code == 64 and "No such command 'xyzzy'" in err and "Did you mean" not in err


@pytest.mark.parametrize("argv,named", [
    (["memory", "write", "--session", "nosuch", "--all-idle"], "--all-idle"),
    (["memory", "write", "nosuch", "--all-idle"], "--all-idle"),
    (["memory", "write", "--all-idle", "--force"], "--all-idle"),
    (["memory", "write", "--all-idle", "--rereview"], "--all-idle"),
    (["memory", "write", "--session", "s", "--force", "--rereview"], "--force"),
])
def test_options_that_contradict_each_other_are_refused(argv, named, monkeypatch, capsys, tmp_path):
    """Before, `write --session nosuch --all-idle` wrote every idle session and said nothing of the session."""
    state = tmp_path / "state"
    code, out, _err = run(monkeypatch, capsys, *argv, "--state", str(state), "--json")
    error = json.loads(out)
    assert code == 64 and error["code"] == "INVALID_ARGUMENT" and named in error["message"]
    assert not state.exists()
    code, out, err = run(monkeypatch, capsys, *argv, "--state", str(state))
    assert code == 64 and out == "" and "INVALID_ARGUMENT" in err and named in err


@pytest.mark.parametrize("argv", [
    ["memory", "write", "--all-idle"], ["memory", "watch", "--once"], ["memory", "write", "--session", "s"],
    ["memory", "sync", "--remote", "/nowhere.git"], ["memory", "status"], ["memory", "search", "x"],
    ["memory", "sleep"], ["memory", "backfill"], ["memory", "watch", "--poll"],
    ["memory", "import", "claude-code", str(TRANSCRIPT)], ["memory", "serve"],
    ["memory", "config", "set", "memory.writer.trigger_tokens", "16000"], ["session", "new"], ["session", "list"],
    ["session", "append", "s", "--role", "user", "--text", "hi"], ["session", "show", "s"],
    ["session", "rewind", "s", "--to", "n1"],
])
def test_a_mistyped_state_dir_is_refused_and_nothing_is_created(argv, monkeypatch, capsys, tmp_path):
    typo = tmp_path / "typo"
    code, out, _err = run(monkeypatch, capsys, *argv, "--state", str(typo), "--json")
    error = json.loads(out)
    assert code == 65 and error["code"] == "MEMORY_NOT_FOUND" and "openprogram memory init" in error["message"]
    assert not typo.exists()  # neither a workspace nor a session store


def test_a_rejected_write_names_each_rejection_in_words_not_python_dicts(monkeypatch, capsys, tmp_path):
    """COMMIT_REJECTED carries each rejection as an object (for --json); the terminal gets its message."""
    from openprogram_memory.failures import FailureCode, MemoryFailure
    from openprogram_memory.writer import pipeline

    def rejected(*_args, **_kwargs):
        raise MemoryFailure(FailureCode.COMMIT_REJECTED, "the writer's edit was rejected twice", details={
            "first": {"code": "INVALID_TOPIC_FORMAT", "message": "topics/people.md:5: link to nowhere",
                      "details": {"rule": "dangling-link"}},
            "repair": {"code": "INVALID_TOPIC_FORMAT", "message": "topics/people.md:5: still nowhere"},
            "batch": ["u1", "u2"]})

    monkeypatch.setattr(pipeline, "write_report", rejected)
    state = str(tmp_path / "state")
    assert run(monkeypatch, capsys, "memory", "init", "--state", state)[0] == 0
    code, _out, err = run(monkeypatch, capsys, "memory", "write", "chat", "--force", "--state", state)
    assert code == 65 and "COMMIT_REJECTED" in err
    assert "first: topics/people.md:5: link to nowhere" in err and "repair: topics/people.md:5: still nowhere" in err
    assert "{" not in err and "'code'" not in err
