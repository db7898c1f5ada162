"""``memory sleep``: the organizer, on demand or from cron (architecture §7).

JSON shapes are the stable contract of architecture §12.1.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Optional

import typer
from rich.markup import escape

from .common import JsonOption, StateOption, memory_settings
from .fast import SLEEP_BOUNDARY, SLEEP_STOPPED, sleep_json
from .output import console, deferred_interrupt, emit, err_console, reporting


def sleep(
    model: Optional[str] = typer.Option(
        None, "--model",
        help="rules (offline) or anthropic:<model>; default: memory.writer.model when it is a model, else rules."),
    full: bool = typer.Option(False, "--full",
                              help="Compare every pair of records for duplicates, not only those with a record "
                                   "changed since the last organize."),
    state: Optional[str] = StateOption,
    json: bool = JsonOption,
) -> None:
    """Organize memory now: merge duplicates, tidy the core, split big topics."""
    with reporting(json), deferred_interrupt(SLEEP_BOUNDARY) as stop_asked:
        spinner = (lambda: err_console.status("organizing: merging duplicates, tidying the core, splitting big "
                                              "topics")) if not json and err_console.is_terminal else nullcontext
        report = sleep_json(memory_settings(state), model, full, spinner)

        def human() -> None:
            if not report["changed_files"]:
                console.print("Nothing to organize.")
            else:
                deleted = len(report.get("deleted_ids") or [])
                console.print(f"Organized ({report['model']}): {report['merged']} merged, {report['moved']} moved, "
                              f"{report['reordered']} reordered" + (f", {deleted} deleted." if deleted else "."))
                for path in report["changed_files"]:
                    console.print(f"  {escape(path)}")
            console.print(f"revision {report['revision']}")

        emit(report, json, human)
    if stop_asked():
        err_console.print(SLEEP_STOPPED)
        raise typer.Exit(130)


def register(memory_app: typer.Typer) -> None:
    """Add ``sleep`` to the ``memory`` group."""
    memory_app.command("sleep")(sleep)
