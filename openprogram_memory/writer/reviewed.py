"""Review ledgers: what a writer read and found nothing durable in.

A batch in which nothing is worth recording changes no file, and a written
marker needs a real, installed change (architecture §4.2) — so such turns cannot be
marked. Without a record of the review they would stay pending for ever:
every later pass would start from the same oldest turns, send the same
batch to the model again, and a forced write would end in
``WRITER_NO_PROGRESS`` (architecture §14).

A ledger records an explicit, checkable verdict instead: the writer said
``nothing_durable`` for source ids that cover the whole batch, the batch is
in the archive (verbatim, committed with the next transaction), and the run
is in ``agent-history.jsonl``. Reviewed turns are skipped when batches are
cut, but they are *not* marked: they get their marker only when a later
pass over the same walk installs a real change (the mark covers the walked
span up to that batch). Entries are dropped once marked, so the ledger
holds only reviewed-but-unmarked turns.

Each entry records which writer reviewed the turn (``backend``: ``rules``
or ``anthropic:<model>``) and when (``at``). A verdict stays a verdict when
the writer changes; ``memory write --rereview`` reopens the turns another
writer settled, so the current one reads them again through the normal
pass (see :class:`~openprogram_memory.writer.pipeline.Rereview`).

Two ledgers use this: ``reviewed.json`` (session turns, grouped by session)
and ``backfill-reviewed.json`` (archived sources, one group).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any, Iterable

from ..fsutil import atomic_write_json, read_json
from ..timeutil import parse_instant

if TYPE_CHECKING:
    from ..sessions.store import Node
    from ..workspace.layout import Layout


SESSION_LEDGER = "reviewed.json"
BACKFILL_LEDGER = "backfill-reviewed.json"
LEDGER_VERSION = 1


class ReviewLedger:
    """``{"version": 1, "groups": {group: {id: info}}}`` in ``.scriptorium/<name>``."""

    def __init__(self, layout: "Layout", name: str = SESSION_LEDGER) -> None:
        self.path = layout.state(name)

    def _load(self) -> dict[str, dict[str, Any]]:
        data = read_json(self.path, None)
        groups = data.get("groups") if isinstance(data, dict) else None
        if not isinstance(groups, dict):
            return {}
        return {str(g): dict(items) for g, items in groups.items() if isinstance(items, dict)}

    def _save(self, groups: dict[str, dict[str, Any]]) -> None:
        groups = {g: items for g, items in groups.items() if items}
        atomic_write_json(self.path, {"version": LEDGER_VERSION, "groups": groups})

    def groups(self) -> list[str]:
        """Every group (session) with reviewed entries."""
        if not self.path.exists():
            return []
        return sorted(self._load())

    def entries(self, group: str) -> dict[str, dict[str, Any]]:
        """``{id: info}`` of ``group`` (info: ``at``, ``source``, ``backend``)."""
        if not self.path.exists():
            return {}
        return {key: dict(info) if isinstance(info, dict) else {} for key, info in self._load().get(group, {}).items()}

    def ids(self, group: str) -> frozenset[str]:
        """Every id reviewed (and not yet settled otherwise) in ``group``."""
        if not self.path.exists():
            return frozenset()
        return frozenset(self._load().get(group, {}))

    def add(self, group: str, entries: dict[str, dict[str, Any]]) -> None:
        """Record ``{id: info}`` as reviewed in ``group``."""
        if not entries:
            return
        groups = self._load()
        groups.setdefault(group, {}).update(entries)
        self._save(groups)

    def forget(self, group: str, ids: Iterable[str]) -> None:
        """Drop ``ids`` from ``group`` (they were marked written)."""
        if not self.path.exists():
            return
        ids = set(ids)
        groups = self._load()
        items = groups.get(group, {})
        if not ids & set(items):
            return
        groups[group] = {k: v for k, v in items.items() if k not in ids}
        self._save(groups)


@dataclass(frozen=True)
class Rereview:
    """Which settled turns a ``--rereview`` write reads again: reviewed by another writer, dated on/after ``since``."""

    since: date | None = None

    def reopens(self, entry: dict[str, Any], node: Node, writer: str) -> bool:
        """Whether the ledger ``entry`` of ``node`` is reopened for the current ``writer``."""
        if entry.get("backend") == writer:
            return False
        if self.since is None:
            return True
        when = parse_instant(node.created_at)
        return when is not None and when.date() >= self.since
