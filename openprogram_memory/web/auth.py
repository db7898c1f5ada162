"""Who may talk to the local server, and who may write.

Three guards, all cheap and all local:

- **Host** — the ``Host`` header must name ``127.0.0.1`` or ``localhost`` on
  the server's own port. A DNS-rebinding page (``evil.example`` resolved
  to 127.0.0.1) sends its own name and is refused before any route runs.
- **Origin** — a write that carries ``Origin`` (every browser write does)
  must come from the server's own origin; ``Sec-Fetch-Site`` when present
  must say ``same-origin`` or ``none``. Scripts send neither and rely on
  the token alone.
- **Owner token** — every write needs ``Authorization: Bearer <token>``.
  The token lives in ``<state>/memory/.scriptorium/owner-token`` (mode
  0600, created on first serve), so whoever can read the owner's state
  directory can write, and nobody else. Reads need no token: they are
  served to 127.0.0.1 only and carry no CORS headers, so another site's
  page cannot read them.
"""

from __future__ import annotations

import hmac
import os
import secrets
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
