"""A source promoted from pending to trusted is seen without restarting."""

from __future__ import annotations

from engine.helpers import make_workspace
from openprogram_memory.sources.archive import SourceMessage


def test_promotion_refreshes_trust_in_a_running_process():
    ws = make_workspace()
    pending = SourceMessage("telegram/g1/m7", "Ann", "tg-1", "2026-08-09T11:00:00+00:00", "We ship on Fridays.",
                            trust_state="pending")
    ws.archive([pending])
    ws.update(changes=[{"path": "topics/release.md",
                        "content": "We ship on Fridays.[^e1]\n\n[^e1]: Sources: [ship](telegram/g1/m7)\n"}])
    block_id = ws.tree().files["topics/release.md"].ids[0]
    assert ws.get(block_id)["trust_state"] == "pending"
    # promotion rewrites the frame's metadata in the archive (an owner action outside transactions)
    path = ws.root / "sources/telegram/_v2/g1.md"
    trusted = SourceMessage(pending.source_id, pending.speaker, pending.speaker_id, pending.timestamp, pending.text)
    path.write_text(path.read_text().replace(pending.frame(), trusted.frame()))
    assert ws.get(block_id)["trust_state"] == "trusted"
