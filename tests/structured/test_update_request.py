"""One request envelope, three doors: ``memory apply``, ``POST /api/memory/changes`` and MCP ``memory_update``
refuse the same malformed requests with the same code and message, and change nothing."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from openprogram_memory.cli.app import app
from openprogram_memory.failures import MemoryFailure
from openprogram_memory.mcp_server.access import WorkspaceAccess
from openprogram_memory.mcp_server.tools import call_tool
from openprogram_memory.web.routes import MemoryApi
from structured.helpers import create_op, tree_digest

MALFORMED = [
    (["not", "an", "object"], "must be a JSON object"),
    ({"memory_changes": [create_op("x")], "owner": "me"}, "unknown key(s) owner"),
    ({"memory_changes": {"op": "create_record"}}, "memory_changes must be a JSON array"),
    ({"changes": "topics/x.md"}, "changes must be a JSON array"),
    ({"patch": 5}, "patch must be a JSON string"),
    ({"memory_changes": [create_op("x")], "sources": {"label": "new-source-1"}}, "sources must be a JSON array"),
    ({"memory_changes": [create_op("x")], "base_revision": 7}, "base_revision must be a JSON string"),
    ({"memory_changes": [create_op("x")], "commit_message": ["m"]}, "commit_message must be a JSON string"),
]


def _cli(state, request) -> dict:
    result = CliRunner().invoke(app, ["memory", "apply", "-", "--state", str(state), "--json"],
                                input=json.dumps(request))
    assert result.exit_code == 64
    return json.loads(result.stdout.strip().splitlines()[-1])


def _http(ws, request) -> dict:
    with pytest.raises(MemoryFailure) as refused:
        MemoryApi(ws.settings).post_changes(ws, {}, request)
    return refused.value.to_json()


def _mcp(ws, request) -> dict:
    if not isinstance(request, dict):  # tool arguments are always an object; the SDK refuses anything else
        return _http(ws, request)
    with pytest.raises(MemoryFailure) as refused:
        call_tool(WorkspaceAccess(ws.settings), "memory_update", request)
    return refused.value.to_json()


@pytest.mark.parametrize("request_body, says", MALFORMED)
def test_every_door_refuses_a_malformed_request_alike(ws, tmp_path, request_body, says):
    before = tree_digest(ws.root)
    answers = [_cli(tmp_path / "state", request_body), _http(ws, request_body), _mcp(ws, request_body)]
    assert answers[0]["code"] == "INVALID_ARGUMENT" and says in answers[0]["message"]
    assert answers[0] == answers[1] == answers[2]
    assert tree_digest(ws.root) == before


def test_the_cli_flag_base_revision_overrides_the_request(ws, tmp_path):
    request = {"memory_changes": [create_op("Stale on purpose.")], "base_revision": ws.revision()}
    result = CliRunner().invoke(app, ["memory", "apply", "-", "--state", str(tmp_path / "state"), "--json",
                                      "--base-revision", "0" * 32], input=json.dumps(request))
    assert result.exit_code == 75
    assert json.loads(result.stdout.strip().splitlines()[-1])["code"] == "CONCURRENT_UPDATE"
