"""The record/replay helper: saved recordings never hold credentials; replay is strict."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest
from anthropic_helpers import batch_turns
from anthropic_replay import FIXTURES, SECRET_HEADERS, RecordingTransport, ReplayTransport, load_recording, match

from openprogram_memory.writer.anthropic_backend import AnthropicWriter
from openprogram_memory.writer.backend import WriterRequest

SECRET = "sk-ant-secret-must-not-be-saved"
COMMIT_REPLY = {
    "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-x",
    "content": [{"type": "tool_use", "id": "toolu_01", "name": "commit_edits", "input": {}}],
    "stop_reason": "tool_use", "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 3},
}
REQUEST = WriterRequest(stage="write", turns=batch_turns(), topic_paths=[])


def _fake_server(request: httpx2.Request) -> httpx2.Response:
    return httpx2.Response(200, json=COMMIT_REPLY, headers={"request-id": "req_01", "set-cookie": "session=abc"})


def test_a_saved_recording_has_no_auth_header(tmp_path: Path) -> None:
    recorder = RecordingTransport(httpx2.MockTransport(_fake_server))
    backend = AnthropicWriter("claude-x", api_key=SECRET, http_client=httpx2.Client(transport=recorder))
    run = backend.run(REQUEST, None, None)  # commit_edits only: no staging access
    assert run.committed

    saved = recorder.save(tmp_path / "rec.json", "recorded against a fake server")
    text = saved.read_text(encoding="utf-8")
    assert SECRET not in text and "session=abc" not in text
    exchange = json.loads(text)["exchanges"][0]
    assert not SECRET_HEADERS & (set(exchange["request"]["headers"]) | set(exchange["response"]["headers"]))
    assert exchange["request"]["body"]["model"] == "claude-x"

    # and the saved recording replays the same run
    replay = ReplayTransport(load_recording(saved))
    replayed = AnthropicWriter("claude-x", api_key="other", http_client=replay.client()).run(REQUEST, None, None)
    assert replayed.committed
    replay.assert_exhausted()


def test_checked_in_recordings_have_no_credentials() -> None:
    files = sorted(FIXTURES.glob("*.json"))
    assert files
    for path in files:
        for exchange in load_recording(path)["exchanges"]:
            for side in ("request", "response"):
                headers = {name.lower() for name in exchange[side].get("headers", {})}
                assert not headers & SECRET_HEADERS, f"{path.name}: {side} keeps {headers & SECRET_HEADERS}"
        assert "sk-ant-" not in path.read_text(encoding="utf-8"), path.name


def test_replay_fails_the_test_on_an_unexpected_request() -> None:
    replay = ReplayTransport({"exchanges": []}, "empty")
    backend = AnthropicWriter("claude-x", api_key="k", http_client=replay.client())
    # pytest's failure is a BaseException: the SDK cannot turn it into a connection error
    with pytest.raises(pytest.fail.Exception, match="unexpected request POST /v1/messages"):
        backend.run(REQUEST, None, None)


def test_replay_checks_the_model() -> None:
    replay = ReplayTransport(load_recording("refusal"), "refusal")
    backend = AnthropicWriter("claude-other", api_key="k", http_client=replay.client())
    with pytest.raises(pytest.fail.Exception, match="body.model"):
        backend.run(REQUEST, None, None)


def test_pattern_matching_rules() -> None:
    assert match({"a": "x[…]z"}, {"a": "x y z", "extra": 1}, "b") is None
    assert match({"a": "z[…]x"}, {"a": "x y z"}, "b")
    assert match([{"type": "tool_result", "tool_use_id": "t"}],
                 [{"type": "tool_result", "tool_use_id": "t", "is_error": True}], "b")
    assert match([1, 2], [1, 2, 3], "b")
    assert match({"a": None}, {"a": 1}, "b")
