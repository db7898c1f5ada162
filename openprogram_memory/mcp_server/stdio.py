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
from typing import Any

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
        try:
            data = await in_worker(call_tool, access, params.name, params.arguments)
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

    return Server(SERVER_NAME, version=__version__, instructions=INSTRUCTIONS,
                  on_list_tools=on_list_tools, on_call_tool=on_call_tool,
                  on_list_resources=on_list_resources, on_read_resource=on_read_resource)


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
            await server.run(read_stream, write_stream, server.create_initialization_options())

    print(f"{SERVER_NAME}: serving {access.state_dir / 'memory'} over stdio", file=sys.stderr, flush=True)
    anyio.run(run)
