"""Recorded HTTP exchanges for the Anthropic SDK: record (auth filtered), replay (strict).

A recording is ``fixtures/http/<name>.json``::

    {"description": "...",
     "exchanges": [{"request":  {"method", "path", "headers", "body"},
                    "response": {"status", "headers", "body"} | {"error": "connect" | "timeout"}}]}

:class:`RecordingTransport` wraps a real transport and saves what went over
the wire, minus credentials (:data:`SECRET_HEADERS`). :class:`ReplayTransport`
answers from a recording and checks every request against it:

- method and path must be equal;
- the recorded body is a *pattern* for the live JSON body: recorded object
  keys must be present and match (keys the recording leaves out, such as
  the long ``system`` prompt, are not compared); lists match element by
  element and must have the same length; strings match exactly, or, when
  the recorded string contains ``[…]``, its pieces must appear in order;
  a ``tool_result`` block's ``is_error`` flag must agree (absent = false);
- a request after the last exchange fails the test.

Failures call ``pytest.fail``, whose exception derives from BaseException,
so the SDK's ``except Exception`` (which turns transport errors into
``APIConnectionError``) cannot swallow them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "http"
SECRET_HEADERS = frozenset({"x-api-key", "authorization", "proxy-authorization", "cookie", "set-cookie"})
ELISION = "[…]"


def filter_headers(headers: httpx2.Headers | dict[str, str]) -> dict[str, str]:
    """Headers without credentials (and without transfer details that do not replay)."""
    dropped = SECRET_HEADERS | {"content-length", "content-encoding", "transfer-encoding"}
    return {name.lower(): value for name, value in headers.items() if name.lower() not in dropped}


def _json_or_text(content: bytes) -> Any:
    try:
        return json.loads(content) if content else None
    except ValueError:
        return content.decode("utf-8", "replace")


def load_recording(name_or_path: str | Path) -> dict[str, Any]:
    """A recording by fixture name (``write_record``) or path."""
    path = Path(name_or_path)
    if path.suffix != ".json":
        path = FIXTURES / f"{name_or_path}.json"
    return json.loads(path.read_text(encoding="utf-8"))


class RecordingTransport(httpx2.BaseTransport):
    """Forward to ``inner`` and keep each exchange, credentials filtered out."""

    def __init__(self, inner: httpx2.BaseTransport) -> None:
        self.inner = inner
        self.exchanges: list[dict[str, Any]] = []

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        request.read()
        response = self.inner.handle_request(request)
        content = response.read()
        self.exchanges.append({
            "request": {
                "method": request.method,
                "path": request.url.path,
                "headers": filter_headers(request.headers),
                "body": _json_or_text(request.content),
            },
            "response": {
                "status": response.status_code,
                "headers": filter_headers(response.headers),
                "body": _json_or_text(content),
            },
        })
        return httpx2.Response(response.status_code, headers=filter_headers(response.headers), content=content)

    def save(self, path: Path, description: str) -> Path:
        """Write the recording (never any credential header)."""
        data = {"description": description, "exchanges": self.exchanges}
        path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        return path


class ReplayTransport(httpx2.BaseTransport):
    """Answer from a recording; fail the test on any request it does not expect."""

    def __init__(self, recording: dict[str, Any], name: str = "recording") -> None:
        self.name = name
        self.exchanges = list(recording["exchanges"])
        self.requests: list[dict[str, Any]] = []  # live bodies, in order
        self.headers: list[dict[str, str]] = []  # live headers (unfiltered), in order

    @classmethod
    def from_fixture(cls, name: str) -> "ReplayTransport":
        return cls(load_recording(name), name)

    def client(self) -> httpx2.Client:
        return httpx2.Client(transport=self)

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        request.read()
        index = len(self.requests)
        body = _json_or_text(request.content)
        self.requests.append(body)
        self.headers.append(dict(request.headers))
        where = f"{self.name} request #{index + 1}"
        if index >= len(self.exchanges):
            pytest.fail(f"{where}: unexpected request {request.method} {request.url.path} "
                        f"(the recording has {len(self.exchanges)})", pytrace=False)
        expected = self.exchanges[index]["request"]
        if (request.method, request.url.path) != (expected["method"], expected["path"]):
            pytest.fail(f"{where}: got {request.method} {request.url.path}, "
                        f"recorded {expected['method']} {expected['path']}", pytrace=False)
        mismatch = match(expected["body"], body, "body") if "body" in expected else None
        if mismatch:
            pytest.fail(f"{where}: {mismatch}", pytrace=False)
        return _response(self.exchanges[index]["response"], request)

    def assert_exhausted(self) -> None:
        """Every recorded exchange was used."""
        assert len(self.requests) == len(self.exchanges), (
            f"{self.name}: {len(self.requests)} of {len(self.exchanges)} recorded requests were made"
        )


def _response(recorded: dict[str, Any], request: httpx2.Request) -> httpx2.Response:
    error = recorded.get("error")
    if error == "connect":
        raise httpx2.ConnectError("recorded connection failure", request=request)
    if error == "timeout":
        raise httpx2.ReadTimeout("recorded read timeout", request=request)
    body = recorded.get("body")
    content = body.encode("utf-8") if isinstance(body, str) else json.dumps(body).encode("utf-8")
    return httpx2.Response(recorded["status"], headers=recorded.get("headers", {}), content=content)


def match(expected: Any, actual: Any, where: str) -> str | None:
    """None if ``actual`` fits the recorded pattern ``expected``, else what differs."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return f"{where}: expected an object, got {actual!r:.200}"
        if expected.get("type") == "tool_result" and bool(expected.get("is_error")) != bool(actual.get("is_error")):
            return f"{where}.is_error: expected {bool(expected.get('is_error'))}, got {actual.get('is_error')!r}"
        for key, value in expected.items():
            if key not in actual:
                return f"{where}.{key}: missing"
            problem = match(value, actual[key], f"{where}.{key}")
            if problem:
                return problem
        return None
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return f"{where}: expected {len(expected)} items, got {actual!r:.300}"
        for index, (item, live) in enumerate(zip(expected, actual)):
            problem = match(item, live, f"{where}[{index}]")
            if problem:
                return problem
        return None
    if isinstance(expected, str) and isinstance(actual, str) and ELISION in expected:
        position = 0
        for piece in expected.split(ELISION):
            found = actual.find(piece, position)
            if found < 0:
                return f"{where}: {piece!r:.200} not found (in order) in {actual!r:.400}"
            position = found + len(piece)
        return None
    if expected != actual:
        return f"{where}: expected {expected!r:.300}, got {actual!r:.300}"
    return None
