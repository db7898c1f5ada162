"""``openprogram memory mcp``: memory as a stdio Model Context Protocol server.

:mod:`.tools` and :mod:`.resources` hold what the server answers, as plain
functions over the library (no SDK import, testable alone); :mod:`.stdio`
wires them to the official ``mcp`` SDK. The SDK is imported only when the
server starts, so no other verb pays for it.
"""
