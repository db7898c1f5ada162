"""An appended archive is parsed from where the last parse stopped, with exactly the result of a whole parse."""

from __future__ import annotations

import random

from openprogram_memory.sources.archive import HEADER, ParsedArchive, SourceMessage, parse_archive


def _frame(i: int, trust: str = "trusted", text: str | None = None) -> str:
    return SourceMessage(f"openprogram/api-2026-12-01/m-{i}", "user", "api-user", "2026-12-01T10:00:00+00:00",
                         text or f"message {i}\nwith a second line", trust_state=trust).frame()


def _same(parsed: ParsedArchive, data: bytes) -> None:
    whole = ParsedArchive.of(data)
    assert parsed.archive.frames == whole.archive.frames
    assert parsed.archive.damaged == whole.archive.damaged and parsed.archive.legacy == whole.archive.legacy
    assert parsed.by_anchor == whole.by_anchor
    assert (parsed.size, parsed.digest) == (len(data), whole.digest)


def test_appends_parse_only_the_tail_and_keep_the_frames_parsed_before():
    data = (HEADER + "\n\n" + _frame(0) + _frame(1)).encode()
    parsed = ParsedArchive.of(data)
    first = parsed.by_anchor
    data += _frame(2).encode()
    grown = parsed.extend(data)
    _same(grown, data)
    assert all(grown.by_anchor[anchor] is frame for anchor, frame in first.items())  # the same objects


def test_every_other_change_is_parsed_whole_with_the_same_result():
    rng = random.Random(3)
    base = HEADER + "\n\n" + "".join(_frame(i) for i in range(5))
    variants = [
        base + _frame(5),  # append
        base.replace(_frame(2), _frame(2, "pending")),  # promotion / demotion rewrites a frame in place
        base.replace(_frame(2), _frame(2, "pending")) + _frame(5),  # rewritten and grown
        base + _frame(3, "pending"),  # an appended frame repeating an anchor with other content
        base[: len(base) // 2],  # truncated
        base + _frame(5)[:40],  # torn append
        base + _frame(3),  # an appended frame repeating an anchor
        base + "garbage\n",  # damage after the last frame
        base,  # unchanged
        "",  # emptied
        "<!-- source-id:openprogram/x/y -->\nlegacy\n",  # legacy
    ]
    parsed = ParsedArchive.of(base.encode())
    for text in variants:
        _same(parsed.extend(text.encode()), text.encode())
    bad = base.encode() + b"\xff\xfe" + _frame(6).encode()  # not UTF-8 after the old bytes
    _same(parsed.extend(bad), bad)
    for _ in range(200):  # random edits of a random prefix
        cut = rng.randint(0, len(base))
        text = base[:cut] + rng.choice(["", _frame(7), "\n", _frame(8)[: rng.randint(0, 60)]])
        older = ParsedArchive.of(base[: rng.randint(0, len(base))].encode())
        _same(older.extend(text.encode()), text.encode())
        assert older.extend(text.encode()).archive.frames == parse_archive(text).frames
