"""``memory search`` and ``memory recall``: read-only verbs over the BM25 index."""

from __future__ import annotations

from typing import Optional

import typer
from rich.markup import escape

from ..config import Settings
from ..failures import FailureCode, MemoryFailure
from .common import JsonOption, StateOption, memory_settings
from .output import console, emit, err_console, reporting

MAX_TOP_K = 100
TopKOption = typer.Option(None, "--top-k", help="How many records (default: memory.retrieval.top_k).")


def _top_k(flag: Optional[int], settings: Settings) -> int:
    if flag is None:
        return int(settings["memory.retrieval.top_k"])
    if not 1 <= flag <= MAX_TOP_K:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"--top-k must be from 1 to {MAX_TOP_K}, got {flag}")
    return flag


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
    from ..search import search  # imported by the verb, not by every `openprogram` start

    with reporting(as_json):
        settings = memory_settings(state)
        hits = search(settings.memory_dir, query, _top_k(top_k, settings), include_pending=include_pending)
        data: dict = {"results": [hit.to_json() for hit in hits]}
        warnings = _unreadable(settings)
        if warnings:
            data["warnings"] = warnings

        def human() -> None:
            _print_hits(hits)
            for warning in warnings:
                err_console.print(f"[yellow]warning[/]: {escape(warning)}")

        emit(data, as_json, human)


def _unreadable(settings: Settings) -> list[str]:
    """Topic files the search had to leave out (not text); only a search that met one pays for the import."""
    import sys

    tree = sys.modules.get("openprogram_memory.workspace.tree")
    if tree is None:
        return []
    cache = tree.topic_cache(settings.memory_dir.resolve())
    return [f"{rel} {reason}: not searched until fixed" for rel, reason in sorted(cache.unreadable.items())]


def recall_command(
    query: str = typer.Argument(..., help="What the agent is about to answer."),
    top_k: Optional[int] = TopKOption,
    state: Optional[str] = StateOption,
    as_json: bool = JsonOption,
) -> None:
    """Print the <memory-context> block an agent would receive for QUERY (trusted records only)."""
    from ..search import recall_block, search

    with reporting(as_json):
        settings = memory_settings(state)
        hits = search(settings.memory_dir, query, _top_k(top_k, settings))
        text = recall_block(hits)

        def human() -> None:
            if text:
                typer.echo(text)
            else:
                err_console.print("nothing recalled (no trusted record matches)")

        emit({"recall": text, "count": len(hits)}, as_json, human)


def register(memory_app: typer.Typer) -> None:
    """Add ``search`` and ``recall`` to the ``memory`` command group."""
    memory_app.command("search")(search_command)
    memory_app.command("recall")(recall_command)
