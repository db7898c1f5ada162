"""The server under odd methods, stalled bodies, floods and hostile input: JSON answers, no resets."""

from __future__ import annotations

import http.client
import json
import os
import socket
import threading
import time

from openprogram_memory.web import server as server_module

from .conftest import Client


def raw_request(client: Client, method: str, path: str, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    port = int(client.base.rsplit(":", 1)[1])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request(method, path, body=body, headers={"Authorization": f"Bearer {client.token}", **(headers or {})})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, dict(response.getheaders()), data


def test_unknown_methods_answer_the_json_error_object(client):
    status, headers, data = raw_request(client, "BREW", "/api/memory/status")
    assert status == 501 and headers["Content-Type"].startswith("application/json")
    body = json.loads(data)
    assert body["ok"] is False and body["code"] == "INVALID_ARGUMENT"


def test_head_answers_json_headers_without_a_body(client):
    status, headers, data = raw_request(client, "HEAD", "/api/memory/status")
    assert status == 405 and headers["Content-Type"].startswith("application/json") and data == b""


def test_malformed_json_bodies_are_400_not_500(client, ws):
    before = (ws.root / "topics/core.md").read_bytes()
    for raw in (b"[" * 100_000 + b"]" * 100_000, b"\xff\xfe{}", json.dumps(
            {"changes": [{"path": "topics/x.md", "content": "x"}], "commit_message": "a\u0000b"}).encode()):
        answer = client.request("POST", "/api/memory/changes", raw=raw, auth=True)
        assert answer.status == 400 and answer.body["code"] == "INVALID_ARGUMENT", answer.body
    assert (ws.root / "topics/core.md").read_bytes() == before


def test_a_stalled_body_frees_its_thread_quickly(client, monkeypatch):
    monkeypatch.setattr(server_module, "BODY_TIMEOUT", 0.5)
    port = int(client.base.rsplit(":", 1)[1])
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    started = time.monotonic()
    sock.sendall(b"POST /api/memory/changes HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: 100\r\n"
                 b"Authorization: Bearer %s\r\n\r\n{" % (port, client.token.encode()))
    answer = b""
    while chunk := sock.recv(65536):  # the server closes the connection after its answer
        answer += chunk
    elapsed = time.monotonic() - started
    sock.close()
    assert answer.startswith(b"HTTP/1.0 400") or answer.startswith(b"HTTP/1.1 400"), answer[:80]
    assert b"INVALID_ARGUMENT" in answer and elapsed < 5


def test_listen_backlog_is_large():
    assert server_module.MemoryHTTPServer.request_queue_size >= 128


def test_overload_answers_503_with_retry_after(client, monkeypatch):
    server = client.server
    held = 0
    while server.active.acquire(blocking=False):  # every slot busy
        held += 1
    try:
        status, headers, data = raw_request(client, "GET", "/api/memory/status")
    finally:
        for _ in range(held):
            server.active.release()
    assert status == 503 and headers["Retry-After"] == "1"
    body = json.loads(data)
    assert body["retryable"] is True
    assert raw_request(client, "GET", "/api/memory/status")[0] == 200


def test_many_concurrent_requests_all_get_an_answer(client):
    results: list[int | str] = []
    lock = threading.Lock()

    def one() -> None:
        try:
            outcome: int | str = raw_request(client, "GET", "/api/memory/status")[0]
        except OSError as exc:
            outcome = type(exc).__name__
        with lock:
            results.append(outcome)

    threads = [threading.Thread(target=one) for _ in range(100)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(results) == 100 and set(results) <= {200, 503}, sorted(map(str, results))


def test_topic_route_refuses_a_symlink_out_of_the_workspace(client, ws, tmp_path):
    outside = tmp_path / "passwd"
    outside.write_text("root:x:0:0:root:/root:/bin/bash\n")
    os.symlink(outside, ws.root / "topics" / "passwd.md")
    answer = client.get("/api/memory/topics/topics/passwd.md")
    assert answer.status == 400 and answer.body["code"] == "PATH_OUTSIDE_WORKSPACE"
    assert "root:x" not in json.dumps(answer.body)

