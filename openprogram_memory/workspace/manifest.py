"""The workspace manifest: what each memory file held when the product last read or wrote it (architecture §2.5).

``.scriptorium/manifest.sqlite`` (stdlib SQLite, mode 0600, a cache: any
error reads as "nothing known" and a damaged file is replaced) keeps

- ``digests``: per memory file its signature ``(mtime_ns, size, inode)`` and
  the sha256 of its bytes, so a fresh process computes the revision (the
  Merkle digest of §2.4) with a stat pass instead of hashing every file;
- ``topics``: per topic file its signature, sha256, the number of records it
  serves and the problem that keeps it out (unreadable, or served from its
  last commit), so ``memory status`` counts without parsing the tree;
- ``meta``: the core render's figures, keyed by what they depend on.

A row counts only while the file still has its signature — found the way
git finds changes: a stat pass, no parsing, no hashing of unchanged files.
A row written within the filesystem's timestamp tick of the file's last
change ("racily clean") is checked against the sha256 of the file instead.
Transactions write the rows of what they changed; a full read of the tree
writes them all.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterable

from .layout import MANIFEST

SCHEMA = 1
RACY_NS = 2_000_000_000  # a file changed this close to the moment it was read may change again unseen

Sig = tuple[int, int, int]

_TABLES = (
    "CREATE TABLE IF NOT EXISTS digests (path TEXT PRIMARY KEY, mtime_ns INTEGER, size INTEGER, ino INTEGER,"
    " sha256 BLOB)",
    "CREATE TABLE IF NOT EXISTS topics (path TEXT PRIMARY KEY, mtime_ns INTEGER, size INTEGER, ino INTEGER,"
    " racy INTEGER, sha256 TEXT, records INTEGER, problem_kind TEXT, problem TEXT)",
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)",
)


@dataclass(frozen=True)
class TopicRow:
    """One topic file as last read: ``records`` is None when nothing of it is served."""

    path: str
    sig: Sig
    racy: bool
    sha256: str
    records: int | None
    problem_kind: str | None = None  # "unreadable" | "invalid"
    problem: str | None = None


def is_racy(sig: Sig, now_ns: int | None = None) -> bool:
    return (now_ns if now_ns is not None else time.time_ns()) - sig[0] <= RACY_NS


def file_sha256(path: str | Path) -> str | None:
    try:
        with open(path, "rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError:
        return None


class Manifest:
    """The manifest of one workspace root; every method is safe to call when the file is missing or damaged."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.path = root / MANIFEST

    def _connect(self) -> sqlite3.Connection | None:
        if not self.path.parent.is_dir():
            return None
        for attempt in (1, 2):
            try:
                if not self.path.exists():
                    os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600))
                db = sqlite3.connect(self.path, timeout=2.0, isolation_level=None)
                db.execute("PRAGMA synchronous=OFF")  # a cache: a torn write is detected and rebuilt
                if db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA:
                    for table in ("digests", "topics", "meta"):
                        db.execute(f"DROP TABLE IF EXISTS {table}")
                    db.execute(f"PRAGMA user_version={SCHEMA}")
                for statement in _TABLES:
                    db.execute(statement)
                return db
            except (sqlite3.Error, OSError):
                if attempt == 2:
                    return None
                try:
                    self.path.unlink()  # damaged: start afresh
                except OSError:
                    return None
        return None

    def _read(self, query: str, args: tuple = ()) -> list[tuple]:
        db = self._connect()
        if db is None:
            return []
        try:
            return db.execute(query, args).fetchall()
        except sqlite3.Error:
            return []
        finally:
            db.close()

    def _write(self, statements: Iterable[tuple[str, Iterable[tuple]]]) -> None:
        db = self._connect()
        if db is None:
            return
        try:
            db.execute("BEGIN IMMEDIATE")
            for query, rows in statements:
                db.executemany(query, rows)
            db.execute("COMMIT")
        except sqlite3.Error:
            pass  # a cache: the next full read writes it again
        finally:
            db.close()

    # -- per-file digests (the revision) ---------------------------------
    def digests(self) -> dict[str, tuple[Sig, bytes]]:
        return {path: ((m, s, i), sha) for path, m, s, i, sha in
                self._read("SELECT path, mtime_ns, size, ino, sha256 FROM digests")}

    def put_digests(self, rows: dict[str, tuple[Sig, bytes]], gone: Iterable[str] = ()) -> None:
        self._write([
            ("INSERT OR REPLACE INTO digests VALUES (?, ?, ?, ?, ?)",
             [(path, *sig, sha) for path, (sig, sha) in rows.items()]),
            ("DELETE FROM digests WHERE path = ?", [(path,) for path in gone]),
        ])

    # -- topic files (status) --------------------------------------------
    def topics(self) -> dict[str, TopicRow]:
        return {row[0]: TopicRow(row[0], (row[1], row[2], row[3]), bool(row[4]), row[5], row[6], row[7], row[8])
                for row in self._read("SELECT path, mtime_ns, size, ino, racy, sha256, records, problem_kind, problem"
                                      " FROM topics")}

    def put_topics(self, rows: Iterable[TopicRow], gone: Iterable[str] = (), replace_all: bool = False,
                   meta: dict[str, Any] | None = None) -> None:
        statements: list[tuple[str, Iterable[tuple]]] = []
        if replace_all:
            statements.append(("DELETE FROM topics", [()]))
        statements += [
            ("INSERT OR REPLACE INTO topics VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
             [(r.path, *r.sig, int(r.racy), r.sha256, r.records, r.problem_kind, r.problem) for r in rows]),
            ("DELETE FROM topics WHERE path = ?", [(path,) for path in gone]),
            ("INSERT OR REPLACE INTO meta VALUES (?, ?)",
             [(key, json.dumps(value, sort_keys=True)) for key, value in (meta or {}).items()]),
        ]
        self._write(statements)

    def put_meta(self, key: str, value: Any) -> None:
        self._write([("INSERT OR REPLACE INTO meta VALUES (?, ?)", [(key, json.dumps(value, sort_keys=True))])])

    def meta(self, key: str) -> Any:
        found = self._read("SELECT value FROM meta WHERE key = ?", (key,))
        try:
            return json.loads(found[0][0]) if found else None
        except ValueError:
            return None

    def current_topics(self, scanned: dict[str, Sig]) -> dict[str, TopicRow] | None:
        """The rows of every scanned topic file when each still describes the file, else None (read the tree)."""
        rows = self.topics()
        if rows.keys() != scanned.keys():
            return None
        settled = []
        now = time.time_ns()
        for path, sig in scanned.items():
            row = rows[path]
            if row.sig != sig or (row.racy and file_sha256(self.root / path) != row.sha256):
                return None
            if row.racy and not is_racy(sig, now):  # checked by content once more, then by signature
                settled.append(row)
        if settled:
            self.put_topics([replace(row, racy=False) for row in settled])
        return rows


def topic_row(root: Path, path: str, sig: Sig, data: bytes | None, records: int | None,
              problem: tuple[str, str] | None = None, now_ns: int | None = None) -> TopicRow:
    """The row of a topic file read (or written) as ``data`` with signature ``sig``."""
    sha = hashlib.sha256(data).hexdigest() if data is not None else (file_sha256(root / path) or "")
    kind, text = problem if problem else (None, None)
    return TopicRow(path, sig, is_racy(sig, now_ns), sha, records, kind, text)
