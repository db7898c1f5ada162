"""Superseded branches and spawn links in the session store (issue 14; architecture §15)."""

from __future__ import annotations

import json
import re

import pytest
import typer
from typer.testing import CliRunner

from openprogram_memory.cli.session_cmds import app as session_app
from openprogram_memory.failures import FailureCode, MemoryFailure
from openprogram_memory.sessions.markers import SUPERSEDED_KEY, is_memory_input, mark_written, pending_turns
from openprogram_memory.sessions.store import SessionStore

pytestmark = pytest.mark.usefixtures("workspace")  # the session verbs need a state directory that is one
WS = "w-0000aaaa"
root = typer.Typer()
root.add_typer(session_app, name="session")
runner = CliRunner()


def cli(*args: str, code: int = 0) -> dict:
    result = runner.invoke(root, ["session", *args, "--json"])
    assert result.exit_code == code, result.output
    return json.loads(result.stdout)


def _written_then_rewound(store: SessionStore) -> None:
    """m1..m4 written, rewound to m2, new branch b3."""
    store.create_session("s")
    for node_id, role in (("m1", "user"), ("m2", "assistant"), ("m3", "user"), ("m4", "assistant")):
        store.append("s", role, f"{node_id} text", node_id=node_id)
    mark_written(store, "s", ["m1", "m2", "m3", "m4"], WS)
    store.rewind("s", "m2")
    store.append("s", "user", "b3 text", node_id="b3")


def test_a_rewind_supersedes_written_turns_for_their_workspace_only(store: SessionStore) -> None:
    _written_then_rewound(store)
    m3, m4 = store.get_node("s", "m3"), store.get_node("s", "m4")
    assert m3.metadata[SUPERSEDED_KEY] == WS and m3.superseded_for(WS) and m4.superseded_for(WS)
    assert not m3.superseded_for("w-other")
    assert not store.get_node("s", "m2").superseded_for(WS)  # the fork point stays live
    assert [n.id for n in pending_turns(store, "s", WS)] == ["b3"]


def test_an_unwritten_abandoned_turn_is_rewound_not_superseded(store: SessionStore) -> None:
    store.create_session("s")
    store.append("s", "user", "one", node_id="m1")
    store.append("s", "user", "two", node_id="m2")
    store.rewind("s", "m1")
    node = store.get_node("s", "m2")
    assert node.rewound and SUPERSEDED_KEY not in node.metadata


def test_switching_back_restores_the_old_branch_and_supersedes_the_new_one(store: SessionStore) -> None:
    _written_then_rewound(store)
    mark_written(store, "s", ["b3"], WS)
    moved = store.switch("s", "m4")
    assert moved.abandoned == ["b3"] and moved.restored == ["m3", "m4"]
    assert store.head("s") == "m4"
    assert [n.id for n in store.get_branch("s")] == ["m1", "m2", "m3", "m4"]
    assert not store.get_node("s", "m3").rewound and SUPERSEDED_KEY not in store.get_node("s", "m3").metadata
    assert store.get_node("s", "b3").superseded_for(WS)
    assert store.branch_tips("s") == ["m4"]  # b3 archived, m4 live again
    assert pending_turns(store, "s", WS) == []  # nothing to write: memory is not touched by a switch


def test_a_turn_added_under_an_abandoned_turn_restores_its_branch(store: SessionStore) -> None:
    """The person went back to the old branch and went on: it is live again, written turns stay written."""
    store.create_session("s")
    for node_id, role in (("m1", "user"), ("m2", "assistant"), ("m3", "user"), ("m4", "assistant")):
        store.append("s", role, f"{node_id} text", node_id=node_id)
    mark_written(store, "s", ["m1", "m2", "m3"], WS)  # m4 came after the last pass
    store.rewind("s", "m2")
    store.append("s", "user", "b3 text", node_id="b3")
    store.append("s", "user", "m5 text", parent="m4", node_id="m5")
    assert store.head("s") == "m5"
    assert [n.id for n in store.get_branch("s")] == ["m1", "m2", "m3", "m4", "m5"]
    assert not store.get_node("s", "m3").rewound and SUPERSEDED_KEY not in store.get_node("s", "m3").metadata
    assert [n.id for n in pending_turns(store, "s", WS)] == ["m4", "m5"]  # m3 is not written twice
    assert store.get_node("s", "b3").rewound and store.branch_tips("s") == ["m5"]  # the branch left is abandoned


def test_switching_to_a_live_branch_that_was_never_rewound_is_refused(store: SessionStore) -> None:
    store.create_session("s")
    store.append("s", "user", "one", node_id="m1")
    store.append("s", "user", "two", node_id="m2")
    store.append("s", "user", "fork", parent="m1", node_id="f2")
    with pytest.raises(MemoryFailure) as caught:
        store.switch("s", "m2")
    assert caught.value.code is FailureCode.INVALID_ARGUMENT and store.head("s") == "f2"


def test_superseding_the_parent_turn_supersedes_the_spawned_session(store: SessionStore) -> None:
    store.create_session("p")
    store.append("p", "user", "look into the billing bug", node_id="p1")
    store.append("p", "assistant", "spawning a sub-agent", node_id="p2")
    child = store.create_spawned_session("p", "p2", "c")
    store.append("c", "user", "find the bug", node_id="c1")
    store.append("c", "assistant", "it is the rounding", node_id="c2")
    store.append("c", "user", "an aside", node_id="c3")
    store.rewind("c", "c2")  # the child's own rewind: not the parent's to undo
    mark_written(store, "c", ["c1", "c2"], WS)
    assert store.parent_link(child) == {"session": "p", "node": "p2"} and store.spawned("p") == {"c": "p2"}

    store.rewind("p", "p1")
    assert all(store.get_node("c", n).rewound for n in ("c1", "c2", "c3"))
    assert store.get_node("c", "c2").superseded_for(WS) and not store.get_node("c", "c3").superseded_for(WS)
    assert not [n for n in store.get_branch("c") if is_memory_input(n)]
    assert store.session_info("c").metadata["superseded_by_parent"] == "p/p2"

    store.switch("p", "p2")  # back onto the branch that spawned it: the child comes back
    assert [n.id for n in store.get_branch("c")] == ["c1", "c2"]
    assert store.get_node("c", "c3").rewound  # its own rewind stays
    assert "superseded_by_parent" not in store.session_info("c").metadata


def test_spawn_link_needs_an_existing_parent_turn(store: SessionStore) -> None:
    store.create_session("p")
    with pytest.raises(MemoryFailure) as caught:
        store.create_spawned_session("p", "nope", "c")
    assert caught.value.code is FailureCode.MEMORY_NOT_FOUND and not store.exists("c")


def test_cli_spawn_link_rewind_and_show() -> None:
    cli("new", "--id", "p")
    cli("append", "p", "--role", "user", "--text", "hello", "--id", "p1")
    cli("append", "p", "--role", "assistant", "--text", "delegating", "--id", "p2")
    assert cli("new", "--id", "c", "--parent-session", "p", "--parent-node", "p2") == {
        "session": "c", "parent": {"session": "p", "node": "p2"}}
    cli("append", "c", "--role", "user", "--text", "sub task", "--id", "c1")
    assert cli("show", "c")["parent"] == {"session": "p", "node": "p2"}
    assert cli("show", "p")["spawned"] == {"c": "p2"}
    assert cli("rewind", "p", "--to", "p1") == {"session": "p", "head": "p1", "rewound": ["p2"], "restored": []}
    assert cli("rewind", "p", "--to", "p2")["restored"] == ["p2"]
    human = runner.invoke(root, ["session", "show", "p", "--all"])
    assert "spawned c" in human.stdout
    bad = runner.invoke(root, ["session", "new", "--parent-session", "p", "--json"])
    assert bad.exit_code == 64 and "INVALID_ARGUMENT" in bad.stdout


def test_show_all_labels_superseded_turns(store: SessionStore) -> None:
    _written_then_rewound(store)
    human = runner.invoke(root, ["session", "show", "s", "--all"], env={"COLUMNS": "200"})
    lines = {line.split()[1]: line for line in human.stdout.splitlines() if line.strip().startswith("│ m")}
    assert "superseded" in lines["m3"] and "superseded" not in lines["m2"]


def test_cli_rewind_back_onto_a_written_then_superseded_branch_restores_it(store: SessionStore) -> None:
    _written_then_rewound(store)  # m3, m4 written then abandoned for b3
    mark_written(store, "s", ["b3"], WS)
    assert cli("rewind", "s", "--to", "m4") == {"session": "s", "head": "m4", "rewound": ["b3"],
                                                "restored": ["m3", "m4"]}
    nodes = {node["id"]: node["metadata"] for node in cli("show", "s", "--all")["nodes"]}
    assert SUPERSEDED_KEY not in nodes["m3"] and SUPERSEDED_KEY not in nodes["m4"]  # live again
    assert nodes["b3"][SUPERSEDED_KEY] == WS  # the branch left behind was written: superseded
    assert [node["id"] for node in cli("show", "s")["nodes"]] == ["m1", "m2", "m3", "m4"]
    assert pending_turns(store, "s", WS) == []  # a switch alone gives the writer nothing to do


def test_show_all_dims_superseded_rows_and_not_live_ones(store: SessionStore, monkeypatch) -> None:
    import io

    from rich.console import Console

    from openprogram_memory.cli import session_cmds

    _written_then_rewound(store)
    screen = io.StringIO()
    monkeypatch.setattr(session_cmds, "console", Console(file=screen, force_terminal=True, color_system="standard",
                                                         width=200, highlight=False))
    assert runner.invoke(root, ["session", "show", "s", "--all"]).exit_code == 0
    plain = re.compile(r"\x1b\[[0-9;]*m")
    rows = {plain.sub("", line).split("│")[1].split()[0]: line
            for line in screen.getvalue().splitlines() if line.count("│") > 2}
    dim = "\x1b[2m"
    assert dim in rows["m3"] and dim in rows["m4"]  # written, then abandoned: dimmed
    assert dim not in rows["m1"] and dim not in rows["b3"]  # live turns are not
