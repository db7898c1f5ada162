"""Obsidian wikilinks in records: ``[[people#^3f9b1cc8]]``, ``[[topics/people.md#^id|label]]``, ``[[people]]``.

People edit the workspace in Obsidian, which writes links between notes
this way. They must not dangle, like ``[text](other.md#^id)`` (architecture
§2.1); the product rewrites one only when it moves the record the link
names, or the record holding it (:func:`rewrite_wikilinks`, as Obsidian
does when it renames a note). A wikilink names a note, not a path: it is
resolved as Obsidian resolves it, with the topics directory as
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
from typing import Iterable, Mapping

from .model import Paragraph

# ![[…]] (an embed) links too; the label after | and a \| escaped in a table cell are not part of the target
WIKILINK_RE = re.compile(r"\[\[([^\[\]|]*?)\\?(?:\|[^\[\]]*)?\]\]")
_EMBED_OR_LINK_RE = re.compile("!?" + WIKILINK_RE.pattern)
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


def only_wikilinks(paragraph: Paragraph) -> bool:
    """Whether ``paragraph`` (one without a block ID) is nothing but wikilinks to notes or records, each perhaps
    an embed (``![[postgres-cluster#^2ac572b6]]`` on its own line): a view of other records, not a claim, so
    exempt from the record rules like a heading; its links must resolve like any other (an attachment's are not
    read, so a line of those is not one)."""
    links = wikilinks(paragraph)
    return (bool(links) and len(links) == len(WIKILINK_RE.findall(paragraph.body))
            and not _EMBED_OR_LINK_RE.sub("", paragraph.body).strip())


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

    def note_for(self, path: str, source: str, written: str) -> str:
        """How a link from ``source`` in the form of ``written`` (a note as typed) names the topic file ``path``.

        The form Obsidian keeps when it renames a note: a same-file link stays one, a relative link stays
        relative, a path stays a path (with its ``topics/`` and ``.md`` if it had them) and a bare name is the
        file's name, or its path from the vault when a shorter path has that name.
        """
        written = written.strip()
        if not written and path == source:
            return ""
        stem = path.removesuffix(".md")
        suffix = ".md" if written.lower().endswith(".md") else ""
        if written.startswith(("./", "../")):
            relative = posixpath.relpath(stem, posixpath.dirname(source) or ".")
            return (relative if relative.startswith("../") else "./" + relative) + suffix
        name = posixpath.basename(stem)
        if "/" not in written and self.resolve(name, source) == path:
            return name + suffix
        return (stem if written.lower().startswith(VAULT) else stem.removeprefix(VAULT)) + suffix


def rewrite_wikilinks(body: str, before: WikilinkIndex, after: WikilinkIndex, old_source: str, new_source: str,
                      moves: Mapping[str, tuple[str, str, str]], renamed: Mapping[str, str]) -> str:
    """``body``, written in ``old_source`` and now in ``new_source``, with every wikilink an edit moved rewritten.

    ``moves`` maps a block ID the edit moved or merged to ``(file it was in, file it is in, ID to link)``: a link
    that named it there is pointed at its new place (a merged ID at the kept one: Obsidian reads only a record's
    last ID). ``renamed`` maps a file the edit removed to the one file all its records went to: a link to that
    note (or a heading in it) names that file. Any other link keeps its note, and is rewritten only when its own
    record changed file and the note no longer names it from there (``[[#^id]]``, ``[[./note]]``). The label and
    an embed's ``!`` are kept; a link to no note is left as written.
    """
    def fix(match: re.Match[str]) -> str:
        written, start, end = match.group(1), match.start(1) - match.start(), match.end(1) - match.start()
        note, sep, fragment = written.partition("#")
        bare = note.strip().removesuffix(".md")
        if _ATTACHMENT_RE.search(bare):
            return match.group(0)
        block_id = fragment.strip()[1:].strip() if fragment.strip().startswith("^") else None
        resolved, as_written = before.resolve(bare, old_source), fragment
        if block_id is not None and block_id in moves:
            was, now, link_id = moves[block_id]
            if resolved != was:
                return match.group(0)  # it named another note (and dangled): not a link to the moved record
            fragment = f"^{link_id}" if link_id != block_id else fragment
        elif resolved is not None and (resolved in renamed or old_source != new_source
                                       and resolved.lower() in after.paths):
            now = renamed.get(resolved, resolved)
        else:
            return match.group(0)
        if after.resolve(bare, new_source) == now and fragment == as_written:
            return match.group(0)
        target = after.note_for(now, new_source, note) + sep + fragment
        return match.group(0)[:start] + target + match.group(0)[end:]

    return WIKILINK_RE.sub(fix, body)
