"""Records citing one source on one date keep their own keyword (one footnote per keyword set)."""

from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from openprogram_memory.cli.app import app
from structured.helpers import SOURCES, create, create_op, dest, topic_text

DEFINITION_RE = re.compile(r"^\[\^(e-[0-9a-f]{10})\]:", re.MULTILINE)


def _labels(ws, memory_id):
    return [s["label"] for s in ws.get(memory_id)["sources"]]


def _definitions(ws, rel="topics/t.md"):
    return DEFINITION_RE.findall(topic_text(ws, rel))


def test_two_creates_in_one_request_keep_their_labels(ws):
    result = ws.update(memory_changes=[
        create_op("Dana runs a bike shop.", sources=((SOURCES[0], "bike shop"),)),
        create_op("Dana lives in Utrecht.", sources=((SOURCES[0], "home town"),)),
    ])
    first, second = (c["memory_id"] for c in result.extra["created"])
    assert _labels(ws, first) == ["bike shop"] and _labels(ws, second) == ["home town"]
    assert len(_definitions(ws)) == 2 and len(result.evidence_ids) == 2


def test_a_later_create_does_not_relabel_an_existing_record(ws):
    first = create(ws, "Dana runs a bike shop.", sources=((SOURCES[0], "bike shop"),))
    (evidence,) = _definitions(ws)
    second = create(ws, "Dana lives in Utrecht.", sources=((SOURCES[0], "home town"),))
    assert _labels(ws, first) == ["bike shop"] and _labels(ws, second) == ["home town"]
    # the existing record keeps its block ID and its evidence ID
    assert f"Dana runs a bike shop.[^{evidence}] ^{first}" in topic_text(ws, "topics/t.md")
    # a third record with the first one's keyword shares the first one's footnote
    third = create(ws, "Dana opens at nine.", sources=((SOURCES[0], "bike shop"),))
    assert _labels(ws, third) == ["bike shop"] and len(_definitions(ws)) == 2


def test_update_relabels_only_its_own_record(ws):
    first = create(ws, "Dana runs a bike shop.", sources=((SOURCES[0], "bike shop"),))
    second = create(ws, "Dana opens at nine.", sources=((SOURCES[0], "bike shop"),))
    ws.update(memory_changes=[{"op": "update_record", "memory_id": second, "content": "Dana opens at nine.",
                               "time": "2026-08-01", "sources": [{"source": SOURCES[0], "label": "hours"}]}])
    assert _labels(ws, first) == ["bike shop"] and _labels(ws, second) == ["hours"]
    # a record alone on its footnote is relabelled in place: its evidence ID stays
    ws.update(memory_changes=[{"op": "update_record", "memory_id": second, "content": "Dana opens at nine.",
                               "time": "2026-08-01", "sources": [{"source": SOURCES[0], "label": "opening hours"}]}])
    before = set(_definitions(ws))
    assert _labels(ws, second) == ["opening hours"] and set(_definitions(ws)) == before


def test_a_moved_record_keeps_its_label_in_a_file_citing_the_same_source(ws):
    stay = create(ws, "Dana runs a bike shop.", topic="topics/b.md", sources=((SOURCES[0], "bike shop"),))
    mover = create(ws, "Dana lives in Utrecht.", topic="topics/a.md", sources=((SOURCES[0], "home town"),))
    ws.update(memory_changes=[{"op": "move_records", "memory_ids": [mover], "destination": dest("topics/b.md")}])
    assert ws.get(mover)["topic"] == "topics/b.md"
    assert _labels(ws, stay) == ["bike shop"] and _labels(ws, mover) == ["home town"]
    assert len(_definitions(ws, "topics/b.md")) == 2


def test_apply_with_writer_labels_keeps_both_keywords(ws, tmp_path):
    """Local footnotes ([^e1], [^e2]) citing one source and date become two footnotes, not one."""
    content = ("# Dana\n\nDana runs a bike shop.[^e1]\n\nDana lives in Utrecht.[^e2]\n\n"
               f"[^e1]: Time: `2026-08-01`; Sources: [bike shop]({SOURCES[0]})\n"
               f"[^e2]: Time: `2026-08-01`; Sources: [home town]({SOURCES[0]})\n")
    request = tmp_path / "req.json"
    request.write_text(json.dumps({"changes": [{"path": "topics/people/dana.md", "content": content}]}))
    result = CliRunner().invoke(app, ["memory", "apply", str(request), "--state", str(tmp_path / "state"), "--json"])
    assert result.exit_code == 0, result.stdout
    records = {r.content: r.memory_id for r in ws.records()}
    assert _labels(ws, records["Dana runs a bike shop."]) == ["bike shop"]
    assert _labels(ws, records["Dana lives in Utrecht."]) == ["home town"]
    # the same keyword twice is still one footnote
    same = content.replace("[home town]", "[bike shop]").replace("Utrecht", "Leiden")
    ws.update(changes=[{"path": "topics/people/leiden.md", "content": same}])
    assert len(_definitions(ws, "topics/people/leiden.md")) == 1
