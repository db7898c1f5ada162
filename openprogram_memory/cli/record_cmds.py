"""``memory get`` and ``memory apply``: read one record, change records through the one request.

JSON shapes are the stable contract of architecture §12.1; failures leave as the
one error object with the sysexits code (``memory get`` of a deleted ID →
MEMORY_NOT_FOUND, exit 65; a refused request → its code).
"""

from __future__ import annotations

from typing import Optional

import typer
from rich.markup import escape

from .common import JsonOption, StateOption, memory_settings, open_workspace
from .fast import APPLY_STOPPED, apply_json
from .output import console, emit, err_console, notice, reporting, warn


def get(
    memory_id: str = typer.Argument(..., metavar="ID", help="Block ID of the record (an alias works too)."),
    state: Optional[str] = StateOption,
    json: bool = JsonOption,
) -> None:
    """Print one record: topic, headings, content, time and sources."""
    with reporting(json):
        ws = open_workspace(memory_settings(state))
        record = ws.get(memory_id)

        def human() -> None:
            console.print(f"[bold]^{escape(record['memory_id'])}[/] {escape(record['topic'])}"
                          + (f" › {escape(' › '.join(record['headings']))}" if record["headings"] else ""))
            console.print(escape(record["content"]))
            console.print(f"time: {escape(str(record['time']))}")
            for source in record["sources"]:
                console.print(escape(f"  [{source['label']}] {source['source']}"))

        emit(record, json, human)


def apply(
    file: Optional[str] = typer.Argument(None, metavar="[FILE|-]", help="JSON request; '-' or nothing reads stdin."),
    base_revision: Optional[str] = typer.Option(None, "--base-revision", help="Refuse if memory moved past R."),
    state: Optional[str] = StateOption,
    json: bool = JsonOption,
) -> None:
    """Apply {"memory_changes"|"changes"|"patch": …} (plus sources, base_revision, commit_message)."""
    with reporting(json):
        data, stopped = apply_json(memory_settings(state), file, base_revision, notice)

        def human() -> None:
            if not data["changed_files"]:
                console.print("No change.")
            for path in data["changed_files"]:
                console.print(f"  {escape(path)}")
            if data["block_ids"]:
                console.print("new records: " + " ".join("^" + i for i in data["block_ids"]))
            console.print(f"revision {data['revision']}"
                          + ("" if data["git_committed"] or not data["memory_committed"] else " (git commit failed)"))
            for warning in data.get("warnings", []):
                warn(warning)

        emit(data, json, human)
    if stopped:
        err_console.print(APPLY_STOPPED)
        raise typer.Exit(130)


def register(memory_app: typer.Typer) -> None:
    """Add ``get`` and ``apply`` to the ``memory`` group."""
    memory_app.command("get")(get)
    memory_app.command("apply")(apply)
