"""``memory trust promote|demote``: a person's decision about a source, appended to the archive, never a rewrite."""

from __future__ import annotations

import json
import subprocess

import pytest
from typer.testing import CliRunner

from openprogram_memory.cli.app import app
from openprogram_memory.failures import FailureCode, MemoryFailure
from openprogram_memory.memory import MemoryWorkspace
from openprogram_memory.search import search
from openprogram_memory.sources.archive import HEADER, ParsedArchive, SourceMessage, parse_archive, trust_frame
from openprogram_memory.sync.archives import union
from openprogram_memory.transaction.engine import Policy

from tests.engine.helpers import make_workspace

runner = CliRunner()
ANN = SourceMessage("telegram/g1/m7", "Ann", "tg-1", "2026-08-09T11:00:00+00:00", "We ship releases on Fridays.",
                    trust_state="pending")
ARCHIVE = "sources/telegram/_v2/g1.md"


def _git(ws: MemoryWorkspace, *args: str) -> str:
    return subprocess.run(["git", "-C", str(ws.root), *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def ws(tmp_path) -> MemoryWorkspace:
    """A core record citing a pending message of someone else's chat (never automatic context until trusted)."""
    ws = make_workspace(tmp_path / "state")
    ws.archive([ANN])
    ws.update(changes=[{"path": "topics/core.md",
                        "content": "# Team\n\nWe ship releases on Fridays.[^e1]\n\n[^e1]: Sources: [ship](telegram/g1/m7)\n"}])
    return ws


def _hits(ws: MemoryWorkspace) -> list[str]:
    return [hit.content for hit in search(ws.root, "releases Fridays", top_k=5)]


def test_promote_makes_the_record_searchable_and_puts_it_in_the_core(ws):
    block_id = ws.records()[0].memory_id
    before = (ws.root / ARCHIVE).read_bytes()
    commits = len(_git(ws, "log", "--oneline").splitlines())
    assert ws.get(block_id)["trust_state"] == "pending"
    assert _hits(ws) == [] and not (ws.root / "core.md").exists()

    result = ws.trust(["telegram/g1/m7"], "trusted", reason="Ann is on my team")

    assert result.extra["changed"] == ["telegram/g1/m7"] and result.extra["records"] == [block_id]
    assert ws.get(block_id)["trust_state"] == "trusted"
    assert _hits(ws) == ["We ship releases on Fridays."]
    assert "We ship releases on Fridays." in (ws.root / "core.md").read_text()  # rendered by the same transaction
    after = (ws.root / ARCHIVE).read_bytes()
    assert after.startswith(before) and b"promote: Ann is on my team" in after  # appended, the frame untouched
    assert len(_git(ws, "log", "--oneline").splitlines()) == commits + 1 and _git(ws, "status", "--short") == ""
    # a fresh process (the on-disk caches, the search index) reads the same state
    fresh = MemoryWorkspace.open(ws.settings)
    assert fresh.get(block_id)["trust_state"] == "trusted" and _hits(fresh) == ["We ship releases on Fridays."]


def test_demote_takes_a_record_out_of_automatic_context(ws):
    block_id = ws.records()[0].memory_id
    ws.trust(["telegram/g1/m7"], "trusted")
    ws.trust(["telegram/g1/m7"], "pending", reason="not sure after all")
    assert ws.get(block_id)["trust_state"] == "pending"
    assert _hits(ws) == [] and not (ws.root / "core.md").exists()
    assert [s["source"] for s in ws.sources("pending")] == ["telegram/g1/m7"]
    assert len(parse_archive((ws.root / ARCHIVE).read_text()).changes) == 2


def test_a_source_already_in_that_state_changes_nothing(ws):
    revision, head = ws.revision(), _git(ws, "rev-parse", "HEAD")
    result = ws.trust(["openprogram/s1/u1"], "trusted")
    assert result.extra["changed"] == [] and result.extra["unchanged"] == ["openprogram/s1/u1"]
    assert ws.revision() == revision and _git(ws, "rev-parse", "HEAD") == head


@pytest.mark.parametrize("ids, code", [
    (["telegram/g1/m7", "telegram/g1/nope"], FailureCode.MISSING_SOURCE),  # one unknown: none is changed
    (["not-a-source-id"], FailureCode.INVALID_ARGUMENT),
    ([" "], FailureCode.INVALID_ARGUMENT),
])
def test_bad_source_ids_change_nothing(ws, ids, code):
    before, head = (ws.root / ARCHIVE).read_bytes(), _git(ws, "rev-parse", "HEAD")
    with pytest.raises(MemoryFailure) as info:
        ws.trust(ids, "trusted")
    assert info.value.code is code
    assert (ws.root / ARCHIVE).read_bytes() == before and _git(ws, "rev-parse", "HEAD") == head


def test_the_transaction_refuses_a_trust_frame_for_a_source_the_archive_lacks(ws):
    data = (ws.root / ARCHIVE).read_bytes() + trust_frame("telegram/g1/other", "trusted", "2026-12-01T00:00:00Z",
                                                          "owner").frame().encode()
    with pytest.raises(MemoryFailure) as info:
        ws.edit(lambda staging: staging.replace_archive(ARCHIVE, data), policy=Policy.HAND)
    assert info.value.code is FailureCode.MISSING_SOURCE
    assert b"telegram/g1/other" not in (ws.root / ARCHIVE).read_bytes()


def test_rewriting_the_frame_instead_of_appending_is_refused(ws):
    text = (ws.root / ARCHIVE).read_text()
    promoted = SourceMessage(ANN.source_id, ANN.speaker, ANN.speaker_id, ANN.timestamp, ANN.text)
    with pytest.raises(MemoryFailure) as info:
        ws.edit(lambda staging: staging.replace_archive(ARCHIVE, text.replace(ANN.frame(), promoted.frame()).encode()),
                policy=Policy.HAND)
    assert info.value.code is FailureCode.APPEND_ONLY_REQUIRED


def test_an_incremental_parse_of_appended_trust_frames_equals_a_whole_parse():
    frames = [SourceMessage(f"p/t/{i}", "D", "u", f"2026-01-0{i}T00:00:00Z", f"m{i}", trust_state="pending")
              for i in range(1, 4)]
    head = HEADER + "\n\n"
    first = (head + frames[0].frame() + frames[1].frame()).encode()
    grown = first + (trust_frame("p/t/1", "trusted", "2026-02-01T00:00:00Z", "owner").frame()
                     + frames[2].frame()).encode()
    parsed = ParsedArchive.of(first).extend(grown)
    whole = ParsedArchive.of(grown)
    assert parsed.by_anchor == whole.by_anchor
    assert [m.trust_state for m in whole.archive.current()] == ["trusted", "pending", "pending"]
    assert not parsed.extends  # a trust frame changes a frame read before: topics citing it are resolved again
    # a trust frame for a source appended after it (a sync union can order them so) still applies
    late = (head + trust_frame("p/t/9", "trusted", "2026-02-01T00:00:00Z", "o").frame()).encode()
    later = late + SourceMessage("p/t/9", "D", "u", "2026-03-01T00:00:00Z", "m9", trust_state="pending").frame().encode()
    assert ParsedArchive.of(late).extend(later).by_anchor == ParsedArchive.of(later).by_anchor
    assert ParsedArchive.of(later).archive.current()[0].trust_state == "trusted"


def test_a_tampered_trust_frame_ends_the_parse():
    source = SourceMessage("p/t/1", "D", "u", "2026-01-01T00:00:00Z", "m", trust_state="pending")
    change = trust_frame("p/t/1", "trusted", "2026-02-01T00:00:00Z", "owner").frame()
    archive = parse_archive(HEADER + "\n\n" + source.frame() + change.replace("promote", "promote!"))
    assert archive.damaged and archive.current()[0].trust_state == "pending"


def test_machines_that_changed_trust_apart_converge_on_the_later_change():
    source = SourceMessage("p/t/1", "D", "u", "2026-01-01T00:00:00Z", "m", trust_state="pending")
    base = HEADER + "\n\n" + source.frame()
    promoted = (base + trust_frame("p/t/1", "trusted", "2026-02-01T00:00:00Z", "a").frame()).encode()
    demoted = (base + trust_frame("p/t/1", "pending", "2026-02-02T00:00:00Z", "b").frame()).encode()
    one, other = union("sources/p/_v2/t.md", promoted, demoted), union("sources/p/_v2/t.md", demoted, promoted)
    assert one == other
    assert parse_archive(one.decode()).current()[0].trust_state == "pending"


def _cli(ws: MemoryWorkspace, *args: str):
    return runner.invoke(app, ["memory", *args, "--state", str(ws.settings.state_dir)])


def test_cli_promote_list_and_search_all(ws):
    listed = json.loads(_cli(ws, "trust", "list", "--json").stdout)
    assert [s["source"] for s in listed["sources"]] == ["telegram/g1/m7"]
    assert listed["sources"][0]["cited_by"] == [ws.records()[0].memory_id]  # what a promotion would let through
    assert "cited by ^" in _cli(ws, "trust", "list").stdout
    shown = json.loads(_cli(ws, "search", "releases", "--all", "--json").stdout)["results"]
    assert [(r["trust_state"], r["sources"][0]["source"]) for r in shown] == [("pending", "telegram/g1/m7")]

    out = _cli(ws, "trust", "promote", "telegram/g1/m7", "--reason", "my team")
    assert out.exit_code == 0 and "promoted to trusted: telegram/g1/m7" in out.stdout

    found = json.loads(_cli(ws, "search", "releases", "--json").stdout)["results"]
    assert [r["trust_state"] for r in found] == ["trusted"]
    assert json.loads(_cli(ws, "trust", "list", "--json").stdout)["sources"] == []
    again = json.loads(_cli(ws, "trust", "promote", "telegram/g1/m7", "--json").stdout)
    assert again["changed"] == [] and again["unchanged"] == ["telegram/g1/m7"]


def test_cli_errors_have_codes(ws):
    missing = _cli(ws, "trust", "demote", "telegram/g1/nope", "--json")
    assert missing.exit_code == 65 and json.loads(missing.stdout)["code"] == "MISSING_SOURCE"
    # (a missing SOURCE_IDS is exit 64 with INVALID_ARGUMENT: tests/cli/test_usage_errors.py walks every verb)


def test_a_trust_frame_with_an_unknown_state_ends_the_parse():
    source = SourceMessage("p/t/1", "D", "u", "2026-01-01T00:00:00Z", "m", trust_state="pending")
    bogus = SourceMessage("p/t/1", "o", "o", "2026-02-01T00:00:00Z", "promote", trust_state="verified", kind="trust")
    archive = parse_archive(HEADER + "\n\n" + source.frame() + bogus.frame())
    assert archive.damaged and archive.changes == []


def test_appending_a_trust_frame_needs_the_source_in_that_archive(tmp_path):
    from openprogram_memory.sources.archive import plan_append

    with pytest.raises(MemoryFailure) as info:
        plan_append(tmp_path, [trust_frame("p/t/1", "trusted", "2026-02-01T00:00:00Z", "owner")])
    assert info.value.code is FailureCode.MISSING_SOURCE
    source = SourceMessage("p/t/1", "D", "u", "2026-01-01T00:00:00Z", "m", trust_state="pending")
    plan = plan_append(tmp_path, [source, trust_frame("p/t/1", "trusted", "2026-02-01T00:00:00Z", "owner")])
    assert parse_archive(plan["sources/p/_v2/t.md"][1].decode()).current()[0].trust_state == "trusted"


def test_a_promotion_travels_to_the_other_machine_with_sync(tmp_path):
    from openprogram_memory.sync import sync
    from tests.sync.helpers import bare_remote, machine, memory_files, reopen

    remote, a, b = bare_remote(tmp_path), machine(tmp_path, "a"), machine(tmp_path, "b")
    a.archive([ANN])
    a.update(changes=[{"path": "topics/team.md",
                       "content": "# Team\n\nWe ship releases on Fridays.[^e1]\n\n[^e1]: Sources: [ship](telegram/g1/m7)\n"}])
    for ws in (a, b):
        sync(reopen(ws), remote)
    assert _hits(reopen(b)) == []  # pending on both machines
    a.trust(["telegram/g1/m7"], "trusted")
    for ws in (a, b):
        sync(reopen(ws), remote)
    assert _hits(reopen(b)) == ["We ship releases on Fridays."]
    assert memory_files(a) == memory_files(b)
