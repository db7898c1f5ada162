"""Pure helpers over parsed topic documents for structured changes.

Relative links rebased when a record changes file, evidence definitions
detached from their file (absolute targets, for moving and comparing), and
the heading chains that destinations place records under.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from ..topics.model import (LINK_RE, Blank, Block, Definition, Frontmatter, Heading, Paragraph, SourceLink, TopicDoc,
                             follows_frontmatter, parse_topic)
from ..workspace.caches import resolve_relative


# -- links ---------------------------------------------------------------
def _rebase_target(target: str, old_file: str, new_file: str, file_moved: bool = False) -> str:
    """A relative link target written in ``old_file``, rewritten for ``new_file``.

    Only links into the memory tree are rebased: same-file anchors and
    relative ``.md`` paths; URLs and anything else stay as written.
    ``file_moved``: the whole file went from ``old_file`` to ``new_file``, so a link to itself stays one.
    """
    path, sep, anchor = target.partition("#")
    if "://" in target or target.startswith(("/", "mailto:")) or (path and not path.endswith(".md")):
        return target
    absolute = old_file if not path else posixpath.normpath(posixpath.join(posixpath.dirname(old_file), path))
    if file_moved and absolute == old_file:
        absolute = new_file
    return link_path(absolute, new_file) + sep + anchor


def link_path(target_file: str, from_file: str) -> str:
    """The relative path from ``from_file`` to ``target_file`` (empty for the same file)."""
    if target_file == from_file:
        return ""
    return posixpath.relpath(target_file, posixpath.dirname(from_file) or ".")


def rebase_body(body: str, old_file: str, new_file: str) -> str:
    """Every relative link in ``body`` rewritten from ``old_file`` to ``new_file``."""
    if old_file == new_file:
        return body

    def fix(match: re.Match[str]) -> str:
        return f"[{match.group(1)}]({_rebase_target(match.group(2), old_file, new_file)})"

    return LINK_RE.sub(fix, body)


def rebase_moved_file(text: str, old_file: str, new_file: str) -> str:
    """A whole topic file moved from ``old_file`` to ``new_file`` outside the product, its relative links (evidence
    into ``sources/``, links to records) rewritten for the folder it is in now; links to itself stay links to
    itself, and headings, code and comments keep every byte."""
    doc = parse_topic(text, new_file)
    for block in doc.blocks:
        if isinstance(block, (Paragraph, Definition)):
            block.lines = LINK_RE.sub(
                lambda m: f"[{m.group(1)}]({_rebase_target(m.group(2), old_file, new_file, file_moved=True)})",
                block.text).split("\n")
    return doc.render()


# -- evidence ------------------------------------------------------------
@dataclass(frozen=True)
class Evidence:
    """A definition detached from its file: absolute targets, for moving and comparing."""

    label: str
    time: str | None
    links: tuple[tuple[str, str], ...]  # (link text, memory-root-relative target with anchor)

    @property
    def meaning(self) -> tuple:
        return (self.time, tuple(sorted(target for _, target in self.links)))

    def links_for(self, rel: str) -> list[SourceLink]:
        return [SourceLink(text, link_path(target.partition("#")[0], rel) + "#" + target.partition("#")[2])
                for text, target in self.links]


def definition_meaning(definition: Definition, rel: str) -> tuple:
    """What an evidence definition in ``rel`` says: ``(time, sorted absolute source targets)``.

    Two definitions with one label conflict only when their meanings differ
    (relative link paths that resolve alike are the same meaning).
    """
    return detach_definition(definition, rel).meaning


def detach_definition(definition: Definition, rel: str) -> Evidence:
    """The evidence ``definition`` in ``rel`` states, with its link targets made absolute."""
    links = []
    for link in definition.sources:
        path, _, anchor = link.target.partition("#")
        links.append((link.label, resolve_relative(rel, path) + "#" + anchor))
    return Evidence(definition.label, definition.time, tuple(links))


def drop_unused_definitions(doc: TopicDoc, labels: set[str]) -> None:
    """Remove the definitions of ``labels`` that no paragraph of ``doc`` cites any more."""
    if not labels:
        return
    cited = {label for paragraph in doc.paragraphs() for label in paragraph.citations}
    doc.blocks = [b for b in doc.blocks
                  if not (isinstance(b, Definition) and b.label in labels and b.label not in cited)]


# -- heading chains and block placement -----------------------------------
def _chains(doc: TopicDoc) -> list[tuple[tuple[str, ...], int]]:
    """For each block: the heading chain it sits under, and the chain's heading index (-1: none)."""
    out = []
    stack: list[tuple[int, str, int]] = []
    for i, block in enumerate(doc.blocks):
        if isinstance(block, Heading):
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            stack.append((block.level, block.title, i))
        out.append((tuple(t for _, t, _ in stack), stack[-1][2] if stack else -1))
    return out


def chain_of(doc: TopicDoc, block: Block) -> tuple[str, ...]:
    """The heading chain ``block`` sits under."""
    return _chains(doc)[doc.blocks.index(block)][0]


def _find_heading(doc: TopicDoc, headings: tuple[str, ...]) -> int | None:
    for i, (chain, heading_index) in enumerate(_chains(doc)):
        if heading_index == i and chain == headings:
            return i
    return None


def ensure_chain(doc: TopicDoc, headings: tuple[str, ...]) -> int:
    """Index of the chain's last heading (-1 for no heading), creating missing headings."""
    if not headings:
        return -1
    found = _find_heading(doc, headings)
    if found is not None:
        return found
    depth, parent = 0, None
    for k in range(len(headings) - 1, 0, -1):
        parent = _find_heading(doc, headings[:k])
        if parent is not None:
            depth = k
            break
    if parent is None:
        at, level = len(doc.blocks), 0
    else:
        heading = doc.blocks[parent]
        assert isinstance(heading, Heading)  # _find_heading returns heading indices only
        level = heading.level
        at = len(doc.blocks)
        for i in range(parent + 1, len(doc.blocks)):
            block = doc.blocks[i]
            if isinstance(block, Heading) and block.level <= level:
                at = i
                break
    while at > (parent if parent is not None else -1) + 1 and isinstance(doc.blocks[at - 1], (Definition, Blank)):
        at -= 1  # new headings go before a trailing run of definitions
    new = []
    for offset, title in enumerate(headings[depth:], start=1):
        lvl = min(level + offset, 6)
        new.append(Heading(lines=[f"{'#' * lvl} {title}"], level=lvl, title=title))
    doc.blocks[at:at] = new
    return at + len(new) - 1


def direct_region(doc: TopicDoc, heading_index: int) -> tuple[int, int]:
    """Blocks directly under a heading (up to the next heading of any level); under no heading (-1), those
    after the frontmatter and the blank lines the file had after it (nothing goes before or between them)."""
    start = heading_index + 1
    if heading_index < 0 and doc.blocks and isinstance(doc.blocks[0], Frontmatter):
        start = 1
        if len(doc.blocks) > 1 and isinstance(doc.blocks[1], Blank) and follows_frontmatter(*doc.blocks[:2]):
            start = 2
    end = start
    while end < len(doc.blocks) and not isinstance(doc.blocks[end], Heading):
        end += 1
    return start, end


def separate_blocks(doc: TopicDoc) -> None:
    """A blank line between neighbouring blocks (consecutive definitions excepted), but none between the
    frontmatter and the line the file had right after it (Obsidian's layout, or the person's): a write adds its
    records and leaves the frontmatter and what follows it byte for byte."""
    out: list[Block] = []
    for block in doc.blocks:
        if out and not isinstance(block, Blank) and not isinstance(out[-1], Blank):
            if not (isinstance(block, Definition) and isinstance(out[-1], Definition)) and not follows_frontmatter(
                    out[-1], block):
                out.append(Blank(lines=[""]))
        out.append(block)
    doc.blocks = out
    doc.trailing_newline = True
