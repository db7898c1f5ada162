"""`memory search|recall|status|apply|sleep --json` answer without Typer or Rich, byte for byte as the Typer verbs do."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from engine.helpers import make_workspace, record
from openprogram_memory.cli import app as app_module
from openprogram_memory.cli import fast
from openprogram_memory.search import cache as search_cache


@pytest.fixture
def state(tmp_path):
    ws = make_workspace(tmp_path / "state")
    ws.update(changes=[{"path": "topics/bikes.md", "content": record("Dana runs a bike shop in Oslo.")},
                       {"path": "topics/units.md", "content": record("Always answer in metric units.",
                                                                     "openprogram/s1/u2")}])
    return str(tmp_path / "state")


def _typer(monkeypatch, capsys, argv):
    monkeypatch.setattr(sys, "argv", ["openprogram", *argv])
    with pytest.raises(SystemExit) as exit_:
        app_module.main()
    return exit_.value.code, capsys.readouterr().out


def _fast(capsys, argv):
    search_cache.forget()
    code = fast.main(argv[1:])
    return code, capsys.readouterr().out


@pytest.mark.parametrize("argv", [
    ["memory", "search", "bike shop", "--json"],
    ["memory", "search", "metric", "--top-k", "1", "--json", "--all"],
    ["memory", "search", "nothing matches this", "--json"],
    ["memory", "search", "bike", "--top-k", "0", "--json"],
    ["memory", "search", "  ", "--json"],
    ["memory", "recall", "where is the bike shop", "--json"],
    ["memory", "recall", "units", "--top-k", "500", "--json"],
    ["memory", "status", "--json"],
    ["memory", "status", "-v", "--json"],
])
def test_the_fast_route_answers_as_the_typer_verb(argv, state, monkeypatch, capsys):
    argv = [*argv, "--state", state]
    search_cache.forget()
    expected = _typer(monkeypatch, capsys, argv)
    assert _fast(capsys, argv) == expected
    assert expected[1].startswith("{")


@pytest.mark.parametrize("request_text", [
    "{not json",
    '{"memory_changes": [{"op": "delete_record", "memory_id": "nope1234"}]}',
    "SAME",  # a whole-file change to what the file already says: no change
])
def test_apply_answers_as_the_typer_verb(request_text, state, tmp_path, monkeypatch, capsys):
    from openprogram_memory.config import load_settings
    from openprogram_memory.memory import MemoryWorkspace

    if request_text == "SAME":
        ws = MemoryWorkspace.open(load_settings(state))
        request_text = json.dumps({"changes": [{"path": "topics/bikes.md", "content": ws.read_topic("topics/bikes.md")}]})
    path = tmp_path / "request.json"
    path.write_text(request_text)
    argv = ["memory", "apply", str(path), "--json", "--state", state]
    expected = _typer(monkeypatch, capsys, argv)
    assert _fast(capsys, argv) == expected and expected[1].startswith("{")


@pytest.mark.parametrize("argv", [
    ["search", "x"],  # not --json: people get Rich output
    ["apply", "a.json", "b.json", "--json"], ["apply", "--base-revision", "--json"], ["status", "extra", "--json"],
    ["search", "--help", "--json"], ["search", "x", "--top-k", "--json"], ["search", "x", "y", "--json"],
    ["search", "x", "--bogus", "--json"], ["recall", "x", "--all", "--json"], ["get", "abcd1234", "--json"],
    ["search", "--json"], ["sleep", "now", "--json"], ["sleep", "--model", "--json"], ["sleep", "--bogus", "--json"],
])
def test_anything_else_is_left_to_typer(argv):
    assert fast.parse(argv) is None


@pytest.mark.parametrize("argv", [["memory", "sleep", "--json"], ["memory", "sleep", "--full", "--json"],
                                  ["memory", "sleep", "--model", "nope", "--json"]])
def test_sleep_answers_as_the_typer_verb(argv, state, monkeypatch, capsys):
    argv = [*argv, "--state", state]
    _typer(monkeypatch, capsys, ["memory", "sleep", "--json", "--state", state])  # the first organize of this tree
    expected = _typer(monkeypatch, capsys, argv)
    assert _fast(capsys, argv) == expected and expected[1].startswith("{")


@pytest.mark.parametrize("argv,needle", [(["memory", "search", "bike", "--json"], '"results"'),
                                         (["memory", "sleep", "--json"], '"merged"')])
def test_a_json_process_imports_neither_typer_nor_rich(argv, needle, state):
    probe = ("import atexit, sys\n"
             "atexit.register(lambda: sys.stderr.write(' '.join(m for m in ('typer', 'rich', 'click') "
             "if m in sys.modules) or 'none'))\n"
             f"sys.argv = ['openprogram', *{argv!r}, '--state', {state!r}]\n"
             "from openprogram_memory.cli.entry import main\nmain()\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and needle in done.stdout
    assert done.stderr.strip().endswith("none")


@pytest.mark.parametrize("argv,code,needle", [
    (["memory", "status", "--json"], 0, '"records": 2'),
    (["memory", "get", "nope", "--json"], 65, '"MEMORY_NOT_FOUND"'),
    (["memory", "bogus", "--json"], 64, '"INVALID_ARGUMENT"'),
    (["memory", "search", "bike", "--json"], 0, '"results"'),
])
def test_the_console_script_leaves_fast_with_its_output_and_exit_code(argv, code, needle, state):
    """`run` ends the process with os._exit (no heap teardown): the printed JSON is complete, the code kept."""
    probe = (f"import sys\nsys.argv = ['openprogram', *{argv!r}, '--state', {state!r}]\n"
             "from openprogram_memory.cli.entry import run\nrun()\nprint('not reached')\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == code and needle in done.stdout and "not reached" not in done.stdout
    assert done.stdout.endswith("}\n")


def test_the_console_script_still_runs_exit_handlers(state, tmp_path):
    """Libraries and the fault seam register atexit handlers (logs, temp files): run() runs them first."""
    marker = tmp_path / "handler-ran"
    probe = ("import atexit, pathlib, sys\n"
             f"atexit.register(lambda: pathlib.Path({str(marker)!r}).write_text('ran'))\n"
             f"sys.argv = ['openprogram', 'memory', 'status', '--json', '--state', {state!r}]\n"
             "from openprogram_memory.cli.entry import run\nrun()\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and marker.read_text() == "ran"


def test_ctrl_c_during_a_fast_sleep_lets_its_one_transaction_finish(state, monkeypatch, capsys):
    import os
    import signal

    from openprogram_memory import organizer

    real = organizer.reorganize

    def organize_then_press_ctrl_c(ws, model=None, **options):
        os.kill(os.getpid(), signal.SIGINT)
        return real(ws, model=model, **options)

    monkeypatch.setattr(organizer, "reorganize", organize_then_press_ctrl_c)
    assert fast.main(["sleep", "--json", "--state", state]) == 130
    printed = capsys.readouterr()
    assert json.loads(printed.out)["ok"] is True
    assert "stopping after this organize run" in printed.err and "installed and committed" in printed.err


@pytest.mark.parametrize("path", ["fast", "typer"])
def test_ctrl_c_during_an_apply_lets_the_change_finish_and_says_so(path, state, tmp_path, monkeypatch, capsys):
    """A Ctrl-C while the transaction runs: the change goes in whole, its answer is printed, the person is told it
    is installed, and the exit code is 130 (before, the process died silently with the change possibly in)."""
    import os
    import signal

    from openprogram_memory.config import load_settings
    from openprogram_memory.memory import MemoryWorkspace

    real = MemoryWorkspace.update

    def update_then_press_ctrl_c(self, **request):
        os.kill(os.getpid(), signal.SIGINT)
        return real(self, **request)

    monkeypatch.setattr(MemoryWorkspace, "update", update_then_press_ctrl_c)
    request = tmp_path / "request.json"
    request.write_text(json.dumps({
        "sources": [{"label": "new-source-1", "role": "user", "content": "Kai owns the kiln schedule now."}],
        "memory_changes": [{"op": "create_record", "content": "Kai owns the kiln schedule.",
                            "sources": [{"source": "new-source-1", "label": "said"}],
                            "destination": {"topic_path": "topics/kiln.md"}}]}))
    argv = ["memory", "apply", str(request), "--json", "--state", state]
    if path == "fast":
        code = fast.main(argv[1:])
    else:
        monkeypatch.setattr(sys, "argv", ["openprogram", *argv])
        with pytest.raises(SystemExit) as exit_:
            app_module.main()
        code = exit_.value.code
    printed = capsys.readouterr()
    answer = json.loads(printed.out)
    assert code == 130 and answer["ok"] is True and len(answer["block_ids"]) == 1
    assert "stopping after this change" in printed.err and "installed and committed" in printed.err
    assert "Kai owns the kiln schedule." in MemoryWorkspace.open(load_settings(state)).read_topic("topics/kiln.md")
