"""``memory demo``: the whole path on a bundled conversation, offline."""

from __future__ import annotations

import tempfile
from importlib import resources
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape
from rich.panel import Panel

from .common import JsonOption, StateOption, memory_settings
from .output import console, emit, reporting

DEMO_QUERIES = ("which web framework does the billing service use", "Postgres Frankfurt")


def demo_transcript() -> Path:
    return Path(str(resources.files("openprogram_memory").joinpath("demo", "conversation.jsonl")))


def run_demo(state: Path, model: str = "rules") -> dict:
    """Import the bundled conversation, write it, and gather what a person should see."""
    from ..search.query import search
    from ..sessions.importers import import_paths
    from ..sessions.store import SessionStore
    from ..memory import MemoryWorkspace
    from ..writer.pipeline import write_report

    settings = memory_settings(str(state), {"memory.writer.model": model})
    ws = MemoryWorkspace.open(settings, create=True)
    store = SessionStore(settings.sessions_dir)
    imported = import_paths(store, "claude-code", [demo_transcript()])
    writes = [write_report(ws, session, force=True).to_json() for session in imported.sessions]
    core = ws.core_view()
    searches = [{"query": q, "results": [hit.to_json() for hit in search(ws.root, q, 3)]} for q in DEMO_QUERIES]
    return {
        "ok": True,
        "state": str(settings.state_dir),
        "memory": str(ws.root),
        "import": imported.to_json(),
        "writes": writes,
        "core": {key: core[key] for key in ("effective", "tokens", "budget", "inject", "excluded_block_ids")},
        "topics": sorted(ws.tree().files),
        "searches": searches,
        "revision": ws.revision(),
    }


def _human(result: dict) -> None:
    imported = result["import"]
    console.rule("[bold]openprogram memory demo")
    console.print(f"Imported {imported['imported']} conversation node(s) into session(s) "
                  f"{', '.join(imported['sessions'])} (a rewind: two branches from one parent).")
    for write in result["writes"]:
        console.print(f"Wrote {len(write['written'])} turn(s) in {write['passes']} pass(es); "
                      f"changed {', '.join(write['changed_files']) or 'nothing'}.")
    core = result["core"]
    console.print(Panel(escape(core["effective"].strip() or "(empty)"),
                        title=f"core block — {core['tokens']:,} / {core['budget']:,} tokens",
                        title_align="left"))
    for item in result["searches"]:
        console.print(f"[bold]search[/] {escape(item['query'])!r}")
        for hit in item["results"]:
            console.print(f"  {hit['score']:.2f}  {escape(hit['content'])}  [dim]({hit['topic']} ^{hit['memory_id']})[/]")
        if not item["results"]:
            console.print("  (no match)")
    console.print(f"\nTopics: {', '.join(result['topics'])}")
    console.print(f"Files are in {result['memory']} (sessions in {result['state']}/sessions).")
    console.print(f"Try: openprogram memory status --state {result['state']}")


def demo(
    state: Optional[str] = StateOption,
    model: str = typer.Option("rules", "--model", help="Writer backend (rules needs no key or network)."),
    json: bool = JsonOption,
) -> None:
    """Import a bundled forked conversation, write memory, show core and searches."""
    with reporting(json):
        memory_settings(state)  # refuses before creating anything when memory is off
        target = Path(state) if state else Path(tempfile.mkdtemp(prefix="openprogram-demo-"))
        result = run_demo(target, model)
        emit(result, json, lambda: _human(result))


def register(memory_app: typer.Typer) -> None:
    memory_app.command("demo")(demo)
