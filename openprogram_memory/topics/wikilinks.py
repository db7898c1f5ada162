"""Obsidian wikilinks in records: ``[[people#^3f9b1cc8]]``, ``[[topics/people.md#^id|label]]``, ``[[people]]``.

People edit the workspace in Obsidian, which writes links between notes
this way. They must not dangle, like ``[text](other.md#^id)`` (architecture
§2.1), and the product never rewrites them. A wikilink names a note, not a
path: it is resolved as Obsidian resolves it, with the topics directory as
the vault (the only place records live; a leading ``topics/`` is accepted
too, so a vault opened at the memory directory resolves the same):

- ``[[#^id]]`` is the linking file itself;
- ``./`` or ``../`` is relative to the linking file;
- a path from the vault root that names a topic file is that file;
- otherwise every topic file whose path ends with the name (case-insensitive,
  so ``[[People]]`` is ``people.md``), the shortest path when several do.

Links to attachments (``[[photo.png]]``) are not records and are not read.
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from typing import Iterable

from .model import Paragraph

# ![[…]] (an embed) links too; the label after | and a \| escaped in a table cell are not part of the target
WIKILINK_RE = re.compile(r"\[\[([^\[\]|]*?)\\?(?:\|[^\[\]]*)?\]\]")
_ATTACHMENT_RE = re.compile(r"\.(?!md$)[A-Za-z0-9]{1,5}$")
VAULT = "topics/"


def wikilinks(paragraph: Paragraph) -> list[tuple[str, str | None]]:
    """``(note as written, block id or None)`` of every wikilink of a record to a note (not to an attachment).

    The note is written without ``.md`` and is empty for a link into the same file; a link to a heading
    (``[[people#Family]]``) yields the note alone: the note must exist, the heading is not a record.
    """
    out = []
    for match in WIKILINK_RE.finditer(paragraph.body):
        note, _, fragment = match.group(1).strip().partition("#")
        note = note.strip().removesuffix(".md")
        if _ATTACHMENT_RE.search(note):
            continue
        block_id = fragment[1:].strip() if fragment.startswith("^") else None
        out.append((note, block_id or None))
    return out


class WikilinkIndex:
    """The topic files of one tree by note name, to resolve wikilinks against."""

    def __init__(self, topic_paths: Iterable[str]) -> None:
        self.paths = {path.lower(): path for path in topic_paths}
        self.by_name: dict[str, list[str]] = defaultdict(list)
        for path in self.paths.values():
            self.by_name[posixpath.basename(path).lower().removesuffix(".md")].append(path)

    def resolve(self, note: str, source: str) -> str | None:
        """The topic file ``note`` (as :func:`wikilinks` gives it) names from ``source``; None if none does."""
        if not note:
            return source
        wanted = note.lower()
        if wanted.startswith(("./", "../")):
            return self.paths.get(posixpath.normpath(posixpath.join(posixpath.dirname(source.lower()), wanted))
                                  + ".md")
        exact = self.paths.get(VAULT + wanted + ".md") or self.paths.get(wanted + ".md")
        if exact is not None:
            return exact
        candidates = [path for path in self.by_name.get(posixpath.basename(wanted), ())
                      if path.lower().removesuffix(".md").endswith("/" + wanted)]
        # Obsidian takes the shortest path when a name is ambiguous (it writes a longer one only to tell apart)
        return min(candidates, key=lambda path: (len(path), path)) if candidates else None
