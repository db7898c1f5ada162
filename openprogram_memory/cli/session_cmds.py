"""``openprogram session new|append|fork|rewind|show|list`` — the bundled session store.

Every verb takes ``--state DIR`` and ``--json``; JSON shapes are the stable
contract of architecture §12.1. The session store works whether or not memory is
enabled: it is where conversations live, memory only reads it.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Optional

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..config import load_settings
from ..failures import FailureCode, MemoryFailure
if TYPE_CHECKING:
    from ..sessions.store import Node, SessionStore
from .common import Group, JsonOption, StateOption
from .output import console, emit, reporting

app = typer.Typer(help="The bundled session store: create, append, fork, rewind, show.", no_args_is_help=True, cls=Group)

PREVIEW_CHARS = 100


def _store(state: Optional[str]) -> "SessionStore":
    """The session store of a state directory that is one (see :func:`..memory.require_state`)."""
    from ..memory import require_state
    from ..sessions.store import SessionStore  # imported when a verb runs: keeps CLI start-up fast

    settings = load_settings(state)
    require_state(settings)
    return SessionStore(settings.sessions_dir)


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
             lambda: console.print(escape(f"{node.role} {node.id} appended to {session}"
                                          + (f" (forked from {parent})" if parent else "") + f"; head is {head}")))


@app.command("new")
def new_session(
    session_id: Optional[str] = typer.Option(None, "--id", help="Session id (default: a new uuid4 hex)."),
    parent_session: Optional[str] = typer.Option(
        None, "--parent-session", help="Sub-agent session: the session that spawned it (with --parent-node)."),
    parent_node: Optional[str] = typer.Option(
        None, "--parent-node", help="Sub-agent session: the turn of --parent-session that spawned it."),
    state: Optional[str] = StateOption,
    as_json: bool = JsonOption,
) -> None:
    """Create an empty session and print its id (linked to the turn that spawned it, if given)."""
    with reporting(as_json):
        if (parent_session is None) != (parent_node is None):
            raise MemoryFailure(FailureCode.INVALID_ARGUMENT, "--parent-session and --parent-node go together")
        store = _store(state)
        if parent_session is not None and parent_node is not None:
            created = store.create_spawned_session(parent_session, parent_node, session_id)
        else:
            created = store.create_session(session_id)
        data: dict[str, Any] = {"session": created}
        if parent_session is not None:
            data["parent"] = {"session": parent_session, "node": parent_node}
        emit(data, as_json, lambda: console.print(
            f"Created session [bold]{escape(created)}[/]"
            + escape(f" spawned from {parent_session}/{parent_node}" if parent_session else "")))


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
    to_node: str = typer.Option(..., "--to", help="Node on the current branch, or on a rewound one, to go to."),
    state: Optional[str] = StateOption,
    as_json: bool = JsonOption,
) -> None:
    """Move head to --to: back along the branch, or back onto a rewound branch (which is restored).

    The abandoned turns are marked rewound and never enter memory; turns
    already written are marked superseded, and the next written pass
    reconsiders the records that rest only on them. Memory itself does not
    change here.
    """
    with reporting(as_json):
        moved = _store(state).switch(session, to_node)
        emit({"session": session, "head": to_node, "rewound": moved.abandoned, "restored": moved.restored},
             as_json, lambda: console.print(escape(f"Head of {session} is now {to_node}; {len(moved.abandoned)} "
                                                   f"turn(s) rewound, {len(moved.restored)} restored")))


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
        parent = store.parent_link(session)
        spawned = store.spawned(session)
        data: dict[str, Any] = {"session": session, "head": head, "nodes": [_node_json(node) for node in nodes]}
        if parent:  # only spawn-linked sessions carry the keys: the §12.1 shape of others stays
            data["parent"] = parent
        if spawned:
            data["spawned"] = spawned
        emit(data, as_json, lambda: _print_nodes(session, head, nodes, parent, spawned))


def _status(node: Node) -> str:
    from ..sessions.nodes import SUPERSEDED_BY_PARENT_KEY, SUPERSEDED_KEY

    if node.metadata.get(SUPERSEDED_BY_PARENT_KEY):
        return "superseded (parent " + str(node.metadata[SUPERSEDED_BY_PARENT_KEY]) + ")"
    if node.rewound:
        return "superseded" if node.metadata.get(SUPERSEDED_KEY) else "rewound"
    return ""


def _print_nodes(session: str, head: Optional[str], nodes: list[Node], parent: Optional[dict[str, str]] = None,
                 spawned: Optional[dict[str, str]] = None) -> None:
    from ..sessions.markers import is_memory_input

    children: dict[str, list[str]] = {}
    for child, node_id in (spawned or {}).items():
        children.setdefault(node_id, []).append(child)
    statuses = {node.id: " ".join(filter(None, [_status(node), "spawned " + ", ".join(sorted(children[node.id]))
                                               if node.id in children else ""])) for node in nodes}
    columns = ("id", "role", "time", "status", "content") if any(statuses.values()) else ("id", "role", "time", "content")
    table = Table(title=Text(f"session {session}"), title_justify="left")
    for column in columns:
        table.add_column(column, overflow="fold" if column == "content" else "ellipsis")
    for node in nodes:
        style = None if is_memory_input(node) else "dim"
        ident = Text(node.id)  # message text and ids are shown as written, never read as Rich markup
        if node.id == head:
            ident.append(" (head)", style="bold")
        status = [Text(statuses[node.id])] if "status" in columns else []
        table.add_row(ident, Text(node.role), Text(node.created_at), *status, Text(_preview(node.content)),
                      style=style)
    if parent:
        console.print(f"spawned from session [bold]{escape(parent['session'])}[/], turn {escape(parent['node'])}")
    console.print(table)
    console.print("[dim]dim rows are not memory input (tool, runtime-scheduled, empty, rewound or superseded "
                  "turns); superseded turns were written before a rewind abandoned them[/]")


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
                table.add_row(Text(info.session), str(info.node_count), info.updated_at,
                              Text(str(info.metadata.get("title", ""))))
            console.print(table)

        emit(data, as_json, human)
