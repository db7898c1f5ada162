"""The CLI as a script sees it: JSON shapes, exit codes, snapshots."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from filelock import FileLock
from typer.testing import CliRunner

from openprogram_memory.cli.app import app
from openprogram_memory.cli.completions import SHELLS, completion_script
from openprogram_memory.config import load_settings
from openprogram_memory.sources.archive import SourceMessage
from openprogram_memory.memory import MemoryWorkspace

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOTS = Path(__file__).parent / "snapshots"
runner = CliRunner()


def run(*args: str, input: str | None = None):
    return runner.invoke(app, list(args), input=input, catch_exceptions=False)


def shape(value):
    """Keys and value types, for snapshotting JSON contracts."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return type(value).__name__


@pytest.fixture
def ws():
    run("memory", "init")
    ws = MemoryWorkspace.open(load_settings())
    ws.archive([
        SourceMessage("openprogram/s1/u1", "Dana", "user-1", "2026-08-09T10:00:00+08:00", "I run a bike shop."),
        SourceMessage("openprogram/s1/u2", "Dana", "user-1", "2026-08-10T09:00:00+08:00", "Always answer in metric units."),
    ])
    return ws


CORE = ("# Core\n\n## Rules\n\nAlways answer in metric units.[^e1]\n\n"
        "[^e1]: Sources: [metric units](openprogram/s1/u2)\n")
DANA = "# Dana\n\n## Work\n\nDana runs a bike shop.[^e1]\n\n[^e1]: Sources: [bike shop](openprogram/s1/u1)\n"


def apply_changes(*changes):
    payload = json.dumps({"changes": [{"path": p, "content": c} for p, c in changes]})
    return run("memory", "apply", "-", "--json", input=payload)


def test_rendered_markdown_snapshot(ws, snapshot):
    snapshot.snapshot_dir = SNAPSHOTS
    result = apply_changes(("topics/core.md", CORE), ("topics/people/dana.md", DANA))
    assert result.exit_code == 0, result.output
    snapshot.assert_match((ws.root / "topics/core.md").read_text(), "topics_core.md")
    snapshot.assert_match((ws.root / "topics/people/dana.md").read_text(), "topics_people_dana.md")
    snapshot.assert_match((ws.root / "core.md").read_text(), "core.md")
    snapshot.assert_match((ws.root / "timeline/2026/08/09.md").read_text(), "timeline_2026_08_09.md")


def test_json_shapes_snapshot(ws, snapshot):
    snapshot.snapshot_dir = SNAPSHOTS
    applied = apply_changes(("topics/core.md", CORE))
    shapes = {"apply": shape(json.loads(applied.stdout))}
    for name, args in {
        "status": ["memory", "status", "--json"],
        "core_show": ["memory", "core", "show", "--json"],
        "log": ["memory", "log", "--json"],
        "rebuild": ["memory", "rebuild", "--json"],
    }.items():
        result = run(*args)
        assert result.exit_code == 0, result.output
        shapes[name] = shape(json.loads(result.stdout))
    error = run("memory", "show", "../x.md", "--json")
    assert error.exit_code == 64
    shapes["error"] = shape(json.loads(error.stdout))
    snapshot.assert_match(json.dumps(shapes, indent=2, sort_keys=True) + "\n", "json_shapes.json")


def test_core_show_views_and_excluded(ws):
    apply_changes(("topics/core.md", CORE))
    effective = run("memory", "core", "show")
    assert "Always answer in metric units." in effective.stdout and "/ 2,000 tokens" in effective.stdout
    canonical = json.loads(run("memory", "core", "show", "--view", "canonical", "--json").stdout)
    assert canonical["canonical"].startswith("# Core") and canonical["excluded_block_ids"] == []
    bad = run("memory", "core", "show", "--view", "nope", "--json")
    assert bad.exit_code == 64 and json.loads(bad.stdout)["code"] == "INVALID_ARGUMENT"


def test_core_show_is_a_read_that_never_waits_for_a_write(ws):
    """Like search and status: a write holding the lock gets the core as last installed, said so, at once."""
    apply_changes(("topics/core.md", CORE))
    with FileLock(str(ws.layout.lock_file)):  # a write in progress
        shown = run("memory", "core", "show", "--json")
        human = run("memory", "core", "show")
    assert shown.exit_code == 0, shown.output
    core = json.loads(shown.stdout)
    assert "Always answer in metric units." in core["effective"] and core["write_in_progress"] is True
    assert human.exit_code == 0 and "Always answer in metric units." in human.stdout
    assert "a write is in progress" in human.stdout
    assert "write_in_progress" not in json.loads(run("memory", "core", "show", "--json").stdout)


def test_status_warns_about_excluded_core_records(ws):
    records = "".join(f"Rule {i}: " + "keep every answer short and exact " * 40 + f".[^e{i}]\n\n" for i in range(12))
    defs = "".join(f"[^e{i}]: Sources: [rule]({'openprogram/s1/u2'})\n" for i in range(12))
    assert apply_changes(("topics/core.md", "# Core\n\n" + records + defs)).exit_code == 0
    status = json.loads(run("memory", "status", "--json").stdout)
    assert status["core"]["excluded_block_ids"]
    human = run("memory", "status").stdout
    assert "do not fit" in human
    core = json.loads(run("memory", "core", "show", "--json").stdout)
    assert core["excluded_block_ids"] == status["core"]["excluded_block_ids"] and core["tokens"] <= 2000


def test_status_shows_the_last_write_failure_with_its_message_time_session_and_what_to_do(ws):
    from openprogram_memory.failures import FailureCode, MemoryFailure
    from openprogram_memory.writer import journal

    damaged = MemoryFailure(FailureCode.COMMIT_REJECTED, "the writer's edit was rejected twice\n(the batch waits)",
                            details={"repair": "openprogram memory restore HEAD"})
    journal.record_failure(ws.layout, "s1", damaged, 2)
    status = json.loads(run("memory", "status", "--json").stdout)
    failure = status["writer"]["last_failure"]
    assert (failure["code"], failure["session"], failure["message"]) == (
        "COMMIT_REJECTED", "s1", "the writer's edit was rejected twice")
    assert failure["hint"] == "run `openprogram memory restore HEAD`"
    line = (f"the last write failed at {failure['at']} (session s1): COMMIT_REJECTED: the writer's edit was rejected "
            "twice — run `openprogram memory restore HEAD`")
    assert status["warnings"] == [line]
    assert f"warning: {line}" in " ".join(run("memory", "status").stdout.split())
    # without a hint of its own: where its log is
    journal.record_failure(ws.layout, "s1", MemoryFailure(FailureCode.MODEL_TIMEOUT, "no answer in 60 s"), 2)
    [warning] = json.loads(run("memory", "status", "--json").stdout)["warnings"]
    assert warning.endswith(f"MODEL_TIMEOUT: no answer in 60 s — its log: {ws.layout.state('events.jsonl')}")
    # a later success makes it history: still in --json, no longer a warning
    journal.record_success(ws.layout, "s1", 0)
    status = json.loads(run("memory", "status", "--json").stdout)
    assert status["writer"]["last_failure"]["code"] == "MODEL_TIMEOUT" and status["warnings"] == []


def test_rejected_apply_exit_code_and_no_change(ws):
    before = ws.revision()
    result = apply_changes(("topics/x.md", "uncited prose\n"))
    assert result.exit_code == 65
    body = json.loads(result.stdout)
    assert body == {"ok": False, "code": "INVALID_TOPIC_FORMAT", "retryable": False,
                    "message": body["message"], "details": {"file": "topics/x.md", "line": 1, "rule": "uncited-text"}}
    assert ws.revision() == before


def test_patch_form_and_conflict(ws):
    apply_changes(("topics/people/dana.md", DANA))
    text = (ws.root / "topics/people/dana.md").read_text()
    new = text.replace("Dana runs a bike shop.", "Dana runs a bike shop in Utrecht.")
    import difflib

    patch = "".join(difflib.unified_diff(text.splitlines(True), new.splitlines(True),
                                         "a/topics/people/dana.md", "b/topics/people/dana.md"))
    ok = run("memory", "apply", "-", "--json", input=json.dumps({"patch": patch}))
    assert ok.exit_code == 0, ok.stdout
    assert "in Utrecht" in (ws.root / "topics/people/dana.md").read_text()
    again = run("memory", "apply", "-", "--json", input=json.dumps({"patch": patch}))
    assert again.exit_code == 65 and json.loads(again.stdout)["code"] == "PATCH_CONFLICT"
    rename = "diff --git a/topics/a.md b/topics/b.md\nrename from topics/a.md\nrename to topics/b.md\n"
    renamed = run("memory", "apply", "-", "--json", input=json.dumps({"patch": rename}))
    assert json.loads(renamed.stdout)["code"] == "INVALID_ARGUMENT"
    overlap = ("--- a/topics/people/dana.md\n+++ b/topics/people/dana.md\n@@ -1,2 +1,2 @@\n-# Dana\n+# D\n \n"
               "@@ -2,1 +2,1 @@\n-\n+x\n")
    assert json.loads(run("memory", "apply", "-", "--json", input=json.dumps({"patch": overlap})).stdout)["code"] == "PATCH_CONFLICT"
    outside = "--- a/sources/openprogram/_v2/s1.md\n+++ b/sources/openprogram/_v2/s1.md\n@@ -1 +1 @@\n-a\n+b\n"
    assert json.loads(run("memory", "apply", "-", "--json", input=json.dumps({"patch": outside})).stdout)["code"] == "READ_ONLY_PATH"


def _editor(tmp_path, monkeypatch, script: str, name: str = "editor.sh") -> None:
    """$EDITOR is a shell script that does ``script`` to the file it is given (``$1``)."""
    editor = tmp_path / name
    editor.write_text("#!/bin/sh\n" + script + "\n")
    editor.chmod(0o755)
    monkeypatch.setenv("EDITOR", str(editor))


def test_edit_keeps_draft_on_rejection(ws, tmp_path, monkeypatch):
    apply_changes(("topics/people/dana.md", DANA))
    _editor(tmp_path, monkeypatch, "printf 'Uncited line.\\n' >> \"$1\"")
    before = ws.revision()
    result = run("memory", "edit", "topics/people/dana.md", "--no-reopen", "--json")
    assert result.exit_code == 65
    body = json.loads(result.stdout)
    assert body["code"] == "INVALID_TOPIC_FORMAT" and body["details"]["rule"] == "uncited-text"
    assert "Uncited line." in Path(body["details"]["draft"]).read_text()
    assert ws.revision() == before


def test_edit_saved_unchanged_over_a_held_back_hand_edit_validates_it(ws, tmp_path, monkeypatch):
    """The file on disk holds an invalid edit made in another editor (served from its last commit, check fails):
    saving it unchanged from `memory edit` said "No change." (exit 0). It is validated as any draft: the rule and
    the line, the draft kept, nothing installed; a draft that only lacks what normalization adds is installed."""
    import re

    apply_changes(("topics/people/dana.md", DANA))
    path = ws.root / "topics/people/dana.md"
    path.write_text(path.read_text() + "\nUncited line.\n")
    typed = path.read_text()
    _editor(tmp_path, monkeypatch, "true")  # opened and saved as it is
    head = ws.log(1)[0]["commit"]
    result = run("memory", "edit", "topics/people/dana.md", "--no-reopen", "--json")
    assert result.exit_code == 65, result.output
    body = json.loads(result.stdout)
    assert (body["code"], body["details"]["rule"]) == ("INVALID_TOPIC_FORMAT", "uncited-text")
    assert body["details"]["line"] == typed.splitlines().index("Uncited line.") + 1
    assert Path(body["details"]["draft"]).read_text() == typed  # the path it names is there
    assert path.read_text() == typed and ws.log(1)[0]["commit"] == head
    label = re.search(r"\[\^(e-[0-9a-f]+)\]", typed)[1]
    path.write_text(typed.replace("Uncited line.", f"Dana opens at nine.[^{label}]"))  # no ^block-id, as typed
    result = run("memory", "edit", "topics/people/dana.md", "--no-reopen", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["changed_files"] == ["topics/people/dana.md"]
    assert re.search(r"Dana opens at nine\.\[\^e-[0-9a-f]+\] \^[0-9a-f]{8}", path.read_text())
    assert run("memory", "check", "--json").exit_code == 0


def test_edit_installs_valid_change(ws, tmp_path, monkeypatch):
    apply_changes(("topics/people/dana.md", DANA))
    _editor(tmp_path, monkeypatch, "sed -i 's/a bike shop/two bike shops/' \"$1\"")
    result = run("memory", "edit", "topics/people/dana.md", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["changed_files"] == ["topics/people/dana.md"]
    assert "two bike shops" in (ws.root / "topics/people/dana.md").read_text()


def test_edit_of_a_path_that_does_not_exist_needs_new(ws, tmp_path, monkeypatch):
    """A typo in the path must not open an empty buffer as if the topic were empty."""
    apply_changes(("topics/people/dana.md", DANA))
    _editor(tmp_path, monkeypatch, "echo opened >> \"$TMPDIR/opened\"")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    result = run("memory", "edit", "topics/people/dnaa.md", "--json")
    assert result.exit_code == 65
    body = json.loads(result.stdout)
    assert body["code"] == "MEMORY_NOT_FOUND" and "--new" in body["message"] and "dnaa.md" in body["message"]
    assert not (tmp_path / "opened").exists() and not (ws.root / "topics/people/dnaa.md").exists()
    lister = body["message"].split("`")[1]  # the command it names to see the right name exists and lists it
    listed = subprocess.run(lister, shell=True, capture_output=True, text=True)
    assert listed.returncode == 0 and "dana.md" in listed.stdout
    _editor(tmp_path, monkeypatch, "printf 'Dana sells bikes.[^e1]\\n\\n[^e1]: Sources: [n](openprogram/s1/u1)\\n' > \"$1\"",
            "writer.sh")
    created = run("memory", "edit", "topics/people/dnaa.md", "--new", "--json")
    assert created.exit_code == 0, created.output
    assert "Dana sells bikes." in (ws.root / "topics/people/dnaa.md").read_text()


def test_export_and_log_and_restore(ws, tmp_path):
    first = json.loads(apply_changes(("topics/people/dana.md", DANA)).stdout)
    apply_changes(("topics/core.md", CORE))
    restored = run("memory", "restore", first["commit"][:10], "--json")
    assert restored.exit_code == 0 and json.loads(restored.stdout)["changed_files"] == ["topics/core.md"]
    log = json.loads(run("memory", "log", "--json").stdout)["commits"]
    assert log[0]["message"].startswith("memory: restore")
    out = tmp_path / "export.tar.gz"
    assert run("memory", "export", "--out", str(out)).exit_code == 0
    import tarfile

    names = tarfile.open(out).getnames()
    assert "memory/topics/people/dana.md" in names and not any(".scriptorium" in n for n in names)
    missing = run("memory", "restore", "0000000", "--json")
    assert missing.exit_code == 65 and json.loads(missing.stdout)["code"] == "MEMORY_NOT_FOUND"


def test_log_of_a_workspace_without_history_says_so():
    """`memory init` makes no commit: an empty log is one line, not nothing."""
    assert run("memory", "init").exit_code == 0
    assert json.loads(run("memory", "log", "--json").stdout) == {"commits": []}
    human = run("memory", "log")
    assert human.exit_code == 0 and human.stdout.startswith("no history yet: ") and human.stdout.count("\n") == 1
    MemoryWorkspace.open(load_settings()).archive([
        SourceMessage("openprogram/s1/u1", "Dana", "user-1", "2026-08-09T10:00:00+08:00", "I run a bike shop.")])
    assert "no history yet" not in run("memory", "log").stdout


def test_memory_verbs_refuse_when_disabled(tmp_path, monkeypatch):
    state = tmp_path / "off"
    monkeypatch.setenv("OPENPROGRAM_MEMORY_BACKEND", "none")
    for args in (["init"], ["status"], ["core", "show"], ["rebuild"], ["log"], ["show", "topics/core.md"]):
        result = run("memory", *args, "--state", str(state), "--json")
        assert result.exit_code == 69, args
        assert json.loads(result.stdout)["code"] == "MEMORY_DISABLED"
    assert not state.exists()


def test_completions_are_current():
    for shell, name in SHELLS.items():
        checked_in = (ROOT / "completions" / name).read_text()
        assert checked_in == completion_script(shell), "run: python -m openprogram_memory.cli.completions completions"


def test_cli_reference_is_current():
    from openprogram_memory.cli.reference import reference

    assert (ROOT / "docs" / "cli.md").read_text() == reference(), \
        "run: python -m openprogram_memory.cli.reference docs/cli.md"


def test_what_a_person_wrote_is_printed_as_written_never_read_as_markup(ws):
    """Rich markup in records, labels and error messages is shown literally (get, show, apply, errors)."""
    marked = "# Dana\n\n## Work\n\nDana writes [bold]tabs[/bold] and [red]links[/red].[^e1]\n\n" \
             "[^e1]: Sources: [shop](openprogram/s1/u1)\n"
    assert apply_changes(("topics/people/dana.md", marked)).exit_code == 0
    block_id = next(r.memory_id for r in ws.records() if "tabs" in r.content)
    shown = run("memory", "get", block_id)
    assert "[bold]tabs[/bold]" in shown.stdout and "[red]links[/red]" in shown.stdout
    failed = run("memory", "show", "topics/[bold]nope[/bold].md")
    assert failed.exit_code != 0 and "[bold]nope[/bold]" in failed.stderr


@pytest.mark.parametrize("module", ["openprogram_memory", "openprogram_memory.cli.entry"])
def test_python_dash_m_runs_the_console_script(module, _isolated_state):
    """``python -m openprogram_memory.cli.entry memory init`` did nothing and exited 0."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}

    def python_m(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, env=env,
                              timeout=60)

    created = python_m("memory", "init", "--json")
    assert created.returncode == 0, created.stderr
    assert json.loads(created.stdout)["ok"] is True and (_isolated_state / "memory" / "topics").is_dir()
    unknown = python_m("memory", "no-such-verb")
    assert unknown.returncode == 64 and "Usage: openprogram memory" in unknown.stderr


ADOPTED = "adopted hand edit(s) outside the product: topics/people/dana.md"


def _session_to_write() -> list[str]:
    from openprogram_memory.sessions.store import SessionStore

    store = SessionStore(load_settings().sessions_dir)
    store.create_session("s9")
    store.append("s9", "user", "Thanks, that works.", node_id="u1", created_at="2026-08-11T09:00:00+00:00")
    return ["write", "--session", "s9", "--force"]


@pytest.mark.parametrize("command", ["apply", "edit", "write"])
def test_a_write_command_says_it_adopted_a_hand_edit_first(ws, tmp_path, monkeypatch, command):
    """A valid edit saved in another editor is committed on its own before the command's change; the command says
    so, in status's words, in --json ``warnings`` and on the terminal, and only once."""
    apply_changes(("topics/people/dana.md", DANA))
    dana = ws.root / "topics/people/dana.md"
    write = _session_to_write() if command == "write" else []

    def once(n: int, *flags: str):
        new = f"topics/notes-{n}.md"
        text = f"# Notes\n\nNote {n}: the shop opens at nine.[^e1]\n\n[^e1]: Sources: [nine](openprogram/s1/u1)\n"
        if command == "edit":
            (tmp_path / "draft.md").write_text(text)
            _editor(tmp_path, monkeypatch, f"cp '{tmp_path / 'draft.md'}' \"$1\"")
        args = {"apply": ["apply", "-"], "edit": ["edit", new, "--new"], "write": write}[command]
        payload = json.dumps({"changes": [{"path": new, "content": text}]}) if command == "apply" else None
        result = run("memory", *args, *flags, input=payload)
        assert result.exit_code == 0, result.output
        return result

    dana.write_text(dana.read_text().replace("a bike shop", "two bike shops"))
    assert json.loads(once(1, "--json").stdout)["warnings"] == [ADOPTED]
    assert any(entry["message"].startswith("memory: hand edit outside the product: topics/people/dana.md")
               for entry in ws.log(10))
    assert "warnings" not in json.loads(once(2, "--json").stdout)  # committed: nothing left to say
    dana.write_text(dana.read_text().replace("two bike shops", "three bike shops"))
    assert ADOPTED in " ".join(once(3).output.split())


def test_restore_reads_a_revision_as_git_does(ws):
    """`memory restore HEAD~1` (HEAD^, a short id followed by ~N) restores that commit's topics; one that names no
    commit is MEMORY_NOT_FOUND, exit 65, as an unknown commit id is, and nothing moves. Was: "MEMORY_NOT_FOUND: no
    commit 'HEAD~1'", exit 65, for every revision but a commit id or HEAD."""
    apply_changes(("topics/people/dana.md", DANA))
    with_core = json.loads(apply_changes(("topics/core.md", CORE)).stdout)["commit"]
    core = ws.root / "topics/core.md"
    installed = core.read_text()

    def restore(rev: str) -> list[str]:
        done = run("memory", "restore", rev, "--json")
        assert done.exit_code == 0, done.output
        return json.loads(done.stdout)["changed_files"]

    assert restore("HEAD~1") == ["topics/core.md"] and not core.exists()  # the commit before core.md
    assert restore("HEAD^") == ["topics/core.md"] and core.read_text() == installed  # before the restore
    assert restore(f"{with_core[:8].upper()}~1") == ["topics/core.md"] and not core.exists()
    head = json.loads(run("memory", "log", "--json").stdout)["commits"][0]
    for rev in ("HEAD~9", "HEAD:topics", "HEAD~é"):
        missing = run("memory", "restore", rev, "--json")
        assert (missing.exit_code, json.loads(missing.stdout)["code"]) == (65, "MEMORY_NOT_FOUND"), rev
    assert json.loads(run("memory", "log", "--json").stdout)["commits"][0] == head


def test_restore_of_a_short_id_of_more_than_one_commit_asks_for_more_digits(ws):
    """A short id that starts more than one commit names none: MEMORY_NOT_FOUND, exit 65, asking for more digits
    (not an unexpected error, nor one of them picked)."""
    from dulwich.objects import Commit
    from dulwich.repo import Repo

    apply_changes(("topics/people/dana.md", DANA))
    repo = Repo(str(ws.root))
    head = repo[repo.head()]
    seen: dict[str, bytes] = {}
    for i in range(5000):  # commits nothing points at, until two share their first 4 digits
        commit = Commit()
        commit.tree, commit.parents, commit.message = head.tree, [head.id], f"other {i}\n".encode()
        commit.author = commit.committer = head.author
        commit.commit_time = commit.author_time = head.commit_time
        commit.commit_timezone = commit.author_timezone = 0
        repo.object_store.add_object(commit)
        prefix = commit.id.decode()[:4]
        if prefix in seen:
            break
        seen[prefix] = commit.id
    missing = run("memory", "restore", prefix, "--json")
    failure = json.loads(missing.stdout)
    assert (missing.exit_code, failure["code"]) == (65, "MEMORY_NOT_FOUND")
    assert failure["message"].startswith(f"'{prefix}' is the start of 2 commits")
    assert "give more of its digits" in failure["message"]
