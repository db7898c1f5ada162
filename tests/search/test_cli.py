"""``memory search`` / ``memory recall`` through Typer: JSON shapes and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from openprogram_memory.cli.search_cmds import register

from .helpers import Rec, write_topic

runner = CliRunner()


@pytest.fixture
def app() -> typer.Typer:
    root_app = typer.Typer()
    memory = typer.Typer()
    register(memory)
    root_app.add_typer(memory, name="memory")
    return root_app


@pytest.fixture
def workspace(root: Path) -> Path:
    write_topic(root, "topics/people/dave.md", [
        Rec("Dave runs a bike shop.", "openprogram/s1/u1", ("Dave", "Work"), label="bike shop"),
        Rec("Dave rides a cargo bike.", "openprogram/s1/u2", ("Dave", "Work")),
        Rec("Dave wants a new bike.", "openprogram/s9/u1", ("Dave", "Wishes"), trust_state="pending"),
    ])
    return root


def _json(app: typer.Typer, *args: str) -> tuple[int, dict]:
    result = runner.invoke(app, ["memory", *args, "--json"])
    return result.exit_code, json.loads(result.stdout)


def test_search_json_shape(app, workspace: Path, state: Path):
    code, data = _json(app, "search", "bike shop", "--state", str(state))
    assert code == 0 and list(data) == ["results"]
    first = data["results"][0]
    assert set(first) == {"memory_id", "topic", "content", "score", "sources", "headings", "trust_state"}
    assert first["content"] == "Dave runs a bike shop." and first["headings"] == ["Dave", "Work"]
    assert first["sources"] == [{"source": "openprogram/s1/u1", "label": "bike shop"}]
    assert {r["trust_state"] for r in data["results"]} == {"trusted"}


def test_search_all_includes_pending_marked(app, workspace: Path, state: Path):
    _, default = _json(app, "search", "bike", "--state", str(state))
    _, everything = _json(app, "search", "bike", "--all", "--state", str(state))
    assert "Dave wants a new bike." not in [r["content"] for r in default["results"]]
    pending = [r for r in everything["results"] if r["content"] == "Dave wants a new bike."]
    assert pending and pending[0]["trust_state"] == "pending"


def test_top_k_flag_and_setting(app, workspace: Path, state: Path, monkeypatch):
    _, data = _json(app, "search", "bike", "--top-k", "1", "--state", str(state))
    assert len(data["results"]) == 1
    monkeypatch.setenv("OPENPROGRAM_MEMORY_RETRIEVAL_TOP_K", "1")
    _, data = _json(app, "search", "bike", "--state", str(state))
    assert len(data["results"]) == 1
    code, data = _json(app, "search", "bike", "--top-k", "0", "--state", str(state))
    assert code == 64 and data["code"] == "INVALID_ARGUMENT" and data["ok"] is False


def test_recall_json_and_text(app, workspace: Path, state: Path):
    code, data = _json(app, "recall", "bike", "--state", str(state))
    assert code == 0 and data["count"] == 2
    assert data["recall"].count("<memory-context>") == 1 and "wants a new bike" not in data["recall"]
    result = runner.invoke(app, ["memory", "recall", "bike", "--state", str(state)])
    assert result.exit_code == 0 and result.stdout.strip() == data["recall"]
    code, data = _json(app, "recall", "zeppelin", "--state", str(state))
    assert code == 0 and data == {"recall": "", "count": 0}


def test_human_output_escapes_markup(app, root: Path, state: Path):
    write_topic(root, "topics/a.md", [Rec("Use [bold]literal[/bold] brackets.", "openprogram/s1/u1")])
    result = runner.invoke(app, ["memory", "search", "literal", "--state", str(state)])
    assert result.exit_code == 0 and "[bold]literal[/bold]" in result.stdout


def test_errors(app, state: Path, tmp_path: Path, monkeypatch):
    code, data = _json(app, "search", "bike", "--state", str(tmp_path / "nothing"))
    assert code == 65 and data["code"] == "MEMORY_NOT_FOUND"
    (state / "memory").mkdir(parents=True)
    code, data = _json(app, "search", "  ", "--state", str(state))
    assert code == 64 and data["code"] == "INVALID_ARGUMENT"
    monkeypatch.setenv("OPENPROGRAM_MEMORY_BACKEND", "none")
    code, data = _json(app, "recall", "bike", "--state", str(state))
    assert code == 69 and data["code"] == "MEMORY_DISABLED"
