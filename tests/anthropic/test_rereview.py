"""``memory write --rereview``: turns the rules writer settled are read again by a model writer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from anthropic_helpers import API_KEY, MODEL
from anthropic_replay import ReplayTransport
from typer.testing import CliRunner

from openprogram_memory.cli.app import app
from openprogram_memory.config import load_settings, write_config_value
from openprogram_memory.sessions.markers import MARKER_KEY
from openprogram_memory.sessions.store import SessionStore
from openprogram_memory.memory import MemoryWorkspace
from openprogram_memory.writer import backends
from openprogram_memory.writer.anthropic_backend import AnthropicWriter
from openprogram_memory.writer.reviewed import ReviewLedger

runner = CliRunner()
WRITER = f"anthropic:{MODEL}"


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def settled(state: Path) -> MemoryWorkspace:
    """A session the rules writer reviewed and settled as nothing durable (it reads no German)."""
    ws = MemoryWorkspace.open(load_settings(state), create=True)
    store = SessionStore(load_settings(state).sessions_dir)
    store.create_session("sde")
    store.append("sde", "user", "Unser Abrechnungsdienst läuft auf FastAPI.", node_id="u1",
                 created_at="2026-08-11T09:00:00+00:00")
    store.append("sde", "assistant", "Verstanden.", node_id="a1", created_at="2026-08-11T09:00:05+00:00")
    out = _cli(state, "write", "--session", "sde", "--force")
    assert (out["written"], out["reviewed"], out["changed_files"]) == ([], ["u1", "a1"], [])
    assert {info["backend"] for info in ReviewLedger(ws.layout).entries("sde").values()} == {"rules"}
    _cli(state, "sleep", "--model", "rules")  # organized today: the next write is not due an organize
    write_config_value(state, "memory.writer.model", WRITER)  # the switch
    return ws


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch):
    """``anthropic:`` resolves to the real backend over a replay transport."""
    made: list[ReplayTransport] = []

    def use(recording: str | None) -> ReplayTransport:
        transport = ReplayTransport.from_fixture(recording) if recording else ReplayTransport({"exchanges": []}, "none")
        made.append(transport)
        monkeypatch.setitem(backends._BACKENDS, "anthropic:", lambda name: AnthropicWriter(
            name.split(":", 1)[1], api_key=API_KEY, http_client=transport.client()))
        return transport

    yield use
    for transport in made:
        transport.assert_exhausted()


def _cli(state: Path, *args: str, code: int = 0) -> dict:
    result = runner.invoke(app, ["memory", *args, "--state", str(state), "--json"])
    assert result.exit_code == code, result.stdout
    return json.loads(result.stdout)


def _marks(state: Path) -> dict[str, str | None]:
    store = SessionStore(load_settings(state).sessions_dir)
    return {n: store.get_node("sde", n).metadata.get(MARKER_KEY) for n in ("u1", "a1")}


def test_settled_turns_stay_settled_for_a_new_writer_unless_asked(settled, state, model) -> None:
    model(None)  # any request fails the test
    out = _cli(state, "write", "--session", "sde", "--force")
    assert (out["passes"], out["written"], out["pending"]) == (0, [], 0)


def test_rereview_writes_what_the_new_writer_finds_and_marks_the_turns(settled, state, model) -> None:
    transport = model("rereview_write")
    out = _cli(state, "write", "--rereview")
    assert (out["writer"], out["reopened"]) == (WRITER, 2)
    (session,) = out["sessions"]
    assert (session["session"], session["written"], session["reviewed"]) == ("sde", ["u1", "a1"], [])
    assert out["changed_files"] == ["topics/projects/billing.md"]
    assert "Unser Abrechnungsdienst" in transport.requests[0]["messages"][0]["content"]

    record = next(r for r in settled.records() if r.topic == "topics/projects/billing.md")
    assert record.content == "The billing service runs on FastAPI."
    assert record.sources == [{"source": "openprogram/sde/u1", "label": "billing stack"}]
    assert _marks(state) == {"u1": settled.workspace_id, "a1": settled.workspace_id}
    assert ReviewLedger(settled.layout).entries("sde") == {}
    # done: a second rereview finds nothing to read
    again = _cli(state, "write", "--rereview")
    assert (again["reopened"], again["sessions"]) == (0, [])


def test_a_second_nothing_durable_settles_them_for_the_new_writer(settled, state, model) -> None:
    model("nothing_durable")
    out = _cli(state, "write", "--rereview", "--session", "sde")
    assert out["reopened"] == 2 and out["sessions"][0]["reviewed"] == ["u1", "a1"] and out["changed_files"] == []
    assert _marks(state) == {"u1": None, "a1": None}  # a mark needs an installed change
    assert {info["backend"] for info in ReviewLedger(settled.layout).entries("sde").values()} == {WRITER}
    assert _cli(state, "write", "--rereview")["reopened"] == 0


def test_since_and_the_same_writer_reopen_nothing(settled, state, model) -> None:
    model(None)
    assert _cli(state, "write", "--rereview", "--since", "2026-08-12")["reopened"] == 0
    write_config_value(state, "memory.writer.model", "rules")
    assert _cli(state, "write", "--rereview")["reopened"] == 0
    assert _marks(state) == {"u1": None, "a1": None}


def test_rereview_arguments_are_checked(settled, state) -> None:
    assert _cli(state, "write", "--since", "2026-08-01", code=64)["code"] == "INVALID_ARGUMENT"
    assert _cli(state, "write", "--rereview", "--since", "August", code=64)["code"] == "INVALID_ARGUMENT"
    assert _cli(state, "write", "--rereview", "--session", "nope", code=65)["code"] == "SESSION_NODES_UNAVAILABLE"
