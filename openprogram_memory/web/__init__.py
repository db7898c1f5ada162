"""Local HTTP API and web page for one memory workspace (``openprogram memory serve``)."""

from __future__ import annotations

__all__ = ["make_server", "serve"]


def __getattr__(name: str):
    if name in __all__:
        from . import server

        return getattr(server, name)
    raise AttributeError(name)
