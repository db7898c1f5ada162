"""memory sync between two workspaces (two machines) through one bare repository."""

from __future__ import annotations

import os
import re

import pytest
from dulwich.repo import Repo

from openprogram_memory.config import write_config_value
from openprogram_memory.failures import FailureCode, MemoryFailure
from openprogram_memory.fsutil import atomic_write_text
from openprogram_memory.sync import sync
from openprogram_memory.transaction.engine import Policy
from openprogram_memory.sync.archives import union
from openprogram_memory.sources.archive import SourceMessage, parse_archive
from openprogram_memory.transaction.check import check_workspace
from openprogram_memory.transaction.repair import repair_workspace
from openprogram_memory.workspace.layout import RUNTIME
from openprogram_memory.workspace import state as workspace_state
from openprogram_memory.workspace.state import RuntimeState

from .helpers import add, bare_remote, fsck, machine, memory_files, reopen


def update(ws, memory_id: str, content: str, source: str = "openprogram/s1/u1") -> None:
    ws.update(memory_changes=[{"op": "update", "memory_id": memory_id, "content": content,
                               "sources": [{"source": source, "label": "note"}]}])


def delete(ws, memory_id: str) -> None:
    ws.update(memory_changes=[{"op": "delete", "memory_id": memory_id}])


def records(ws) -> dict[str, tuple[str, str]]:
    ws = reopen(ws)
    return {r.memory_id: (r.topic, r.content) for r in ws.records()}


@pytest.fixture
def pair(tmp_path):
    remote = bare_remote(tmp_path)
    a, b = machine(tmp_path, "a"), machine(tmp_path, "b")
    return remote, a, b


def converge(remote, *machines):
    results = [sync(reopen(ws), remote) for ws in machines]
    return results


def test_records_travel_and_concurrent_creations_converge_byte_for_byte(pair):
    remote, a, b = pair
    first = add(a, "topics/dana.md", "Dana runs a bike shop.")
    converge(remote, a, b)
    assert first in records(b)
    on_b = add(b, "topics/dana.md", "Dana prefers metric units.", "openprogram/s1/u2")
    on_a = add(a, "topics/work.md", "Dana uses FastAPI for billing.", "openprogram/s1/u3")
    out = converge(remote, a, b, a)
    assert out[1]["merged"] and out[1]["pushed"] and out[1]["conflicts"] == []
    for ws in (a, b):
        assert {first, on_a, on_b} <= set(records(ws))
        fsck(ws)
    assert memory_files(a) == memory_files(b)
    assert reopen(a).revision() == reopen(b).revision()
    head = Repo(str(b.root))[Repo(str(b.root)).head()]
    assert len(head.parents) == 2  # the merge is one two-parent commit
    again = sync(reopen(a), remote)
    assert not again["merged"] and not again["pushed"] and again["revision"] == out[2]["revision"]


def test_same_record_changed_on_both_sides_keeps_both_versions(pair):
    remote, a, b = pair
    rid = add(a, "topics/dana.md", "Dana runs a bike shop.")
    converge(remote, a, b)
    update(a, rid, "Dana runs a bike shop in Leeds.")
    update(b, rid, "Dana runs a bike shop in York.")
    sync(reopen(a), remote)
    result = sync(reopen(b), remote)
    sync(reopen(a), remote)
    [conflict] = result["conflicts"]
    assert conflict["memory_id"] == rid and conflict["other_memory_id"]
    for ws in (a, b):
        kept = records(ws)[rid][1]
        copy = records(ws)[conflict["other_memory_id"]][1]
        assert {("Leeds" in kept), ("Leeds" in copy)} == {True, False}  # both versions, once each
        assert {("York" in kept), ("York" in copy)} == {True, False}
        assert f"#^{rid}" in copy  # the copy links back to the record it lost to
    assert memory_files(a) == memory_files(b)


def test_delete_against_update_keeps_the_update_and_delete_against_nothing_deletes(pair):
    remote, a, b = pair
    kept = add(a, "topics/dana.md", "Dana runs a bike shop.")
    gone = add(a, "topics/dana.md", "Dana lives in Leeds.", "openprogram/s1/u2")
    converge(remote, a, b)
    delete(a, kept)
    delete(a, gone)
    update(b, kept, "Dana runs two bike shops.")
    sync(reopen(a), remote)
    result = sync(reopen(b), remote)
    sync(reopen(a), remote)
    assert [(c["memory_id"], c["other_memory_id"]) for c in result["conflicts"]] == [(kept, None)]
    for ws in (a, b):
        assert records(ws)[kept][1] == "Dana runs two bike shops."
        assert gone not in records(ws)
    assert memory_files(a) == memory_files(b)


def test_move_on_one_side_and_update_on_the_other(pair):
    remote, a, b = pair
    rid = add(a, "topics/dana.md", "Dana runs a bike shop.")
    add(a, "topics/dana.md", "Dana lives in Leeds.", "openprogram/s1/u2")
    converge(remote, a, b)
    a.update(memory_changes=[{"op": "move", "memory_ids": [rid],
                              "destination": {"topic_path": "topics/work/shop.md", "headings": ["Shop"]}}])
    update(b, rid, "Dana runs a bike shop with two staff.")
    sync(reopen(a), remote)
    sync(reopen(b), remote)
    sync(reopen(a), remote)
    for ws in (a, b):
        assert records(ws)[rid] == ("topics/work/shop.md", "Dana runs a bike shop with two staff.")
    assert memory_files(a) == memory_files(b)


ORBIT = "topics/projects/orbit.md"


def move_by_hand(ws, old: str, new: str) -> None:
    """``mv old new`` in the workspace, and `memory check --repair` when the new folder needs its links rewritten."""
    (ws.root / new).parent.mkdir(parents=True, exist_ok=True)
    os.replace(ws.root / old, ws.root / new)
    if old.count("/") != new.count("/"):
        repair_workspace(reopen(ws), check_workspace(reopen(ws)))


def orbit_pair(pair) -> list[str]:
    """A and B in sync with two records in topics/projects/orbit.md."""
    remote, a, b = pair
    ids = [add(a, ORBIT, "Orbit ships on Fridays."), add(a, ORBIT, "Orbit uses Postgres.", "openprogram/s1/u2")]
    converge(remote, a, b)
    return ids


def topic_files(ws) -> list[str]:
    return sorted(rel for rel in memory_files(ws) if rel.startswith("topics/"))


@pytest.mark.parametrize("moved_to", ["topics/work/orbit.md", "topics/orbit.md"])
@pytest.mark.parametrize("move_first", [True, False], ids=["move-synced-first", "record-synced-first"])
def test_a_topic_moved_by_hand_takes_the_record_the_other_machine_added_under_its_old_name(pair, moved_to,
                                                                                             move_first):
    """One topic, at the path A moved it to, with its records and B's new one (IDs and evidence kept), whichever
    machine syncs first; was: a second projects/orbit.md of the same title holding B's record."""
    remote, a, b = pair
    old = orbit_pair(pair)
    results = []
    if move_first:
        move_by_hand(a, ORBIT, moved_to)
        results.append(sync(reopen(a), remote))
    new = add(reopen(b), ORBIT, "Orbit deploys with Helm.", "openprogram/s1/u3")
    results.append(sync(reopen(b), remote))
    if not move_first:
        move_by_hand(a, ORBIT, moved_to)
    results += [sync(reopen(a), remote), sync(reopen(b), remote)]
    for result in results:
        assert result["conflicts"] == [] and "warnings" not in result
    for ws in (a, b):
        assert topic_files(ws) == [moved_to]
        assert records(ws) == {old[0]: (moved_to, "Orbit ships on Fridays."), old[1]: (moved_to, "Orbit uses Postgres."),
                               new: (moved_to, "Orbit deploys with Helm.")}
        assert check_workspace(reopen(ws)) == []  # every citation resolves from the new folder
        fsck(ws)
    assert memory_files(a) == memory_files(b)


def delete_by_hand(ws, rel: str, memory_id: str) -> None:
    """Remove a record and its evidence line from ``rel`` in an editor (no product call)."""
    lines = (ws.root / rel).read_text().splitlines(keepends=True)
    [line] = [line for line in lines if line.rstrip().endswith(f" ^{memory_id}")]
    label = re.search(r"\[\^(e-[0-9a-f]+)\]", line).group(1)
    kept = "".join(x for x in lines if x is not line and not x.startswith(f"[^{label}]:"))
    (ws.root / rel).write_text(re.sub(r"\n{3,}", "\n\n", kept))


def test_a_record_deleted_by_hand_while_the_other_machine_renames_its_topic_leaves_both_views_current(pair,
                                                                                                   monkeypatch):
    """Was: after `a sync; b sync; a sync`, A's `memory check` said recent_events.jsonl was stale (exit 65) and the
    two machines gave different revisions for one git HEAD: the record A deleted by hand stayed in A's creation
    order, so the fast-forward to B's merge numbered it beside the records left (two records at 0), and the order
    A loaded was not the one B's views were rendered with."""
    remote, a, b = pair
    kept_first, deleted, kept_last = [*orbit_pair(pair), add(a, ORBIT, "Orbit has a staging cluster.", "openprogram/s1/u3")]
    converge(remote, a, b)
    a, b = reopen(a), reopen(b)
    delete_by_hand(a, ORBIT, deleted)
    move_by_hand(b, ORBIT, "topics/projects/orbit-platform.md")
    for ws in (a, b, a):
        assert sync(reopen(ws), remote)["conflicts"] == []
    # runtime.json read as the next command reads it, not the object the sync left cached
    monkeypatch.setattr(workspace_state, "_RUNTIME_CACHE", {})
    for ws in (a, b):
        assert set(records(ws)) == {kept_first, kept_last}
        assert check_workspace(reopen(ws)) == []
    assert reopen(a).revision() == reopen(b).revision()
    assert memory_files(a) == memory_files(b)


def test_records_changed_on_the_other_side_of_a_hand_move_follow_it_and_a_real_conflict_stays_one(pair):
    """B deleted one record of the topic A moved and changed another A changed too: the deletion is no conflict,
    the record both changed keeps both versions (in the moved file), and nothing is left at the old path."""
    remote, a, b = pair
    both, gone = orbit_pair(pair)
    move_by_hand(a, ORBIT, "topics/work/orbit.md")
    update(reopen(a), both, "Orbit ships on Thursdays.")
    update(b, both, "Orbit ships every other Friday.", "openprogram/s1/u2")
    delete(b, gone)
    sync(reopen(a), remote)
    result = sync(reopen(b), remote)
    sync(reopen(a), remote)
    [conflict] = result["conflicts"]
    assert conflict["memory_id"] == both and conflict["other_memory_id"]
    for ws in (a, b):
        assert topic_files(ws) == ["topics/work/orbit.md"]
        kept = records(ws)
        assert gone not in kept
        assert {kept[both][1], kept[conflict["other_memory_id"]][1].split(" (the other side")[0]} == {
            "Orbit ships on Thursdays.", "Orbit ships every other Friday."}
        assert kept[conflict["other_memory_id"]][0] == "topics/work/orbit.md"
    assert memory_files(a) == memory_files(b)


def test_a_topic_split_into_two_files_is_no_move_and_the_other_sides_record_stays_where_it_was_written(pair):
    remote, a, b = pair
    first, second = orbit_pair(pair)
    for memory_id, home in ((first, "topics/work/release.md"), (second, "topics/work/stack.md")):
        a.update(memory_changes=[{"op": "move", "memory_ids": [memory_id],
                                  "destination": {"topic_path": home, "headings": []}}])
    new = add(reopen(b), ORBIT, "Orbit deploys with Helm.", "openprogram/s1/u3")
    converge(remote, a, b, a)
    for ws in (a, b):
        assert {i: topic for i, (topic, _content) in records(ws).items()} == {
            first: "topics/work/release.md", second: "topics/work/stack.md", new: ORBIT}


def test_a_topic_merged_into_one_that_was_there_is_no_move_and_the_other_sides_record_stays_where_it_was_written(
        pair):
    """A move is a file that re-appears at a new path (as `memory check --repair` recognises one), not records
    gathered into a topic that was there before."""
    remote, a, b = pair
    ids = orbit_pair(pair)
    add(a, "topics/work.md", "Work starts at nine.", "openprogram/s1/u3")
    converge(remote, a, b)
    a.update(memory_changes=[{"op": "move", "memory_ids": ids, "destination": {"topic_path": "topics/work.md",
                                                                                "headings": []}}])
    new = add(reopen(b), ORBIT, "Orbit deploys with Helm.", "openprogram/s1/u3")
    converge(remote, a, b, a)
    for ws in (a, b):
        assert {i: topic for i, (topic, _content) in records(ws).items() if i in ids or i == new} == {
            ids[0]: "topics/work.md", ids[1]: "topics/work.md", new: ORBIT}


def test_a_topic_gathered_into_one_the_other_machine_emptied_brings_back_none_of_what_it_deleted(pair):
    remote, a, b = pair
    ids = orbit_pair(pair)
    work = add(a, "topics/work.md", "Work starts at nine.", "openprogram/s1/u3")
    converge(remote, a, b)
    a.update(memory_changes=[{"op": "move", "memory_ids": ids, "destination": {"topic_path": "topics/work.md",
                                                                                "headings": []}}])
    delete(b, work)  # topics/work.md goes with its only record
    new = add(reopen(b), ORBIT, "Orbit deploys with Helm.", "openprogram/s1/u3")
    converge(remote, a, b, a)
    for ws in (a, b):
        assert {i: topic for i, (topic, _content) in records(ws).items()} == {
            ids[0]: "topics/work.md", ids[1]: "topics/work.md", new: ORBIT}


def test_a_hand_move_onto_a_path_the_other_machine_also_created_loses_none_of_its_records(pair):
    remote, a, b = pair
    old = orbit_pair(pair)
    theirs = add(b, "topics/work/orbit.md", "Orbit's office is in Leeds.", "openprogram/s1/u3")
    move_by_hand(a, ORBIT, "topics/work/orbit.md")
    converge(remote, a, b, a)
    for ws in (a, b):
        assert set(old) | {theirs} <= set(records(ws))
    assert memory_files(a) == memory_files(b)


def test_a_topic_both_machines_moved_to_different_places_settles_each_record_as_a_place_conflict(pair):
    """Two moves of one file are no move to follow: a record goes where its later change put it, as any record
    both sides placed differently."""
    remote, a, b = pair
    changed, _ = orbit_pair(pair)
    move_by_hand(b, ORBIT, "topics/work/orbit.md")
    move_by_hand(a, ORBIT, "topics/archive/orbit.md")
    update(reopen(a), changed, "Orbit ships on Thursdays.", "openprogram/s1/u3")  # the later evidence
    converge(remote, b, a, b)
    for ws in (a, b):
        assert records(ws)[changed] == ("topics/archive/orbit.md", "Orbit ships on Thursdays.")
    assert memory_files(a) == memory_files(b)


def test_archive_appended_on_both_sides_is_a_union(pair):
    remote, a, b = pair
    converge(remote, a, b)
    a.archive([SourceMessage("openprogram/s1/a9", "Dana", "user-1", "2026-08-12T09:00:00+08:00", "From A.")])
    b.archive([SourceMessage("openprogram/s1/b9", "Dana", "user-1", "2026-08-12T08:00:00+08:00", "From B.")])
    add(a, "topics/dana.md", "Dana wrote from A.", "openprogram/s1/a9")
    add(b, "topics/dana.md", "Dana wrote from B.", "openprogram/s1/b9")
    converge(remote, a, b, a)
    for ws in (a, b):
        frames = parse_archive((ws.root / "sources/openprogram/_v2/s1.md").read_text()).frames
        assert [f.source_id for f in frames][-2:] == ["openprogram/s1/b9", "openprogram/s1/a9"]  # by time
        assert len(frames) == 5
    assert memory_files(a) == memory_files(b)


def test_archive_union_refuses_a_frame_changed_on_one_side():
    one = SourceMessage("p/t/1", "D", "u", "2026-01-01T00:00:00Z", "one")
    other = SourceMessage("p/t/1", "D", "u", "2026-01-01T00:00:00Z", "changed")
    head = "<!-- openprogram-source-archive:v2 -->\n\n"
    with pytest.raises(MemoryFailure) as info:
        union("sources/p/_v2/t.md", (head + one.frame()).encode(), (head + other.frame()).encode())
    assert info.value.code is FailureCode.APPEND_ONLY_REQUIRED


def test_push_rejected_because_the_remote_moved_is_retried(pair, tmp_path):
    remote, a, b = pair
    add(a, "topics/dana.md", "Dana runs a bike shop.")
    converge(remote, a, b)
    add(a, "topics/dana.md", "Dana lives in Leeds.", "openprogram/s1/u2")
    add(b, "topics/work.md", "Dana uses FastAPI.", "openprogram/s1/u3")
    moved = []

    def race() -> None:
        if not moved:
            moved.append(sync(reopen(b), remote))  # B pushes between A's fetch and A's push

    result = sync(reopen(a), remote, before_push=race)
    assert moved and result["pushed"]
    sync(reopen(b), remote)
    assert memory_files(a) == memory_files(b)
    assert len(records(a)) == 3


def test_push_rejected_every_time_is_retryable(pair):
    remote, a, b = pair
    converge(remote, a, b)
    count = iter(range(100))

    def race() -> None:
        add(b, "topics/work.md", f"Dana ships release {next(count)}.", "openprogram/s1/u3")
        sync(reopen(b), remote)

    add(a, "topics/dana.md", "Dana lives in Leeds.", "openprogram/s1/u2")
    with pytest.raises(MemoryFailure) as info:
        sync(reopen(a), remote, before_push=race)
    assert info.value.code is FailureCode.CONCURRENT_UPDATE and info.value.retryable


def test_unreachable_remote_is_retryable_and_changes_nothing(pair, tmp_path):
    _remote, a, _b = pair
    before = reopen(a).revision()
    with pytest.raises(MemoryFailure) as info:
        sync(reopen(a), "git://127.0.0.1:1/no-such-remote.git")  # nothing listens there
    assert info.value.code is FailureCode.REMOTE_UNAVAILABLE and info.value.retryable
    assert reopen(a).revision() == before


def test_invalid_remote_tree_is_rejected_and_nothing_installed(pair, tmp_path):
    remote, a, b = pair
    add(a, "topics/dana.md", "Dana runs a bike shop.")
    converge(remote, a, b)
    add(b, "topics/dana.md", "Dana lives in Leeds.", "openprogram/s1/u2")
    sync(reopen(b), remote)
    # someone pushes a topic with an uncited paragraph straight to the remote
    text = (b.root / "topics/dana.md").read_text() + "\nAn uncited claim.\n"
    (b.root / "topics/dana.md").write_text(text)
    from openprogram_memory.transaction.history import commit_paths
    bad = commit_paths(b.root, ["topics/dana.md"], "hand-made bad commit")
    from openprogram_memory.sync import transport
    transport.push(b.root, remote, transport.fetch(b.root, remote), bad)
    before, files = reopen(a).revision(), memory_files(a)
    with pytest.raises(MemoryFailure) as info:
        sync(reopen(a), remote)
    assert info.value.code is FailureCode.INVALID_TOPIC_FORMAT
    assert reopen(a).revision() == before and memory_files(a) == files


def test_lock_held_is_retryable(pair):
    remote, a, b = pair
    add(b, "topics/dana.md", "Dana runs a bike shop.")
    sync(reopen(b), remote)
    from openprogram_memory.sync import run
    from openprogram_memory.workspace.state import write_lock
    import threading

    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with write_lock(a.layout, 1):
            held.set()
            release.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    held.wait(5)
    run.LOCK_TIMEOUT = 0.2
    try:
        with pytest.raises(MemoryFailure) as info:
            sync(reopen(a), remote)
    finally:
        run.LOCK_TIMEOUT = 5.0
        release.set()
        thread.join()
    assert info.value.code is FailureCode.CONCURRENT_UPDATE and info.value.retryable
    assert sync(reopen(a), remote)["merged"]


def test_the_transaction_refuses_an_archive_replacement_that_drops_a_frame(pair):
    _remote, a, _b = pair
    rel = "sources/openprogram/_v2/s1.md"
    frames = parse_archive((a.root / rel).read_text()).frames
    head = "<!-- openprogram-source-archive:v2 -->\n\n"
    dropped = (head + "".join(f.frame() for f in frames[1:])).encode()
    before = reopen(a).revision()
    with pytest.raises(MemoryFailure) as info:
        a.edit(lambda staging: staging.replace_archive(rel, dropped), policy=Policy.MODEL)
    assert info.value.code is FailureCode.APPEND_ONLY_REQUIRED
    assert reopen(a).revision() == before
    grown = (head + "".join(f.frame() for f in frames)
             + SourceMessage("openprogram/s1/z", "D", "u", "2026-09-01T00:00:00Z", "new").frame()).encode()
    a.edit(lambda staging: staging.replace_archive(rel, grown), policy=Policy.MODEL)
    assert (a.root / rel).read_bytes() == grown


def test_a_merge_never_overwrites_an_invalid_hand_edit_and_a_merge_beside_it_keeps_it(pair):
    remote, a, b = pair
    rid = add(a, "topics/dana.md", "Dana runs a bike shop.")
    converge(remote, a, b)
    typed = (a.root / "topics/dana.md").read_text() + "\nDana's shop opens at nine, typed by hand.\n"
    (a.root / "topics/dana.md").write_text(typed)  # uncited: never adopted, only on disk
    # a merge that does not touch that file goes ahead and leaves the typed text where it is
    other = add(b, "topics/work.md", "Dana uses FastAPI.", "openprogram/s1/u3")
    sync(reopen(b), remote)
    assert sync(reopen(a), remote)["merged"] and other in records(a)
    assert (a.root / "topics/dana.md").read_text() == typed
    # one that does is refused, as `memory write` refuses, and nothing changes
    update(b, rid, "Dana runs a bike shop in York.")
    sync(reopen(b), remote)
    head, files = Repo(str(a.root)).head(), memory_files(a)
    with pytest.raises(MemoryFailure) as info:
        sync(reopen(a), remote)
    failure = info.value
    assert failure.code is FailureCode.WRITER_PRECONDITION_FAILED and failure.details["file"] == "topics/dana.md"
    assert not failure.retryable and failure.exit_code == 65  # a retry changes nothing until the person fixes it
    assert "`openprogram memory edit topics/dana.md`" in failure.message
    assert memory_files(a) == files and Repo(str(a.root)).head() == head
    assert (a.root / "topics/dana.md").read_text() == typed


def test_more_records_than_the_recent_view_holds_settle_with_the_same_fresh_views(pair):
    remote, a, b = pair
    for ws in (a, b):  # the recent view lists fewer records than A has: the rest are ordered by the timeline alone
        write_config_value(ws.settings.state_dir, "memory.recent.limit", 3)
    sources = ["openprogram/s1/u1", "openprogram/s1/u2", "openprogram/s1/u3"]  # three days of evidence
    for n in range(12):
        add(a, f"topics/t{n % 2}.md", f"Dana keeps note number {n}.", sources[n % 3])
    add(b, "topics/tea.md", "Dana likes tea.")
    converge(remote, a, b, a, b)
    assert memory_files(a) == memory_files(b)
    for ws in (a, b):
        assert check_workspace(reopen(ws)) == []  # no stale recent_events.jsonl or timeline day
    heads = [Repo(str(ws.root)).head() for ws in (a, b)]
    for ws in (a, b, a):
        again = sync(reopen(ws), remote)
        assert not again["merged"] and not again["pushed"]  # settled: no merge commit after merge commit
    assert [Repo(str(ws.root)).head() for ws in (a, b)] == heads


def test_views_one_machine_rendered_in_its_own_order_are_replaced_by_the_next_sync(pair):
    remote, a, b = pair
    sources = ["openprogram/s1/u1", "openprogram/s1/u2", "openprogram/s1/u3"]
    for n in range(6):
        add(a, "topics/dana.md", f"Dana keeps note number {n}.", sources[n % 3])
    converge(remote, a, b)
    # B numbered the records its own way (as sync left machines before) and rendered its views with it
    runtime = RuntimeState.load(b.layout)
    runtime.created_order = {i: n for n, i in enumerate(reversed(runtime.created_order))}
    atomic_write_text(b.layout.path(RUNTIME), runtime.to_text())
    reopen(b).rebuild()
    sync(reopen(b), remote)
    sync(reopen(a), remote)  # the topics did not change: only the views
    assert memory_files(a) == memory_files(b)
    assert check_workspace(reopen(a)) == []
    assert not sync(reopen(b), remote)["pushed"] and not sync(reopen(a), remote)["pushed"]


def test_a_clone_of_a_fresh_remote_checks_out_what_sync_pushed(pair, tmp_path):
    """A new bare remote's HEAD names ``master``; sync pushes ``main`` and points HEAD at it, so a hand ``git
    clone`` checks the memory out instead of warning "remote HEAD refers to nonexistent ref"."""
    import subprocess

    remote, a, _ = pair
    add(a, "topics/dana.md", "Dana runs a bike shop.")
    assert sync(reopen(a), remote)["pushed"]
    clone = subprocess.run(["git", "clone", remote, str(tmp_path / "clone")], capture_output=True, text=True,
                           check=True)
    assert "nonexistent ref" not in clone.stderr
    assert (tmp_path / "clone/topics/dana.md").read_bytes() == (a.root / "topics/dana.md").read_bytes()
