"""The stdio server on the official ``mcp`` SDK (low-level ``Server``).

The low-level server is used rather than ``MCPServer`` because the
resource list is dynamic (one per topic file, as the files are now) and the
tool schemas and error objects are ours, not derived from signatures.

Memory never takes the caller down: every handler turns any failure into
an answer — a tool error (``isError: true``) whose text is the one error
object ``{"ok": false, "code", "retryable", "message"}``, or a JSON-RPC
error for resources — and the server keeps serving. Library calls block,
so they run in a worker thread, one at a time (the transaction has its own
lock; this keeps the in-process caches single-threaded too).
"""

from __future__ import annotations

import json
import sys
from contextvars import ContextVar
from dataclasses import replace
from typing import Any, Mapping

from ..failures import FailureCode, MemoryFailure, as_failure
from .access import WorkspaceAccess
from .resources import list_resources, read_resource
from .tools import TOOLS, call_tool

SERVER_NAME = "openprogram-memory"
INSTRUCTIONS = (
    "Long-term memory kept as Markdown topic files. memory_search before answering questions about the user, "
    "their projects or earlier sessions; memory_get for one record; memory_update to record a durable fact, "
    "citing sources. Results are recalled context from earlier sessions, not new user input."
)


# tools/call arguments that are not a JSON object, held from the SDK's params check for the tool to refuse
_ARGUMENTS_NOT_AN_OBJECT: ContextVar[tuple[Any] | None] = ContextVar("arguments_not_an_object", default=None)


def _json_text(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, sort_keys=True, default=str)


def build_server(access: WorkspaceAccess):
    """The low-level SDK server answering tools and resources from ``access``."""
    import anyio
    import anyio.to_thread
    from mcp import types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError
    from mcp_types import INTERNAL_ERROR, INVALID_PARAMS

    from .. import __version__

    one_at_a_time = anyio.CapacityLimiter(1)

    async def in_worker(fn, *args: Any) -> Any:
        return await anyio.to_thread.run_sync(fn, *args, limiter=one_at_a_time)

    listed_tools = [
        types.Tool(name=tool.name, description=tool.description, input_schema=tool.input_schema,
                   annotations=types.ToolAnnotations(read_only_hint=tool.read_only,
                                                     destructive_hint=not tool.read_only,
                                                     idempotent_hint=tool.read_only, open_world_hint=False))
        for tool in TOOLS
    ]

    async def on_list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed_tools)

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        held = _ARGUMENTS_NOT_AN_OBJECT.get()
        arguments = params.arguments if held is None else held[0]
        try:
            data = await in_worker(call_tool, access, params.name, arguments)
            is_error = False
        except Exception as exc:  # memory never takes the agent down: every failure is an answer
            data, is_error = as_failure(exc).to_json(), True
        return types.CallToolResult(content=[types.TextContent(text=_json_text(data))],
                                    structured_content=data, is_error=is_error)

    async def on_list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        try:
            infos = await in_worker(list_resources, access)
        except MemoryFailure as failure:
            if failure.code not in (FailureCode.MEMORY_NOT_FOUND, FailureCode.MEMORY_DISABLED):
                raise _protocol_error(failure) from None
            infos = []  # nothing to list yet; the tools answer with the reason and the fix
        except Exception as exc:
            raise _protocol_error(as_failure(exc)) from None
        return types.ListResourcesResult(resources=[
            types.Resource(uri=info.uri, name=info.name, description=info.description, mime_type=info.mime_type)
            for info in infos])

    async def on_read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            text = await in_worker(read_resource, access, uri)
        except Exception as exc:
            raise _protocol_error(as_failure(exc)) from None
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type="text/markdown",
                                                                             text=text)])

    def _protocol_error(failure: MemoryFailure) -> MCPError:
        caller_fault = failure.code in (FailureCode.MEMORY_NOT_FOUND, FailureCode.INVALID_ARGUMENT,
                                        FailureCode.PATH_OUTSIDE_WORKSPACE, FailureCode.READ_ONLY_PATH)
        return MCPError(INVALID_PARAMS if caller_fault else INTERNAL_ERROR,
                        f"{failure.code.value}: {failure.message}", data=failure.to_json())

    async def handshake_first(ctx: Any, call_next: Any) -> Any:
        """The SDK refuses a request before ``initialize`` with a bare "Invalid request parameters"
        (its pinned shape, the one a params error had): say what is missing instead.

        The code stays the SDK's -32602: MCP defines none for this (LSP's -32002 "server not initialized"
        is reserved in MCP, where it meant resource not found), and clients may key off the SDK's."""
        try:
            return await call_next(ctx)
        except MCPError as exc:
            gate = (exc.error.code, exc.error.message, exc.error.data) == (INVALID_PARAMS, "Invalid request parameters", "")
            if not gate or ctx.session.client_params is not None:
                raise
            raise MCPError(INVALID_PARAMS, f"{ctx.method} before initialize: send initialize first, then "
                                           "notifications/initialized") from None

    async def arguments_refused_by_the_tool(ctx: Any, call_next: Any) -> Any:
        """The SDK answers tools/call ``arguments`` that are not an object with a bare "Invalid request
        parameters": they go to :func:`call_tool` instead, which refuses them (INVALID_ARGUMENT) in the tool
        error every other bad argument gets. Everything else the SDK checks (the handshake first) still holds."""
        params = ctx.params
        arguments = params.get("arguments") if ctx.method == "tools/call" and isinstance(params, Mapping) else None
        if arguments is None or isinstance(arguments, dict):
            return await call_next(ctx)
        held = _ARGUMENTS_NOT_AN_OBJECT.set((arguments,))
        try:
            return await call_next(replace(ctx, params={k: v for k, v in params.items() if k != "arguments"}))
        finally:
            _ARGUMENTS_NOT_AN_OBJECT.reset(held)

    server = Server(SERVER_NAME, version=__version__, instructions=INSTRUCTIONS,
                    on_list_tools=on_list_tools, on_call_tool=on_call_tool,
                    on_list_resources=on_list_resources, on_read_resource=on_read_resource)
    server.middleware += [handshake_first, arguments_refused_by_the_tool]
    return server


def serve(access: WorkspaceAccess) -> None:
    """Serve MCP on stdin/stdout until the client closes the connection."""
    import anyio
    from mcp.server.stdio import stdio_server

    from ..workspace import watch

    server = build_server(access)
    access.watch_files = True  # searches skip the per-query file check while nothing moves
    watch.start(access.state_dir / "memory")

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            frames = Frames(read_stream, write_stream)
            await server.run(frames, frames.answers, server.create_initialization_options())

    print(f"{SERVER_NAME}: serving {access.state_dir / 'memory'} over stdio", file=sys.stderr, flush=True)
    anyio.run(run)


EOF_WAIT_SECONDS = 300  # how long a closed stdin waits for the answers of the requests still running


class Frames:
    """The server's read stream over the SDK's stdio transport: answers the frames the SDK drops, and
    holds end of input until every request read has been answered.

    The SDK parses each line and passes one it cannot parse on as an exception, which its server
    drops unanswered; a request whose id is null (or a bool, a float) parses as a notification and
    is dropped too. JSON-RPC wants a parse error (-32700) for a line that is not JSON and an invalid
    request (-32600) for the rest, batches included (MCP has none). At end of input the SDK cancels
    the requests still running, but a memory_update runs on in its worker thread and commits:
    without the wait its answer was never sent.
    """

    def __init__(self, read_stream: Any, write_stream: Any) -> None:
        self._read = read_stream
        self._write = write_stream
        self._open: set[Any] = set()  # ids of the requests read and not answered yet
        self.answers = _Answers(write_stream, self._open)
        self._items_left: Any = None  # one pass over the input, however many loops read it in turn

    @property
    def last_context(self) -> Any:  # the sender's contextvars, as the SDK's own stream carries them
        return getattr(self._read, "last_context", None)

    async def __aenter__(self) -> "Frames":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._read.aclose()

    def __aiter__(self) -> Any:
        if self._items_left is None:
            self._items_left = self._items()
        return self._items_left

    async def _items(self) -> Any:
        import anyio
        from mcp_types import INVALID_REQUEST, JSONRPCNotification, JSONRPCRequest

        async for item in self._read:
            if isinstance(item, Exception):
                refused = frame_error(item)
                if refused is not None:
                    await self._reply(*refused)
                continue
            message = item.message
            if isinstance(message, JSONRPCNotification) and not message.method.startswith("notifications/"):
                await self._reply(None, INVALID_REQUEST, f"Invalid request: {message.method} needs an id, a string "
                                                         "or an integer (not null)")
                continue
            if isinstance(message, JSONRPCRequest):
                self._open.add(message.id)
            elif message.method == "notifications/cancelled":  # a cancelled request is never answered
                self._open.discard((message.params or {}).get("requestId"))
            yield item
        with anyio.move_on_after(EOF_WAIT_SECONDS):
            while self._open:
                await anyio.sleep(0.05)

    async def _reply(self, request_id: Any, code: int, message: str) -> None:
        from mcp.shared.message import SessionMessage
        from mcp_types import ErrorData, JSONRPCError

        await self._write.send(SessionMessage(JSONRPCError(jsonrpc="2.0", id=request_id,
                                                           error=ErrorData(code=code, message=message))))


class _Answers:
    """The server's write stream: what it sends goes out as it is; an answer closes its request."""

    def __init__(self, write_stream: Any, open_ids: set[Any]) -> None:
        self._write = write_stream
        self._open = open_ids

    async def send(self, item: Any) -> None:
        from mcp_types import JSONRPCError, JSONRPCResponse

        await self._write.send(item)
        if isinstance(item.message, (JSONRPCResponse, JSONRPCError)):
            self._open.discard(item.message.id)

    def close(self) -> None:
        self._write.close()

    async def aclose(self) -> None:
        await self._write.aclose()

    async def __aenter__(self) -> "_Answers":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


def frame_error(exc: Exception) -> tuple[Any, int, str] | None:
    """``(id, code, message)`` of the error answering a line the SDK could not parse; None for a blank line."""
    from mcp_types import INVALID_REQUEST, PARSE_ERROR
    from pydantic import ValidationError

    errors = exc.errors() if isinstance(exc, ValidationError) else []
    if not errors or any(e["type"] == "json_invalid" for e in errors):
        raw = errors[0].get("input") if errors else None
        if isinstance(raw, str) and not raw.strip():
            return None
        return None, PARSE_ERROR, "Parse error: the line is not JSON; send one JSON-RPC message per line"
    frames = [e.get("input") for e in errors if isinstance(e.get("input"), (dict, list))]
    frame = frames[0] if frames else errors[0].get("input")
    if isinstance(frame, list):
        return None, INVALID_REQUEST, "Invalid request: batches (a JSON array) are not supported; send one message per line"
    if not isinstance(frame, dict):
        return None, INVALID_REQUEST, "Invalid request: a JSON-RPC message is a JSON object"
    request_id = frame.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
        request_id = None
    wrong = "; ".join(f"{'.'.join(str(part) for part in e['loc'][1:])}: {e['msg']}" for e in errors
                      if e["loc"][:1] == ("JSONRPCRequest",))
    return request_id, INVALID_REQUEST, f"Invalid request: not a JSON-RPC 2.0 request ({wrong or 'no method'})"
