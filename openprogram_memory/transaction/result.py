"""What a transaction reports, and the shapes around it: no engine code, so light to import.

:class:`Policy` says how strictly pre-existing block IDs must survive,
:class:`TxResult` is the one JSON shape every modify path answers with
(``to_json``), :class:`InstallPlan` is what the trusted pre-install
callback sees.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..views.derived import CoreRender
    from ..workspace.caches import TreeState
    from ..workspace.scan import TreeScan


class Policy(enum.Enum):
    """How strictly pre-existing block IDs must survive (architecture §3 step 5)."""

    HAND = "hand"  # memory edit, web: every ID except those of a deleted file
    MODEL = "model"  # writer, organizer, patch, changes, restore: deletes allowed
    STRUCTURED = "structured"  # memory_changes: exactly the IDs its deletes name


@dataclass
class TxResult:
    """What an installed (or empty) transaction reports."""

    revision: str
    changed_files: list[str] = field(default_factory=list)
    derived_files: list[str] = field(default_factory=list)
    block_ids: list[str] = field(default_factory=list)
    evidence_ids: list[str] = field(default_factory=list)
    deleted_ids: list[str] = field(default_factory=list)
    # sources the deleted records cited (a person's delete settles them: backfill must not write them back)
    deleted_sources: list[str] = field(default_factory=list)
    memory_committed: bool = False
    git_committed: bool = False
    commit: str | None = None
    git_error: str | None = None
    git_code: str | None = None  # GIT_COMMIT_FAILED (retried next time) or GIT_UNAVAILABLE (damage)
    core: "CoreRender | None" = None
    extra: dict[str, Any] = field(default_factory=dict)
    # the tree as this transaction installed it (for callers that report on it; never serialized)
    tree: "TreeState | None" = field(default=None, repr=False, compare=False)
    # this transaction's stat pass with what it wrote looked at again: the memory files as it left them
    scan: "TreeScan | None" = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        out = {
            "ok": True,
            "revision": self.revision,
            "changed_files": self.changed_files,
            "block_ids": self.block_ids,
            "evidence_ids": self.evidence_ids,
            "deleted_ids": self.deleted_ids,
            "memory_committed": self.memory_committed,
            "git_committed": self.git_committed,
            "commit": self.commit,
        }
        if self.git_error:
            out["git_error"] = self.git_error
            out["git_code"] = self.git_code
        out.update(self.extra)
        return out


@dataclass
class InstallPlan:
    """Handed to the trusted pre-install callback: what is about to install."""

    files: dict[str, bytes | None]
    changed_topics: list[str]
    baseline_revision: str | None
