"""A seeded workspace and a live server on 127.0.0.1:<free port> per test."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest

from openprogram_memory.config import load_settings
from openprogram_memory.sources.archive import SourceMessage
from openprogram_memory.web.server import MemoryHTTPServer, make_server
from openprogram_memory.memory import MemoryWorkspace

CORE_TEXT = "# Core\n\nAlways answer in metric units.[^e1]\n\n[^e1]: Sources: [metric](openprogram/s1/u1)\n"
DAVE_TEXT = "# Dave\n\n## Work\n\nDave runs a bike shop.[^e1]\n\n[^e1]: Sources: [bike shop](openprogram/s1/u2)\n"


@pytest.fixture(autouse=True)
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own state directory and a clean memory environment."""
    state = tmp_path / "state"
    monkeypatch.setenv("OPENPROGRAM_STATE", str(state))
    for name in ("OPENPROGRAM_MEMORY_BACKEND", "OPENPROGRAM_MEMORY_RECENT_LIMIT", "OPENPROGRAM_MEMORY_CORE_INJECT"):
        monkeypatch.delenv(name, raising=False)
    return state


def seed(state: Path) -> MemoryWorkspace:
    """A workspace with two archived messages, the core topic and one more topic."""
    ws = MemoryWorkspace.open(load_settings(state), create=True)
    ws.archive([
        SourceMessage(source_id="openprogram/s1/u1", speaker="B", speaker_id="u",
                      timestamp="2026-08-09T10:00:00+08:00", text="Always answer in metric units."),
        SourceMessage(source_id="openprogram/s1/u2", speaker="B", speaker_id="u",
                      timestamp="2026-08-10T10:00:00+08:00", text="I run a bike shop."),
    ])
    ws.update(changes=[{"path": "topics/core.md", "content": CORE_TEXT},
                       {"path": "topics/people/dave.md", "content": DAVE_TEXT}])
    return ws


@dataclass
class Answer:
    status: int
    headers: Any
    body: Any


class Client:
    """urllib against one server; JSON in, JSON out, errors returned not raised."""

    def __init__(self, server: MemoryHTTPServer, token: str | None) -> None:
        self.base = f"http://127.0.0.1:{server.port}"
        self.server = server
        self.token = token

    def request(self, method: str, path: str, body: Any = None, *, auth: bool | str = False,
                headers: dict[str, str] | None = None, raw: bytes | None = None) -> Answer:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        request = urllib.request.Request(self.base + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if auth:
            request.add_header("Authorization", f"Bearer {auth if isinstance(auth, str) else self.token}")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return Answer(response.status, response.headers, _decode(response.read(), response.headers))
        except urllib.error.HTTPError as error:
            return Answer(error.code, error.headers, _decode(error.read(), error.headers))

    def get(self, path: str, **kwargs: Any) -> Answer:
        """A read as the owner's API client (token sent) unless ``auth=False``."""
        kwargs.setdefault("auth", True)
        return self.request("GET", path, **kwargs)


def _decode(data: bytes, headers: Any) -> Any:
    if "json" in (headers.get("Content-Type") or ""):
        return json.loads(data)
    return data.decode("utf-8")


def start(settings) -> tuple[MemoryHTTPServer, threading.Thread]:
    server = make_server(settings, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread


@pytest.fixture
def serve_settings():
    """``serve_settings(settings)`` → a Client for a running server; stopped after the test."""
    running: list[MemoryHTTPServer] = []

    def run(settings) -> Client:
        server, _thread = start(settings)
        running.append(server)
        return Client(server, server.api.token)

    yield run
    for server in running:
        server.shutdown()
        server.server_close()


@pytest.fixture
def ws(state_dir: Path) -> MemoryWorkspace:
    return seed(state_dir)


@pytest.fixture
def client(ws: MemoryWorkspace, serve_settings) -> Iterator[Client]:
    return serve_settings(load_settings(ws.settings.state_dir))
