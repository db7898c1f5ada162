"""``write(session, messages=[…])`` appends to the bundled store; the README's Python API program runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from openprogram_memory.config import load_settings
from openprogram_memory.failures import FailureCode, MemoryFailure
from openprogram_memory.provider import get_provider
from openprogram_memory.sessions.store import SessionStore
from openprogram_memory.writer.pipeline import write

README = Path(__file__).resolve().parents[2] / "README.md"


def _readme_program() -> str:
    section = README.read_text(encoding="utf-8").split("## Python API", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)


def _nodes(state: Path, session: str) -> list[tuple[str, str, str]]:
    store = SessionStore(load_settings(state).sessions_dir)
    return [(n.id, n.role, n.content) for n in store.get_branch(session)]


def test_the_readme_program_runs_and_a_rerun_adds_nothing(tmp_path: Path) -> None:
    program = tmp_path / "program.py"
    program.write_text(_readme_program(), encoding="utf-8")
    state = tmp_path / "state"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENPROGRAM_", "ANTHROPIC_"))}
    env["OPENPROGRAM_STATE"] = str(state)
    run = subprocess.run([sys.executable, str(program)], env=env, cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    core, recall = run.stdout.split("</memory-context>")[:2]
    assert core.lstrip().startswith("<memory-context>") and "metric units" in core
    assert "<memory-context>" in recall and "metric units" in recall
    assert [node[:2] for node in _nodes(state, "chat-1")] == [("u1", "user"), ("a1", "assistant")]
    again = subprocess.run([sys.executable, str(program)], env=env, cwd=tmp_path, capture_output=True, text=True,
                           timeout=120)
    assert again.returncode == 0, again.stderr
    assert len(_nodes(state, "chat-1")) == 2  # the same ids: nothing appended twice


def test_messages_chain_on_head_and_content_blocks_are_text(_isolated_state: Path) -> None:
    settings = load_settings(_isolated_state)
    store = SessionStore(settings.sessions_dir)
    store.create_session("s")
    store.append("s", "user", "Earlier turn.", node_id="m0")
    write(settings, "s", messages=[
        {"role": "user", "content": [{"type": "text", "text": "I prefer tea."}, {"type": "image"}]},
        {"id": "a1", "role": "assistant", "content": "Tea it is.", "created_at": "2026-08-09T10:00:00Z"},
    ], force=True)
    nodes = store.get_branch("s")
    assert [(n.role, n.content) for n in nodes] == [("user", "Earlier turn."), ("user", "I prefer tea."),
                                                      ("assistant", "Tea it is.")]
    assert nodes[1].predecessor == "m0" and nodes[2].id == "a1" and store.head("s") == "a1"
    assert nodes[2].created_at.startswith("2026-08-09T10:00:00")


@pytest.mark.parametrize(("messages", "fragment"), [
    ([{"role": "user", "content": "fine"}, {"role": "tool", "content": "output"}], "messages[1]: role 'tool'"),
    ([{"role": "user", "content": 42}], "messages[0]: content must be text"),
    ("I prefer tea.", "messages must be a list"),
    ([{"id": "a/b", "role": "user", "content": "x"}], "message id"),
])
def test_bad_messages_append_nothing(_isolated_state: Path, messages, fragment) -> None:
    settings = load_settings(_isolated_state)
    with pytest.raises(MemoryFailure) as caught:
        write(settings, "s", messages=messages, force=True)
    assert caught.value.code is FailureCode.INVALID_ARGUMENT and fragment in caught.value.message
    store = SessionStore(settings.sessions_dir)
    assert not store.exists("s") or store.get_branch("s") == []


def test_a_known_id_with_other_text_is_refused_and_reported(_isolated_state: Path) -> None:
    settings = load_settings(_isolated_state)
    memory = get_provider(settings)
    assert memory.write("s", messages=[{"id": "u1", "role": "user", "content": "I prefer tea."}]) is None
    failure = memory.write("s", messages=[{"id": "u1", "role": "user", "content": "I prefer coffee."}])
    assert failure is not None and failure.code is FailureCode.INVALID_ARGUMENT and "'u1'" in failure.message
    assert [n.content for n in SessionStore(settings.sessions_dir).get_branch("s")] == ["I prefer tea."]
