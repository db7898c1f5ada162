"""The HTTP API over a real socket: routes, status codes, auth, guards."""

from __future__ import annotations

import hashlib
import os
import stat

import pytest

from openprogram_memory.config import load_settings
from openprogram_memory.failures import MemoryFailure
from openprogram_memory.web.server import MAX_BODY_BYTES, make_server

from .conftest import CORE_TEXT

NEW_TOPIC = "# Units\n\nUse metric units.[^e1]\n\n[^e1]: Sources: [metric](openprogram/s1/u1)\n"
UNCITED = "# Units\n\nThis paragraph cites nothing.\n"


def topic_bytes(ws, rel: str) -> bytes | None:
    path = ws.root / rel
    return path.read_bytes() if path.exists() else None


# -- reads ---------------------------------------------------------------------------
def test_core_returns_one_snapshot_with_tokens_and_budget(client, ws):
    answer = client.get("/api/memory/core")
    assert answer.status == 200
    core = answer.body
    for key in ("canonical", "content", "size", "mtime", "rendered", "effective", "inject", "tokens", "budget",
                "excluded_block_ids", "revision"):
        assert key in core, key
    assert core["content"] == core["canonical"] == (ws.root / "topics/core.md").read_text()
    assert core["size"] == (ws.root / "topics/core.md").stat().st_size
    assert core["inject"] is True and core["effective"] == core["rendered"]
    assert "Always answer in metric units." in core["effective"]
    assert 0 < core["tokens"] <= core["budget"] == 2000
    assert core["revision"] == ws.revision()


def test_core_with_injection_off_reports_an_empty_block(ws, serve_settings):
    client = serve_settings(load_settings(ws.settings.state_dir, {"memory.core.inject": False}))
    core = client.get("/api/memory/core").body
    assert core["inject"] is False and core["effective"] == "" and core["tokens"] == 0
    assert "metric" in core["rendered"]


def test_topics_list_holds_every_topic_core_marked_and_each_path_opens(client):
    answer = client.get("/api/memory/topics")
    assert answer.status == 200
    topics = {t["path"]: t for t in answer.body["topics"]}
    assert sorted(topics) == ["topics/core.md", "topics/people/dave.md"]  # status counts core too
    assert topics["topics/core.md"]["core"] is True and topics["topics/people/dave.md"]["core"] is False
    dave = topics["topics/people/dave.md"]
    assert dave["records"] == 1 and dave["title"] == "Dave" and dave["mtime"] > 0
    for path in topics:  # one path scheme: what the list says is what a read takes
        assert client.get("/api/memory/topics/" + path).body["path"] == path


def test_topic_has_content_records_and_revision(client, ws):
    answer = client.get("/api/memory/topics/topics/people/dave.md")
    assert answer.status == 200
    topic = answer.body
    assert topic["content"] == (ws.root / "topics/people/dave.md").read_text()
    assert topic["revision"] == ws.revision()
    [record] = topic["records"]
    assert record["content"] == "Dave runs a bike shop." and record["headings"] == ["Dave", "Work"]
    assert record["sources"] == [{"source": "openprogram/s1/u2", "label": "bike shop"}]
    # the core is still readable here, by its canonical path
    assert client.get("/api/memory/topics/topics/core.md").status == 200


def test_unknown_topic_is_404_and_paths_outside_are_refused(client):
    missing = client.get("/api/memory/topics/topics/nope.md")
    assert missing.status == 404 and missing.body["code"] == "MEMORY_NOT_FOUND"
    outside = client.get("/api/memory/topics/topics/%2E%2E/%2E%2E/etc/passwd.md")
    assert outside.status == 400 and outside.body["code"] == "PATH_OUTSIDE_WORKSPACE"
    derived = client.get("/api/memory/topics/sources/openprogram/_v2/s1.md")
    assert derived.status == 400 and derived.body["code"] == "READ_ONLY_PATH"


def test_timeline_is_years_months_days_with_markdown(client):
    years = client.get("/api/memory/timeline").body["years"]
    assert [y["year"] for y in years] == ["2026"]
    [month] = years[0]["months"]
    assert month["month"] == "08" and month["count"] == 2
    days = {d["day"]: d for d in month["days"]}
    assert list(days) == ["10", "09"]  # newest first
    assert days["09"]["date"] == "2026-08-09" and days["09"]["path"] == "timeline/2026/08/09.md"
    assert "Always answer in metric units." in days["09"]["markdown"]
    assert "mtime" not in days["09"]  # a rebuild time is not a record time


def test_recent_limit_is_in_a_header(client):
    answer = client.get("/api/memory/recent")
    assert answer.status == 200
    assert answer.headers["X-Memory-Recent-Limit"] == "50"
    assert answer.body["limit"] == 50
    assert {r["memory_id"] for r in answer.body["records"]} == {r["memory_id"] for r in
                                                               _records(client)}


def _records(client):
    topics = ["topics/core.md", "topics/people/dave.md"]
    return [r for t in topics for r in client.get(f"/api/memory/topics/{t}").body["records"]]


def test_recent_follows_the_current_limit(ws, serve_settings, monkeypatch):
    client = serve_settings(load_settings(ws.settings.state_dir))
    monkeypatch.setenv("OPENPROGRAM_MEMORY_RECENT_LIMIT", "1")  # settings are re-read per request
    answer = client.get("/api/memory/recent")
    assert answer.headers["X-Memory-Recent-Limit"] == "1"
    assert len(answer.body["records"]) == 1


def test_status(client, ws):
    answer = client.get("/api/memory/status")
    assert answer.status == 200
    assert answer.body["revision"] == ws.revision() and answer.body["topics"] == 2 and answer.body["records"] == 2


def test_search(client):
    answer = client.get("/api/memory/search?q=bike+shop&top_k=3")
    assert answer.status == 200
    assert answer.body["results"][0]["memory_id"]
    assert answer.body["results"][0]["topic"] == "topics/people/dave.md"
    assert client.get("/api/memory/search?q=").status == 400
    assert client.get("/api/memory/search?q=x&top_k=zero").body["code"] == "INVALID_ARGUMENT"


def test_every_surface_caps_top_k_at_the_one_limit(client, ws):
    """Library, CLI, HTTP and MCP answer at most MAX_TOP_K records, and say so the same way."""
    from openprogram_memory.cli import fast
    from openprogram_memory.config import MAX_TOP_K
    from openprogram_memory.mcp_server.access import WorkspaceAccess
    from openprogram_memory.mcp_server.tools import TOOLS, call_tool
    from openprogram_memory.search.query import search

    assert len(search(ws.root, "bike shop", MAX_TOP_K)) >= 1
    with pytest.raises(MemoryFailure) as caught:
        search(ws.root, "bike shop", MAX_TOP_K + 1)
    assert caught.value.code.value == "INVALID_ARGUMENT"
    assert client.get(f"/api/memory/search?q=bike&top_k={MAX_TOP_K}").status == 200
    assert client.get(f"/api/memory/search?q=bike&top_k={MAX_TOP_K + 1}").body["code"] == "INVALID_ARGUMENT"
    schema = next(tool for tool in TOOLS if tool.name == "memory_search").input_schema
    assert schema["properties"]["top_k"]["maximum"] == MAX_TOP_K
    access = WorkspaceAccess(ws.settings)
    assert call_tool(access, "memory_search", {"query": "bike", "top_k": MAX_TOP_K})
    with pytest.raises(MemoryFailure) as caught:
        call_tool(access, "memory_search", {"query": "bike", "top_k": MAX_TOP_K + 1})
    assert caught.value.code.value == "INVALID_ARGUMENT"
    state = str(ws.settings.state_dir)
    assert fast.main(["search", "bike", "--top-k", str(MAX_TOP_K), "--json", "--state", state]) == 0
    assert fast.main(["search", "bike", "--top-k", str(MAX_TOP_K + 1), "--json", "--state", state]) == 64


# -- writes -----------------------------------------------------------------------------
def test_post_without_token_is_401_and_changes_nothing(client, ws):
    before = ws.revision()
    body = {"changes": [{"path": "topics/units.md", "content": NEW_TOPIC}]}
    for auth in (False, "wrong-token"):
        answer = client.request("POST", "/api/memory/changes", body, auth=auth)
        assert answer.status == 401
        assert answer.headers["WWW-Authenticate"].startswith("Bearer")
        assert "owner-token" in answer.body["message"]
    assert ws.revision() == before
    assert not (ws.root / "topics/units.md").exists()


def test_post_with_token_installs_and_reports(client, ws):
    before = ws.revision()
    answer = client.request("POST", "/api/memory/changes",
                            {"changes": [{"path": "topics/units.md", "content": NEW_TOPIC}],
                             "base_revision": before, "commit_message": "web test"}, auth=True)
    assert answer.status == 200, answer.body
    result = answer.body
    assert result["ok"] is True and result["revision"] != before and result["revision"] == ws.revision()
    assert result["changed_files"] == ["topics/units.md"]
    assert len(result["block_ids"]) == 1 and result["evidence_ids"]
    assert result["memory_committed"] is True and result["git_committed"] is True and result["commit"]


def test_post_memory_changes_form(client, ws):
    answer = client.request("POST", "/api/memory/changes", {"memory_changes": [{
        "op": "create_record", "content": "Dave's shop is in Utrecht.", "time": "2026-08-10",
        "sources": [{"source": "openprogram/s1/u2", "label": "shop"}],
        "destination": {"topic_path": "topics/people/dave.md", "headings": ["Dave", "Work"], "position": "end"}}]},
        auth=True)
    assert answer.status == 200, answer.body
    assert "Utrecht" in (ws.root / "topics/people/dave.md").read_text()


def test_stale_base_revision_is_409(client, ws):
    stale = ws.revision()
    assert client.request("POST", "/api/memory/changes",
                          {"changes": [{"path": "topics/units.md", "content": NEW_TOPIC}]}, auth=True).status == 200
    current = ws.revision()
    answer = client.request("POST", "/api/memory/changes",
                            {"changes": [{"path": "topics/units.md", "action": "delete"}], "base_revision": stale},
                            auth=True)
    assert answer.status == 409
    assert answer.body["code"] == "CONCURRENT_UPDATE" and answer.body["retryable"] is True
    assert ws.revision() == current and (ws.root / "topics/units.md").exists()


def test_invalid_topic_is_400_and_bytes_unchanged(client, ws):
    before = ws.revision()
    core_before = topic_bytes(ws, "topics/core.md")
    answer = client.request("POST", "/api/memory/changes",
                            {"changes": [{"path": "topics/core.md", "content": CORE_TEXT + "\nUncited claim.\n"}]},
                            auth=True)
    assert answer.status == 400
    assert answer.body["code"] == "INVALID_TOPIC_FORMAT" and answer.body["retryable"] is False
    assert topic_bytes(ws, "topics/core.md") == core_before and ws.revision() == before


@pytest.mark.parametrize("body, code", [
    ({}, "INVALID_ARGUMENT"),
    ({"changes": [], "patch": ""}, "INVALID_ARGUMENT"),
    ({"changes": "not a list"}, "INVALID_ARGUMENT"),
    ({"changes": [{"path": "x.md", "content": "x"}], "provenance": "owner"}, "INVALID_ARGUMENT"),
    ({"changes": [{"path": "../x.md", "content": "x"}]}, "PATH_OUTSIDE_WORKSPACE"),
    ({"changes": [{"path": "core.md", "content": "x"}]}, "READ_ONLY_PATH"),
])
def test_bad_change_requests_are_400(client, ws, body, code):
    before = ws.revision()
    answer = client.request("POST", "/api/memory/changes", body, auth=True)
    assert (answer.status, answer.body["code"]) == (400, code)
    assert ws.revision() == before


def test_body_that_is_not_json_or_too_large_is_400(client, ws):
    assert client.request("POST", "/api/memory/changes", raw=b"{nope", auth=True).body["code"] == "INVALID_ARGUMENT"
    big = b'{"patch": "' + b"x" * (MAX_BODY_BYTES + 10) + b'"}'
    try:
        answer = client.request("POST", "/api/memory/changes", raw=big, auth=True)
    except OSError:  # the server may close before the client finished sending
        return
    assert answer.status == 400 and "too large" in answer.body["message"]


def test_put_topic_is_a_compare_and_set_hand_edit(client, ws):
    topic = client.get("/api/memory/topics/topics/people/dave.md").body
    edited = topic["content"].replace("runs a bike shop.", "runs a bike shop in town.")
    answer = client.request("PUT", "/api/memory/topics/topics/people/dave.md",
                            {"content": edited, "base_revision": topic["revision"]}, auth=True)
    assert answer.status == 200, answer.body
    assert answer.body["changed_files"] == ["topics/people/dave.md"]
    assert answer.body["topic"]["content"] == (ws.root / "topics/people/dave.md").read_text()
    assert "in town" in answer.body["topic"]["content"]
    assert answer.body["topic"]["revision"] == ws.revision()
    # the old revision is stale now
    again = client.request("PUT", "/api/memory/topics/topics/people/dave.md",
                           {"content": topic["content"], "base_revision": topic["revision"]}, auth=True)
    assert again.status == 409 and again.body["code"] == "CONCURRENT_UPDATE"
    assert "in town" in (ws.root / "topics/people/dave.md").read_text()


def test_a_web_edit_is_compare_and_set_on_its_own_file(client, ws):
    """A background write to another file no longer rejects the edit; a change to this file still does."""
    topic = client.get("/api/memory/topics/topics/people/dave.md").body
    assert topic["digest"] == hashlib.sha256((ws.root / "topics/people/dave.md").read_bytes()).hexdigest()
    ws.update(changes=[{"path": "topics/elsewhere.md",  # the writer, meanwhile, in another file
                        "content": "Tea at four.[^e1]\n\n[^e1]: Sources: [t](openprogram/s1/u1)\n"}])
    edited = topic["content"].replace("runs a bike shop.", "runs a bike shop in town.")
    answer = client.request("PUT", "/api/memory/topics/topics/people/dave.md",
                            {"content": edited, "base_digest": topic["digest"]}, auth=True)
    assert answer.status == 200, answer.body
    assert answer.body["topic"]["digest"] != topic["digest"] and "in town" in answer.body["topic"]["content"]
    stale = client.request("PUT", "/api/memory/topics/topics/people/dave.md",
                           {"content": topic["content"], "base_digest": topic["digest"]}, auth=True)
    assert stale.status == 409 and stale.body["code"] == "CONCURRENT_UPDATE" and "dave.md" in stale.body["message"]
    assert "in town" in (ws.root / "topics/people/dave.md").read_text()
    bad = client.request("PUT", "/api/memory/topics/topics/people/dave.md",
                         {"content": topic["content"], "base_digest": "abc"}, auth=True)
    assert bad.status == 400 and bad.body["code"] == "INVALID_ARGUMENT"


def _edit_dave(client, web_edit: str, topic: dict, edited: str):
    """dave.md saved from the page as ``edited``: by PUT of the topic (compare-and-set on the digest read with
    ``topic``) or by POST of a change."""
    if web_edit == "put":
        return client.request("PUT", "/api/memory/topics/topics/people/dave.md",
                              {"content": edited, "base_digest": topic["digest"]}, auth=True)
    return client.request("POST", "/api/memory/changes",
                          {"changes": [{"path": "topics/people/dave.md", "content": edited}]}, auth=True)


@pytest.mark.parametrize("web_edit", ["put", "post"])
def test_a_hand_edit_made_while_serving_is_adopted_as_its_own_commit_before_a_web_edit(client, ws, web_edit):
    """core.md edited in another editor while the server runs: the next web edit adopts it first ("hand edit
    outside the product", as every command's open does), then commits only its own change under its name."""
    from openprogram_memory.transaction.history import files_at

    topic = client.get("/api/memory/topics/topics/people/dave.md").body
    core = ws.root / "topics/core.md"
    core.write_text(core.read_text().replace("metric units.", "metric units only."), encoding="utf-8")
    edited = topic["content"].replace("runs a bike shop.", "runs a bike shop in town.")
    answer = _edit_dave(client, web_edit, topic, edited)
    assert answer.status == 200, answer.body
    assert answer.body["changed_files"] == ["topics/people/dave.md"]
    assert answer.body["warnings"] == ["adopted hand edit(s) outside the product: topics/core.md"]  # check's words
    log = ws.log(10)
    messages = [entry["message"] for entry in log]
    hand = messages.index("memory: hand edit outside the product: topics/core.md")
    assert hand > 0 and not any(m.startswith("memory: hand edit") for m in messages[:hand])  # adopted first, once

    def at(i: int, rel: str) -> bytes:
        return files_at(ws.root, log[i]["commit"], rel)[rel]

    assert b"only" in at(hand, "topics/core.md") and b"only" not in at(hand + 1, "topics/core.md")
    assert b"in town" not in at(hand, "topics/people/dave.md") and b"in town" in at(0, "topics/people/dave.md")
    assert at(0, "topics/core.md") == at(1, "topics/core.md")  # the web edit's commit changes dave.md alone


@pytest.mark.parametrize("web_edit", ["put", "post"])
def test_an_invalid_hand_edit_made_while_serving_neither_blocks_a_web_edit_nor_goes_into_it(client, ws, web_edit):
    """core.md loses the ^id of a record dave.md links to, in another editor: that edit breaks a rule, so (as
    for a command) it is not adopted, and a web edit of dave.md still goes through, committing dave.md alone.
    The core keeps its committed version in history, the person's text stays on disk, and the reply names the
    file, line and rule (status's words) so the page's user learns of it."""
    from openprogram_memory.transaction.history import files_at

    core_id = next(r.memory_id for r in ws.records() if r.topic == "topics/core.md")
    dave = (ws.root / "topics/people/dave.md").read_text()
    ws.update(changes=[{"path": "topics/people/dave.md",
                        "content": dave.replace("bike shop.", f"bike shop ([units](../core.md#^{core_id})).")}])
    core = ws.root / "topics/core.md"
    committed = core.read_bytes()
    core.write_text(core.read_text().replace(f" ^{core_id}", ""), encoding="utf-8")
    typed = core.read_bytes()
    head = ws.log(1)[0]["commit"]
    topic = client.get("/api/memory/topics/topics/people/dave.md").body
    edited = topic["content"].replace("Dave runs", "Dave still runs")
    answer = _edit_dave(client, web_edit, topic, edited)
    assert answer.status == 200, answer.body
    assert answer.body["changed_files"] == ["topics/people/dave.md"]
    [warning] = answer.body["warnings"]
    assert warning.startswith("topics/core.md line 3: [missing-block-id]") and "last committed version" in warning
    [entry, before] = ws.log(2)
    assert (before["commit"], entry["commit"]) == (head, answer.body["commit"])  # one commit: the web edit's
    assert files_at(ws.root, "HEAD", "topics/core.md")["topics/core.md"] == committed  # not taken in
    assert b"Dave still runs" in files_at(ws.root, "HEAD", "topics/people/dave.md")["topics/people/dave.md"]
    assert core.read_bytes() == typed  # the person's text is left as they wrote it


def test_put_new_citation_is_normalized(client, ws):
    core = client.get("/api/memory/core").body
    edited = core["canonical"].rstrip("\n") + "\n\nPrefer short answers.[^n1]\n\n[^n1]: Sources: [short](openprogram/s1/u1)\n"
    answer = client.request("PUT", "/api/memory/topics/topics/core.md",
                            {"content": edited, "base_revision": core["revision"]}, auth=True)
    assert answer.status == 200, answer.body
    installed = answer.body["topic"]["content"]
    assert "[^n1]" not in installed and "Prefer short answers.[^e-" in installed
    assert client.get("/api/memory/core").body["effective"].count("^") >= 2


def test_put_refusals(client, ws):
    before = topic_bytes(ws, "topics/core.md")
    revision = ws.revision()
    path = "/api/memory/topics/topics/core.md"
    no_base = client.request("PUT", path, {"content": CORE_TEXT}, auth=True)
    assert no_base.status == 400 and "base_revision" in no_base.body["message"]
    invalid = client.request("PUT", path, {"content": "# Core\n\nNo citation here.\n", "base_revision": revision},
                             auth=True)
    assert invalid.status == 400 and invalid.body["code"] == "INVALID_TOPIC_FORMAT"
    # a hand edit may not drop the block ID of a record of a file that still exists
    replaced = "# Core\n\nA different rule.[^e1]\n\n[^e1]: Sources: [metric](openprogram/s1/u1)\n"
    dropped = client.request("PUT", path, {"content": replaced, "base_revision": revision}, auth=True)
    assert dropped.status == 400 and dropped.body["code"] != "CONCURRENT_UPDATE"
    unauth = client.request("PUT", path, {"content": CORE_TEXT, "base_revision": revision})
    assert unauth.status == 401
    assert topic_bytes(ws, "topics/core.md") == before and ws.revision() == revision


# -- guards ---------------------------------------------------------------------------------
def test_bad_host_header_is_refused(client, ws):
    for host in ("evil.example", f"evil.example:{client.base.rsplit(':', 1)[1]}", "127.0.0.1:1"):
        answer = client.get("/api/memory/core", headers={"Host": host})
        assert answer.status == 403, host
    page = client.get("/", headers={"Host": "attacker.test"})
    assert page.status == 403 and "token" not in str(page.body).lower().replace("host", "")
    before = ws.revision()
    post = client.request("POST", "/api/memory/changes", {"changes": [{"path": "topics/u.md", "content": NEW_TOPIC}]},
                          auth=True, headers={"Host": "evil.example"})
    assert post.status == 403 and ws.revision() == before
    port = client.base.rsplit(":", 1)[1]
    assert client.get("/api/memory/core", headers={"Host": f"localhost:{port}"}).status == 200


def test_cross_origin_writes_are_refused(client, ws):
    before = ws.revision()
    body = {"changes": [{"path": "topics/units.md", "content": NEW_TOPIC}]}
    for headers in ({"Origin": "https://evil.example"}, {"Origin": "null"}, {"Sec-Fetch-Site": "cross-site"}):
        answer = client.request("POST", "/api/memory/changes", body, auth=True, headers=headers)
        assert answer.status == 403, headers
    assert ws.revision() == before
    same = client.request("POST", "/api/memory/changes", body, auth=True,
                          headers={"Origin": client.base, "Sec-Fetch-Site": "same-origin"})
    assert same.status == 200


def test_unknown_route_and_wrong_method(client):
    assert client.get("/api/memory/nope").status == 404
    assert client.request("DELETE", "/api/memory/core").status == 405
    assert client.request("POST", "/api/memory/core", {}, auth=True).status == 405
    assert client.get("/elsewhere").status == 404


def test_backend_none_refuses_every_route_and_creates_nothing(state_dir, serve_settings, monkeypatch):
    monkeypatch.setenv("OPENPROGRAM_MEMORY_BACKEND", "none")
    client = serve_settings(load_settings(state_dir))
    for path in ("/api/memory/core", "/api/memory/topics", "/api/memory/topics/topics/x.md", "/api/memory/timeline",
                 "/api/memory/recent", "/api/memory/search?q=x", "/api/memory/status"):
        answer = client.get(path)
        assert answer.status == 503 and answer.body["code"] == "MEMORY_DISABLED", path
    post = client.request("POST", "/api/memory/changes", {"changes": []}, auth="x")
    assert post.status == 503 and post.body["code"] == "MEMORY_DISABLED"
    page = client.get("/", auth=False)
    assert page.status == 200 and "MemoryMarkdown" in page.body
    assert not (state_dir / "memory").exists()


def test_backend_none_by_settings_override(state_dir, serve_settings):
    client = serve_settings(load_settings(state_dir, {"memory.backend": "none"}))
    assert client.get("/api/memory/core").status == 503
    assert not (state_dir / "memory").exists()


def test_disabled_while_running(client, ws, monkeypatch):
    monkeypatch.setenv("OPENPROGRAM_MEMORY_BACKEND", "none")
    assert client.get("/api/memory/core").body["code"] == "MEMORY_DISABLED"


# -- server and page ---------------------------------------------------------------------
def test_binds_loopback_only(state_dir):
    for host in ("0.0.0.0", "::", "192.168.1.2", ""):
        with pytest.raises(MemoryFailure) as info:
            make_server(load_settings(state_dir), host=host)
        assert info.value.code.value == "INVALID_ARGUMENT"
    assert not (state_dir / "memory").exists()


def test_owner_token_is_private_and_stable(client, ws, serve_settings):
    token_file = ws.root / ".scriptorium" / "owner-token"
    assert stat.S_IMODE(os.stat(token_file).st_mode) == 0o600
    token = token_file.read_text().strip()
    assert len(token) >= 32 and token == client.token
    second = serve_settings(load_settings(ws.settings.state_dir))
    assert second.token == token


def test_page_is_self_contained_and_carries_no_secret(client):
    answer = client.get("/", auth=False)
    assert answer.status == 200 and answer.headers["Content-Type"].startswith("text/html")
    page = answer.body
    assert client.token not in page and "owner-token" not in page
    assert "MemoryMarkdown" in page and "{{" not in page
    assert "<script src" not in page and "<link" not in page and "cdn" not in page.lower()
    csp = answer.headers["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp
    for section in ("Topics", "Timeline", "Recent", "Core", "Memory settings"):
        assert section in page


def test_a_footnote_source_opens_the_cited_message(client, ws):
    """The evidence view: a footnote's link names an archive and an anchor; the API returns that message."""
    record = next(r for r in ws.records() if r.content == "Dave runs a bike shop.")
    ref = record.evidence[0].refs[0]
    archive, anchor = ref.archive.removeprefix("sources/"), ref.anchor
    one = client.get(f"/api/memory/sources/{archive}?anchor={anchor}")
    assert one.status == 200 and one.body["path"] == ref.archive
    message = one.body["message"]
    assert message["source_id"] == "openprogram/s1/u2" and message["trust_state"] == "trusted"
    assert message["text"] == ref.source.text and message["speaker"] and message["timestamp"]
    whole = client.get(f"/api/memory/sources/{archive}")
    assert whole.status == 200 and message in whole.body["messages"] and whole.body["damaged"] is False
    missing = client.get(f"/api/memory/sources/{archive}?anchor=source-0000000000000000")
    assert missing.status == 404 and missing.body["code"] == "MEMORY_NOT_FOUND"
    for bad in ("openprogram/%2E%2E/%2E%2E/topics/core.md", "openprogram/_v2/s1.txt", "nope/_v2/x.md"):
        refused = client.get(f"/api/memory/sources/{bad}")
        assert refused.status in (400, 404) and refused.body["ok"] is False, bad


def test_the_evidence_view_shows_a_trust_decision_and_there_is_no_route_to_make_one(client, ws):
    ws.trust(["openprogram/s1/u2"], "pending", reason="not sure")
    record = next(r for r in ws.records() if r.content == "Dave runs a bike shop.")
    ref = record.evidence[0].refs[0]
    archive = ref.archive.removeprefix("sources/")
    one = client.get(f"/api/memory/sources/{archive}?anchor={ref.anchor}")
    assert one.body["message"]["trust_state"] == "pending"  # the archive's frame as the trust frame left it
    listed = {m["source_id"]: m["trust_state"] for m in client.get(f"/api/memory/sources/{archive}").body["messages"]}
    assert listed["openprogram/s1/u2"] == "pending"
    refused = client.request("POST", "/api/memory/trust", {"sources": ["openprogram/s1/u2"]})
    assert refused.status == 404 and refused.body["ok"] is False  # a person at the CLI decides trust, not the API


def test_the_evidence_view_needs_the_owner_like_every_memory_read(client):
    assert client.get("/api/memory/sources/openprogram/_v2/s1.md", auth=False).status == 401


def test_http_mcp_and_the_cli_answer_a_change_with_one_json_shape(client, ws, capsys, monkeypatch):
    """One request parser and one answer (TxResult.to_json) whoever applies the change."""
    import json
    import sys

    from openprogram_memory.cli import app as app_module
    from openprogram_memory.mcp_server.access import WorkspaceAccess
    from openprogram_memory.mcp_server.tools import call_tool

    def delete(topic: str) -> dict:
        return {"changes": [{"path": topic, "action": "delete"}], "base_revision": ws.revision()}

    for topic in ("topics/a.md", "topics/b.md", "topics/c.md"):
        assert client.request("POST", "/api/memory/changes", {"changes": [{"path": topic, "content": NEW_TOPIC}]},
                              auth=True).status == 200
    http = client.request("POST", "/api/memory/changes", delete("topics/a.md"), auth=True).body
    mcp = call_tool(WorkspaceAccess(ws.settings), "memory_update", delete("topics/b.md"))
    request = ws.root.parent / "request.json"
    request.write_text(json.dumps(delete("topics/c.md")))
    monkeypatch.setattr(sys, "argv", ["openprogram", "memory", "apply", str(request), "--json",
                                      "--state", str(ws.settings.state_dir)])
    with pytest.raises(SystemExit):
        app_module.main()
    cli = json.loads(capsys.readouterr().out)
    assert set(http) == set(mcp) == set(cli) and {"deleted_ids", "revision", "changed_files"} <= set(cli)
    assert all(len(answer["deleted_ids"]) == 1 for answer in (http, mcp, cli))
