"""``openprogram session new|append|fork|rewind|show|list`` — the bundled session store.

Every verb takes ``--state DIR`` and ``--json``; JSON shapes are the stable
contract of SPEC §12.1. The session store works whether or not memory is
enabled: it is where conversations live, memory only reads it.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Optional

import typer
from rich.table import Table

from ..config import load_settings
from ..failures import FailureCode, MemoryFailure
if TYPE_CHECKING:
    from ..sessions.store import Node, SessionStore
from .common import JsonOption, StateOption
from .output import console, emit, reporting

app = typer.Typer(help="The bundled session store: create, append, fork, rewind, show.", no_args_is_help=True)

PREVIEW_CHARS = 100


def _store(state: Optional[str]) -> "SessionStore":
    from ..sessions.store import SessionStore  # imported when a verb runs: keeps CLI start-up fast

    return SessionStore(load_settings(state).sessions_dir)


def _text(text: str) -> str:
    """``--text -`` reads the message from standard input."""
    return sys.stdin.read() if text == "-" else text


def _node_json(node: Node) -> dict[str, Any]:
    return {
        "id": node.id,
        "predecessor": node.predecessor,
        "role": node.role,
        "content": node.content,
        "metadata": node.metadata,
        "updated_at": node.updated_at,
    }


def _preview(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= PREVIEW_CHARS else line[: PREVIEW_CHARS - 1] + "…"


def _append(state: Optional[str], as_json: bool, session: str, role: str, text: str, parent: Optional[str],
            node_id: Optional[str], time: Optional[str]) -> None:
    with reporting(as_json):
        store = _store(state)
        node = store.append(session, role, _text(text), parent=parent, node_id=node_id, created_at=time)
        head = store.head(session)
        emit({"node": node.id, "head": head}, as_json,
             lambda: console.print(f"[bold]{node.role}[/] {node.id} appended to {session}"
                                   + (f" (forked from {parent})" if parent else "") + f"; head is {head}"))


@app.command("new")
def new_session(
    session_id: Optional[str] = typer.Option(None, "--id", help="Session id (default: a new uuid4 hex)."),
    state: Optional[str] = StateOption,
    as_json: bool = JsonOption,
) -> None:
    """Create an empty session and print its id."""
    with reporting(as_json):
        created = _store(state).create_session(session_id)
        emit({"session": created}, as_json, lambda: console.print(f"Created session [bold]{created}[/]"))


@app.command("append")
def append(
    session: str = typer.Argument(..., help="Session id."),
    role: str = typer.Option(..., "--role", help="user, assistant, tool, system, …"),
    text: str = typer.Option(..., "--text", help="Message text ('-' reads standard input)."),
    parent: Optional[str] = typer.Option(None, "--parent", help="Append under this node instead of head (forks)."),
    node_id: Optional[str] = typer.Option(None, "--id", help="Node id (default: a new uuid4 hex)."),
    time: Optional[str] = typer.Option(None, "--time", help="ISO-8601 time of the message (default: now)."),
    state: Optional[str] = StateOption,
    as_json: bool = JsonOption,
) -> None:
    """Append a message after head (or after --parent, forking); head moves to it."""
    _append(state, as_json, session, role, text, parent, node_id, time)


@app.command("fork")
def fork(
    session: str = typer.Argument(..., help="Session id."),
    from_node: str = typer.Option(..., "--from", help="Node to branch from."),
    role: str = typer.Option(..., "--role", help="user, assistant, tool, system, …"),
    text: str = typer.Option(..., "--text", help="Message text ('-' reads standard input)."),
    node_id: Optional[str] = typer.Option(None, "--id", help="Node id (default: a new uuid4 hex)."),
    time: Optional[str] = typer.Option(None, "--time", help="ISO-8601 time of the message (default: now)."),
    state: Optional[str] = StateOption,
    as_json: bool = JsonOption,
) -> None:
    """Start a new branch under --from with one message; head moves to it."""
    _append(state, as_json, session, role, text, from_node, node_id, time)


@app.command("rewind")
def rewind(
    session: str = typer.Argument(..., help="Session id."),
    to_node: str = typer.Option(..., "--to", help="Node on the current branch to go back to."),
    state: Optional[str] = StateOption,
    as_json: bool = JsonOption,
) -> None:
    """Move head back to --to; the later turns of the branch are marked rewound and never enter memory."""
    with reporting(as_json):
        abandoned = _store(state).rewind(session, to_node)
        emit({"session": session, "head": to_node, "rewound": abandoned}, as_json,
             lambda: console.print(f"Head of {session} is now {to_node}; {len(abandoned)} turn(s) rewound"))


@app.command("show")
def show(
    session: str = typer.Argument(..., help="Session id."),
    tip: Optional[str] = typer.Option(None, "--tip", help="Show the branch ending here (default: head)."),
    show_all: bool = typer.Option(False, "--all", help="Every node of the session, in insertion order."),
    state: Optional[str] = StateOption,
    as_json: bool = JsonOption,
) -> None:
    """Print a branch of a session (head's by default), oldest first."""
    with reporting(as_json):
        if show_all and tip:
            raise MemoryFailure(FailureCode.INVALID_ARGUMENT, "--all and --tip exclude each other")
        store = _store(state)
        head = store.head(session)
        if show_all:
            nodes = [store.get_node(session, node_id) for node_id in store.parent_map(session)]
        else:
            nodes = store.get_branch(session, tip)
        data = {"session": session, "head": head, "nodes": [_node_json(node) for node in nodes]}
        emit(data, as_json, lambda: _print_nodes(session, head, nodes))


def _print_nodes(session: str, head: Optional[str], nodes: list[Node]) -> None:
    table = Table(title=f"session {session}", title_justify="left")
    for column in ("id", "role", "time", "content"):
        table.add_column(column, overflow="fold" if column == "content" else "ellipsis")
    for node in nodes:
        from ..sessions.markers import is_memory_input

        style = None if is_memory_input(node) else "dim"
        marker = " [bold](head)[/]" if node.id == head else ""
        table.add_row(node.id + marker, node.role, node.created_at, _preview(node.content), style=style)
    console.print(table)
    console.print("[dim]dim rows are not memory input (tool, runtime-scheduled, empty or rewound turns)[/]")


@app.command("list")
def list_sessions(
    state: Optional[str] = StateOption,
    as_json: bool = JsonOption,
) -> None:
    """List sessions, most recently updated first."""
    with reporting(as_json):
        infos = _store(state).list_sessions()
        data = {"sessions": [{"session": i.session, "head": i.head, "updated_at": i.updated_at,
                              "nodes": i.node_count} for i in infos]}

        def human() -> None:
            if not infos:
                console.print("No sessions yet (create one with `openprogram session new`).")
                return
            table = Table()
            for column in ("session", "nodes", "updated", "title"):
                table.add_column(column)
            for info in infos:
                table.add_row(info.session, str(info.node_count), info.updated_at, str(info.metadata.get("title", "")))
            console.print(table)

        emit(data, as_json, human)
