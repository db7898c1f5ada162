"""Stopping a command from outside: `| head` closing stdout is no error (exit 0), Ctrl-C at any moment says so in
one line (exit 130); neither prints a traceback. Run as the console script in a child process."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from engine.helpers import make_workspace, record

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def state(tmp_path):
    ws = make_workspace(tmp_path / "state")
    ws.update(changes=[{"path": "topics/bikes.md", "content": record("Dana runs a bike shop in Oslo.")}])
    return str(tmp_path / "state")


def console_script(argv, state, *, before: str = "", stdout=subprocess.PIPE):
    """``openprogram ARGV --state STATE`` (no ``--state`` for None) through the console script; ``before`` runs
    first in the child."""
    state_args = [] if state is None else ["--state", state]
    probe = (f"import os, signal, sys\n{before}\n"
             f"sys.argv = ['openprogram', *{argv!r}, *{state_args!r}]\n"
             "from openprogram_memory.cli.entry import run\nrun()\n")
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-c", probe], stdout=stdout, stderr=subprocess.PIPE, text=True,
                          timeout=60, env=env)


READERS = [["memory", "core", "show"], ["memory", "log"], ["memory", "search", "bike"], ["memory", "status"],
           ["memory", "status", "--json"]]


def with_reader_gone(argv, state):
    """``openprogram ARGV`` writing to a pipe whose reader has gone: ``| head -1`` that has read its line."""
    assert console_script(argv, state).stdout  # the command prints something, so it meets the closed pipe
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return console_script(argv, state, stdout=write_end)
    finally:
        os.close(write_end)


@pytest.mark.parametrize("argv", READERS, ids=" ".join)
def test_a_reader_that_went_away_ends_the_command_quietly_with_exit_0(argv, state):
    done = with_reader_gone(argv, state)
    assert (done.returncode, done.stderr) == (0, "")


@pytest.mark.parametrize("argv", [["--help"], ["memory", "--help"], ["memory", "search", "--help"]], ids=" ".join)
def test_help_whose_reader_went_away_ends_quietly_with_exit_0(argv):
    """Help is printed by Typer's own console (of the program, a group, a command), not the verbs' one."""
    done = with_reader_gone(argv, None)
    assert (done.returncode, done.stderr) == (0, "")


def test_a_broken_pipe_that_is_not_stdout_is_still_a_bug(state):
    """Only a widowed stdout is the person's doing: a model or remote connection breaking is reported (exit 1)."""
    before = ("from openprogram_memory.memory import MemoryWorkspace\n"
              "def status(self): raise BrokenPipeError(32, 'Broken pipe')\n"
              "MemoryWorkspace.status = status\n")
    done = console_script(["memory", "status"], state, before=before)
    assert done.returncode == 1 and "unexpected error: BrokenPipeError" in done.stderr


PRESS_CTRL_C = "os.kill(os.getpid(), signal.SIGINT)"


@pytest.mark.parametrize("argv,before", [
    # before any command runs: while the CLI is still importing (the first ~0.3 s)
    (["memory", "write", "--all-idle"], "import builtins\nreal = builtins.__import__\n"
     "def imp(name, *a, **k):\n    if name == 'typer': " + PRESS_CTRL_C + "\n    return real(name, *a, **k)\n"
     "builtins.__import__ = imp\n"),
    # inside a command that has no Ctrl-C handling of its own, through Typer and through the JSON route
    (["memory", "status"], "from openprogram_memory.memory import MemoryWorkspace\n"
     "def status(self): " + PRESS_CTRL_C + "\nMemoryWorkspace.status = status\n"),
    (["memory", "status", "--json"], "from openprogram_memory.memory import MemoryWorkspace\n"
     "def status(self): " + PRESS_CTRL_C + "\nMemoryWorkspace.status = status\n"),
], ids=["while starting", "in a command", "in a --json command"])
def test_ctrl_c_at_any_moment_says_it_stopped_in_one_line(argv, before, state):
    done = console_script(argv, state, before=before)
    assert (done.returncode, done.stderr, done.stdout) == (130, "stopped by Ctrl-C\n", "")
