"""``openprogram session …``: the JSON contract of architecture §12.1, exit codes, human output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from openprogram_memory.cli.session_cmds import app as session_app
from openprogram_memory.config import load_settings
from openprogram_memory.memory import MemoryWorkspace

pytestmark = pytest.mark.usefixtures("workspace")  # the session verbs need a state directory that is one
root = typer.Typer()
root.add_typer(session_app, name="session")
runner = CliRunner()


def run(*args: str, input: str | None = None, code: int = 0) -> dict:
    """Invoke ``session <args> --json`` and return the one JSON object it printed."""
    result = runner.invoke(root, ["session", *args, "--json"], input=input)
    assert result.exit_code == code, result.output
    return json.loads(result.stdout)


def test_new_prints_the_session_id() -> None:
    assert run("new", "--id", "chat-1") == {"session": "chat-1"}
    generated = run("new")["session"]
    assert len(generated) == 32
    assert {s["session"] for s in run("list")["sessions"]} == {"chat-1", generated}


def test_append_and_fork_move_head(state_dir: Path) -> None:
    run("new", "--id", "s")
    assert run("append", "s", "--role", "user", "--text", "hello", "--id", "n1") == {"node": "n1", "head": "n1"}
    assert run("append", "s", "--role", "assistant", "--text", "hi", "--id", "n2") == {"node": "n2", "head": "n2"}
    assert run("append", "s", "--role", "user", "--text", "other", "--parent", "n1", "--id", "n3",
               "--time", "2025-05-01T10:00:00Z") == {"node": "n3", "head": "n3"}
    assert run("fork", "s", "--from", "n2", "--role", "user", "--text", "again", "--id", "n4") == {
        "node": "n4", "head": "n4"}
    node = json.loads((state_dir / "sessions" / "s" / "history" / "n3.json").read_text())
    assert node["predecessor"] == "n1" and node["created_at"] == "2025-05-01T10:00:00.000Z"


def test_show_returns_the_head_branch_in_order() -> None:
    run("new", "--id", "s")
    for node_id, role, text, parent in (("a", "user", "one", None), ("b", "assistant", "two", None),
                                        ("c", "user", "three", None), ("x", "user", "fork", "a")):
        run("append", "s", "--role", role, "--text", text, "--id", node_id, *(["--parent", parent] if parent else []))
    shown = run("show", "s")
    assert set(shown) == {"session", "head", "nodes"}
    assert shown["session"] == "s" and shown["head"] == "x"
    assert [n["id"] for n in shown["nodes"]] == ["a", "x"]
    assert set(shown["nodes"][0]) == {"id", "predecessor", "role", "content", "metadata", "updated_at"}
    assert shown["nodes"][1] | {"updated_at": None} == {"id": "x", "predecessor": "a", "role": "user",
                                                         "content": "fork", "metadata": {}, "updated_at": None}
    assert [n["id"] for n in run("show", "s", "--tip", "c")["nodes"]] == ["a", "b", "c"]
    assert [n["id"] for n in run("show", "s", "--all")["nodes"]] == ["a", "b", "c", "x"]


def test_rewind_moves_head_and_hides_turns() -> None:
    run("new", "--id", "s")
    for node_id in ("a", "b", "c"):
        run("append", "s", "--role", "user", "--text", node_id, "--id", node_id)
    assert run("rewind", "s", "--to", "a") == {"session": "s", "head": "a", "rewound": ["c", "b"],
                                                "restored": []}
    assert [n["id"] for n in run("show", "s", "--tip", "c")["nodes"]] == ["a"]


def test_list_shape() -> None:
    run("new", "--id", "s")
    run("append", "s", "--role", "user", "--text", "hi", "--id", "n1", "--time", "2030-02-03T04:05:06+02:00")
    assert run("list") == {"sessions": [{"session": "s", "head": "n1", "updated_at": "2030-02-03T02:05:06.000Z",
                                         "nodes": 1}]}


def test_text_dash_reads_stdin() -> None:
    run("new", "--id", "s")
    run("append", "s", "--role", "user", "--text", "-", "--id", "n1", input="from a pipe\n")
    assert run("show", "s")["nodes"][0]["content"] == "from a pipe\n"


@pytest.mark.parametrize(
    "args, code, failure",
    [
        (("show", "missing"), 65, "MEMORY_NOT_FOUND"),
        (("append", "s", "--role", "user", "--text", "x", "--id", "../escape"), 64, "INVALID_ARGUMENT"),
        (("append", "s", "--role", "user", "--text", "x", "--time", "yesterday"), 64, "INVALID_ARGUMENT"),
        (("append", "s", "--role", "user", "--text", "x", "--parent", "ghost"), 65, "MEMORY_NOT_FOUND"),
        (("new", "--id", "s"), 64, "INVALID_ARGUMENT"),
    ],
)
def test_failures_print_the_error_object_and_exit_with_its_code(args, code, failure) -> None:
    run("new", "--id", "s")
    error = run(*args, code=code)
    assert error["ok"] is False and error["code"] == failure and error["retryable"] is False
    assert error["message"]


def test_state_option_wins_over_the_environment(tmp_path: Path, state_dir: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    MemoryWorkspace.open(load_settings(elsewhere), create=True)
    run("new", "--id", "s", "--state", str(elsewhere))
    assert (elsewhere / "sessions" / "s" / "meta.json").is_file()
    assert not (state_dir / "sessions" / "s").exists()
    assert run("list")["sessions"] == []


def test_the_store_serves_where_memory_is_off_and_no_workspace_is_ever_made(tmp_path: Path, monkeypatch) -> None:
    """A mistyped --state is refused (tests/cli/test_usage_errors.py); a state directory with memory off is none."""
    monkeypatch.setenv("OPENPROGRAM_MEMORY_BACKEND", "none")
    off = tmp_path / "off"
    off.mkdir()
    assert run("new", "--id", "s", "--state", str(off)) == {"session": "s"}
    assert [s["session"] for s in run("list", "--state", str(off))["sessions"]] == ["s"]
    assert not (off / "memory").exists()
    typo = tmp_path / "typo"
    assert run("new", "--state", str(typo), code=65)["code"] == "MEMORY_NOT_FOUND" and not typo.exists()


def test_human_output_lists_the_branch() -> None:
    run("new", "--id", "s")
    run("append", "s", "--role", "user", "--text", "We decided to use FastAPI.", "--id", "n1")
    result = runner.invoke(root, ["session", "show", "s"])
    assert result.exit_code == 0
    assert "We decided to use FastAPI." in result.stdout and "n1" in result.stdout
    missing = runner.invoke(root, ["session", "show", "nope"])
    assert missing.exit_code == 65 and "MEMORY_NOT_FOUND" in missing.output


def test_message_text_is_shown_as_written_not_as_rich_markup() -> None:
    """A person pastes Markdown links and square brackets; the table shows them verbatim."""
    run("new", "--id", "s")
    text = "[b]hi[/b] [a](u) [/] [x"  # short: the content column folds long text
    run("append", "s", "--role", "user", "--text", text, "--id", "n1")
    result = runner.invoke(root, ["session", "show", "s"])
    assert result.exit_code == 0, result.output
    assert text in result.stdout
