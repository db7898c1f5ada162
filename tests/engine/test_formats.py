"""Topic parse/render, the v2 archive, token counting."""

from __future__ import annotations

import pytest

from openprogram_memory.sources.archive import (
    HEADER, SourceMessage, archive_messages, parse_archive, read_archive,
)
from openprogram_memory.failures import FailureCode, MemoryFailure
from openprogram_memory.tokens import count_tokens
from openprogram_memory.topics.ids import evidence_id, new_block_id, source_anchor
from openprogram_memory.topics.model import parse_topic

REFERENCE = """# Dave

## Work

Dave runs a bike shop.[^e-1175dea39c] ^f888f60e

Merged: see [shop](other.md#^abcd1234).[^e-1][^e-2] ^11111111 ^22222222

```
code ^notanid
```

<!-- a comment -->

[^e-1175dea39c]: Time: `2024-03`; Sources: [bike shop](../../sources/openprogram/_v2/s1.md#source-8339b8d31a2b4c5d)
[^e-1]: 2024-03 · Sources: [legacy](../../sources/openprogram/s1.md#source-1)
[^e-2]: Time: `undated`; Sources: [a](x.md#source-2), [b](y.md#source-3)
"""


FRONTMATTER = "---\ntags: [shop, people]\naliases:\n  - Dave R.\n\ncreated: 2024-03-01\n---\n"


@pytest.mark.parametrize("text", [REFERENCE, REFERENCE.rstrip("\n"), "", "\n\n", "no newline", "# Only\n\n\n\ntext\n",
                                  FRONTMATTER + REFERENCE, FRONTMATTER + "\n" + REFERENCE, FRONTMATTER])
def test_parse_render_is_byte_stable(text):
    assert parse_topic(text, "topics/people/dave.md").render() == text


def test_parse_model():
    doc = parse_topic(REFERENCE, "topics/people/dave.md")
    (headings, first), (_, merged) = list(doc.records_with_headings())
    assert headings == ("Dave", "Work")
    assert first.ids == ["f888f60e"] and first.citations == ["e-1175dea39c"]
    assert first.content == "Dave runs a bike shop."
    assert merged.ids == ["11111111", "22222222"] and merged.identity == "22222222"
    defs = doc.definitions()
    assert defs["e-1175dea39c"].time == "2024-03" and defs["e-1175dea39c"].sources[0].label == "bike shop"
    assert defs["e-1"].legacy and defs["e-1"].time == "2024-03"
    assert [s.label for s in defs["e-2"].sources] == ["a", "b"]
    assert "^notanid" not in doc.block_ids()


def test_frontmatter_opening_a_file_is_one_block_and_no_record():
    """Obsidian's Properties (YAML between ``---`` lines at the very top) are kept as one block, like a heading:
    no paragraph, no record, whatever the YAML holds (a blank line, a ``key: value`` that reads as prose)."""
    doc = parse_topic(FRONTMATTER + REFERENCE, "topics/people/dave.md")
    assert doc.blocks[0].kind == "frontmatter" and doc.blocks[0].text + "\n" == FRONTMATTER
    assert [p.line for p in doc.paragraphs()] == [p.line + 7 for p in parse_topic(REFERENCE, "x").paragraphs()]
    for not_frontmatter in ("# Dave\n---\ntags: x\n---\n", "---\ntags: x\n"):  # not at the top; never closed
        assert all(b.kind != "frontmatter" for b in parse_topic(not_frontmatter, "x").blocks)


def test_identity_derivations():
    assert source_anchor("openprogram/s1/u1") == "source-d4939e57a74bbf13"
    taken = {new_block_id("topics/a.md", "body", set())}
    second = new_block_id("topics/a.md", "body", taken)
    assert len(second) == 8 and second not in taken
    assert evidence_id("2026", ["b", "a"]) == evidence_id("2026", ["a", "b"])
    assert evidence_id("2026", ["a"]).startswith("e-") and len(evidence_id("2026", ["a"])) == 12


MSG = SourceMessage("openprogram/s1/u1", "B", "telegram-user-42", "2026-08-09T10:00:00+08:00",
                    "I prefer exact answers.\nSecond line.")


def test_archive_frame_format_and_roundtrip(tmp_path):
    archive_messages(tmp_path, [MSG])
    text = (tmp_path / "sources/openprogram/_v2/s1.md").read_text()
    assert text.startswith(HEADER + "\n\n<a id=\"" + MSG.anchor + "\"></a>\n<!-- source-id:openprogram/s1/u1 -->\n")
    assert "<!-- speaker-id:telegram%2Duser%2D42 -->" in text
    assert "<!-- record-lines:2 -->\n[2026-08-09T10:00:00+08:00] B (telegram-user-42): I prefer exact answers.\nSecond line.\n\n" in text
    parsed = read_archive(tmp_path / "sources/openprogram/_v2/s1.md")
    assert parsed.frames == [MSG] and not parsed.damaged


def test_archive_is_content_addressed(tmp_path):
    assert archive_messages(tmp_path, [MSG]) == ["sources/openprogram/_v2/s1.md"]
    before = (tmp_path / "sources/openprogram/_v2/s1.md").read_bytes()
    assert archive_messages(tmp_path, [MSG]) == []
    assert (tmp_path / "sources/openprogram/_v2/s1.md").read_bytes() == before
    changed = SourceMessage(MSG.source_id, "B", "telegram-user-42", MSG.timestamp, "different")
    with pytest.raises(MemoryFailure) as info:
        archive_messages(tmp_path, [changed])
    assert info.value.code is FailureCode.APPEND_ONLY_REQUIRED


def test_damaged_tail_ends_parsing_and_refuses_append(tmp_path):
    archive_messages(tmp_path, [MSG])
    path = tmp_path / "sources/openprogram/_v2/s1.md"
    second = SourceMessage("openprogram/s1/u2", "B", "x", "2026-08-09T10:01:00+08:00", "more")
    path.write_text(path.read_text() + second.frame()[:-20])  # truncated frame
    parsed = read_archive(path)
    assert parsed.damaged and [f.source_id for f in parsed.frames] == ["openprogram/s1/u1"]
    before = path.read_bytes()
    with pytest.raises(MemoryFailure) as info:
        archive_messages(tmp_path, [SourceMessage("openprogram/s1/u3", "B", "x", "2026", "x")])
    assert info.value.code is FailureCode.APPEND_ONLY_REQUIRED
    assert path.read_bytes() == before


def test_v1_metadata_reads_origin_scope_as_authority_tier():
    import base64
    import json

    meta = base64.urlsafe_b64encode(json.dumps({"origin_scope": "owner", "trust_state": "pending"}).encode()).decode().rstrip("=")
    text = (f"{HEADER}\n\n<a id=\"{MSG.anchor}\"></a>\n<!-- source-id:{MSG.source_id} -->\n<!-- speaker-id:x -->\n"
            f"<!-- source-meta:{meta} -->\n<!-- record-lines:1 -->\n[2026-01-01] A (x): hi\n\n")
    frame = parse_archive(text).frames[0]
    assert frame.authority_tier == "owner" and frame.trust_state == "pending" and frame.text == "hi"


def test_token_count_treats_special_tokens_as_text():
    assert count_tokens("") == 0
    assert count_tokens("<|endoftext|>") > 1  # as text, not the single special token
    assert count_tokens("hello world") == 2


def test_a_footnote_time_may_say_the_record_came_from_an_abandoned_branch(tmp_path):
    """``Time: `2026-08-10 (abandoned branch)``` is valid; the timeline files the record under its date;
    any other qualifier is a bad date."""
    from engine.helpers import make_workspace, record

    ws = make_workspace(tmp_path / "state")
    ws.update(changes=[{"path": "topics/a.md", "content": record("We use Flask.", "openprogram/s1/u2")}])
    text = ws.read_topic("topics/a.md").replace("Time: `2026-08-10`", "Time: `2026-08-10 (abandoned branch)`")
    ws.update(changes=[{"path": "topics/a.md", "content": text}])
    (record_info,) = ws.records()
    assert record_info.time == "2026-08-10"
    assert "We use Flask." in (ws.root / "timeline/2026/08/10.md").read_text()
    with pytest.raises(MemoryFailure) as failure:
        ws.update(changes=[{"path": "topics/a.md", "content": text.replace("(abandoned branch)", "(maybe)")}])
    assert failure.value.details.get("rule") == "bad-date"
