"""A topic file that is not UTF-8 text is named in status and search warnings, never a traceback or a silent gap."""

from __future__ import annotations

import json
import sys

import pytest

from engine.helpers import make_workspace, record
from openprogram_memory.cli import app as app_module
from openprogram_memory.search import cache as search_cache
from openprogram_memory.workspace import caches


def run(monkeypatch, capsys, *argv: str) -> tuple[int, dict]:
    monkeypatch.setattr(sys, "argv", ["openprogram", *argv])
    with pytest.raises(SystemExit) as exit_:
        app_module.main()
    return exit_.value.code, json.loads(capsys.readouterr().out)


def test_an_undecodable_topic_is_named_by_status_search_and_show(tmp_path, monkeypatch, capsys):
    state = tmp_path / "state"
    ws = make_workspace(state)
    ws.update(changes=[{"path": "topics/bikes.md", "content": record("Dana runs a bike shop.")}])
    (ws.root / "topics/latin1.md").write_bytes("Café notes about the bike shop.\n".encode("latin-1"))
    caches._CACHES.clear()
    search_cache.forget()  # a fresh process, as the CLI is

    code, status = run(monkeypatch, capsys, "memory", "status", "--state", str(state), "--json")
    assert code == 0 and status["topics"] == 1
    assert any(w.startswith("topics/latin1.md not valid UTF-8 (byte 3)") for w in status["warnings"])

    code, found = run(monkeypatch, capsys, "memory", "search", "bike shop", "--state", str(state), "--json")
    assert code == 0 and [hit["topic"] for hit in found["results"]] == ["topics/bikes.md"]
    assert found["warnings"] == [w for w in status["warnings"] if w.startswith("topics/latin1.md")]  # same words

    code, shown = run(monkeypatch, capsys, "memory", "show", "topics/latin1.md", "--state", str(state), "--json")
    assert code == 65 and shown["code"] == "INVALID_TOPIC_FORMAT" and shown["details"]["rule"] == "encoding"

    (ws.root / "topics/latin1.md").unlink()  # fixed by removing it: the warning goes
    code, status = run(monkeypatch, capsys, "memory", "status", "--state", str(state), "--json")
    assert not any("latin1" in w for w in status["warnings"])
