"""`openprogram memory sync` as a script sees it: JSON, exit codes, the recorded remote."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from openprogram_memory.cli.app import app
from openprogram_memory.config import load_settings

from .helpers import add, bare_remote, machine, memory_files

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
    gone = run("memory", "sync", "--remote", "git://127.0.0.1:1/nowhere.git", "--json")  # nothing listens there
    assert gone.exit_code == 75, gone.output
    assert json.loads(gone.output)["code"] == "REMOTE_UNAVAILABLE"
    assert load_settings()["memory.sync.remote"] == ""  # an unreachable URL is not recorded


def test_a_local_path_that_is_no_repository_is_a_usage_error_not_a_retry(tmp_path):
    run("memory", "init")
    (tmp_path / "plain").mkdir()
    for path in (tmp_path / "nowhere.git", tmp_path / "plain"):
        wrong = run("memory", "sync", "--remote", str(path), "--json")
        assert wrong.exit_code == 64, wrong.output  # a cron job must not retry it forever
        data = json.loads(wrong.output)
        assert data["code"] == "INVALID_ARGUMENT" and data["retryable"] is False
        assert f"git init --bare {path}" in data["message"]
    assert load_settings()["memory.sync.remote"] == ""


def test_a_blank_remote_is_a_usage_error_even_with_one_configured(tmp_path):
    remote = bare_remote(tmp_path)
    run("memory", "init")
    assert run("memory", "sync", "--remote", remote).exit_code == 0
    blank = run("memory", "sync", "--remote", "  ", "--json")
    assert blank.exit_code == 64 and json.loads(blank.output)["code"] == "INVALID_ARGUMENT"
    assert "--remote is blank" in json.loads(blank.output)["message"]
    assert load_settings()["memory.sync.remote"] == remote


def _sync_json(ws, remote: str):
    result = run("memory", "sync", "--remote", remote, "--json", "--state", str(ws.settings.state_dir))
    return result.exit_code, json.loads(result.output)


def test_a_sync_refused_by_an_invalid_hand_edit_is_not_retryable_and_names_the_file_line_and_fix(tmp_path):
    """Only the person can fix the file: exit 65, not 75 (a cron job would retry it forever), and nothing changes."""
    remote, a, b = bare_remote(tmp_path), machine(tmp_path, "a"), machine(tmp_path, "b")
    add(a, "topics/dana.md", "Dana runs a bike shop.")
    add(a, "topics/dana.md", "Dana opens at nine.", "openprogram/s1/u2")
    for ws in (a, b, a):
        assert _sync_json(ws, remote)[0] == 0
    dana = a.root / "topics/dana.md"
    first, second = [line.rsplit(" ^", 1)[1] for line in dana.read_text().splitlines() if " ^" in line]
    typed = dana.read_text().replace(f"^{second}", f"^{first}")  # the same block ID twice, by hand
    dana.write_text(typed)
    add(b, "topics/dana.md", "Dana uses FastAPI.", "openprogram/s1/u3")
    assert _sync_json(b, remote)[0] == 0
    before = memory_files(a)
    code, refusal = _sync_json(a, remote)
    assert code == 65 and (refusal["code"], refusal["retryable"]) == ("WRITER_PRECONDITION_FAILED", False)
    assert refusal["message"].startswith("topics/dana.md line ") and "[duplicate-id]" in refusal["message"]
    assert "`openprogram memory check`" in refusal["message"]
    assert "`openprogram memory edit topics/dana.md`" in refusal["message"]
    assert memory_files(a) == before and dana.read_text() == typed


def test_a_sync_refused_by_a_held_deletion_gives_the_fix_check_gives_not_an_edit_of_the_deleted_file(tmp_path):
    """people.md deleted by hand while work.md links into it: the deletion is held back; a merge that changes
    people.md is refused with the fix `status` and `check` give (there is no file left to `memory edit`)."""
    from openprogram_memory.transaction.check import check_workspace

    from .helpers import reopen

    remote, a, b = bare_remote(tmp_path), machine(tmp_path, "a"), machine(tmp_path, "b")
    owner = add(a, "topics/people.md", "Dana is the owner.")
    add(a, "topics/work.md", f"The [shop](people.md#^{owner}) opens at nine.", "openprogram/s1/u2")
    for ws in (a, b, a):
        assert _sync_json(ws, remote)[0] == 0
    (a.root / "topics/people.md").unlink()
    add(b, "topics/people.md", "Priya runs billing.", "openprogram/s1/u3")
    assert _sync_json(b, remote)[0] == 0
    before = memory_files(a)
    code, refusal = _sync_json(a, remote)
    assert code == 65 and (refusal["code"], refusal["retryable"]) == ("WRITER_PRECONDITION_FAILED", False)
    [deleted] = [p for p in check_workspace(reopen(a)) if (p.file, p.rule) == ("topics/people.md", "uncommitted")]
    assert refusal["message"].startswith("topics/people.md ") and deleted.fix in refusal["message"]
    assert "memory edit topics/people.md" not in refusal["message"]
    assert memory_files(a) == before and not (a.root / "topics/people.md").exists()
