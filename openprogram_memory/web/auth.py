"""Who may talk to the local server, and who may write.

Three guards, all cheap and all local:

- **Host** — the ``Host`` header must name ``127.0.0.1`` or ``localhost`` on
  the server's own port. A DNS-rebinding page (``evil.example`` resolved
  to 127.0.0.1) sends its own name and is refused before any route runs.
- **Origin** — a write that carries ``Origin`` (every browser write does)
  must come from the server's own origin; ``Sec-Fetch-Site`` when present
  must say ``same-origin`` or ``none``. Scripts send neither and rely on
  the token alone.
- **Owner only, reads too** — every ``/api/memory/*`` request needs either
  ``Authorization: Bearer <token>`` (API clients; the token lives in
  ``<state>/memory/.scriptorium/owner-token``, mode 0600, created on first
  serve) or the browser session cookie. The page itself carries no
  secret: ``serve`` prints a login URL with a one-time code; opening it
  sets an HttpOnly, SameSite=Strict session cookie and redirects to the
  clean URL (Jupyter's model). Another local account can fetch the page
  but can neither read memory nor write.
"""

from __future__ import annotations

import hmac
import os
import secrets
import threading
from http.cookies import CookieError, SimpleCookie
from pathlib import Path

from ..fsutil import FILE_MODE, ensure_dir

TOKEN_FILE = "owner-token"
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost"})
_MIN_TOKEN_CHARS = 32


def token_path(scriptorium: Path) -> Path:
    """Where the owner token of a workspace lives."""
    return scriptorium / TOKEN_FILE


def load_or_create_token(scriptorium: Path) -> str:
    """The owner token, created (0600, ``O_EXCL``) when missing or unusable.

    Two servers starting at once agree on one token: the loser of the
    exclusive create reads the winner's file.
    """
    ensure_dir(scriptorium)
    path = token_path(scriptorium)
    for _ in range(3):
        try:
            token = path.read_text(encoding="ascii").strip()
        except FileNotFoundError:
            token = ""
        except (OSError, UnicodeDecodeError):
            token = ""
        if len(token) >= _MIN_TOKEN_CHARS:
            if path.stat().st_mode & 0o077:
                os.chmod(path, FILE_MODE)  # never leave it readable by others
            return token
        if path.exists():
            path.unlink()  # empty or damaged: replace it
        token = secrets.token_urlsafe(32)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        except FileExistsError:
            continue  # someone else just wrote one; read theirs
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(token + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        return token
    raise OSError(f"could not create the owner token at {path}")


def split_host(value: str) -> tuple[str, int | None]:
    """``"127.0.0.1:8765"`` → ``("127.0.0.1", 8765)``; a bad port → ``-1``."""
    host, sep, port = value.strip().rpartition(":")
    if not sep or "]" in port:
        return value.strip().lower(), None
    try:
        return host.lower(), int(port)
    except ValueError:
        return host.lower(), -1


def host_allowed(header: str | None, port: int) -> bool:
    """Whether a ``Host`` header names this server (the DNS-rebinding guard)."""
    if not header:
        return False
    host, given = split_host(header)
    return host in LOCAL_HOSTS and (given if given is not None else 80) == port


def own_origins(port: int) -> frozenset[str]:
    return frozenset(f"http://{host}:{port}" for host in LOCAL_HOSTS)


def write_origin_allowed(origin: str | None, fetch_site: str | None, port: int) -> bool:
    """Whether a write's ``Origin``/``Sec-Fetch-Site`` say it comes from this page (or no browser)."""
    if fetch_site is not None and fetch_site.strip().lower() not in ("same-origin", "none"):
        return False
    if origin is None:
        return True
    return origin.strip().lower().rstrip("/") in own_origins(port)


def bearer_matches(header: str | None, token: str) -> bool:
    """Constant-time check of ``Authorization: Bearer <token>``."""
    if not header or not token:
        return False
    scheme, _, given = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(given.strip().encode("utf-8"), token.encode("utf-8"))


class BrowserSessions:
    """One server's login code (single use) and the browser sessions it opened."""

    def __init__(self, port: int) -> None:
        self.cookie_name = f"openprogram_memory_{port}"  # cookies ignore ports: one name per server
        self._code: str | None = secrets.token_urlsafe(24)
        self._sessions: set[str] = set()
        self._lock = threading.Lock()

    @property
    def login_code(self) -> str | None:
        """The unused login code (None once redeemed)."""
        return self._code

    def redeem(self, code: str) -> str | None:
        """A new session id for the right, unused code; None otherwise."""
        with self._lock:
            if self._code is None or not hmac.compare_digest(code.encode("utf-8"), self._code.encode("utf-8")):
                return None
            self._code = None
            session = secrets.token_urlsafe(32)
            self._sessions.add(session)
            return session

    def set_cookie(self, session: str) -> str:
        return f"{self.cookie_name}={session}; HttpOnly; SameSite=Strict; Path=/"

    def valid(self, cookie_header: str | None) -> bool:
        """Whether the request's ``Cookie`` header carries a session of this server."""
        if not cookie_header:
            return False
        try:
            morsel = SimpleCookie(cookie_header).get(self.cookie_name)
        except CookieError:
            return False
        if morsel is None:
            return False
        given = morsel.value.encode("utf-8")
        with self._lock:
            return any(hmac.compare_digest(given, known.encode("utf-8")) for known in self._sessions)
