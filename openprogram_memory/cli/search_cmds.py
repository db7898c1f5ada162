"""``memory search`` and ``memory recall``: read-only verbs over the BM25 index."""

from __future__ import annotations

from typing import Optional

import typer
from rich.markup import escape

from .common import JsonOption, StateOption, memory_settings
from .fast import recall_json, search_json
from .output import console, emit, err_console, reporting, warn

TopKOption = typer.Option(None, "--top-k", help="How many records (default: memory.retrieval.top_k).")


def _print_hits(hits: list) -> None:
    if not hits:
        err_console.print("no matching records")
        return
    for hit in hits:
        place = " › ".join([hit.topic, *hit.headings])
        pending = " [yellow]pending source[/]" if hit.trust_state != "trusted" else ""
        console.print(f"[bold]{hit.score:.3f}[/]  [cyan]{escape(place)}[/]  [dim]^{hit.memory_id}[/]{pending}")
        console.print(f"  {escape(hit.content)}")
        labels = ", ".join(f"{s['label']} ({s['source']})" for s in hit.sources)
        if labels:
            console.print(f"  [dim]sources: {escape(labels)}[/]")


def search_command(
    query: str = typer.Argument(..., help="Words to look for (any language)."),
    top_k: Optional[int] = TopKOption,
    include_pending: bool = typer.Option(
        False, "--all", help="Also show records citing pending (unverified) sources, marked as such."
    ),
    state: Optional[str] = StateOption,
    as_json: bool = JsonOption,
) -> None:
    """Search topic records (BM25). Records citing pending sources are hidden unless --all."""
    with reporting(as_json):
        data, hits = search_json(memory_settings(state), query, top_k, include_pending)

        def human() -> None:
            _print_hits(hits)
            for warning in data.get("warnings", []):
                warn(warning)

        emit(data, as_json, human)


def recall_command(
    query: str = typer.Argument(..., help="What the agent is about to answer."),
    top_k: Optional[int] = TopKOption,
    state: Optional[str] = StateOption,
    as_json: bool = JsonOption,
) -> None:
    """Print the <memory-context> block an agent would receive for QUERY (trusted records only)."""
    with reporting(as_json):
        data = recall_json(memory_settings(state), query, top_k)

        def human() -> None:
            if data["recall"]:
                typer.echo(data["recall"])
            else:
                err_console.print("nothing recalled (no trusted record matches)")
            for warning in data.get("warnings", []):
                warn(warning)

        emit(data, as_json, human)


def register(memory_app: typer.Typer) -> None:
    """Add ``search`` and ``recall`` to the ``memory`` command group."""
    memory_app.command("search")(search_command)
    memory_app.command("recall")(recall_command)
