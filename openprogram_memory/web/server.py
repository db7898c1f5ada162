"""The local HTTP server: ``GET /`` (the page) and ``/api/memory/*``.

Standard library only (``ThreadingHTTPServer``). It binds 127.0.0.1 and
nothing else. Order of checks on every request, cheapest and most
fundamental first:

1. ``Host`` names this server (DNS-rebinding guard) — else 403;
2. the route exists — else 404 (405 for a known path, wrong method);
3. memory is enabled — else 503 ``MEMORY_DISABLED``, before any workspace
   is created;
4. writes: same-origin (403), body within 1 MiB (400);
5. every memory route, reads too: the owner token or the browser session
   cookie (401) — and only then the route runs.

``GET /`` is the page, which holds no secret; ``GET /?code=<one-time
code>`` (the URL ``serve`` prints) sets the session cookie and redirects
to ``/``.

Failures leave as the one error object of architecture §6 with
``MemoryFailure.http_status``; an unexpected exception is a 500 with the
same shape.
"""

from __future__ import annotations

import errno
import json
import logging
import secrets
import threading
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import parse_qsl, urlsplit

from ..config import Settings
from ..failures import FailureCode, MemoryFailure, as_failure
from ..transaction.update_request import load_request_json
from .routes import MemoryApi, Reply
from .auth import BrowserSessions, bearer_matches, host_allowed, token_path, write_origin_allowed
from .page import render_page

log = logging.getLogger(__name__)

BIND_HOST = "127.0.0.1"
ACCEPTED_BIND_HOSTS = frozenset({"127.0.0.1", "localhost"})
MAX_BODY_BYTES = 1024 * 1024
SOCKET_TIMEOUT = 30
BODY_TIMEOUT = 5.0  # a body that stops arriving frees its thread after this many seconds
LISTEN_BACKLOG = 128
MAX_ACTIVE_REQUESTS = 32  # more at once answer 503 + Retry-After instead of queueing without bound
RETRY_AFTER_SECONDS = 1
DEFAULT_PORT = 8765

_COMMON_HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}


class MemoryHTTPServer(ThreadingHTTPServer):
    """A threading server that knows its API and its own port."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = LISTEN_BACKLOG

    def __init__(self, address: tuple[str, int], api: MemoryApi) -> None:
        self.api = api
        self.active = threading.BoundedSemaphore(MAX_ACTIVE_REQUESTS)
        super().__init__(address, MemoryRequestHandler)
        self.sessions = BrowserSessions(self.port)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{BIND_HOST}:{self.port}/"

    @property
    def login_url(self) -> str:
        """The page URL with the one-time login code (what ``serve`` prints)."""
        code = self.sessions.login_code
        return self.url + (f"?code={code}" if code else "")


class HttpError(Exception):
    """A refusal outside the memory failure table (401, 403, 405)."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = MemoryFailure(FailureCode.INVALID_ARGUMENT, message).to_json()
        self.headers = headers or {}


class MemoryRequestHandler(BaseHTTPRequestHandler):
    """One request; see the module docstring for the order of checks."""

    server: MemoryHTTPServer
    server_version = "openprogram-memory"
    sys_version = ""
    timeout = SOCKET_TIMEOUT

    def do_GET(self) -> None:  # noqa: N802 (http.server naming)
        self._handle("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._handle("POST")

    def do_PUT(self) -> None:  # noqa: N802
        self._handle("PUT")

    def do_DELETE(self) -> None:  # noqa: N802
        self._handle("DELETE")

    def do_PATCH(self) -> None:  # noqa: N802
        self._handle("PATCH")

    def do_OPTIONS(self) -> None:  # noqa: N802 (no CORS: preflights are refused)
        self._handle("OPTIONS")

    def do_HEAD(self) -> None:  # noqa: N802 (answered like GET's refusals: headers of the JSON error)
        self._handle("HEAD")

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own refusals (unknown method, bad request line) as the JSON error object."""
        self.close_connection = True
        text = message or self.responses.get(code, ("error",))[0]
        self._send_json(Reply(MemoryFailure(FailureCode.INVALID_ARGUMENT, f"{code} {text}").to_json(), code))

    def version_string(self) -> str:
        return self.server_version

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        log.info("%s - %s", self.address_string(), format % args)

    # -- the pipeline ----------------------------------------------------
    def _handle(self, method: str) -> None:
        if not self.server.active.acquire(blocking=False):
            self._send_busy()
            return
        try:
            self._handle_now(method)
        finally:
            self.server.active.release()

    def _send_busy(self) -> None:
        """Overload: a prompt 503 the client can retry, never a reset connection."""
        self.close_connection = True
        try:
            self._read_body()  # unread bytes would make close() send a reset
        except MemoryFailure:
            pass
        failure = MemoryFailure(FailureCode.CONCURRENT_UPDATE, "the server is busy; retry shortly", retryable=True)
        self._send_json(Reply(failure.to_json(), 503, {"Retry-After": str(RETRY_AFTER_SECONDS)}))

    def _handle_now(self, method: str) -> None:
        try:
            reply = self._dispatch(method)
        except HttpError as refusal:
            reply = Reply(refusal.body, refusal.status, refusal.headers)
        except MemoryFailure as failure:
            reply = Reply(failure.to_json(), failure.http_status)
        except Exception as exc:  # a bug: still one JSON error object
            log.error("unexpected error on %s %s\n%s", method, self.path, traceback.format_exc())
            reply = Reply(as_failure(exc).to_json(), 500)
        self._send_json(reply)

    def _dispatch(self, method: str) -> Reply | None:
        if not host_allowed(self.headers.get("Host"), self.server.port):
            raise HttpError(403, "the Host header must be 127.0.0.1 or localhost with this server's port "
                                 "(requests through other names are refused to stop DNS rebinding)")
        url = urlsplit(self.path)
        query = dict(parse_qsl(url.query, keep_blank_values=True))
        if url.path in ("/", "/index.html"):
            if method != "GET":
                raise HttpError(405, "the page is GET only", {"Allow": "GET"})
            if "code" in query:
                return self._login(query["code"])
            self._send_page()
            return None
        api = self.server.api
        found = api.route(method, url.path)
        if found is None:
            if api.path_known(url.path):
                raise HttpError(405, f"{method} is not allowed on {url.path}")
            raise MemoryFailure(FailureCode.MEMORY_NOT_FOUND, f"no route {url.path}")
        handler, args = found
        ws = api.workspace()  # MEMORY_DISABLED here, before anything is created
        if method == "GET":
            self._check_owner(ws)
            return handler(ws, query, *args)
        if not write_origin_allowed(self.headers.get("Origin"), self.headers.get("Sec-Fetch-Site"), self.server.port):
            raise HttpError(403, "cross-origin writes are refused: only this server's own page may write")
        raw = self._read_body()  # read before answering, so the client sees even a 401
        self._check_owner(ws)
        return handler(ws, query, *args, _parse_json(raw))

    def _check_owner(self, ws) -> None:
        """The owner token, or the session cookie of this server's login link — else 401."""
        if bearer_matches(self.headers.get("Authorization"), self.server.api.token or ""):
            return
        if self.server.sessions.valid(self.headers.get("Cookie")):
            return
        raise HttpError(
            401,
            "memory is owner-only: send 'Authorization: Bearer <token>' with the token from "
            f"{token_path(ws.layout.scriptorium)}, or open the login URL `openprogram memory serve` printed",
            {"WWW-Authenticate": 'Bearer realm="openprogram-memory"'},
        )

    def _login(self, code: str) -> Reply | None:
        session = self.server.sessions.redeem(code)
        if session is None:
            raise HttpError(401, "this login code is wrong or already used; restart `openprogram memory serve` "
                                 "for a new login URL")
        # 303 to the clean URL: the code leaves the address bar and history.
        self._send(303, b"", "text/plain; charset=utf-8",
                   {"Location": "/", "Set-Cookie": self.server.sessions.set_cookie(session)})
        return None

    def _read_body(self) -> bytes:
        """The request body, at most ``MAX_BODY_BYTES`` (a larger one is refused unread)."""
        if self.headers.get("Transfer-Encoding"):
            self.close_connection = True
            raise MemoryFailure(FailureCode.INVALID_ARGUMENT,
                                "chunked request bodies are not supported; send Content-Length")
        raw = self.headers.get("Content-Length", "0") or "0"
        try:
            length = int(raw)
        except ValueError:
            self.close_connection = True
            raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"bad Content-Length {raw!r}") from None
        if length < 0 or length > MAX_BODY_BYTES:
            self.close_connection = True
            raise MemoryFailure(FailureCode.INVALID_ARGUMENT,
                                f"request body too large ({length} bytes; at most {MAX_BODY_BYTES} bytes)")
        if not length:
            return b""
        self.connection.settimeout(BODY_TIMEOUT)
        try:
            data = self.rfile.read(length)
        except (TimeoutError, OSError):
            data = b""
        finally:
            self.connection.settimeout(self.timeout)
        if len(data) != length:
            self.close_connection = True
            raise MemoryFailure(FailureCode.INVALID_ARGUMENT,
                                f"the request body ended after {len(data)} of {length} bytes "
                                f"(or stalled for {BODY_TIMEOUT:g} s)")
        return data

    # -- responses -------------------------------------------------------
    def _send_json(self, reply: Reply | None) -> None:
        if reply is None:
            return
        data = json.dumps(reply.body, ensure_ascii=False, default=str).encode("utf-8")
        self._send(reply.status, data, "application/json; charset=utf-8", reply.headers)

    def _send_page(self) -> None:
        nonce = secrets.token_urlsafe(16)
        data = render_page(nonce=nonce).encode("utf-8")
        csp = (f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; "
               "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; "
               "frame-ancestors 'none'")
        self._send(200, data, "text/html; charset=utf-8", {"Content-Security-Policy": csp})

    def _send(self, status: int, data: bytes, content_type: str, headers: dict[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in {**_COMMON_HEADERS, **headers}.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)


def _parse_json(raw: bytes) -> Any:
    if not raw.strip():
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, "the request needs a JSON body")
    return load_request_json(raw, "body")


def make_server(settings: Settings, host: str = BIND_HOST, port: int = 0) -> MemoryHTTPServer:
    """A server bound to 127.0.0.1:``port`` (0 = any free port), not yet serving.

    With memory enabled the workspace and the owner token are created now;
    with ``memory.backend=none`` nothing is created and every
    ``/api/memory/*`` route answers 503 ``MEMORY_DISABLED``.
    """
    if host not in ACCEPTED_BIND_HOSTS:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT,
                            f"the memory server binds 127.0.0.1 only (got host {host!r})")
    if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= 65535:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"port must be 0-65535, got {port!r}")
    api = MemoryApi(settings)
    if settings.enabled:
        api.workspace()
    try:
        return MemoryHTTPServer((BIND_HOST, port), api)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise MemoryFailure(FailureCode.INVALID_ARGUMENT,
                                f"port {port} is already in use; pass --port 0 for any free port") from None
        raise


def serve(settings: Settings, port: int = DEFAULT_PORT, *, on_ready: Callable[[MemoryHTTPServer], None] | None = None) -> None:
    """Serve until interrupted; ``on_ready(server)`` runs once it listens."""
    server = make_server(settings, port=port)
    if settings.enabled:
        from ..workspace import watch

        watch.start(settings.memory_dir)  # searches skip the per-query file check while nothing moves
    try:
        if on_ready is not None:
            on_ready(server)
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
