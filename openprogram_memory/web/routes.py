"""The ``/api/memory/*`` routes, free of HTTP plumbing.

Each handler takes the workspace (and the parsed query or body) and returns
a JSON-able value; :mod:`.server` turns it into a response and turns a
:class:`MemoryFailure` into its error object and status. Reads return the
workspace ``revision`` they saw, taken so that content and revision belong
to the same state — that revision is what a later compare-and-set write
sends back as ``base_revision``.

Settings are re-read on every request (``memory config set`` takes effect
without a restart; ``memory.backend=none`` refuses at once), keeping the
flag-level overrides the server was started with.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, TypeVar
from urllib.parse import unquote

from ..config import MAX_TOP_K, Settings, load_settings
from ..failures import FailureCode, MemoryFailure
from ..topics.model import Heading
from ..transaction.update_request import parse_update_request
from ..memory import MemoryWorkspace, file_digest, record_json
from ..workspace.layout import CORE_TOPIC, RECENT, TIMELINE, check_topic_path, resolves_inside
from .auth import load_or_create_token

READ_ATTEMPTS = 3
RECENT_LIMIT_HEADER = "X-Memory-Recent-Limit"
PUT_KEYS = frozenset({"content", "base_revision", "base_digest", "commit_message"})

T = TypeVar("T")


@dataclass
class Reply:
    """A route's answer: a JSON body, a status and extra headers."""

    body: Any
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)


def consistent(ws: MemoryWorkspace, read: Callable[[], T]) -> tuple[T, str]:
    """``read()`` and the revision it belongs to, without blocking writers.

    The revision hashes every memory byte, so equal revisions before and
    after the read mean nothing moved under it. A workspace that keeps
    changing answers ``CONCURRENT_UPDATE`` (retryable) instead of a mix.
    """
    for _ in range(READ_ATTEMPTS):
        before = ws.revision()
        try:
            value = read()
        except FileNotFoundError:
            continue  # a file went away under an install: read again
        if ws.revision() == before:
            return value, before
    raise MemoryFailure(FailureCode.CONCURRENT_UPDATE, "memory kept changing while it was read; try again",
                        retryable=True)


def _invalid(message: str) -> MemoryFailure:
    return MemoryFailure(FailureCode.INVALID_ARGUMENT, message)


class MemoryApi:
    """The memory routes of one server, bound to one state directory."""

    def __init__(self, settings: Settings) -> None:
        self.state_dir = settings.state_dir
        self._overrides = {key: settings.values[key] for key, origin in settings.origin.items() if origin == "flag"}
        self._init_lock = threading.Lock()
        self._token: str | None = None

    # -- workspace and token ---------------------------------------------
    def settings(self) -> Settings:
        """The effective settings now (config.toml and env re-read)."""
        return load_settings(self.state_dir, self._overrides)

    def workspace(self) -> MemoryWorkspace:
        """The workspace for this request; refuses before creating anything when disabled."""
        settings = self.settings()
        if not settings.enabled:
            raise MemoryFailure(
                FailureCode.MEMORY_DISABLED,
                "memory is disabled (memory.backend=none); set memory.backend=files to use /api/memory",
            )
        ws = MemoryWorkspace(settings)
        if self._token is None or not ws.layout.exists():
            with self._init_lock:
                if self._token is None or not ws.layout.exists():
                    MemoryWorkspace.open(settings, create=True)  # creates and recovers once
                    self._token = load_or_create_token(ws.layout.scriptorium)
        return ws

    @property
    def token(self) -> str | None:
        """The owner token, once a workspace has been opened (None while disabled)."""
        return self._token

    # -- dispatch --------------------------------------------------------
    def route(self, method: str, path: str) -> tuple[Callable[..., Any], tuple[str, ...]] | None:
        """The handler for ``method path`` and its path arguments, or None."""
        for route_method, pattern, handler in self._routes():
            match = pattern.fullmatch(path)
            if match and route_method == method:
                return handler, tuple(unquote(group) for group in match.groups())
        return None

    def path_known(self, path: str) -> bool:
        return any(pattern.fullmatch(path) for _, pattern, _ in self._routes())

    def _routes(self) -> list[tuple[str, re.Pattern[str], Callable[..., Any]]]:
        prefix = "/api/memory"
        return [
            ("GET", re.compile(prefix + "/core"), self.get_core),
            ("GET", re.compile(prefix + "/topics"), self.list_topics),
            ("GET", re.compile(prefix + "/topics/(.+)"), self.get_topic),
            ("PUT", re.compile(prefix + "/topics/(.+)"), self.put_topic),
            ("GET", re.compile(prefix + "/timeline"), self.get_timeline),
            ("GET", re.compile(prefix + "/recent"), self.get_recent),
            ("POST", re.compile(prefix + "/changes"), self.post_changes),
            ("GET", re.compile(prefix + "/search"), self.get_search),
            ("GET", re.compile(prefix + "/sources/(.+)"), self.get_source),
            ("GET", re.compile(prefix + "/status"), self.get_status),
        ]

    # -- reads -----------------------------------------------------------
    def get_core(self, ws: MemoryWorkspace, query: dict[str, str]) -> Reply:
        """Canonical (content/size/mtime), rendered, effective, inject, tokens, budget."""
        view, revision = consistent(ws, ws.core_view)
        view["revision"] = revision
        view["path"] = CORE_TOPIC
        return Reply(view)

    def list_topics(self, ws: MemoryWorkspace, query: dict[str, str]) -> Reply:
        """Every topic, ``topics/core.md`` included and marked ``"core": true`` (the page shows it under Core);
        each ``path`` is what ``GET``/``PUT /api/memory/topics/<path>`` take."""

        def read() -> list[dict[str, Any]]:
            out = []
            for path, summary in sorted(ws.tree().files.items()):
                stat = _stat(ws, path)
                out.append({
                    "path": path,
                    "core": path == CORE_TOPIC,
                    "title": _title(summary.doc, path),
                    "records": len(summary.records),
                    "mtime": stat.st_mtime if stat else None,
                    "size": stat.st_size if stat else 0,
                })
            return out

        topics, revision = consistent(ws, read)
        return Reply({"topics": topics, "revision": revision})

    def get_topic(self, ws: MemoryWorkspace, query: dict[str, str], path: str) -> Reply:
        """One topic: its Markdown, parsed records and the revision they belong to."""
        return Reply(self._topic_json(ws, check_topic_path(path)))

    def _topic_json(self, ws: MemoryWorkspace, rel: str) -> dict[str, Any]:
        def read() -> dict[str, Any]:
            content = ws.read_topic(rel)
            stat = _stat(ws, rel)
            summary = ws.cache.summary(rel)
            return {
                "path": rel,
                "title": _title(summary.doc, rel) if summary else rel,
                "content": content,
                "digest": file_digest(ws.root / rel),  # of the bytes: the per-file compare-and-set of PUT
                "records": [record_json(r) for r in summary.records] if summary else [],
                "mtime": stat.st_mtime if stat else None,
                "size": stat.st_size if stat else 0,
            }

        data, revision = consistent(ws, read)
        data["revision"] = revision
        return data

    def get_timeline(self, ws: MemoryWorkspace, query: dict[str, str]) -> Reply:
        """Years → months → days (newest first), each day with its Markdown.

        Day ``00`` holds records dated only to a month. No file times are
        reported: a derived file's rebuild time is not a record's time.
        """
        years, revision = consistent(ws, lambda: _read_timeline(ws))
        return Reply({"years": years, "revision": revision})

    def get_recent(self, ws: MemoryWorkspace, query: dict[str, str]) -> Reply:
        """The newest records (``recent_events.jsonl``), cut to the current limit."""
        limit = int(ws.settings["memory.recent.limit"])

        def read() -> list[dict[str, Any]]:
            path = ws.root / RECENT
            try:
                lines = path.read_text(encoding="utf-8").splitlines()
            except FileNotFoundError:
                return []
            records = []
            for line in lines:
                try:
                    item = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(item, dict):
                    records.append(item)
            return records[:limit]

        records, revision = consistent(ws, read)
        return Reply({"records": records, "count": len(records), "limit": limit, "revision": revision},
                     headers={RECENT_LIMIT_HEADER: str(limit)})

    def get_status(self, ws: MemoryWorkspace, query: dict[str, str]) -> Reply:
        return Reply(ws.status())

    def get_search(self, ws: MemoryWorkspace, query: dict[str, str]) -> Reply:
        """``?q=…&top_k=…&include_pending=1``: BM25 over topic records."""
        from ..search.query import search  # imported here: search is optional at import time

        text = query.get("q", "")
        if not text.strip():
            raise _invalid("search needs a query: /api/memory/search?q=words")
        top_k = _int_param(query, "top_k", int(ws.settings["memory.retrieval.top_k"]), 1, MAX_TOP_K)
        include_pending = query.get("include_pending", "").lower() in ("1", "true", "yes")
        hits = search(ws.root, text, top_k, include_pending=include_pending)
        return Reply({"results": [hit.to_json() for hit in hits]})

    def get_source(self, ws: MemoryWorkspace, query: dict[str, str], path: str) -> Reply:
        """The evidence a footnote cites: ``sources/<path>?anchor=source-…`` → that archived message
        (speaker, time, trust state, text); without ``anchor``, every message of the archive. Read-only."""
        rel = "sources/" + path
        parts = rel.split("/")
        if not rel.endswith(".md") or ".." in parts or "" in parts or not resolves_inside(ws.root, rel) \
                or (ws.root / rel).is_symlink():
            raise _invalid(f"not a source archive path: {rel}")
        if not (ws.root / rel).is_file():
            raise MemoryFailure(FailureCode.MEMORY_NOT_FOUND, f"no source archive {rel}")
        archive, by_anchor = ws.cache.sources.archive(rel)
        anchor = query.get("anchor")
        if anchor:
            message = by_anchor.get(anchor)
            if message is None:
                raise MemoryFailure(FailureCode.MEMORY_NOT_FOUND, f"no message #{anchor} in {rel}")
            return Reply({"path": rel, "message": _message_json(message)})
        return Reply({"path": rel, "damaged": archive.damaged,
                      "messages": [_message_json(m) for m in archive.current()]})

    # -- writes ----------------------------------------------------------
    def post_changes(self, ws: MemoryWorkspace, query: dict[str, str], body: Any) -> Reply:
        """The unified modify interface (one of memory_changes/changes/patch)."""
        request = parse_update_request(body)
        adopted = ws.adopt_hand_edits()  # an edit saved in another editor meanwhile: its own commit, not this change's
        return Reply(_with_hand_edits(ws, ws.update(**request).to_json(), adopted))

    def put_topic(self, ws: MemoryWorkspace, query: dict[str, str], path: str, body: Any) -> Reply:
        """A hand edit of one topic, compare-and-set on ``base_digest`` (that file, as read) or ``base_revision``.

        The answer carries the installed text (normalized: IDs assigned,
        citations renamed) and the revision it belongs to, for the editor.
        """
        rel = check_topic_path(path)
        if not isinstance(body, dict):
            raise _invalid("the body must be a JSON object {content, base_revision}")
        unknown = sorted(set(body) - PUT_KEYS)
        if unknown:
            raise _invalid(f"unknown field(s) {', '.join(unknown)}; allowed: {', '.join(sorted(PUT_KEYS))}")
        if not isinstance(body.get("content"), str):
            raise _invalid("content must be the whole topic text (a string)")
        digest, revision = body.get("base_digest"), body.get("base_revision")
        if digest is not None and not (isinstance(digest, str) and re.fullmatch(r"[0-9a-f]{64}", digest)):
            raise _invalid("base_digest must be the sha256 hex digest GET /api/memory/topics/<path> returned")
        if digest is None and (not isinstance(revision, str) or not revision):
            raise _invalid("base_digest (or base_revision) is required: send what GET /api/memory/topics/<path> "
                           "returned with the text, so a newer change is never overwritten")
        _check_type(body, "commit_message", str)
        adopted = ws.adopt_hand_edits()  # (as post_changes)
        result = ws.write_topic(rel, body["content"], base_revision=revision if digest is None else None,
                                base_digest=digest, message=body.get("commit_message"))
        out = _with_hand_edits(ws, result.to_json(), adopted)
        try:
            out["topic"] = self._topic_json(ws, rel)
        except MemoryFailure as failure:
            if failure.code is not FailureCode.MEMORY_NOT_FOUND:
                raise
            out["topic"] = None  # the edit emptied the topic, which was removed
        return Reply(out)


def _with_hand_edits(ws: MemoryWorkspace, out: dict[str, Any], adopted: list[str]) -> dict[str, Any]:
    """A web edit's answer, with ``warnings`` on the edits saved in another editor meanwhile, which the page's
    user did not make there: those adopted first, as their own commit (the note ``status`` and ``memory check``
    give), and those that break a rule, left on disk as typed, neither adopted nor taken into this change, and
    served from their last commit (``status``'s wording: file, line, rule)."""
    warnings = adopted + ws.unreadable_warnings()
    if warnings:
        out["warnings"] = warnings
    return out


def _check_type(body: dict[str, Any], key: str, kind: type) -> None:
    if key in body and body[key] is not None and not isinstance(body[key], kind):
        raise _invalid(f"{key} must be a JSON {'array' if kind is list else 'string'}")


def _int_param(query: dict[str, str], name: str, default: int, lo: int, hi: int) -> int:
    raw = query.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise _invalid(f"{name} must be an integer, got {raw!r}") from None
    if not lo <= value <= hi:
        raise _invalid(f"{name} must be from {lo} to {hi}, got {value}")
    return value


def _stat(ws: MemoryWorkspace, rel: str):
    try:
        return (ws.root / rel).stat()
    except OSError:
        return None


def _title(doc: Any, path: str) -> str:
    """The first level-1 heading, else the file name without ``.md``."""
    for block in doc.blocks:
        if isinstance(block, Heading) and block.level == 1 and block.title:
            return block.title
    return path.rsplit("/", 1)[-1].removesuffix(".md")


_YEAR, _MONTH, _DAY = re.compile(r"\d{4}"), re.compile(r"\d{2}"), re.compile(r"(\d{2})\.md")


def _read_timeline(ws: MemoryWorkspace) -> list[dict[str, Any]]:
    base = ws.root / TIMELINE
    years = []
    for year_dir in _sorted_dirs(base, _YEAR):
        months = []
        for month_dir in _sorted_dirs(year_dir, _MONTH):
            days = []
            for day_file in sorted(month_dir.iterdir(), reverse=True):
                match = _DAY.fullmatch(day_file.name)
                if not match or not day_file.is_file():
                    continue
                markdown = day_file.read_text(encoding="utf-8")
                day = match.group(1)
                date = f"{year_dir.name}-{month_dir.name}" + (f"-{day}" if day != "00" else "")
                days.append({"day": day, "date": date, "path": f"{TIMELINE}/{year_dir.name}/{month_dir.name}/{day_file.name}",
                             "count": _count_items(markdown), "markdown": markdown})
            if days:
                months.append({"month": month_dir.name, "count": sum(d["count"] for d in days), "days": days})
        if months:
            years.append({"year": year_dir.name, "count": sum(m["count"] for m in months), "months": months})
    return years


def _sorted_dirs(base, pattern: re.Pattern[str]) -> list:
    if not base.is_dir():
        return []
    return sorted((p for p in base.iterdir() if p.is_dir() and pattern.fullmatch(p.name)), reverse=True)


def _count_items(markdown: str) -> int:
    return sum(1 for line in markdown.splitlines() if line.startswith("- "))


def _message_json(message) -> dict[str, Any]:
    """One archived message as the evidence view shows it."""
    return {"source_id": message.source_id, "anchor": message.anchor, "speaker": message.speaker,
            "speaker_id": message.speaker_id, "timestamp": message.timestamp, "trust_state": message.trust_state,
            "text": message.text}
