"""``memory sync``: one memory on several machines over any git remote."""

from __future__ import annotations

from typing import Optional

import typer
from rich.markup import escape

from .common import JsonOption, StateOption, memory_settings, open_workspace
from .output import console, deferred_interrupt, emit, err_console, reporting, warn

SYNC_BOUNDARY = "this merge (one transaction)"
SYNC_STOPPED = "stopped by Ctrl-C after the merge, which is one transaction: it is installed and committed"


def sync(
    remote: Optional[str] = typer.Option(
        None, "--remote", help="Git URL or path of the shared repository (recorded as memory.sync.remote)."),
    state: Optional[str] = StateOption,
    json: bool = JsonOption,
) -> None:
    """Merge memory with a git remote by record identity, then push (conversations stay local).

    Ctrl-C while the remote is fetched stops at once, nothing changed; once a merge is being installed it
    finishes first (as for apply and sleep) and the answer says it is installed (exit 130); a merge not pushed
    yet is pushed by the next sync."""
    with reporting(json):
        from ..sync import sync as run_sync

        ws = open_workspace(memory_settings(state))
        result = run_sync(ws, remote, installing=lambda: deferred_interrupt(SYNC_BOUNDARY))

        def human() -> None:
            what = "merged" if result["merged"] else "nothing new from the remote"
            pushed = "pushed" if result["pushed"] else "not pushed" if result.get("push_skipped") else \
                "remote already current"
            console.print(f"Synced with {escape(result['remote'])}: {what}; {pushed}; revision {result['revision']}")
            for conflict in result["conflicts"]:
                other = conflict["other_memory_id"]
                console.print(f"[yellow]conflict[/] ^{conflict['memory_id']}: {conflict['reason']}; kept the "
                              f"{conflict['kept']} version" + (f", the other is ^{other}" if other else ""))
            for warning in result.get("warnings", []):
                warn(warning)

        emit(result, json, human)
    if result.get("interrupted"):
        err_console.print(SYNC_STOPPED + ("; not pushed: `openprogram memory sync` again pushes it"
                                          if result.get("push_skipped") else ""))
        raise typer.Exit(130)


def register(memory_app: typer.Typer) -> None:
    memory_app.command("sync")(sync)
