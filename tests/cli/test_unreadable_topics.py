"""A topic file that is not UTF-8 text is named in status and search warnings, never a traceback or a silent gap."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from engine.helpers import make_workspace, record
from openprogram_memory.cli import app as app_module
from openprogram_memory.search import cache as search_cache
from openprogram_memory.transaction.engine import Policy
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
    assert any(w.startswith("topics/latin1.md not valid UTF-8 at line 1 (byte 0xE9 at offset 3)") for w in status["warnings"])

    code, found = run(monkeypatch, capsys, "memory", "search", "bike shop", "--state", str(state), "--json")
    assert code == 0 and [hit["topic"] for hit in found["results"]] == ["topics/bikes.md"]
    assert found["warnings"] == [w for w in status["warnings"] if w.startswith("topics/latin1.md")]  # same words

    code, shown = run(monkeypatch, capsys, "memory", "show", "topics/latin1.md", "--state", str(state), "--json")
    assert code == 65 and shown["code"] == "INVALID_TOPIC_FORMAT" and shown["details"]["rule"] == "encoding"

    (ws.root / "topics/latin1.md").unlink()  # fixed by removing it: the warning goes
    code, status = run(monkeypatch, capsys, "memory", "status", "--state", str(state), "--json")
    assert not any("latin1" in w for w in status["warnings"])


def test_a_committed_topic_given_a_byte_of_another_encoding_keeps_serving_its_committed_records(
        tmp_path, monkeypatch, capsys):
    """A Latin-1 "é" typed into a committed topic in another editor: the file is no UTF-8 any more, but what was
    committed stays in memory (search, recall, the core) until it is fixed, as for a file that cannot be read or
    breaks a rule. Was: its records gone from search, and the next write's views committed without them."""
    state = tmp_path / "state"
    ws = make_workspace(state)
    ws.update(changes=[{"path": "topics/bikes.md", "content": record("Dana runs a bike shop.")}])
    with (ws.root / "topics/bikes.md").open("ab") as handle:
        handle.write("Café latte on Fridays.\n".encode("latin-1"))
    caches._CACHES.clear()
    search_cache.forget()  # a fresh process, as the CLI is

    code, found = run(monkeypatch, capsys, "memory", "search", "bike shop", "--state", str(state), "--json")
    assert code == 0 and [hit["topic"] for hit in found["results"]] == ["topics/bikes.md"]
    [warning] = found["warnings"]
    assert warning.startswith("topics/bikes.md not valid UTF-8 at line ")
    assert "search, recall and the core use its last committed version" in warning


def test_a_byte_of_another_encoding_is_named_by_its_line_and_value_and_show_and_edit_give_checks_fix(
        tmp_path, monkeypatch, capsys):
    """A Latin-1 "é" typed on line 4: check names the line (in --json too) and the byte's value, not only its
    offset (was: "not valid UTF-8 (byte 172)", 172 an offset, line null), and show and edit, which refuse the
    file, give the fix check gives (was: no fix)."""
    state = tmp_path / "state"
    ws = make_workspace(state)
    ws.update(changes=[{"path": "topics/bikes.md", "content": "# Bikes\n\n" + record("Dana runs a bike shop.")}])
    path = ws.root / "topics/bikes.md"
    committed = path.read_bytes()
    assert committed.count(b"\n") >= 4
    at = committed.index(b"\n", committed.index(b"\n", committed.index(b"\n") + 1) + 1) + 1  # line 4
    path.write_bytes(committed[:at] + "Caf\u00e9 ".encode("latin-1") + committed[at:])
    caches._CACHES.clear()
    search_cache.forget()  # a fresh process, as the CLI is
    named = f"not valid UTF-8 at line 4 (byte 0xE9 at offset {at + 3})"

    _code, report = run(monkeypatch, capsys, "memory", "check", "--state", str(state), "--json")
    [problem] = [p for p in report["problems"] if p["rule"] == "encoding"]
    assert (problem["file"], problem["line"]) == ("topics/bikes.md", 4)
    assert problem["message"].startswith(named)
    for verb in ("show", "edit"):
        code, refusal = run(monkeypatch, capsys, "memory", verb, "topics/bikes.md", "--state", str(state), "--json")
        assert (code, refusal["code"]) == (65, "INVALID_TOPIC_FORMAT"), refusal
        assert refusal["message"] == f"topics/bikes.md {named} — {problem['fix']}"
        assert (refusal["details"]["line"], refusal["details"]["fix"]) == (4, problem["fix"])
    assert path.read_bytes() == committed[:at] + "Caf\u00e9 ".encode("latin-1") + committed[at:]


def _as_a_user(argv: list[str], state) -> tuple[int, dict]:
    """``openprogram memory ARGV --json`` in a child process that file modes bind: as root, one without the
    capabilities that override them (as the person running it would be)."""
    import os
    import shutil
    import subprocess

    prefix: list[str] = []
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("root ignores file modes, and setpriv is not here to drop that")
        prefix = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([*prefix, sys.executable, "-m", "openprogram_memory", "memory", *argv, "--state",
                           str(state), "--json"], capture_output=True, text=True, timeout=120, env=env)
    return done.returncode, json.loads(done.stdout)


def test_a_folder_that_cannot_be_opened_is_named_and_its_topics_served_from_their_commit(tmp_path):
    """``chmod 000 topics/projects``: every verb carries on (was: PermissionError, exit 1), check names the folder
    and the chmod, status and search still serve what it holds as committed, and nothing is taken for deleted."""
    state = tmp_path / "state"
    ws = make_workspace(state)
    ws.update(changes=[{"path": "topics/bikes.md", "content": record("Dana runs a bike shop.")},
                       {"path": "topics/projects/billing.md",
                        "content": record("We use FastAPI for billing.", "openprogram/s1/u3")}])
    head = ws.log(1)[0]
    folder = ws.root / "topics/projects"
    folder.chmod(0)
    try:
        code, report = _as_a_user(["check"], state)
        assert code == 65 and [(p["file"], p["rule"]) for p in report["problems"]] == [
            ("topics/projects", "unreadable")]
        assert f"chmod u+rwx {folder}" in report["problems"][0]["fix"]
        code, status = _as_a_user(["status"], state)
        assert code == 0 and (status["topics"], status["records"]) == (2, 2)
        warning = next(w for w in status["warnings"] if w.startswith("topics/projects/ cannot be opened"))
        assert f"chmod u+rwx {folder}" in warning and "last committed version" in warning
        code, found = _as_a_user(["search", "FastAPI"], state)
        assert code == 0 and [hit["topic"] for hit in found["results"]] == ["topics/projects/billing.md"]
        assert warning in found["warnings"]
        for verb in (["log"], ["sleep"]):
            assert _as_a_user(verb, state)[0] == 0, verb
    finally:
        folder.chmod(0o700)
    assert ws.log(1)[0] == head  # nothing adopted as deleted
    assert _as_a_user(["check"], state) == (0, {"ok": True, "problems": [], "repaired": []})


def test_a_restore_leaves_a_folder_that_cannot_be_opened_alone_unless_it_would_change_a_file_in_it(tmp_path):
    """``chmod 000 topics/projects``, then ``memory restore REV``: where REV holds the files in that folder as they
    are committed now, the restore goes through and says once that it left the folder alone (was: refused, exit
    65, naming a file it would not change). Where it would change a file there, or make one there again, it is
    refused as before, naming the file and the chmod, and nothing moves."""
    state = tmp_path / "state"
    ws = make_workspace(state)
    ws.update(changes=[{"path": "topics/bikes.md", "content": record("Dana runs a bike shop.")},
                       {"path": "topics/projects/billing.md",
                        "content": record("We use FastAPI for billing.", "openprogram/s1/u3")},
                       {"path": "topics/projects/queue.md",
                        "content": record("We use Celery for the queue.", "openprogram/s1/u3")}])
    rev = ws.log(1)[0]["commit"]
    ws.update(changes=[{"path": "topics/core.md", "content": "# Core\n\n" + record("Answer in metric units.",
                                                                                  "openprogram/s1/u2")}])
    folder = ws.root / "topics/projects"
    on_disk = {rel: (ws.root / rel).read_bytes() for rel in ("topics/projects/billing.md", "topics/projects/queue.md")}
    folder.chmod(0)
    try:
        code, restored = _as_a_user(["restore", rev[:10]], state)
        assert code == 0 and restored["changed_files"] == ["topics/core.md"]
        [warning] = restored["warnings"]
        assert warning.startswith("topics/projects/ cannot be opened (Permission denied)")
        assert "left alone: the restore's edit changes no file in it" in warning
        assert f"chmod u+rwx {folder}" in warning
    finally:
        folder.chmod(0o700)
    assert not (ws.root / "topics/core.md").exists()
    assert {rel: (ws.root / rel).read_bytes() for rel in on_disk} == on_disk

    billing = "topics/projects/billing.md"
    ws.update(changes=[{"path": billing, "content": on_disk[billing].decode().replace("FastAPI", "Flask")}])
    _restore_refused(ws, state, rev, folder, billing)  # FastAPI back over Flask
    ws.update(changes=[{"path": billing, "content": on_disk[billing].decode()}])
    ws.edit(lambda staging: staging.delete("topics/projects/queue.md"), policy=Policy.MODEL)
    _restore_refused(ws, state, rev, folder, "topics/projects/queue.md")  # made again


def _restore_refused(ws, state: Path, rev: str, folder: Path, would_change: str) -> None:
    """``memory restore rev`` run as a user while ``folder`` cannot be opened is refused, naming ``would_change``,
    its folder and the chmod, and moves nothing."""
    head = ws.log(1)[0]
    folder.chmod(0)
    try:
        code, refusal = _as_a_user(["restore", rev[:10]], state)
    finally:
        folder.chmod(0o700)
    assert (code, refusal["code"]) == (65, "WRITER_PRECONDITION_FAILED")
    assert list(refusal["details"]["files"]) == [would_change]
    assert refusal["message"].startswith(f"{would_change} cannot be read: its folder "
                                         f"{folder.relative_to(ws.root).as_posix()} cannot be opened")
    assert f"chmod u+rwx {folder}" in refusal["message"]
    assert ws.log(1)[0] == head


def test_a_restore_that_would_remove_a_file_in_a_folder_that_cannot_be_opened_is_refused(tmp_path):
    """``chmod 000 topics/work``, then ``memory restore REV`` from before ``topics/work/acme.md`` was made: the
    restore would remove it, so it is refused as a change there is (exit 65, naming the file and the chmod), and
    nothing moves. Was: exit 1, "unexpected error: PermissionError"."""
    state = tmp_path / "state"
    ws = make_workspace(state)
    ws.update(changes=[{"path": "topics/bikes.md", "content": record("Dana runs a bike shop.")}])
    rev = ws.log(1)[0]["commit"]
    acme = "topics/work/acme.md"
    ws.update(changes=[{"path": acme, "content": record("Acme pays invoices monthly.", "openprogram/s1/u3")}])
    on_disk = (ws.root / acme).read_bytes()
    _restore_refused(ws, state, rev, ws.root / "topics/work", acme)
    assert (ws.root / acme).read_bytes() == on_disk
