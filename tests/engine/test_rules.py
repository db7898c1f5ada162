"""Every strict topic rule rejects, naming file and line, and changes nothing."""

from __future__ import annotations

import os
import re

import pytest

from engine.helpers import make_workspace, record, tree_digest
from openprogram_memory.failures import FailureCode, MemoryFailure


@pytest.fixture
def ws():
    ws = make_workspace()
    ws.update(changes=[
        {"path": "topics/people/dana.md", "content": "# Dana\n\n" + record("Dana runs a bike shop.")},
        {"path": "topics/projects/billing.md", "content": "# Billing\n\n" + record("Billing uses FastAPI.", "openprogram/s1/u3")},
    ])
    return ws


def ids_of(ws, path):
    return ws.tree().files[path].ids


def rejected(ws, code, **update):
    before_bytes, before_rev = tree_digest(ws.root), ws.revision()
    with pytest.raises(MemoryFailure) as info:
        ws.update(**update)
    assert info.value.code is code, info.value.to_json()
    assert tree_digest(ws.root) == before_bytes
    assert ws.revision() == before_rev
    return info.value


def test_uncited_text_names_file_and_line(ws):
    text = ws.read_topic("topics/people/dana.md") + "\nDana likes tea.\n"
    failure = rejected(ws, FailureCode.INVALID_TOPIC_FORMAT, changes=[{"path": "topics/people/dana.md", "content": text}])
    assert failure.details["file"] == "topics/people/dana.md"
    assert failure.details["rule"] == "uncited-text"
    line = text.splitlines().index("Dana likes tea.") + 1
    assert failure.details["line"] == line
    assert f"topics/people/dana.md:{line}" in failure.message


def test_uncited_text_rejected_even_under_an_otherwise_empty_heading(ws):
    rejected(ws, FailureCode.INVALID_TOPIC_FORMAT,
             changes=[{"path": "topics/new.md", "content": "# New\n\n## Empty\n\nJust prose.\n"}])


FRONTMATTER = "---\ntags: [people]\naliases:\n  - Dana B.\n---\n"


def test_frontmatter_is_kept_byte_for_byte_and_records_go_after_it(ws):
    """Obsidian's Properties at the top of a topic are no record and break no rule; a record created under no
    heading (at the start or the end) goes after them, never before (the file would lose its properties)."""
    path = "topics/people/dana.md"
    ws.update(changes=[{"path": path, "content": FRONTMATTER + ws.read_topic(path)}])
    for position in ("start", "end"):
        ws.update(memory_changes=[{"op": "create_record", "content": f"Dana opens at nine ({position}).",
                                   "time": "2026-08-10", "sources": [{"source": "openprogram/s1/u2", "label": "hours"}],
                                   "destination": {"topic_path": path, "headings": [], "position": position}}])
    text = ws.read_topic(path)
    assert text.startswith(FRONTMATTER + "\nDana opens at nine (start).") and "Dana opens at nine (end)." in text
    assert "Dana runs a bike shop." in text



def _in_order(lines: list[bytes], within: list[bytes]) -> bool:
    rest = iter(within)
    return all(line in rest for line in lines)


def test_a_windows_saved_file_keeps_its_bytes_and_new_records_take_its_line_endings(ws):
    """A topic saved with a BOM and CRLF (Obsidian on Windows, git autocrlf): two writes leave every line the
    person wrote as it was, BOM included, and the lines they add end in CRLF too: git diff shows only them."""
    path = "topics/people/dana.md"
    target = ws.root / path
    target.write_bytes(b"\xef\xbb\xbf" + (FRONTMATTER + ws.read_topic(path)).replace("\n", "\r\n").encode())
    before = target.read_bytes()
    for position in ("end", "start"):
        ws.update(memory_changes=[{"op": "create_record", "content": f"Dana opens at nine ({position}).",
                                   "time": "2026-08-10", "sources": [{"source": "openprogram/s1/u2", "label": "hours"}],
                                   "destination": {"topic_path": path, "headings": [], "position": position}}])
    after = target.read_bytes()
    assert after.startswith(b"\xef\xbb\xbf---\r\n") and after.endswith(b"\r\n")
    assert b"\n" not in after.replace(b"\r\n", b""), after  # every line the writes added ends in CRLF
    assert _in_order(before.split(b"\r\n"), after.split(b"\r\n")), after  # and what was there is untouched
    assert b"Dana opens at nine (end).[^" in after and b"Dana opens at nine (start).[^" in after
    assert sorted(r.content for r in ws.records() if r.topic == path) == [
        "Dana opens at nine (end).", "Dana opens at nine (start).", "Dana runs a bike shop."]


def test_dangling_link(ws):
    text = "# Notes\n\n" + record("See [shop](people/dana.md#^deadbeef) for details.")
    failure = rejected(ws, FailureCode.INVALID_TOPIC_FORMAT, changes=[{"path": "topics/notes.md", "content": text}])
    assert failure.details["rule"] == "dangling-link"


def test_a_link_to_a_missing_topic_file_dangles_too(ws):
    """``[text](other.md)`` without a ``#^id`` must resolve as well: to a topic file that exists."""
    text = "# Notes\n\n" + record("The [platform](platform.md) team owns billing.")
    failure = rejected(ws, FailureCode.INVALID_TOPIC_FORMAT, changes=[{"path": "topics/notes.md", "content": text}])
    assert (failure.details["rule"], failure.details["line"]) == ("dangling-link", 3)
    assert "topics/platform.md" in failure.message
    text = "# Notes\n\n" + record("[Dana](people/dana.md) runs the shop, see [the docs](https://x.org/a.md).")
    assert ws.update(changes=[{"path": "topics/notes.md", "content": text}]).memory_committed
    failure = rejected(ws, FailureCode.INVALID_TOPIC_FORMAT, base_revision=ws.revision(),
                       changes=[{"path": "topics/people/dana.md", "action": "delete"}])
    assert (failure.details["rule"], failure.details["file"]) == ("dangling-link", "topics/notes.md")


def test_link_to_existing_record_is_accepted(ws):
    target = ids_of(ws, "topics/people/dana.md")[0]
    ws.update(changes=[{"path": "topics/notes.md",
                        "content": "# Notes\n\n" + record(f"See [shop](people/dana.md#^{target}) for details.")}])
    relations = (ws.root / "relations.json").read_text()
    assert target in relations


def test_obsidian_wikilinks_resolve_by_note_name_and_are_never_rewritten(ws):
    """``[[note#^id]]`` as Obsidian writes it: by file name without .md from the topics dir (or the memory dir),
    any case, with a label or as an embed; a link to a heading needs the note, an attachment is not read."""
    target = ids_of(ws, "topics/people/dana.md")[0]
    links = (f"See [[dana#^{target}]], [[people/dana.md#^{target}|the shop]], [[topics/people/dana#^{target}]], "
             f"![[Dana#^{target}]], [[./people/dana#^{target}]], [[billing#Stack]], [[Dana]] and ![[photo.png]].")
    ws.update(changes=[{"path": "topics/notes.md", "content": "# Notes\n\n" + record(links)}])
    assert links in ws.read_topic("topics/notes.md")


@pytest.mark.parametrize("link", ["[[dana#^deadbeef]]", "[[platform]]", "[[people/platform#^deadbeef|x]]",
                                  "![[billing#^deadbeef]]", "[[#^deadbeef]]"])
def test_a_dangling_wikilink_is_refused_like_a_dangling_link(ws, link):
    text = "# Notes\n\n" + record(f"See {link} for details.")
    failure = rejected(ws, FailureCode.INVALID_TOPIC_FORMAT, changes=[{"path": "topics/notes.md", "content": text}])
    assert (failure.details["rule"], failure.details["file"], failure.details["line"]) == (
        "dangling-link", "topics/notes.md", 3)
    assert link.lstrip("!").split("|")[0].removesuffix("]]") in failure.message


def test_a_line_of_embeds_or_wikilinks_only_is_a_view_not_a_record_and_its_links_must_resolve(ws):
    """Obsidian's ``![[note#^id]]`` on a line of its own shows another record: no claim, so no citation or
    block ID is asked of it (like a heading); its links are checked like any wikilink, and follow a move."""
    target = ids_of(ws, "topics/people/dana.md")[0]
    view = f"![[dana#^{target}]]\n\n[[billing]] ![[people/dana#^{target}|shop]]"
    ws.update(changes=[{"path": "topics/notes.md", "content": "# Notes\n\n" + view + "\n\n" + record("Tea at four.")}])
    assert view in ws.read_topic("topics/notes.md") and len(ws.tree().files["topics/notes.md"].records) == 1
    ws.update(memory_changes=[{"op": "move_records", "memory_ids": [target], "destination": {
        "topic_path": "topics/people/shop.md", "headings": ["Shop"], "position": "end"}}])
    assert f"![[shop#^{target}]]" in ws.read_topic("topics/notes.md")  # (the product's move keeps it resolving)
    failure = rejected(ws, FailureCode.INVALID_TOPIC_FORMAT, changes=[
        {"path": "topics/more.md", "content": "# More\n\n![[dana#^deadbeef]]\n"}])
    assert (failure.details["rule"], failure.details["line"]) == ("dangling-link", 3)
    failure = rejected(ws, FailureCode.INVALID_TOPIC_FORMAT, changes=[
        {"path": "topics/more.md", "content": f"# More\n\nDana is great: ![[shop#^{target}]]\n"}])
    assert (failure.details["rule"], failure.details["line"]) == ("uncited-text", 3)  # a claim beside it: a record
    failure = rejected(ws, FailureCode.INVALID_TOPIC_FORMAT, changes=[
        {"path": "topics/more.md", "content": f"# More\n\n![[shop#^{target}]] ![[photo.png]]\n"}])
    assert failure.details["rule"] == "uncited-text"  # an attachment is not read, so nothing would check it


def test_an_edit_that_breaks_a_wikilink_of_another_file_is_refused(ws):
    """Deleting the note or record a wikilink names, or adding a note with a shorter path for its name (Obsidian
    then resolves the link to that one), breaks the link: refused, as for a markdown link."""
    target = ids_of(ws, "topics/people/dana.md")[0]
    ws.update(changes=[{"path": "topics/notes.md", "content": "# Notes\n\n" + record(f"See [[dana#^{target}]].")}])
    failure = rejected(ws, FailureCode.INVALID_TOPIC_FORMAT, base_revision=ws.revision(),
                       changes=[{"path": "topics/people/dana.md", "action": "delete"}])
    assert (failure.details["rule"], failure.details["file"]) == ("dangling-link", "topics/notes.md")
    failure = rejected(ws, FailureCode.INVALID_TOPIC_FORMAT, changes=[
        {"path": "topics/dana.md", "content": "# Dana\n\n" + record("Dana is tall.", "openprogram/s1/u3")}])
    assert (failure.details["rule"], failure.details["file"]) == ("dangling-link", "topics/notes.md")
    assert "topics/dana.md" in failure.message
    assert ws.update(changes=[{"path": "topics/work/notes/dana.md", "content": "# Dana\n\n" + record(
        "Dana is tall.", "openprogram/s1/u3")}]).memory_committed  # a longer path for the name: the link stays
    ws.update(changes=[{"path": "topics/notes.md", "content": ws.read_topic("topics/notes.md").replace(
        "[[dana#", "[[people/dana#")}])  # (the path Obsidian writes once the name is not unique)
    assert ws.update(changes=[{"path": "topics/dana.md", "content": "# Dana\n\n" + record(
        "Dana is short.", "openprogram/s1/u2")}]).memory_committed


def test_lost_block_id_on_hand_edit(ws):
    text = ws.read_topic("topics/people/dana.md")
    block_id = ids_of(ws, "topics/people/dana.md")[0]
    before = tree_digest(ws.root)
    with pytest.raises(MemoryFailure) as info:
        ws.write_topic("topics/people/dana.md", text.replace(f" ^{block_id}", ""))
    assert info.value.code is FailureCode.INVALID_TOPIC_FORMAT
    assert info.value.details["rule"] == "lost-block-id"
    assert tree_digest(ws.root) == before


def test_hand_edit_may_rewrite_text_keeping_the_id(ws):
    text = ws.read_topic("topics/people/dana.md")
    block_id = ids_of(ws, "topics/people/dana.md")[0]
    result = ws.write_topic("topics/people/dana.md", text.replace("runs a bike shop", "runs two bike shops"))
    assert result.changed_files == ["topics/people/dana.md"]
    assert ws.get(block_id)["content"] == "Dana runs two bike shops."


def test_model_edit_cannot_drop_an_id_from_a_surviving_record(ws):
    text = ws.read_topic("topics/people/dana.md")
    block_id = ids_of(ws, "topics/people/dana.md")[0]
    rejected(ws, FailureCode.INVALID_TOPIC_FORMAT,
             changes=[{"path": "topics/people/dana.md", "content": text.replace(f" ^{block_id}", "")}])


def test_unknown_source_anchor(ws):
    text = ws.read_topic("topics/people/dana.md")
    import re

    bad = re.sub(r"#source-[0-9a-f]{16}", "#source-0000000000000000", text)
    failure = rejected(ws, FailureCode.MISSING_SOURCE, changes=[{"path": "topics/people/dana.md", "content": bad}])
    assert failure.details["rule"] == "unknown-source"


def test_unarchived_source_handle(ws):
    rejected(ws, FailureCode.MISSING_SOURCE,
             changes=[{"path": "topics/x.md", "content": record("A fact.", "openprogram/nope/u9")}])


def test_symlinked_target(ws, tmp_path):
    outside = tmp_path / "outside.md"
    outside.write_text((ws.root / "sources/openprogram/_v2/s1.md").read_text())
    link = ws.root / "sources/openprogram/_v2/evil.md"
    os.symlink(outside, link)
    text = ws.read_topic("topics/people/dana.md").replace("_v2/s1.md#", "_v2/evil.md#")
    before = tree_digest(ws.root)
    with pytest.raises(MemoryFailure) as info:
        ws.update(changes=[{"path": "topics/people/dana.md", "content": text}])
    assert info.value.details["rule"] == "symlinked-source"
    assert tree_digest(ws.root) == before


def test_duplicate_id_across_files(ws):
    dana = ws.read_topic("topics/people/dana.md")
    failure = rejected(ws, FailureCode.INVALID_TOPIC_FORMAT,
                       changes=[{"path": "topics/people/copy.md", "content": dana}])
    assert failure.details["rule"] == "duplicate-id"


@pytest.mark.parametrize("date", ["2026-02-30", "2026-13", "20260101", "yesterday"])
def test_bad_calendar_date(ws, date):
    text = ws.read_topic("topics/people/dana.md")
    import re

    bad = re.sub(r"Time: `[^`]*`", f"Time: `{date}`", text)
    failure = rejected(ws, FailureCode.INVALID_TOPIC_FORMAT, changes=[{"path": "topics/people/dana.md", "content": bad}])
    assert failure.details["rule"] == "bad-date"


@pytest.mark.parametrize("mutate, rule", [
    (lambda t: re.sub(r"(\[\^e-[0-9a-f]{10}\])( \^)", r"\1 and then more text.\2", t, count=1), "text-after-citation"),
    (lambda t: re.sub(r"\[\^e-[0-9a-f]{10}\]( \^)", r"\1", t, count=1), "uncited-text"),
    (lambda t: t.replace("Dana runs a bike shop.", "", 1), "no-text-before-citation"),
    (lambda t: t.replace("; Sources: ", "; ", 1), "malformed-definition"),
    (lambda t: t + next(line for line in t.splitlines() if line.startswith("[^")) + "\n", "duplicate-definition"),
    (lambda t: t.replace("shop.[^", "shop.[^zz][^", 1), "undefined-citation"),
    (lambda t: re.sub(r"Sources: \[[^\]]*\]", "Sources: []", t, count=1), "empty-label"),
    (lambda t: t + "\n[^e-1111111111]: Time: `2026`; Sources: [x](../../sources/openprogram/_v2/s1.md#source-d4939e57a74bbf13)\n", "unused-definition"),
])
def test_other_strict_rules(ws, mutate, rule):
    text = mutate(ws.read_topic("topics/people/dana.md"))
    failure = rejected(ws, FailureCode.INVALID_TOPIC_FORMAT, changes=[{"path": "topics/people/dana.md", "content": text}])
    assert failure.details["rule"] == rule


def test_invented_ids_are_replaced_by_runtime_ids(ws):
    result = ws.update(changes=[{"path": "topics/x.md", "content": "A fact.[^e1] ^myownid\n\n[^e1]: Sources: [f](openprogram/s1/u1)\n"}])
    text = ws.read_topic("topics/x.md")
    assert "^myownid" not in text
    assert result.block_ids and f"^{result.block_ids[0]}" in text


@pytest.mark.parametrize("path, code", [
    ("../../x.md", FailureCode.PATH_OUTSIDE_WORKSPACE),
    ("/etc/x", FailureCode.PATH_OUTSIDE_WORKSPACE),
    ("topics/../../x.md", FailureCode.PATH_OUTSIDE_WORKSPACE),
    ("sources/openprogram/_v2/s1.md", FailureCode.READ_ONLY_PATH),
    ("core.md", FailureCode.READ_ONLY_PATH),
    ("timeline/2026/08/09.md", FailureCode.READ_ONLY_PATH),
    ("topics/notes.txt", FailureCode.READ_ONLY_PATH),
    ("", FailureCode.INVALID_ARGUMENT),
    ("./", FailureCode.INVALID_ARGUMENT),
    ("topics/.hidden.md", FailureCode.READ_ONLY_PATH),
    ("topics/.git/x.md", FailureCode.READ_ONLY_PATH),
])
def test_paths_outside_topics(ws, path, code):
    rejected(ws, code, changes=[{"path": path, "content": record("x.")}])


def test_exactly_one_form(ws):
    rejected(ws, FailureCode.INVALID_ARGUMENT, changes=[], patch="x")
    rejected(ws, FailureCode.INVALID_ARGUMENT)


def test_an_archive_changed_during_the_edit_is_refused(ws):
    """sources/ is append-only even against the edit's own code: a callback that
    rewrites an archive file aborts the transaction before anything installs."""
    from openprogram_memory.transaction.engine import Policy

    archive = ws.root / "sources/openprogram/_v2/s1.md"
    topic_before = tree_digest(ws.root / "topics")

    def edit(staging):
        staging.write("topics/new.md", record("A new fact.", "openprogram/s1/u2"))
        archive.write_text(archive.read_text().replace("bike shop", "car shop"))

    with pytest.raises(MemoryFailure) as info:
        ws.edit(edit, policy=Policy.MODEL)
    assert info.value.code is FailureCode.APPEND_ONLY_REQUIRED and info.value.details["rule"] == "append-only"
    assert tree_digest(ws.root / "topics") == topic_before


def test_check_strict_refuses_a_cited_paragraph_without_a_block_id():
    """Normalization gives every cited paragraph an ID; check_strict still refuses
    one that skipped it (a check of text that was not normalized)."""
    from openprogram_memory.topics.model import parse_topic
    from openprogram_memory.transaction.validate import check_strict

    doc = parse_topic("A fact.[^e1]\n\n[^e1]: Time: `2026`; Sources: [x](../sources/a/_v2/b.md#source-0)\n",
                      "topics/x.md")
    with pytest.raises(MemoryFailure) as info:
        check_strict(doc, lambda rel, anchor: object(), lambda rel: False)
    assert info.value.details["rule"] == "missing-block-id"


def test_evidence_linking_outside_the_archive_is_a_bad_source_target(ws):
    text = re.sub(r"\(\.\./\.\./sources/[^#)]*#", "(../notes.md#", ws.read_topic("topics/people/dana.md"))
    failure = rejected(ws, FailureCode.INVALID_TOPIC_FORMAT, changes=[{"path": "topics/people/dana.md", "content": text}])
    assert failure.details["rule"] == "bad-source-target"


def test_structured_policy_refuses_an_id_no_delete_names(ws):
    """The guard behind memory_changes: an edit under the STRUCTURED policy may lose
    exactly the IDs its delete ops name, whatever its editor code does."""
    from openprogram_memory.transaction.engine import Policy

    first = ids_of(ws, "topics/people/dana.md")[0]
    before = tree_digest(ws.root)

    def edit(staging):
        staging.delete("topics/people/dana.md")

    with pytest.raises(MemoryFailure) as info:
        ws.edit(edit, policy=Policy.STRUCTURED, allowed_deletes=frozenset())
    assert info.value.details["rule"] == "lost-block-id" and info.value.details["block_id"] == first
    assert tree_digest(ws.root) == before
    ws.edit(edit, policy=Policy.STRUCTURED, allowed_deletes=frozenset({first}))
    assert not (ws.root / "topics/people/dana.md").exists()


def test_a_block_id_removed_by_hand_wedges_nothing(tmp_path):
    """Removing by hand a block ID that another record links to must not wedge every later change."""
    import pytest

    from engine.helpers import linked_pair, make_workspace, record
    from openprogram_memory.failures import MemoryFailure

    ws = make_workspace(tmp_path / "state")
    target = linked_pair(ws)
    people = ws.root / "topics/people.md"
    people.write_text(people.read_text().replace(f" ^{target}", ""))  # outside the product
    unrelated = ws.update(changes=[{"path": "topics/tea.md", "content": record("Tea at four.", "openprogram/s1/u3")}])
    assert unrelated.memory_committed
    # people.md breaks a record rule now, so memory is served from its last valid version, where the link target
    # still is: writing the file that links to it goes through too; only people.md itself waits for a fix
    work = ws.read_topic("topics/work.md")
    assert ws.update(changes=[{"path": "topics/work.md", "content": work.replace("nine", "ten")}],
                     base_revision=ws.revision()).memory_committed
    assert target in {r.memory_id for r in ws.records()}
    tea = next(r.memory_id for r in ws.records() if "Tea" in r.content)
    ws.update(changes=[{"path": "topics/menu.md",
                        "content": record(f"The [tea](tea.md#^{tea}) is oolong.", "openprogram/s1/u3")}])
    with pytest.raises(MemoryFailure) as failure:  # a change that breaks a link that resolved: still refused
        ws.update(memory_changes=[{"op": "delete_record", "memory_id": tea}])
    assert failure.value.details["rule"] == "dangling-link" and failure.value.details["file"] == "topics/menu.md"


def test_a_link_left_dangling_by_a_valid_hand_edit_blocks_only_edits_of_its_own_file(tmp_path):
    """A hand edit can keep every record rule and still link to nowhere (links are a tree rule): that
    file's next change must fix the link, every other change goes through."""
    import pytest

    from engine.helpers import linked_pair, make_workspace, record
    from openprogram_memory.failures import MemoryFailure

    ws = make_workspace(tmp_path / "state")
    target = linked_pair(ws)
    work = ws.root / "topics/work.md"
    work.write_text(work.read_text().replace(f"#^{target}", "#^0badf00d"))  # outside the product
    assert ws.update(changes=[{"path": "topics/tea.md", "content": record("Tea at four.", "openprogram/s1/u3")}]
                     ).memory_committed
    with pytest.raises(MemoryFailure) as failure:
        ws.update(changes=[{"path": "topics/work.md", "content": work.read_text().replace("nine", "ten")}],
                  base_revision=ws.revision())
    assert failure.value.details["rule"] == "dangling-link" and failure.value.details["file"] == "topics/work.md"


def _replacing_archive(ws, extra: bytes, also=None):
    """An edit that replaces s1's archive with its bytes plus ``extra`` (``also`` runs on the staging too)."""
    from openprogram_memory.transaction.engine import Policy

    rel = "sources/openprogram/_v2/s1.md"
    data = (ws.root / rel).read_bytes() + extra

    def edit(staging):
        staging.replace_archive(rel, data)
        if also is not None:
            also(staging)

    return lambda: ws.edit(edit, policy=Policy.MODEL)


def test_a_replaced_archive_may_not_hold_one_source_id_twice(ws):
    archive = ws.root / "sources/openprogram/_v2/s1.md"
    first_frame = archive.read_text().split("\n\n", 1)[1].split("\n\n<a id=")[0]  # the first message's frame
    before = tree_digest(ws.root)
    with pytest.raises(MemoryFailure) as info:
        _replacing_archive(ws, ("\n" + first_frame + "\n").encode())()
    assert info.value.code is FailureCode.APPEND_ONLY_REQUIRED and "appears twice" in info.value.message
    assert tree_digest(ws.root) == before


def test_an_edit_may_not_both_append_to_and_replace_one_archive(ws):
    from openprogram_memory.sources.archive import SourceMessage

    def cite_a_new_message(staging):
        staging.add_source(SourceMessage("openprogram/s1/u9", "Dana", "user-1", "2026-08-12T09:00:00+08:00",
                                         "We close on Sundays."))
        staging.write("topics/hours.md", record("The shop closes on Sundays.", "openprogram/s1/u9"))

    frame = SourceMessage("openprogram/s1/u8", "Dana", "user-1", "2026-08-12T08:00:00+08:00", "We open at nine.").frame()
    before = tree_digest(ws.root)
    with pytest.raises(MemoryFailure) as info:
        _replacing_archive(ws, ("\n" + frame + "\n").encode(), cite_a_new_message)()
    assert info.value.code is FailureCode.APPEND_ONLY_REQUIRED and "both append to and replace" in info.value.message
    assert tree_digest(ws.root) == before
