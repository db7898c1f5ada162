"""``openprogram memory mcp`` driven as a subprocess by the SDK's own stdio client.

Named ``mcp_server`` because ``tests/`` is on ``sys.path``: a ``tests/mcp``
package would shadow the SDK.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Awaitable, Callable

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from structured.helpers import SOURCES, create, create_op, make_workspace, tree_digest

SESSION_TIMEOUT = 60  # seconds for a whole client session: a hang fails the test instead of blocking CI
TOOL_NAMES = {"memory_search", "memory_get", "memory_status", "memory_core", "memory_update"}


def _command() -> list[str]:
    script = Path(sys.executable).with_name("openprogram")
    if script.exists():
        return [str(script), "memory", "mcp"]
    return [sys.executable, "-c", "from openprogram_memory.cli.app import main; main()", "memory", "mcp"]


def run_session(state: Path, body: Callable[[ClientSession], Awaitable[Any]], **env: str) -> Any:
    """Start the server as a subprocess, initialize, run ``body``, shut it down."""
    command = _command()
    params = StdioServerParameters(command=command[0], args=command[1:],
                                   env={"OPENPROGRAM_STATE": str(state), **env})

    async def main() -> Any:
        with anyio.fail_after(SESSION_TIMEOUT):
            with open(os.devnull, "w") as errlog:
                async with stdio_client(params, errlog=errlog) as (read, write):
                    async with ClientSession(read, write) as session:
                        await session.initialize()
                        return await body(session)

    return anyio.run(main)


async def call(session: ClientSession, name: str, arguments: dict[str, Any] | None = None) -> tuple[bool, dict]:
    """``(is_error, the JSON object in the text content)``; checks text and structured content agree."""
    result = await session.call_tool(name, arguments or {})
    (content,) = result.content
    data = json.loads(content.text)
    assert result.structured_content == data
    return result.is_error, data


@pytest.fixture
def seeded(tmp_path: Path) -> tuple[Path, str, str]:
    """A workspace with a topic record and a core record: ``(state, topic_id, core_id)``."""
    state = tmp_path / "state"
    ws = make_workspace(state)
    topic_id = create(ws, "Dana runs a bike shop in Lyon.", topic="topics/people/dana.md", headings=("Dana",),
                      sources=((SOURCES[0], "bike shop"),))
    core_id = create(ws, "Always answer in metric units.", topic="topics/core.md",
                     sources=((SOURCES[1], "metric"),))
    return state, topic_id, core_id


def test_initialize_tools_resources_search_get_update(seeded):
    state, topic_id, core_id = seeded

    async def body(session: ClientSession) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["tools"] = {tool.name: tool for tool in (await session.list_tools()).tools}
        out["resources"] = [str(r.uri) for r in (await session.list_resources()).resources]
        out["topic_text"] = (await session.read_resource("memory://topics/people/dana.md")).contents[0].text
        out["core_text"] = (await session.read_resource("memory://core")).contents[0].text
        out["search"] = await call(session, "memory_search", {"query": "bike shop Lyon"})
        out["get"] = await call(session, "memory_get", {"memory_id": topic_id})
        out["status"] = await call(session, "memory_status")
        out["core"] = await call(session, "memory_core")
        out["update"] = await call(session, "memory_update", {
            "memory_changes": [{"op": "create_record", "content": "Dana's shop repairs cargo bikes.",
                                "time": "2026-09-01", "sources": [{"source": "new-source-1", "label": "cargo"}],
                                "destination": {"topic_path": "topics/people/dana.md", "headings": ["Dana"]}}],
            "sources": [{"label": "new-source-1", "role": "user", "content": "We repair cargo bikes too.",
                         "observed_at": "2026-09-01T10:00:00+00:00"}],
            "base_revision": out["status"][1]["revision"],
            "commit_message": "mcp: cargo bikes"})
        new_id = out["update"][1]["block_ids"][0]
        out["search_after"] = await call(session, "memory_search", {"query": "cargo bikes", "top_k": 3})
        out["get_after"] = await call(session, "memory_get", {"memory_id": new_id})
        return out

    out = run_session(state, body)

    assert set(out["tools"]) == TOOL_NAMES
    assert out["tools"]["memory_search"].input_schema["required"] == ["query"]
    assert out["tools"]["memory_update"].annotations.read_only_hint is False
    assert out["tools"]["memory_get"].annotations.read_only_hint is True
    assert out["resources"][0] == "memory://core"
    assert {"memory://topics/people/dana.md", "memory://topics/core.md"} <= set(out["resources"])
    assert "Dana runs a bike shop in Lyon.[^" in out["topic_text"] and f"^{topic_id}" in out["topic_text"]
    assert out["core_text"].startswith("<memory-context>") and out["core_text"].rstrip().endswith("</memory-context>")
    assert "Always answer in metric units." in out["core_text"]

    is_error, found = out["search"]
    assert not is_error and found["results"][0]["memory_id"] == topic_id
    is_error, record = out["get"]
    assert not is_error and record["content"] == "Dana runs a bike shop in Lyon."
    assert record["sources"] == [{"source": SOURCES[0], "label": "bike shop"}]
    is_error, status = out["status"]
    assert not is_error and status["records"] == 2
    is_error, core = out["core"]
    assert not is_error and core["inject"] is True and "metric units" in core["effective"]

    is_error, update = out["update"]
    assert not is_error and update["ok"] is True and update["changed_files"] == ["topics/people/dana.md"]
    assert update["git_committed"] is True and update["deleted_ids"] == []
    (new_id,) = update["block_ids"]
    is_error, found = out["search_after"]
    assert not is_error and found["results"][0]["memory_id"] == new_id
    is_error, record = out["get_after"]
    assert not is_error and record["content"] == "Dana's shop repairs cargo bikes." and record["headings"] == ["Dana"]
    assert (state / "memory/topics/people/dana.md").read_text().count("^") >= 2


REJECTED = [
    ({"changes": [{"path": "../outside.md", "content": "x"}]}, "PATH_OUTSIDE_WORKSPACE"),
    ({"changes": [{"path": "sources/x.md", "content": "x"}]}, "READ_ONLY_PATH"),
    ({"memory_changes": [{"op": "delete_record", "memory_id": "no-such-id"}]}, "MEMORY_NOT_FOUND"),
    ({"memory_changes": [create_op("Cites nothing real.", sources=(("openprogram/s1/missing", "gone"),))]},
     "MISSING_SOURCE"),
    ({"memory_changes": [create_op("Two forms.")], "patch": "--- a/topics/t.md\n"}, "INVALID_ARGUMENT"),
    ({"memory_changes": "not a list"}, "INVALID_ARGUMENT"),
    ({"changes": [{"path": "topics/x.md", "content": "x"}], "owner": "me"}, "INVALID_ARGUMENT"),
    ({"base_revision": "0" * 64, "memory_changes": [create_op("Stale.")]}, "CONCURRENT_UPDATE"),
    ({"patch": "--- a/topics/people/dana.md\n+++ b/topics/people/dana.md\n@@ -1 +1 @@\n-# Bob\n+# Robert\n"},
     "PATCH_CONFLICT"),
    ({"changes": [{"path": "topics/x.md", "content": "A claim.[^e1]\n\n[^e1]: Sources: [c](openprogram/s9/none)\n"}]},
     "MISSING_SOURCE"),
    ({"changes": [{"path": "topics/x.md", "content": "A claim without evidence.\n"}]}, "INVALID_TOPIC_FORMAT"),
]


def test_rejected_updates_are_tool_errors_and_change_no_byte(seeded):
    state, topic_id, _ = seeded
    # Reuses a block ID another topic holds: the whole tree is refused, naming the ID.
    duplicate_id = {"changes": [{"path": "topics/x.md",
                                 "content": f"Copy.[^e1] ^{topic_id}\n\n[^e1]: Sources: [c]({SOURCES[2]})\n"}]}
    before = tree_digest(state / "memory")

    async def body(session: ClientSession) -> list[tuple[bool, dict]]:
        answers = [await call(session, "memory_update", request) for request, _ in REJECTED]
        answers.append(await call(session, "memory_update", duplicate_id))
        answers.append(await call(session, "memory_get", {"memory_id": topic_id}))  # still serving
        return answers

    answers = run_session(state, body)

    assert tree_digest(state / "memory") == before
    for (request, code), (is_error, error) in zip(REJECTED, answers):
        assert is_error, request
        assert error["ok"] is False and error["code"] == code, (request, error)
        assert isinstance(error["retryable"], bool) and error["message"]
    assert answers[-1][0] is False  # the get after all the refusals: still serving
    is_error, error = answers[len(REJECTED)]
    assert is_error and error["code"] == "INVALID_TOPIC_FORMAT" and topic_id in error["message"]
    assert dict(zip((c for _, c in REJECTED), (e["retryable"] for _, e in answers)))["CONCURRENT_UPDATE"] is True


def test_bad_calls_are_answered_and_the_server_keeps_serving(seeded):
    state, topic_id, _ = seeded

    async def body(session: ClientSession) -> list[tuple[bool, dict]]:
        answers = [
            await call(session, "memory_search", {"query": "bike", "top_k": 0}),
            await call(session, "memory_search", {"query": "bike", "top_k": "many"}),
            await call(session, "memory_search", {"query": ""}),
            await call(session, "memory_get", {"memory_id": "nope"}),
            await call(session, "memory_get", {"memory_id": topic_id, "extra": 1}),
            await call(session, "memory_forget", {}),
        ]
        try:
            await session.read_resource("memory://topics/../../etc/passwd")
        except Exception as exc:  # a JSON-RPC error, not a crash
            answers.append((True, getattr(exc, "data", None) or {}))
        answers.append(await call(session, "memory_get", {"memory_id": topic_id}))
        return answers

    answers = run_session(state, body)

    codes = [error.get("code") for _, error in answers[:-1]]
    assert codes == ["INVALID_ARGUMENT", "INVALID_ARGUMENT", "INVALID_ARGUMENT", "MEMORY_NOT_FOUND",
                     "INVALID_ARGUMENT", "INVALID_ARGUMENT", "PATH_OUTSIDE_WORKSPACE"]
    assert all(is_error for is_error, _ in answers[:-1])
    is_error, record = answers[-1]
    assert not is_error and record["memory_id"] == topic_id


def test_without_a_workspace_every_call_names_the_fix(tmp_path):
    state = tmp_path / "state"

    async def body(session: ClientSession) -> tuple[tuple[bool, dict], list]:
        return await call(session, "memory_status"), (await session.list_resources()).resources

    (is_error, error), resources = run_session(state, body)
    assert is_error and error["code"] == "MEMORY_NOT_FOUND" and "openprogram memory init" in error["message"]
    assert resources == []
    assert not (state / "memory").exists()  # the server never creates a workspace


def test_disabled_memory_refuses_to_start(tmp_path):
    state = tmp_path / "state"
    env = {**os.environ, "OPENPROGRAM_STATE": str(state), "OPENPROGRAM_MEMORY_BACKEND": "none"}
    done = subprocess.run(_command(), env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert done.returncode == 69
    assert done.stdout == "" and "MEMORY_DISABLED" in done.stderr
    assert not state.exists()


def test_other_verbs_do_not_pay_for_the_sdk():
    code = ("import sys; from openprogram_memory.cli.app import app; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types', 'starlette', 'anyio')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "[]"


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def raw_session(state: Path, frames: list[Any]) -> list[dict]:
    """The server's answers to ``frames`` (a str is sent as it is), written at once; stdin closes after the last."""
    text = "".join((frame if isinstance(frame, str) else json.dumps(frame)) + "\n" for frame in frames)
    done = subprocess.run(_command(), input=text, env={**os.environ, "OPENPROGRAM_STATE": str(state)},
                          capture_output=True, text=True, timeout=SESSION_TIMEOUT)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_a_frame_the_sdk_cannot_read_is_answered_as_json_rpc_wants_and_serving_goes_on(seeded):
    """Each of these got no answer at all."""
    state, _, _ = seeded
    answers = raw_session(state, [
        INITIALIZE, INITIALIZED, "{not json", "",  # (a blank line is no frame)
        json.dumps([{"jsonrpc": "2.0", "id": 10, "method": "tools/list"}]),
        {"jsonrpc": "2.0", "id": None, "method": "tools/list"}, {"jsonrpc": "2.0", "id": 12}, "42",
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}])
    errors = [(a["id"], a["error"]["code"], a["error"]["message"]) for a in answers if "error" in a]
    assert [(request_id, code) for request_id, code, _ in errors] == [
        (None, -32700), (None, -32600), (None, -32600), (12, -32600), (None, -32600)]
    assert "batches" in errors[1][2] and "tools/list needs an id" in errors[2][2] and "method" in errors[3][2]
    assert answers[-1]["id"] == 2 and {t["name"] for t in answers[-1]["result"]["tools"]} == TOOL_NAMES


def test_a_call_before_initialize_says_to_initialize_first(seeded):
    """It got a bare "Invalid request parameters"."""
    state, _, _ = seeded
    first, *_ = raw_session(state, [{"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                                     "params": {"name": "memory_status", "arguments": {}}}, INITIALIZE])
    assert first["id"] == 5
    assert first["error"]["message"] == "tools/call before initialize: send initialize first, then notifications/initialized"


def test_tool_arguments_that_are_not_an_object_are_a_tool_error_like_any_bad_argument(seeded):
    """They got the SDK's bare "Invalid request parameters" with empty data."""
    state, _, _ = seeded

    def call_with(request_id: int, arguments: Any) -> dict:
        return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                "params": {"name": "memory_search", "arguments": arguments}}

    answers = {a["id"]: a for a in raw_session(state, [
        call_with(9, "notanobject"), INITIALIZE, INITIALIZED, call_with(2, "notanobject"), call_with(3, [1, 2]),
        call_with(4, 7), call_with(5, {"query": ""})])}
    assert "before initialize" in answers.pop(9)["error"]["message"]  # the handshake still comes first
    assert "serverInfo" in answers.pop(1)["result"]
    tool_errors = {request_id: answer["result"] for request_id, answer in answers.items()}
    assert sorted(tool_errors) == [2, 3, 4, 5]
    assert all(result["isError"] and result["structuredContent"]["code"] == "INVALID_ARGUMENT"
               for result in tool_errors.values())
    assert tool_errors[2]["structuredContent"]["message"] == (
        "the arguments of memory_search must be a JSON object, got str 'notanobject'")
    assert "got list [1, 2]" in tool_errors[3]["structuredContent"]["message"]


def test_an_update_running_when_stdin_closes_is_answered_before_the_server_ends(seeded):
    """The change was committed, but the SDK cancelled the request at end of input and sent no answer."""
    state, _, _ = seeded
    update = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
              "params": {"name": "memory_update", "arguments": {"memory_changes": [create_op("Dana rides to work.")]}}}
    answers = raw_session(state, [INITIALIZE, INITIALIZED, update])
    (answer,) = [a for a in answers if a.get("id") == 3]
    assert answer["result"]["isError"] is False and answer["result"]["structuredContent"]["ok"] is True
    assert "Dana rides to work." in (state / "memory" / "topics" / "t.md").read_text()
