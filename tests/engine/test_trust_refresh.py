"""A source promoted from pending to trusted is seen without restarting."""

from __future__ import annotations

import pytest

from engine.helpers import make_workspace
from openprogram_memory.sources.archive import SourceMessage
from openprogram_memory.transaction.history import commit_paths


def _release_workspace():
    """A record citing a pending message of a telegram thread."""
    ws = make_workspace()
    pending = SourceMessage("telegram/g1/m7", "Ann", "tg-1", "2026-08-09T11:00:00+00:00", "We ship on Fridays.",
                            trust_state="pending")
    ws.archive([pending])
    ws.update(changes=[{"path": "topics/release.md",
                        "content": "We ship on Fridays.[^e1]\n\n[^e1]: Sources: [ship](telegram/g1/m7)\n"}])
    return ws, pending


def test_promotion_refreshes_trust_in_a_running_process():
    ws, pending = _release_workspace()
    block_id = ws.tree().files["topics/release.md"].ids[0]
    assert ws.get(block_id)["trust_state"] == "pending"
    # promotion rewrites the frame's metadata in the archive (an owner action outside transactions)
    path = ws.root / "sources/telegram/_v2/g1.md"
    trusted = SourceMessage(pending.source_id, pending.speaker, pending.speaker_id, pending.timestamp, pending.text)
    path.write_text(path.read_text().replace(pending.frame(), trusted.frame()))
    assert ws.get(block_id)["trust_state"] == "trusted"


def test_an_append_to_a_cited_thread_does_not_reparse_the_topics_citing_it():
    """A busy thread (the API's) grows with every apply; topics citing its old frames stay as they were parsed."""
    ws, _pending = _release_workspace()
    block_id = ws.tree().files["topics/release.md"].ids[0]
    before = ws.cache.parsed
    ws.archive([SourceMessage("telegram/g1/m8", "Ann", "tg-1", "2026-08-09T12:00:00+00:00", "Lunch at noon.")])
    assert ws.get(block_id)["trust_state"] == "pending"
    assert ws.cache.parsed == before  # topics/release.md was not parsed again


@pytest.mark.parametrize("committed", [True, False], ids=["committed", "a hand edit"])
def test_an_appended_frame_resolves_a_citation_that_dangled(committed):
    """A topic citing a message archived only later: the append makes its record resolve. Committed (a git commit
    made by hand), it is served meanwhile as pending; as a hand edit not yet adopted it is held back (served from
    its last commit, here none) until the archive holds the message."""
    ws = make_workspace()
    later = SourceMessage("telegram/g1/m9", "Ann", "tg-1", "2026-08-09T13:00:00+00:00", "Standup is at nine.")
    ws.archive([SourceMessage("telegram/g1/m1", "Ann", "tg-1", "2026-08-09T09:00:00+00:00", "Hello.")])
    path = ws.root / "topics/standup.md"
    path.write_text("Standup is at nine.[^e1] ^abcd1234\n\n[^e1]: Time: `2026-08-09`; Sources: "
                    f"[standup](../sources/telegram/_v2/g1.md#{later.anchor})\n")
    if committed:
        commit_paths(ws.root, ["topics/standup.md"], "a commit made by hand")
        record = ws.tree().files["topics/standup.md"].records[0]
        assert record.evidence[0].refs[0].source is None and record.trust_state == "pending"
    else:
        assert "topics/standup.md" not in ws.tree().files
        assert "[unknown-source]" in ws.cache.invalid["topics/standup.md"]
    ws.archive([later])
    record = ws.tree().files["topics/standup.md"].records[0]
    assert record.evidence[0].refs[0].source == later and "topics/standup.md" not in ws.cache.invalid
