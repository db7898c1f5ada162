"""Topic files as blocks: parse → render is byte stable (architecture §2.1).

A topic file is a list of blocks. Each block keeps its raw lines, so an
unchanged file renders to the same bytes; blocks the runtime creates or
rewrites get canonical lines. Records are paragraphs that end in one or more
`` ^id`` block IDs (the last is the identity, the others aliases).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterator

HEADING_RE = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
FENCE_RE = re.compile(r"^[ ]{0,3}(`{3,}|~{3,})")
DEFINITION_RE = re.compile(r"^\[\^([^\]\s]+)\]:[ \t]?(.*)$")
TRAILING_IDS_RE = re.compile(r"((?:[ \t\n]+\^[A-Za-z0-9][A-Za-z0-9_-]*)+)[ \t]*\Z")
ID_TOKEN_RE = re.compile(r"\^([A-Za-z0-9][A-Za-z0-9_-]*)")
CITATION_RE = re.compile(r"\[\^([^\]\s]+)\](?!:)")
LINK_RE = re.compile(r"(?<!!)\[([^\]]*)\]\(([^)\s]+)\)")
RECORD_LINK_RE = re.compile(r"\[([^\]]*)\]\(([^)\s#]*)#\^([A-Za-z0-9_-]+)\)")
# a link to a whole topic file: a relative path to a ``.md`` file, no anchor, no scheme (``https:``, ``mailto:``)
FILE_LINK_RE = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s#:/][^)\s#:]*\.md)\)")
TIME_RE = re.compile(r"Time:\s*`([^`]*)`")


@dataclass
class Block:
    """A run of raw lines. ``line`` is the 1-based number of the first."""

    lines: list[str]
    line: int = 0

    kind = "other"

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


@dataclass
class Blank(Block):
    kind = "blank"


@dataclass
class Heading(Block):
    level: int = 1
    title: str = ""
    kind = "heading"


@dataclass
class Code(Block):
    """Fenced code or an HTML comment: exempt from record rules."""

    kind = "code"


@dataclass
class Frontmatter(Block):
    """YAML properties between ``---`` lines at the very top (Obsidian's Properties): kept byte for byte, exempt
    from record rules; nothing is ever placed before it."""

    kind = "frontmatter"


@dataclass
class Paragraph(Block):
    """Prose. ``ids`` are trailing block IDs; ``body`` is the text before them."""

    body: str = ""
    ids: list[str] = field(default_factory=list)
    kind = "paragraph"

    @property
    def identity(self) -> str | None:
        return self.ids[-1] if self.ids else None

    @property
    def citations(self) -> list[str]:
        return CITATION_RE.findall(self.body)

    @property
    def content(self) -> str:
        """The record's prose: the body without its trailing citations."""
        return strip_trailing_citations(self.body)

    def set(self, body: str, ids: list[str]) -> None:
        """Replace body and IDs; lines become canonical."""
        self.body = body
        self.ids = list(ids)
        suffix = (" " + " ".join("^" + i for i in ids)) if ids else ""
        self.lines = (body + suffix).split("\n")


@dataclass
class SourceLink:
    label: str
    target: str


@dataclass
class Definition(Block):
    """``[^label]: Time: `…`; Sources: [label](target), …``."""

    label: str = ""
    time: str | None = None
    sources: list[SourceLink] = field(default_factory=list)
    legacy: bool = False
    well_formed: bool = True
    kind = "definition"

    def set(self, label: str, time: str, sources: list[SourceLink]) -> None:
        self.label, self.time, self.sources, self.legacy, self.well_formed = label, time, list(sources), False, True
        self.lines = [render_definition(label, time, sources)]


def render_definition(label: str, time: str, sources: list[SourceLink]) -> str:
    links = ", ".join(f"[{s.label}]({s.target})" for s in sources)
    return f"[^{label}]: Time: `{time}`; Sources: {links}"


def strip_trailing_citations(body: str) -> str:
    return re.sub(r"(?:\[\^[^\]\s]+\])+[ \t]*\Z", "", body).rstrip()


@dataclass
class TopicDoc:
    """A parsed topic file. ``path`` is memory-root relative (``topics/x.md``)."""

    path: str
    blocks: list[Block]
    trailing_newline: bool = True

    def render(self) -> str:
        text = "\n".join(line for block in self.blocks for line in block.lines)
        return text + ("\n" if self.trailing_newline and text else "")

    def paragraphs(self) -> Iterator[Paragraph]:
        return (b for b in self.blocks if isinstance(b, Paragraph))

    def definitions(self) -> dict[str, Definition]:
        return {b.label: b for b in self.blocks if isinstance(b, Definition)}

    def records_with_headings(self) -> Iterator[tuple[tuple[str, ...], Paragraph]]:
        """Each paragraph with its heading chain (titles of enclosing headings)."""
        chain: list[tuple[int, str]] = []
        for block in self.blocks:
            if isinstance(block, Heading):
                while chain and chain[-1][0] >= block.level:
                    chain.pop()
                chain.append((block.level, block.title))
            elif isinstance(block, Paragraph):
                yield tuple(title for _, title in chain), block

    def block_ids(self) -> list[str]:
        return [i for p in self.paragraphs() for i in p.ids]


def _parse_definition(label: str, first: str, lines: list[str], line_no: int) -> Definition:
    content = " ".join([first.strip()] + [line.strip() for line in lines[1:]])
    definition = Definition(lines=lines, line=line_no, label=label)
    time_match = TIME_RE.search(content)
    sources_part = content
    if time_match:
        definition.time = time_match.group(1).strip()
        _, _, sources_part = content.partition("Sources:")
        if "Sources:" not in content:
            definition.well_formed = False
    elif " · " in content:  # legacy: `[^id]: <when> · Sources: …`
        when, _, rest = content.partition(" · ")
        definition.time = when.strip().strip("`") or None
        definition.legacy = True
        _, _, sources_part = rest.partition("Sources:")
        if "Sources:" not in rest:
            definition.well_formed = False
    else:
        _, found, sources_part = content.partition("Sources:")
        if not found:
            definition.well_formed = False
    definition.sources = [SourceLink(m.group(1), m.group(2)) for m in LINK_RE.finditer(sources_part)]
    if not definition.sources:
        definition.well_formed = False
    return definition


def _parse_paragraph(lines: list[str], line_no: int) -> Paragraph:
    text = "\n".join(lines)
    match = TRAILING_IDS_RE.search(text)
    if match and match.start() > 0:
        ids = ID_TOKEN_RE.findall(match.group(1))
        body = text[: match.start()]
        return Paragraph(lines=lines, line=line_no, body=body, ids=ids)
    return Paragraph(lines=lines, line=line_no, body=text, ids=[])


def decode_topic(data: bytes) -> str:
    """A topic file's text from its bytes (UTF-8, else ``UnicodeDecodeError``), without what editors add that is
    not content: the byte order mark Notepad writes, and CRLF (or CR) line endings. Every reader of a topic file
    on disk or in history goes through here, so a file saved on Windows reads as the same records everywhere."""
    text = data.decode("utf-8")
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def not_utf8(data: bytes, error: UnicodeDecodeError) -> tuple[str, int]:
    """How bytes ``data`` that do not decode as UTF-8 (``error``, from decoding all of them: its ``start`` is an
    offset into ``data``) are named, and the line of the first bad byte: the one wording every reader gives (check,
    status, search, show, edit, a write)."""
    line = data.count(b"\n", 0, error.start) + 1
    return f"not valid UTF-8 at line {line} (byte 0x{data[error.start]:02X} at offset {error.start})", line


UTF8_BOM = b"\xef\xbb\xbf"


def encode_topic(text: str, like: bytes | None) -> bytes:
    """The bytes to write for topic ``text`` over a file whose bytes are ``like`` (None: a new file): what
    :func:`decode_topic` took off goes back on, its byte order mark and its line endings (those of its first line),
    so a write leaves every line the person saved as it was and the lines it adds match them. Every writer of a
    topic file goes through here."""
    text = text.replace("\n", _newline_of(like or b""))
    return (UTF8_BOM if like and like.startswith(UTF8_BOM) else b"") + text.encode("utf-8")


def _newline_of(data: bytes) -> str:
    """The line ending of ``data``'s first line: CRLF, CR or (also for a single line) LF."""
    match = re.search(rb"\r\n|\r|\n", data)
    return match.group(0).decode("ascii") if match else "\n"


def parse_topic(text: str, path: str) -> TopicDoc:
    """Parse topic text into blocks. Never raises; validation is separate."""
    trailing = text.endswith("\n")
    raw = text[:-1] if trailing else text
    lines = raw.split("\n") if raw else []
    blocks: list[Block] = []
    i = _frontmatter_end(lines)
    if i:
        blocks.append(Frontmatter(lines=lines[:i], line=1))
    while i < len(lines):
        block, i = _next_block(lines, i)
        blocks.append(block)
    return TopicDoc(path=path, blocks=blocks, trailing_newline=trailing)


def follows_frontmatter(previous: Block, block: Block) -> bool:
    """Whether ``block`` is what the file had on the line right after the frontmatter ``previous`` (not a block
    a write put there): the person's, kept as they wrote it (a blank run uncollapsed, no blank line added)."""
    return isinstance(previous, Frontmatter) and block.line == previous.line + len(previous.lines)


def _frontmatter_end(lines: list[str]) -> int:
    """Where a frontmatter block that opens the file ends (exclusive): a first line ``---`` closed by a later
    ``---`` or ``...``; 0 when the file does not open with one."""
    if not lines or lines[0].rstrip() != "---":
        return 0
    return next((end + 1 for end in range(1, len(lines)) if lines[end].rstrip() in ("---", "...")), 0)


def _next_block(lines: list[str], start: int) -> tuple[Block, int]:
    """The block that starts at ``lines[start]``, and the index of the line after it."""
    line, n = lines[start], len(lines)
    if not line.strip():
        end = start
        while end < n and not lines[end].strip():
            end += 1
        return Blank(lines=lines[start:end], line=start + 1), end
    code_end = _code_end(lines, start)
    if code_end is not None:
        return Code(lines=lines[start:code_end], line=start + 1), code_end
    heading = HEADING_RE.match(line)
    if heading:
        return Heading(lines=[line], line=start + 1, level=len(heading.group(1)), title=heading.group(2)), start + 1
    definition = DEFINITION_RE.match(line)
    end = start + 1
    if definition:
        while end < n and lines[end].startswith("  ") and lines[end].strip():
            end += 1
        return _parse_definition(definition.group(1), definition.group(2), lines[start:end], start + 1), end
    while end < n and lines[end].strip() and not (
            FENCE_RE.match(lines[end]) or HEADING_RE.match(lines[end]) or DEFINITION_RE.match(lines[end])):
        end += 1
    return _parse_paragraph(lines[start:end], start + 1), end


def _code_end(lines: list[str], start: int) -> int | None:
    """Where a fenced code block or an HTML comment starting at ``lines[start]`` ends (exclusive), or None."""
    fence = FENCE_RE.match(lines[start])
    end = start + 1 if fence else start
    if fence:
        close = fence.group(1)[0] * len(fence.group(1))
        while end < len(lines) and not lines[end].lstrip().startswith(close):
            end += 1
    elif lines[start].lstrip().startswith("<!--"):
        while end < len(lines) and "-->" not in lines[end]:
            end += 1
    else:
        return None
    return min(end + 1, len(lines))


def file_links(paragraph: Paragraph) -> list[str]:
    """The path of every ``[text](path.md)`` in a record: a link to a whole file, which must exist too."""
    return [m.group(1) for m in FILE_LINK_RE.finditer(paragraph.body)]


def record_links(paragraph: Paragraph) -> list[tuple[str, str]]:
    """``(path part, block id)`` of every ``[text](path#^id)`` in a record."""
    return [(m.group(2), m.group(3)) for m in RECORD_LINK_RE.finditer(paragraph.body)]
