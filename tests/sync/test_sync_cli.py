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



def test_a_sync_refused_by_held_files_names_every_one_a_latin1_note_too(tmp_path):
    """A merge into a file left out as not UTF-8 would overwrite the person's bytes (they are in no commit); and
    with two held files the refusal named only the first. Both are named, each with its fix; nothing changes."""
    remote, a, b = bare_remote(tmp_path), machine(tmp_path, "a"), machine(tmp_path, "b")
    add(a, "topics/dana.md", "Dana runs a bike shop.")
    add(a, "topics/priya.md", "Priya runs billing.", "openprogram/s1/u2")
    for ws in (a, b, a):
        assert _sync_json(ws, remote)[0] == 0
    dana, priya = a.root / "topics/dana.md", a.root / "topics/priya.md"
    latin = dana.read_bytes() + "caf\u00e9 note\n".encode("latin-1")
    dana.write_bytes(latin)
    uncited = priya.read_text() + "\nMy uncited note.\n"
    priya.write_text(uncited)
    add(b, "topics/dana.md", "Dana opens at nine.", "openprogram/s1/u3")
    add(b, "topics/priya.md", "Priya uses FastAPI.", "openprogram/s1/u2")
    assert _sync_json(b, remote)[0] == 0
    before = memory_files(a)
    code, refusal = _sync_json(a, remote)
    assert code == 65 and (refusal["code"], refusal["retryable"]) == ("WRITER_PRECONDITION_FAILED", False)
    assert set(refusal["details"]["files"]) == {"topics/dana.md", "topics/priya.md"}
    assert "topics/dana.md not valid UTF-8 at line " in refusal["message"] and "re-save it as UTF-8" in refusal["message"]
    assert "topics/priya.md line " in refusal["message"]
    assert "`openprogram memory edit topics/priya.md`" in refusal["message"]
    assert memory_files(a) == before and dana.read_bytes() == latin and priya.read_text() == uncited


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


def _ahead(tmp_path):
    """A remote one record ahead of machine b (which has a record of its own): b's next sync merges."""
    remote, a, b = bare_remote(tmp_path), machine(tmp_path, "a"), machine(tmp_path, "b")
    add(a, "topics/dana.md", "Dana runs a bike shop.")
    for ws in (a, b):
        assert _sync_json(ws, remote)[0] == 0
    add(a, "topics/dana.md", "Dana opens at nine.", "openprogram/s1/u2")
    assert _sync_json(a, remote)[0] == 0
    add(b, "topics/work.md", "Dana uses FastAPI for billing.", "openprogram/s1/u3")
    return remote, b


def _sync_with_ctrl_c(monkeypatch, capsys, module, name: str, remote: str, ws, after: bool = False):
    """``memory sync --json`` through the Typer app, with Ctrl-C pressed inside ``module.name`` (before or after
    it runs), as the apply and sleep Ctrl-C tests press it; (exit code, stdout, stderr)."""
    import os
    import signal
    import sys

    import pytest

    from openprogram_memory.cli import app as app_module

    real = getattr(module, name)

    def pressed(*args, **kwargs):
        if not after:
            os.kill(os.getpid(), signal.SIGINT)
        out = real(*args, **kwargs)
        if after:
            os.kill(os.getpid(), signal.SIGINT)
        return out

    monkeypatch.setattr(module, name, pressed)
    monkeypatch.setattr(sys, "argv", ["openprogram", "memory", "sync", "--remote", remote, "--json",
                                      "--state", str(ws.settings.state_dir)])
    with pytest.raises(SystemExit) as exit_:
        app_module.main()
    printed = capsys.readouterr()
    return exit_.value.code, printed.out, printed.err


def test_ctrl_c_once_a_sync_installs_its_merge_lets_it_finish_and_says_it_is_installed(tmp_path, monkeypatch,
                                                                                       capsys):
    """Pressed as the merge is installed: the install finishes, is committed as the merge, the answer is printed
    and says so, exit 130, and nothing is pushed (a rerun pushes). Was: a KeyboardInterrupt inside the install,
    left to the next command's recovery, with only "stopped by Ctrl-C"."""
    from dulwich.repo import Repo

    from openprogram_memory.transaction import engine

    remote, b = _ahead(tmp_path)
    remote_head = Repo(remote).refs[b"refs/heads/main"]
    code, out, err = _sync_with_ctrl_c(monkeypatch, capsys, engine, "install", remote, b, after=True)
    assert code == 130, (code, out, err)
    answer = json.loads(out)
    assert answer["ok"] and answer["merged"] and answer["interrupted"] and answer["push_skipped"]
    assert not answer["pushed"]
    assert "stopping after this merge" in err and "installed and committed" in err and "not pushed" in err
    head = Repo(str(b.root))[Repo(str(b.root)).head()]
    assert len(head.parents) == 2 and answer["commit"] == head.id.decode()
    assert "Dana opens at nine." in b.read_topic("topics/dana.md")
    assert Repo(remote).refs[b"refs/heads/main"] == remote_head  # not pushed
    monkeypatch.undo()
    again = _sync_json(b, remote)
    assert again[0] == 0 and again[1]["pushed"]


def test_ctrl_c_while_a_synced_merge_is_pushed_waits_for_the_push_and_says_it_is_installed(tmp_path, monkeypatch,
                                                                                          capsys):
    """Was: HEAD already the merge commit, yet exit 130 with only "stopped by Ctrl-C"."""
    from dulwich.repo import Repo

    from openprogram_memory.sync import transport

    remote, b = _ahead(tmp_path)
    code, out, err = _sync_with_ctrl_c(monkeypatch, capsys, transport, "push", remote, b)
    assert code == 130, (code, out, err)
    answer = json.loads(out)
    assert answer["ok"] and answer["merged"] and answer["pushed"] and answer["interrupted"]
    assert "push_skipped" not in answer
    assert "installed and committed" in err and "not pushed" not in err
    assert Repo(remote).refs[b"refs/heads/main"].decode() == answer["commit"] == Repo(str(b.root)).head().decode()


def test_ctrl_c_before_a_sync_installs_anything_stops_at_once_and_changes_nothing(tmp_path, monkeypatch, capsys):
    """While the remote is fetched (a network wait): stopped at once, no merge, no remote recorded."""
    from dulwich.repo import Repo

    from openprogram_memory.sync import transport

    remote, b = _ahead(tmp_path)
    before, head = memory_files(b), Repo(str(b.root)).head()
    code, out, err = _sync_with_ctrl_c(monkeypatch, capsys, transport, "fetch", remote, b)
    assert (code, out) == (130, "") and "stopping after" not in err
    assert memory_files(b) == before and Repo(str(b.root)).head() == head


def test_a_sync_says_which_hand_edit_it_could_not_carry(tmp_path):
    """A note typed into a topic file without a citation is held back: in no commit, so no sync carries it to the
    other machines. The sync still succeeds, and says so with the warning status gives (JSON and text) until the
    file is fixed."""
    remote, a, b = bare_remote(tmp_path), machine(tmp_path, "a"), machine(tmp_path, "b")
    add(a, "topics/dana.md", "Dana runs a bike shop.")
    assert _sync_json(a, remote)[0] == 0
    dana = a.root / "topics/dana.md"
    committed = dana.read_text()
    dana.write_text(committed + "\nnote\n")
    code, synced = _sync_json(a, remote)
    assert code == 0 and synced["ok"]
    [warning] = synced["warnings"]
    assert warning.startswith("not synced: topics/dana.md line ") and "[uncited-text]" in warning
    status = json.loads(run("memory", "status", "--json", "--state", str(a.settings.state_dir)).output)
    assert warning.removeprefix("not synced: ") in status["warnings"]
    text = run("memory", "sync", "--state", str(a.settings.state_dir))
    assert text.exit_code == 0 and "not synced: topics/dana.md line " in text.output
    assert _sync_json(b, remote)[0] == 0 and (b.root / "topics/dana.md").read_text() == committed
    dana.write_text(committed)
    code, synced = _sync_json(a, remote)
    assert code == 0 and "warnings" not in synced


def test_a_sync_refused_by_a_note_moved_to_a_deeper_folder_gives_the_fix_check_gives_once(tmp_path):
    """Was: `git -C … checkout -- topics/friends/dave-r.md` (the old file back beside the moved one, the same IDs)
    and the long problem printed three times. Now check's move fix, which works: the next sync goes through."""
    import os

    from openprogram_memory.transaction.check import check_workspace

    from .helpers import reopen

    remote, a, b = bare_remote(tmp_path), machine(tmp_path, "a"), machine(tmp_path, "b")
    add(a, "topics/friends/dave-r.md", "Dave rides a gravel bike.")
    for ws in (a, b, a):
        assert _sync_json(ws, remote)[0] == 0
    (a.root / "topics/people/cycling/shops").mkdir(parents=True)
    os.rename(a.root / "topics/friends/dave-r.md", a.root / "topics/people/cycling/shops/dave.md")
    add(b, "topics/friends/dave-r.md", "Dave opens at nine.", "openprogram/s1/u2")
    assert _sync_json(b, remote)[0] == 0
    before = memory_files(a)
    code, refusal = _sync_json(a, remote)
    assert code == 65 and refusal["code"] == "WRITER_PRECONDITION_FAILED" and memory_files(a) == before
    [moved] = [p for p in check_workspace(reopen(a)) if (p.file, p.rule) == ("topics/friends/dave-r.md", "lost-block-id")]
    assert "`openprogram memory check --repair`" in moved.fix and moved.fix in refusal["message"]
    assert "checkout" not in refusal["message"]
    human = run("memory", "sync", "--remote", remote, "--state", str(a.settings.state_dir))
    assert human.exit_code == 65 and human.output.count("which is not adopted") == 1
    assert run("memory", "check", "--repair", "--state", str(a.settings.state_dir)).exit_code == 0
    assert _sync_json(a, remote)[0] == 0
    assert "Dave opens at nine." in (a.root / "topics/people/cycling/shops/dave.md").read_text()
