"""One memory on several machines: ``memory sync`` over any git remote.

Merges by record identity (block IDs), unions the append-only archive,
keeps both sides of a conflict, installs the merge through the one
transaction as a two-parent commit, and pushes it back.
"""

from .run import sync

__all__ = ["sync"]
