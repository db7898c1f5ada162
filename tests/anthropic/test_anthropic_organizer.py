"""``memory sleep --model anthropic:…``: the writer's tool loop with the organizer prompt, replayed HTTP."""

from __future__ import annotations

import hashlib
import json
import os
from datetime import datetime, timezone
from pathlib import Path

import pytest
from anthropic_helpers import API_KEY, MODEL
from anthropic_replay import ReplayTransport
from typer.testing import CliRunner

from openprogram_memory.cli.app import app
from openprogram_memory.config import load_settings, write_config_value
from openprogram_memory.failures import FailureCode, MemoryFailure
from openprogram_memory.organizer import reorganize
from openprogram_memory.sources.archive import SourceMessage
from openprogram_memory.memory import MemoryWorkspace
from openprogram_memory.workspace.state import RuntimeState
from openprogram_memory.writer import backends
from openprogram_memory.writer.anthropic_backend import AnthropicWriter

NOW = datetime(2026, 8, 20, 3, 0, tzinfo=timezone.utc)
CORE = ("# Core\n\nAlways answer in metric units.[^e1]\n\nAnswer in metric units, always.[^e2]\n\n"
        "The Orbit project uses Postgres 16 for storage.[^e3]\n\n"
        "[^e1]: Time: `2026-08-12`; Sources: [metric units](openprogram/s3/u1)\n"
        "[^e2]: Time: `2026-08-13`; Sources: [metric again](openprogram/s3/u2)\n"
        "[^e3]: Time: `2026-08-14`; Sources: [orbit storage](openprogram/s3/u3)\n")
# the block IDs the runtime derives for CORE (the recording quotes them)
RULE, DUPLICATE, ORBIT = "2a09d638", "ef77a9f7", "46b5e11d"
runner = CliRunner()


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def core_ws(state: Path) -> MemoryWorkspace:
    ws = MemoryWorkspace.open(load_settings(state), create=True)
    ws.archive([
        SourceMessage("openprogram/s3/u1", "Dana", "user-1", "2026-08-12T09:00:00+00:00", "Always answer in metric units."),
        SourceMessage("openprogram/s3/u2", "Dana", "user-1", "2026-08-13T09:00:00+00:00", "Metric units, always, please."),
        SourceMessage("openprogram/s3/u3", "Dana", "user-1", "2026-08-14T09:00:00+00:00", "Orbit uses Postgres 16 for storage."),
    ])
    ws.update(changes=[{"path": "topics/core.md", "content": CORE}])
    assert [r.memory_id for r in ws.records()] == [RULE, DUPLICATE, ORBIT]
    return ws


@pytest.fixture
def model_backend(monkeypatch: pytest.MonkeyPatch):
    """``anthropic:<model>`` resolves to the real backend over a replay transport (the CLI path included)."""
    made: list[ReplayTransport] = []

    def use(recording: str | None, api_key: str | None = API_KEY) -> ReplayTransport:
        transport = ReplayTransport.from_fixture(recording) if recording else ReplayTransport({"exchanges": []}, "none")
        made.append(transport)
        monkeypatch.setitem(backends._BACKENDS, "anthropic:", lambda model: AnthropicWriter(
            model.split(":", 1)[1], api_key=api_key, http_client=transport.client()))
        return transport

    yield use
    for transport in made:
        transport.assert_exhausted()


def _digest(root: Path) -> dict[str, str]:
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            # run logs (the failure is recorded there on purpose) are not memory
            if not rel.endswith("write.lock") and not rel.endswith(("/agent-history.jsonl", "/events.jsonl",
                                                                    "/scheduled.json")):
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def test_model_organizer_merges_and_moves_through_the_transaction(core_ws, model_backend) -> None:
    transport = model_backend("organize_merge")
    sources_before = {rel: d for rel, d in _digest(core_ws.root).items() if rel.startswith("sources/")}
    report = reorganize(core_ws, model=f"anthropic:{MODEL}", now=NOW)

    # the organizer prompt and the topic tree went out; no batch
    first = transport.requests[0]
    assert first["system"][0]["text"].startswith("You are the memory organizer")
    assert "## Batch" not in first["messages"][0]["content"]

    assert report["model"] == f"anthropic:{MODEL}"
    assert report["changed_files"] == ["topics/core.md", "topics/projects/orbit.md"]
    assert (report["merged"], report["moved"], report["new_topics"]) == (1, 1, ["topics/projects/orbit.md"])
    assert report["rounds"] == 4 and report["memory_committed"] and report["git_committed"]
    # the duplicate is an alias of the kept rule; the project fact left the core with its evidence
    assert core_ws.get(DUPLICATE)["memory_id"] == RULE
    assert len(core_ws.get(RULE)["sources"]) == 2
    orbit = core_ws.get(ORBIT)
    assert orbit["topic"] == "topics/projects/orbit.md"
    assert orbit["sources"] == [{"source": "openprogram/s3/u3", "label": "orbit storage"}]
    assert "Orbit" not in (core_ws.root / "core.md").read_text()
    # sources untouched; runtime stamped like any organize
    assert {rel: d for rel, d in _digest(core_ws.root).items() if rel.startswith("sources/")} == sources_before
    assert RuntimeState.load(core_ws.layout).last_global_at == NOW.isoformat(timespec="seconds")
    history = [json.loads(line) for line in (core_ws.layout.state("agent-history.jsonl")).read_text().splitlines()]
    assert history[-1]["stage"] == "organize" and history[-1]["backend"] == f"anthropic:{MODEL}"


def test_cli_sleep_follows_the_configured_writer_model(core_ws, model_backend, state) -> None:
    model_backend("organize_merge")
    write_config_value(state, "memory.writer.model", f"anthropic:{MODEL}")
    result = runner.invoke(app, ["memory", "sleep", "--state", str(state), "--json"])
    assert result.exit_code == 0, result.stdout
    out = json.loads(result.stdout)
    assert out["model"] == f"anthropic:{MODEL}" and out["changed_files"] == ["topics/core.md", "topics/projects/orbit.md"]
    assert out["revision"] == core_ws.revision()


def test_a_run_without_commit_installs_nothing(core_ws, model_backend) -> None:
    model_backend("organize_no_commit")
    before = _digest(core_ws.root)
    with pytest.raises(MemoryFailure) as caught:
        reorganize(core_ws, model=f"anthropic:{MODEL}", now=NOW)
    assert (caught.value.code, caught.value.retryable) == (FailureCode.WRITER_NO_PROGRESS, False)
    assert _digest(core_ws.root) == before  # not even the runtime stamp


@pytest.mark.parametrize(
    ("recording", "code", "exit_code"),
    [
        (None, "MODEL_AUTHENTICATION", 65),  # no API key: fails before any request
        ("error_401", "MODEL_AUTHENTICATION", 65),
        ("error_529", "MODEL_PROVIDER_INTERNAL", 75),
        ("error_500", "MODEL_PROVIDER_INTERNAL", 75),
        ("error_connect", "MODEL_TRANSPORT", 75),
    ],
)
def test_a_broken_model_setup_fails_sleep_with_the_model_code(core_ws, model_backend, state, recording, code,
                                                              exit_code) -> None:
    transport = model_backend(recording, api_key=API_KEY if recording else None)
    before = _digest(core_ws.root)
    result = runner.invoke(app, ["memory", "sleep", "--model", f"anthropic:{MODEL}", "--state", str(state), "--json"])
    out = json.loads(result.stdout)
    assert (result.exit_code, out["code"]) == (exit_code, code), result.stdout
    assert out["ok"] is False
    # never a silent fallback to the rules organizer: nothing changed, not one byte
    assert _digest(core_ws.root) == before
    assert [r.memory_id for r in core_ws.records()] == [RULE, DUPLICATE, ORBIT]
    assert core_ws.status()["scheduled"]["sleep"]["code"] == code  # and `status` says the last sleep failed
    assert len(transport.requests) == (1 if recording else 0)


def test_rules_stays_the_default_and_unknown_models_are_refused(core_ws) -> None:
    report = reorganize(core_ws, now=NOW)
    assert report["model"] == "rules"
    with pytest.raises(MemoryFailure) as caught:
        reorganize(core_ws, model="gpt-9")
    assert caught.value.code is FailureCode.INVALID_ARGUMENT and "anthropic:<model>" in caught.value.message


def test_organize_repair_prompt_and_message() -> None:
    from openprogram_memory.writer.backend import WriterRequest
    from openprogram_memory.writer.prompts import system_prompt, user_message

    repair = system_prompt("organize-repair")
    assert repair.startswith(system_prompt("organize").rstrip("\n")) and "Repair run" in repair
    assert "reorganization" in repair and "batch" not in repair
    text = user_message(WriterRequest(stage="organize-repair", turns=[], topic_paths=["topics/core.md"],
                                      rejection="topics/core.md:3: lost ^2a09d638"))
    assert "<rejection>\ntopics/core.md:3: lost ^2a09d638\n</rejection>" in text and "## Batch" not in text
