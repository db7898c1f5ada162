"""``memory trust``: promote or demote archived sources, and list them (architecture §9)."""

from __future__ import annotations

from typing import List, Optional

import typer
from rich.markup import escape

from .common import Group, JsonOption, StateOption, memory_settings, open_workspace
from .output import console, emit, err_console, reporting

trust_app = typer.Typer(help="Trust of archived sources: only records citing trusted sources reach an agent.",
                        no_args_is_help=True, cls=Group)

SourceIdsArgument = typer.Argument(..., help="Source ids (provider/thread/message), as `search --all` shows them.")
ReasonOption = typer.Option("", "--reason", help="Why, kept in the archive beside the change.")


def _change(source_ids: List[str], trust_state: str, reason: str, state: Optional[str], json: bool) -> None:
    with reporting(json):
        ws = open_workspace(memory_settings(state))
        result = ws.trust(source_ids, trust_state, by="owner", reason=reason).to_json()

        def human() -> None:
            verb = "promoted to trusted" if trust_state == "trusted" else "demoted to pending"
            for source_id in result["changed"]:
                console.print(f"{verb}: {escape(source_id)}")
            for source_id in result["unchanged"]:
                err_console.print(f"already {trust_state}: {escape(source_id)}")
            if result["records"]:
                console.print("records citing them: " + ", ".join(f"^{i}" for i in result["records"]))
            if result["changed"]:
                console.print(f"revision {result['revision']}")

        emit(result, json, human)


@trust_app.command("promote")
def promote(source_ids: List[str] = SourceIdsArgument, reason: str = ReasonOption,
            state: Optional[str] = StateOption, json: bool = JsonOption) -> None:
    """Mark sources trusted: records citing them become searchable and may enter the core block."""
    _change(source_ids, "trusted", reason, state, json)


@trust_app.command("demote")
def demote(source_ids: List[str] = SourceIdsArgument, reason: str = ReasonOption,
           state: Optional[str] = StateOption, json: bool = JsonOption) -> None:
    """Mark sources pending: records citing them leave automatic context (search --all still shows them)."""
    _change(source_ids, "pending", reason, state, json)


@trust_app.command("list")
def list_(show_all: bool = typer.Option(False, "--all", help="Trusted sources too, not only pending ones."),
          state: Optional[str] = StateOption, json: bool = JsonOption) -> None:
    """Archived sources waiting for a person's trust (pending), or all of them with --all."""
    with reporting(json):
        ws = open_workspace(memory_settings(state))
        sources = ws.sources(None if show_all else "pending")

        def human() -> None:
            if not sources:
                err_console.print("no pending source" if not show_all else "no archived source")
            for source in sources:
                mark = "[yellow]pending[/]" if source["trust_state"] != "trusted" else "[green]trusted[/]"
                text = source["text"].replace("\n", " ")
                text = text if len(text) <= 100 else text[:99] + "…"
                console.print(f"{mark}  {escape(source['source'])}  [dim]{escape(source['timestamp'])}[/]")
                console.print(f"  {escape(source['speaker'])}: {escape(text)}")
                if source["cited_by"]:
                    console.print("  [dim]cited by " + ", ".join(f"^{i}" for i in source["cited_by"]) + "[/]")

        emit({"sources": sources}, json, human)


def register(memory_app: typer.Typer) -> None:
    memory_app.add_typer(trust_app, name="trust")
