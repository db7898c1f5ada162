"""What the transaction engine needs of a workspace: a protocol, so the engine sits below the facade.

:class:`openprogram_memory.memory.MemoryWorkspace` (the front door, above
the engine) implements it; the engine and the modules beside it
(structured edits, ``memory check``) only ever use these members.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Protocol

if TYPE_CHECKING:
    from ..config import Settings
    from ..workspace.layout import Layout
    from ..workspace.caches import TopicCache, TreeState


class Workspace(Protocol):
    """One open ``<state>/memory`` workspace, as the engine sees it."""

    settings: "Settings"
    root: Path
    layout: "Layout"

    @property
    def cache(self) -> "TopicCache": ...  # the parsed tree, cached per process (loaded when first used)

    # The trusted pre-install callback (an InstallPlan in, raise to refuse the install).
    pre_install: Callable[[Any], None] | None
    # What opening repaired after a crash.
    recovery_notes: list[str]

    def tree(self) -> "TreeState": ...
