"""Provider failures map to the closed MODEL_* codes with the provider's retryability."""

from __future__ import annotations

import pytest
from anthropic_helpers import API_KEY, batch_turns, writer_for
from anthropic_replay import ReplayTransport

from openprogram_memory.failures import FailureCode, MemoryFailure
from openprogram_memory.transaction.engine import Policy
from openprogram_memory.writer.anthropic_backend import AnthropicWriter
from openprogram_memory.writer.backend import WriterRequest

REQUEST = WriterRequest(stage="write", turns=batch_turns(), topic_paths=["topics/people/dana.md"])


def _run(workspace, backend, request=REQUEST):
    return workspace.edit(lambda staging: backend.run(request, staging, workspace), policy=Policy.MODEL)


@pytest.mark.parametrize(
    ("recording", "code", "retryable"),
    [
        ("error_401", FailureCode.MODEL_AUTHENTICATION, False),
        ("error_403", FailureCode.MODEL_AUTHORIZATION, False),
        ("error_400", FailureCode.MODEL_INVALID_REQUEST, False),
        ("error_400_context", FailureCode.MODEL_CONTEXT_LENGTH, False),
        ("error_429", FailureCode.MODEL_RATE_LIMIT, True),
        ("error_500", FailureCode.MODEL_PROVIDER_INTERNAL, True),
        ("error_529", FailureCode.MODEL_PROVIDER_INTERNAL, True),
        ("error_connect", FailureCode.MODEL_TRANSPORT, True),
        ("error_timeout", FailureCode.MODEL_TIMEOUT, True),
        ("refusal", FailureCode.MODEL_CONTENT_POLICY, False),
    ],
)
def test_provider_failures_map_to_codes(workspace, replay, recording, code, retryable) -> None:
    transport = replay(recording)  # one exchange each: the SDK must not retry on its own
    before = workspace.revision()
    with pytest.raises(MemoryFailure) as caught:
        _run(workspace, writer_for(transport))
    assert (caught.value.code, caught.value.retryable) == (code, retryable)
    assert API_KEY not in caught.value.message and API_KEY not in str(caught.value.details)
    assert workspace.revision() == before


def test_status_failures_name_the_provider_error(workspace, replay) -> None:
    with pytest.raises(MemoryFailure) as caught:
        _run(workspace, writer_for(replay("error_429")))
    assert "429 rate_limit_error" in caught.value.message
    assert caught.value.details["retry_after"] == "12"
    assert caught.value.details["request_id"].startswith("req_")


def test_no_api_key_fails_before_any_request(workspace) -> None:
    transport = ReplayTransport({"exchanges": []}, "no requests")
    backend = AnthropicWriter("claude-x", http_client=transport.client())
    with pytest.raises(MemoryFailure) as caught:
        _run(workspace, backend)
    assert caught.value.code is FailureCode.MODEL_AUTHENTICATION
    assert caught.value.retryable is False
    assert "set ANTHROPIC_API_KEY or use memory.writer.model=rules" in caught.value.message
    assert transport.requests == []


def test_key_and_base_url_come_from_the_environment(workspace, replay, monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://llm-proxy.internal.example")
    transport = replay("max_rounds")
    backend = AnthropicWriter("claude-x", http_client=transport.client())
    request = WriterRequest(stage="write", turns=batch_turns(), topic_paths=[], max_rounds=3)
    _run(workspace, backend, request)
    assert transport.headers[0]["authorization"] == "Bearer sk-ant-from-env"
    assert transport.headers[0]["host"] == "llm-proxy.internal.example"
