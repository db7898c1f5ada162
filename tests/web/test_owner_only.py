"""Memory is owner-only: the page holds no secret; reads and writes need the token or the login cookie."""

from __future__ import annotations

import http.client
import json

import pytest

from .conftest import CORE_TEXT, Client

ROUTES = [
    ("GET", "/api/memory/core", None),
    ("GET", "/api/memory/topics", None),
    ("GET", "/api/memory/topics/topics/core.md", None),
    ("GET", "/api/memory/timeline", None),
    ("GET", "/api/memory/recent", None),
    ("GET", "/api/memory/search?q=metric", None),
    ("GET", "/api/memory/status", None),
    ("PUT", "/api/memory/topics/topics/core.md", {"content": CORE_TEXT, "base_revision": "x"}),
    ("POST", "/api/memory/changes", {"changes": [{"path": "topics/x.md", "content": CORE_TEXT}]}),
]


def call(client: Client, method: str, path: str, body=None, headers: dict[str, str] | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", client.server.port, timeout=30)
    data = json.dumps(body).encode() if body is not None else None
    conn.request(method, path, body=data, headers=headers or {})
    response = conn.getresponse()
    payload = response.read()
    conn.close()
    return response.status, response.headers, payload


def login(client: Client) -> str:
    """Redeem the printed login URL like a browser; return the Cookie header to send."""
    status, headers, _ = call(client, "GET", "/?code=" + client.server.sessions.login_code)
    assert status == 303 and headers["Location"] == "/"
    cookie = headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    return cookie.split(";", 1)[0]


def test_the_page_without_a_cookie_holds_no_token(client):
    status, _, page = call(client, "GET", "/")
    assert status == 200 and client.token.encode() not in page


@pytest.mark.parametrize("method, path, body", ROUTES)
def test_neither_cookie_nor_token_is_401_on_every_memory_route(client, ws, method, path, body):
    before = ws.revision()
    status, headers, payload = call(client, method, path, body)
    assert status == 401 and headers["WWW-Authenticate"].startswith("Bearer")
    answer = json.loads(payload)
    assert answer["ok"] is False and "metric" not in payload.decode()
    assert ws.revision() == before


@pytest.mark.parametrize("method, path, body", ROUTES)
def test_a_forged_cookie_is_401(client, method, path, body):
    forged = f"{client.server.sessions.cookie_name}=guessed-session-id"
    assert call(client, method, path, body, {"Cookie": forged})[0] == 401


def test_the_login_link_sets_a_cookie_the_page_uses_for_reads_and_writes(client, ws):
    cookie = login(client)
    status, _, payload = call(client, "GET", "/api/memory/core", headers={"Cookie": cookie})
    assert status == 200 and "metric" in json.loads(payload)["canonical"]
    origin = f"http://127.0.0.1:{client.server.port}"
    status, _, payload = call(client, "POST", "/api/memory/changes",
                              {"changes": [{"path": "topics/units.md", "content": CORE_TEXT.replace("Core", "Units")}]},
                              {"Cookie": cookie, "Origin": origin, "Content-Type": "application/json"})
    assert status == 200, payload
    assert (ws.root / "topics/units.md").exists()
    # the page's own fetches work without any token in the page
    status, _, page = call(client, "GET", "/", headers={"Cookie": cookie})
    assert status == 200 and client.token.encode() not in page


def test_the_login_code_works_once(client):
    code = client.server.sessions.login_code
    login(client)
    status, headers, payload = call(client, "GET", "/?code=" + code)
    assert status == 401 and "Set-Cookie" not in headers and json.loads(payload)["ok"] is False
    assert client.server.login_url == client.base + "/"


def test_cookie_writes_from_another_origin_are_still_refused(client, ws):
    cookie = login(client)
    before = ws.revision()
    status, _, _ = call(client, "POST", "/api/memory/changes",
                        {"changes": [{"path": "topics/units.md", "content": CORE_TEXT}]},
                        {"Cookie": cookie, "Origin": "http://evil.example"})
    assert status == 403 and ws.revision() == before
