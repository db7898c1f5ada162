"""``openprogram memory serve``: the local HTTP API and web page."""

from __future__ import annotations

import webbrowser
from typing import Optional

import typer

from .common import JsonOption, StateOption, memory_settings, open_workspace
from .output import console, print_json, reporting


def register(memory_app: typer.Typer) -> None:
    """Add ``serve`` to the ``memory`` group."""
    memory_app.command("serve")(serve_command)


def serve_command(
    port: int = typer.Option(8765, "--port", min=0, max=65535, help="Port on 127.0.0.1 (0 picks a free one)."),
    open_browser: bool = typer.Option(False, "--open/--no-open", help="Open the page in a browser once listening."),
    state: Optional[str] = StateOption,
    as_json: bool = JsonOption,
) -> None:
    """Serve the memory web page and /api/memory on 127.0.0.1 until interrupted.

    Memory is owner-only, reads too. Open the printed login URL once (its
    code works once and sets a browser session cookie); API clients send the
    token from <state>/memory/.scriptorium/owner-token as
    'Authorization: Bearer <token>'.
    """
    from ..web.auth import token_path
    from ..web.server import serve

    with reporting(as_json):
        settings = memory_settings(state)
        ws = open_workspace(settings)
        token_file = token_path(ws.layout.scriptorium)

        def ready(server) -> None:
            if as_json:
                print_json({"url": server.url, "login_url": server.login_url, "port": server.port,
                            "token_file": str(token_file)})
            else:
                console.print(f"Memory is served at [bold]{server.url}[/] (127.0.0.1 only; Ctrl-C stops it)")
                console.print(f"Open [bold]{server.login_url}[/] to sign in (the code works once)")
                console.print(f"API clients: 'Authorization: Bearer <token>' with the token in {token_file}")
                console.file.flush()
            if open_browser:
                webbrowser.open(server.login_url)

        serve(settings, port, on_ready=ready)
