"""Text edited into topics/ outside the product is served only once it is valid (architecture §15).

A person's vim session or a sync tool can put anything into a topic file.
What breaks a record rule never reaches an agent: search, recall and the
core use the file's last committed version, and status names the file, the
line and the rule. A valid edit is served as it is.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

from engine.helpers import make_workspace, record
from openprogram_memory.cli import app as app_module
from openprogram_memory.search import cache as search_cache
from openprogram_memory.workspace import caches

BIKES = "topics/bikes.md"


def run(monkeypatch, capsys, *argv: str) -> tuple[int, dict]:
    monkeypatch.setattr(sys, "argv", ["openprogram", *argv])
    with pytest.raises(SystemExit) as exit_:
        app_module.main()
    return exit_.value.code, json.loads(capsys.readouterr().out)


def fresh_process() -> None:
    caches._CACHES.clear()
    search_cache.forget()


@pytest.fixture
def ws(tmp_path):
    ws = make_workspace(tmp_path / "state")
    ws.update(changes=[{"path": BIKES, "content": "# Shop\n\n" + record("Dana runs a bike shop in Ghent.")}])
    return ws


def search(monkeypatch, capsys, ws, query: str) -> list[str]:
    code, found = run(monkeypatch, capsys, "memory", "search", query, "--state", str(ws.settings.state_dir), "--json")
    assert code == 0
    return [hit["content"] for hit in found["results"]]


def test_an_invalid_hand_edit_is_not_served_and_the_last_valid_records_are(ws, monkeypatch, capsys):
    path = ws.root / BIKES
    path.write_text(path.read_text() + "\nZebra crossings are painted every Tuesday.[^x9] ^deadbeef\n")
    fresh_process()
    assert search(monkeypatch, capsys, ws, "zebra crossings") == []  # never validated: never served
    assert search(monkeypatch, capsys, ws, "bike shop ghent") == ["Dana runs a bike shop in Ghent."]
    code, status = run(monkeypatch, capsys, "memory", "status", "--state", str(ws.settings.state_dir), "--json")
    warning = next(w for w in status["warnings"] if w.startswith(BIKES))
    assert "[undefined-citation]" in warning and "last committed version" in warning
    ws.update(changes=[{"path": "topics/core.md", "content": "# Core\n\n" + record("Answer in metric units.",
                                                                                  "openprogram/s1/u2")}])
    views = "".join((ws.root / rel).read_text() for rel in ("core.md", "recent_events.jsonl"))
    assert "Zebra" not in views and "Dana runs a bike shop" in (ws.root / "recent_events.jsonl").read_text()
    assert "Zebra" in path.read_text()  # the person's file is left as they wrote it


def test_a_valid_edit_made_elsewhere_is_served_as_it_is(ws, monkeypatch, capsys):
    path = ws.root / BIKES
    draft = path.with_name(".bikes.md.swp")  # written beside the file, then renamed over it (Obsidian, vim)
    draft.write_text(path.read_text().replace("in Ghent", "in Ghent and repairs cargo bikes"))
    os.replace(draft, path)
    fresh_process()
    assert search(monkeypatch, capsys, ws, "cargo bikes") == ["Dana runs a bike shop in Ghent and repairs cargo bikes."]
    code, status = run(monkeypatch, capsys, "memory", "status", "--state", str(ws.settings.state_dir), "--json")
    assert not any(w.startswith(BIKES) for w in status["warnings"])
    assert f"adopted hand edit(s) outside the product: {BIKES}" in status["warnings"]  # said once, by the command
    code, status = run(monkeypatch, capsys, "memory", "status", "--state", str(ws.settings.state_dir), "--json")
    assert not any("adopted" in w for w in status["warnings"])  # committed: nothing left to say


def test_an_invalid_new_file_is_left_out_until_fixed(ws, monkeypatch, capsys):
    new = ws.root / "topics/notes.md"
    new.write_text("Zebra notes typed in vim.[^x1] ^deadbee1\n")  # the footnote is never defined
    fresh_process()
    assert search(monkeypatch, capsys, ws, "zebra notes") == []  # no committed version to fall back on


WINDOWS_SAVES = {
    "CRLF line endings": lambda data: data.replace(b"\n", b"\r\n"),
    "a byte order mark": lambda data: b"\xef\xbb\xbf" + data,
    "both": lambda data: b"\xef\xbb\xbf" + data.replace(b"\n", b"\r\n"),
}


@pytest.mark.parametrize("save", WINDOWS_SAVES.values(), ids=WINDOWS_SAVES.keys())
def test_a_file_saved_by_a_windows_editor_reads_as_the_same_records(ws, monkeypatch, capsys, tmp_path, save):
    """Notepad and VS Code on Windows write a BOM and CRLF: neither is content. check, search and a write all read
    the file as its LF original, and an edit made in the same save is adopted on its own, before the write."""
    path = ws.root / BIKES
    path.write_bytes(save(path.read_bytes().replace(b"in Ghent", b"in Ghent and Bruges")))
    fresh_process()
    state = str(ws.settings.state_dir)
    code, report = run(monkeypatch, capsys, "memory", "check", "--state", state, "--json")
    assert (code, report["problems"]) == (0, [])
    assert report["repaired"] == [f"adopted hand edit(s) outside the product: {BIKES}"]  # as an edit of its own
    assert search(monkeypatch, capsys, ws, "bike shop") == ["Dana runs a bike shop in Ghent and Bruges."]
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"memory_changes": [
        {"op": "create_record", "content": "Dana opens the shop at nine.", "destination": {"topic_path": BIKES},
         "sources": [{"source": "openprogram/s1/u2", "label": "said"}]}]}))
    code, answer = run(monkeypatch, capsys, "memory", "apply", str(request), "--state", state, "--json")
    assert code == 0 and answer["ok"] is True, answer
    messages = [entry["message"] for entry in ws.log(4)]
    assert "apply" in messages[0] and any(m.startswith(f"memory: hand edit outside the product: {BIKES}")
                                          for m in messages[1:])
    assert run(monkeypatch, capsys, "memory", "check", "--state", state, "--json")[1]["problems"] == []
    assert sorted(search(monkeypatch, capsys, ws, "Dana shop")) == [
        "Dana opens the shop at nine.", "Dana runs a bike shop in Ghent and Bruges."]


def test_a_block_id_used_twice_in_one_file_is_not_served_and_rebuild_keeps_the_committed_views(ws, monkeypatch,
                                                                                                capsys):
    """A record pasted with an ID the file already has breaks a rule of the file: search, the core and rebuild use
    its last committed version (with the warning other invalid edits give), and check names both lines."""
    ws.update(changes=[{"path": "topics/core.md", "content": "# Core\n\n" + record("Answer in metric units.",
                                                                                  "openprogram/s1/u2")}])
    path = ws.root / "topics/core.md"
    block_id = next(r.memory_id for r in ws.records() if r.topic == "topics/core.md")
    text = path.read_text()
    lines = text.split("\n")
    at = next(n for n, line in enumerate(lines, 1) if line.endswith(f"^{block_id}"))
    label = lines[at - 1].split("[^", 1)[1].split("]", 1)[0]
    path.write_text(text.replace(f" ^{block_id}\n", f" ^{block_id}\n\nThe user drinks tea.[^{label}] ^{block_id}\n", 1))
    fresh_process()
    state = str(ws.settings.state_dir)
    code, found = run(monkeypatch, capsys, "memory", "search", "drinks tea", "--state", state, "--json")
    assert found["results"] == [] and any(w.startswith(f"topics/core.md line {at + 2}: [duplicate-id]")
                                          and "last committed version is searched" in w for w in found["warnings"])
    code, report = run(monkeypatch, capsys, "memory", "check", "--state", state, "--json")
    assert code == 65 and [(p["rule"], p["line"]) for p in report["problems"]] == [("duplicate-id", at + 2),
                                                                                  ("uncommitted", None)]
    assert f"already used at line {at}" in report["problems"][0]["message"]  # no stale view: nothing to rebuild
    code, rebuilt = run(monkeypatch, capsys, "memory", "rebuild", "--state", state, "--json")
    assert code == 0
    assert "tea" not in (ws.root / "core.md").read_text() + (ws.root / "recent_events.jsonl").read_text()
    code, core = run(monkeypatch, capsys, "memory", "recall", "drinks tea", "--state", state, "--json")
    assert core["count"] == 0
    assert "drinks tea" in path.read_text()  # the person's file is left as they wrote it
