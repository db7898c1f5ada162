"""``memory import`` as people and scripts see it: skip reasons, wrong formats, old transcripts written whole."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from openprogram_memory.cli.app import app
from openprogram_memory.config import load_settings
from openprogram_memory.sessions.store import SessionStore
from openprogram_memory.memory import MemoryWorkspace

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "sessions"
runner = CliRunner()
SESSION = "old-format-0001"
# What an older Claude Code wrote: parentUuid null on every line.
CONVERSATION = [
    ("user", "Hi, I'm Priya. I prefer tabs over spaces in every repository."),
    ("assistant", "Noted, Priya: tabs, not spaces."),
    ("user", "Our staging database runs on Postgres 16 in Dublin."),
    ("assistant", "Got it, Postgres 16 in Dublin for staging."),
    ("user", "We decided to use Flask for the admin panel."),
    ("assistant", "Flask for the admin panel, then."),
]


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def old_transcript(path: Path) -> list[str]:
    ids = []
    with path.open("w") as handle:
        for number, (role, text) in enumerate(CONVERSATION, start=1):
            uuid = f"old-{number:03d}"
            message = {"role": role, "content": [{"type": "text", "text": text}]}
            if role == "assistant":
                message.update(id=f"msg_{number:03d}", type="message", model="claude-3-sonnet-20240229")
            handle.write(json.dumps({"type": role, "timestamp": f"2025-06-14T11:0{number}:00Z", "parentUuid": None,
                                     "isSidechain": False, "userType": "external", "cwd": "/tmp",
                                     "sessionId": SESSION, "version": "1.0.0", "uuid": uuid,
                                     "message": message}) + "\n")
            ids.append(uuid)
    return ids


def test_a_transcript_with_null_parents_is_written_whole_in_one_pass_and_one_commit(tmp_path: Path) -> None:
    ids = old_transcript(tmp_path / "old.jsonl")
    imported = json.loads(invoke("memory", "import", "claude-code", str(tmp_path / "old.jsonl"), "--json").stdout)
    assert imported == {"sessions": [SESSION], "imported": 6, "skipped": {}}
    ws = MemoryWorkspace.open(load_settings(), create=True)
    result = invoke("memory", "write", "--session", SESSION, "--force", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["passes"] == 1 and data["written"] == ids and data["pending"] == 0
    messages = [commit["message"].splitlines()[0] for commit in ws.log(1000)]
    assert [m for m in messages if m.startswith("memory: write")] == [f"memory: write 6 turn(s) of session {SESSION}"]
    archive = next((ws.root / "sources").rglob(f"*{SESSION}*.md")).read_text()
    positions = [archive.index(f"/{SESSION}/{uuid} -->") for uuid in ids]
    assert positions == sorted(positions)  # the archive lists the conversation oldest first


def test_human_output_shows_what_was_skipped_and_why(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text((FIXTURES / "claude-code" / "rewind.jsonl").read_text() + "{torn\n")
    out = invoke("memory", "import", "claude-code", str(path)).stdout
    assert "18 node(s) imported" in out
    assert "5 line(s) skipped: malformed_json 1, not_a_turn 4" in out


def test_a_codex_rollout_given_as_claude_code_exits_65_and_writes_nothing(tmp_path: Path) -> None:
    rollout = FIXTURES / "codex" / "crud.jsonl"
    result = invoke("memory", "import", "claude-code", str(rollout), "--json")
    assert result.exit_code == 65
    error = json.loads(result.stdout)
    assert error["code"] == "INVALID_ARGUMENT" and "looks like a codex rollout" in error["message"]
    assert f"openprogram memory import codex {rollout}" in error["message"]
    assert SessionStore(load_settings().sessions_dir).list_sessions() == []
    human = invoke("memory", "import", "claude-code", str(rollout))
    assert human.exit_code == 65 and "looks like a codex rollout" in human.stderr
