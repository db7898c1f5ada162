"""``memory hook claude-code`` and ``memory hook install claude-code``: memory inside Claude Code.

The hook itself lives in :mod:`openprogram_memory.agents.claude_code_hook`
(the console entry point runs it without loading Typer); the verb here is
the same code for ``--help``, the CLI reference and ``python -m`` callers.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Optional

import typer

from ..failures import FailureCode, MemoryFailure
from .common import Group, JsonOption, StateOption
from .output import console, emit, reporting

hook_app = typer.Typer(help="Agent hooks: memory inside Claude Code (core, recall, writes).", no_args_is_help=True, cls=Group)
AGENTS = ("claude-code",)


@hook_app.command("claude-code")
def claude_code_command(state: Optional[str] = StateOption) -> None:
    """Run one Claude Code hook event (JSON on stdin). Always exits 0; prints context or nothing.

    SessionStart → the core block; UserPromptSubmit → recall for the prompt;
    Stop/SubagentStop → import the transcript's new lines and the per-turn
    write; PreCompact/SessionEnd → the same with the forced write (both in
    a detached background process).
    """
    from ..agents.claude_code_hook import main

    raise typer.Exit(main(["--state", state] if state else []))


def _executable() -> str:
    """The absolute path of the running ``openprogram`` (the venv's, when run some other way)."""
    argv0 = Path(sys.argv[0])
    if argv0.name == "openprogram" and argv0.exists():
        return str(argv0.resolve())
    beside = Path(sys.executable).with_name("openprogram")
    if beside.exists():
        return str(beside)
    found = shutil.which("openprogram")
    if found:
        return str(Path(found).resolve())
    raise MemoryFailure(FailureCode.INVALID_ARGUMENT,
                        "cannot find the `openprogram` executable to put in the hook; install the package first")


def _state_for_hook(state: Optional[str]) -> Optional[str]:
    """The state directory to name in the hook: none when it is the default (Claude Code may lack our env)."""
    from ..config import resolve_state_dir

    chosen = resolve_state_dir(state)
    return None if chosen == (Path.home() / ".openprogram").resolve() else str(chosen)


def _project_dir(project: Optional[str]) -> Path:
    """The ``--project`` directory; one that does not exist is a typo, refused before anything is created."""
    chosen = Path(project or ".").resolve()
    if not chosen.is_dir():
        what = "is not a directory" if chosen.exists() else "does not exist"
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT,
                            f"--project {chosen} {what}; name the project's directory (install writes "
                            "DIR/.claude/settings.json and never creates DIR)", details={"path": str(chosen)})
    return chosen


@hook_app.command("install")
def install_command(
    agent: str = typer.Argument(..., metavar="AGENT", help="The agent: claude-code."),
    project: Optional[str] = typer.Option(
        None, "--project", help="Project directory: writes DIR/.claude/settings.json (default: the current one)."),
    user: bool = typer.Option(False, "--user", help="Write ~/.claude/settings.json (every project)."),
    uninstall: bool = typer.Option(False, "--uninstall", help="Remove exactly the entries install added."),
    state: Optional[str] = StateOption,
    json: bool = JsonOption,
) -> None:
    """Add the memory hooks to Claude Code's settings.json (idempotent; other settings untouched).

    A --state that holds no workspace is refused (MEMORY_NOT_FOUND, exit 65), nothing written.
    """
    from ..agents import install as installer

    with reporting(json):
        if agent not in AGENTS:
            raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"unknown agent {agent!r}; known: {', '.join(AGENTS)}")
        if project and user:
            raise MemoryFailure(FailureCode.INVALID_ARGUMENT, "use --project DIR or --user, not both")
        project_dir = None if user else _project_dir(project)
        path = installer.settings_path(project_dir, Path.home() if user else None)
        if uninstall:
            report = installer.uninstall(path)
        else:
            if state is not None:  # a mistyped --state would point every hook at a directory with no memory
                from ..config import load_settings
                from ..memory import require_state

                require_state(load_settings(state))
            report = installer.install(path, installer.hook_command(_executable(), _state_for_hook(state)))

        def human() -> None:
            verb = "removed from" if uninstall else "installed in"
            if report.changed:
                console.print(f"Memory hooks {verb} {report.path} ({', '.join(report.events)}).")
            else:
                console.print(f"Nothing to change in {report.path}.")

        emit(report.to_json(), json, human)


def register(memory_app: typer.Typer) -> None:
    """Add the ``hook`` group to ``memory``."""
    memory_app.add_typer(hook_app, name="hook")
