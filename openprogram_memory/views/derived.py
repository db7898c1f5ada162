"""Derived views, rebuilt from the topic tree in the transaction that changes it.

Nobody edits these; deleting them all and running ``memory rebuild``
reproduces them byte for byte, because each is a pure function of the
topics, the archive and the creation order in ``runtime.json``.
"""

from __future__ import annotations

import json
import posixpath
import re
from dataclasses import dataclass, field

from ..tokens import count_tokens
from ..topics.model import Heading, Paragraph
from ..topics.wikilinks import WikilinkIndex
from ..workspace.layout import CORE_RENDER, CORE_TOPIC, RECENT, RELATIONS, TIMELINE
from ..workspace.caches import FileSummary, RecordInfo, TreeState, register_index

_LINK_TARGET_RE = re.compile(r"\]\(([^)\s]+)\)")


@dataclass
class CoreRender:
    """``core.md`` rendered to the token budget."""

    text: str
    tokens: int
    budget: int
    included: list[str] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)  # cite an unverified source: never injected


def _rebase_links(text: str, from_file: str, to_file: str) -> str:
    """Rewrite relative link targets written in ``from_file`` for ``to_file``."""

    def fix(match: re.Match[str]) -> str:
        target = match.group(1)
        if "://" in target or target.startswith("#") or target.startswith("/"):
            return match.group(0)
        path, sep, anchor = target.partition("#")
        absolute = posixpath.normpath(posixpath.join(posixpath.dirname(from_file), path))
        rebased = posixpath.relpath(absolute, posixpath.dirname(to_file) or ".")
        return f"]({rebased}{sep}{anchor})"

    return _LINK_TARGET_RE.sub(fix, text)


def render_core(tree: TreeState, budget: int) -> CoreRender:
    """Records of ``topics/core.md`` in file order until the budget is full.

    A record that does not fit is skipped (reported in ``excluded``) and the
    next ones are still tried. Its footnote definitions travel with it; the
    heading chain is kept for included records. A record citing a
    ``pending`` source is automatic context too, so it is left out
    (reported in ``pending``) until its source is trusted.
    """
    summary = tree.files.get(CORE_TOPIC)
    if summary is None:
        return CoreRender("", 0, budget)
    doc = summary.doc
    definitions = doc.definitions()
    used_definitions: list[str] = []
    chain: list[Heading] = []
    emitted_headings: set[int] = set()
    total = 0
    result = CoreRender("", 0, budget)

    def cost(parts: list[str]) -> int:
        return count_tokens("\n\n".join(parts))

    for block in doc.blocks:
        if isinstance(block, Heading):
            while chain and chain[-1].level >= block.level:
                chain.pop()
            chain.append(block)
            continue
        if not isinstance(block, Paragraph) or not block.ids:
            continue
        memory_id = block.ids[-1]  # the paragraph's identity
        info = summary.by_id.get(memory_id)
        if info is not None and info.trust_state != "trusted":
            result.pending.append(memory_id)
            continue
        new_headings = [h for h in chain if id(h) not in emitted_headings]
        new_defs = [label for label in dict.fromkeys(block.citations)
                    if label in definitions and label not in used_definitions]
        addition = [h.text for h in new_headings] + [block.text]
        def_text = [_rebase_links(definitions[label].text, CORE_TOPIC, CORE_RENDER) for label in new_defs]
        extra = cost(addition + def_text) + 2 * (len(addition) + len(def_text))
        if total + extra > budget:
            result.excluded.append(memory_id)
            continue
        emitted_headings.update(id(h) for h in new_headings)
        used_definitions.extend(new_defs)
        total += extra
        result.included.append(memory_id)
    if not result.included:
        return result
    # the sum of parts is an estimate; make the budget hold for the real text
    text = _assemble_core(tree, set(result.included))
    while count_tokens(text) > budget and result.included:
        result.excluded.append(result.included.pop())
        text = _assemble_core(tree, set(result.included)) if result.included else ""
    result.text = text
    result.tokens = count_tokens(text)
    return result


def _assemble_core(tree: TreeState, include: set[str]) -> str:
    """The text of exactly the records in ``include``, headings and footnotes with them."""
    doc = tree.files[CORE_TOPIC].doc
    definitions = doc.definitions()
    parts: list[str] = []
    chain: list[Heading] = []
    emitted: set[int] = set()
    used: list[str] = []
    for block in doc.blocks:
        if isinstance(block, Heading):
            while chain and chain[-1].level >= block.level:
                chain.pop()
            chain.append(block)
        elif isinstance(block, Paragraph) and block.identity in include:
            for heading in chain:
                if id(heading) not in emitted:
                    parts.append(heading.text)
                    emitted.add(id(heading))
            parts.append(block.text)
            used.extend(label for label in dict.fromkeys(block.citations) if label in definitions and label not in used)
    defs = "\n".join(_rebase_links(definitions[label].text, CORE_TOPIC, CORE_RENDER) for label in used)
    return "\n\n".join(parts) + ("\n\n" + defs if defs else "") + "\n"


def _full_date(time: str | None) -> tuple[str, str, str] | None:
    match = re.match(r"^(\d{4})-(\d{2})(?:-(\d{2}))?$", time or "")
    if not match:
        return None
    return match.group(1), match.group(2), match.group(3) or "00"


# Every timeline file sits at timeline/YYYY/MM/, three levels below the root.
_TIMELINE_UP = "../../../"


def _timeline_link(from_file: str, target: str) -> str:
    if "://" in target or target.startswith(("#", "/")):
        return target
    path, sep, anchor = target.partition("#")
    absolute = posixpath.normpath(posixpath.join(posixpath.dirname(from_file), path)) if path else from_file
    return f"{_TIMELINE_UP}{absolute}{sep}{anchor}"


def timeline_entries(summary: FileSummary) -> list[tuple[str, str, str]]:
    """``(day file, memory id, line)`` for each dated record of one topic file.

    Records dated only to a month go to ``DD = 00``; year-only and undated
    records have no place on a timeline. Kept with the cached summary.
    """
    cached = summary.__dict__.get("_timeline")
    if cached is not None:
        return cached
    entries = []
    for record in summary.records:
        date = _full_date(record.time)
        if date is None:
            continue
        year, month, day = date
        text = " ".join(_LINK_TARGET_RE.sub(lambda m: f"]({_timeline_link(record.topic, m.group(1))})",
                                            record.content).split())
        line = (f"- {text} ([{record.topic.removeprefix('topics/')}]({_TIMELINE_UP}{record.topic}"
                f"#^{record.memory_id}))")
        entries.append((f"{TIMELINE}/{year}/{month}/{day}.md", record.memory_id, line))
    summary.__dict__["_timeline"] = entries
    return entries


def _entries_by_day(summary: FileSummary) -> dict[str, list[tuple[str, str]]]:
    cached = summary.__dict__.get("_timeline_by_day")
    if cached is None:
        cached = {}
        for day, memory_id, line in timeline_entries(summary):
            cached.setdefault(day, []).append((memory_id, line))
        summary.__dict__["_timeline_by_day"] = cached
    return cached


# eager: every transaction renders the timeline days it touched, which needs this index over the whole tree
register_index("timeline-days", lambda summary: _entries_by_day(summary).keys(), eager=True)


def timeline_files(tree: TreeState, created_order: dict[str, int], days: set[str] | None = None) -> dict[str, str | None]:
    """``timeline/YYYY/MM/DD.md``: one line per dated record, in creation order.

    With ``days``, only those day files are produced (None = no entry left).
    """
    grouped: dict[str, list[tuple[int, str, str, str]]] = {}
    if days is None:
        for path, summary in tree.files.items():
            for day, memory_id, line in timeline_entries(summary):
                grouped.setdefault(day, []).append((created_order.get(memory_id, 1 << 60), path, memory_id, line))
    else:
        day_files = tree.index("timeline-days")
        for day in days:
            for path in day_files.get(day, ()):
                for memory_id, line in _entries_by_day(tree.files[path]).get(day, ()):
                    grouped.setdefault(day, []).append((created_order.get(memory_id, 1 << 60), path, memory_id, line))
    out: dict[str, str | None] = {day: None for day in days or ()}
    for rel, entries in grouped.items():
        entries.sort()
        year, month, day = rel.removesuffix(".md").split("/")[1:]
        title = f"{year}-{month}" + (f"-{day}" if day != "00" else "")
        out[rel] = "\n".join([f"# {title}", "", *(e[3] for e in entries)]) + "\n"
    return out


def recent_events(tree: TreeState, created_order: dict[str, int], limit: int) -> str:
    """The newest ``limit`` records by creation order, one JSON line each.

    ``created_order`` is insertion-ordered (oldest first), so the newest are
    read from its end; records with no creation order come after them.
    """
    chosen: list[tuple[int, RecordInfo]] = []
    seen: set[str] = set()
    for block_id in reversed(created_order):
        if len(chosen) == limit:
            break
        record = tree.find(block_id)
        if record is None or record.memory_id in seen:
            continue
        seen.add(record.memory_id)
        chosen.append((created_order.get(record.memory_id, created_order[block_id]), record))
    if len(chosen) < limit:
        extra = [(-1, r) for summary in tree.files.values() for r in summary.records
                 if r.memory_id not in seen and not any(i in created_order for i in r.ids)]
        extra.sort(key=lambda e: (e[1].topic, e[1].line))
        chosen.extend(extra[: limit - len(chosen)])
    chosen.sort(key=lambda e: e[0], reverse=True)
    lines = []
    for order, record in chosen:
        lines.append(json.dumps({
            "memory_id": record.memory_id,
            "topic": record.topic,
            "headings": list(record.headings),
            "content": record.content,
            "time": record.time,
            "created_order": order,
        }, ensure_ascii=False, sort_keys=True))
    return "".join(line + "\n" for line in lines)


register_index("link-targets", lambda summary: [
    *(block_id for _topic, block_id, _line, _id in summary.link_targets),
    *(block_id for _note, block_id, _line in summary.wikilink_targets if block_id)])


def relations(tree: TreeState) -> str:
    """``{"backlinks": {id: [ids]}, "outbound": {id: ["topic#^id"]}}``.

    Worked out once per tree. A tree made from another by an edit that
    neither holds a link (before or after) nor touches a record any link
    points at has the other tree's text: nothing it lists moved.
    """
    text = tree.views.get("relations")
    if text is None:
        text = tree.views["relations"] = _relations_kept(tree) or _relations(tree)
    return text


def _relations_kept(tree: TreeState) -> str | None:
    if tree.derived_from is None:
        return None
    views, old, new = tree.derived_from
    kept = views.get("relations")
    changed = [*old, *new]
    if kept is None or any(summary.link_targets or summary.wikilink_targets for summary in changed):
        return None
    targets = tree.index("link-targets")
    if any(block_id in targets for summary in changed for block_id in summary.ids):
        return None
    return kept


def _relations(tree: TreeState) -> str:
    outbound: dict[str, set[str]] = {}
    backlinks: dict[str, set[str]] = {}
    names = WikilinkIndex(tree.files) if any(summary.wikilink_targets for summary in tree.files.values()) else None
    for summary in tree.files.values():
        links = [(topic, block_id, memory_id) for topic, block_id, _line, memory_id in summary.link_targets]
        if names is not None:
            links += _wikilinks_to_records(names, summary)
        for topic, block_id, memory_id in links:  # (not the records: a file unread stays so)
            outbound.setdefault(memory_id, set()).add(f"{topic}#^{block_id}")
            target = tree.find(block_id)
            if target is not None:
                backlinks.setdefault(target.memory_id, set()).add(memory_id)
    data = {
        "backlinks": {k: sorted(v) for k, v in sorted(backlinks.items())},
        "outbound": {k: sorted(v) for k, v in sorted(outbound.items())},
    }
    return json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True) + "\n"


def _wikilinks_to_records(names: WikilinkIndex, summary: FileSummary) -> list[tuple[str, str, str]]:
    """``(target topic, block id, ID of the linking record)`` of every wikilink of a record of ``summary`` to a
    record (``[[people#^id]]``, an embed too), resolved by note name (``names``) as Obsidian does; one that does
    not resolve, or that a line which is no record holds, links no record."""
    wanted = [(note, block_id, line) for note, block_id, line in summary.wikilink_targets if block_id]
    if not wanted:
        return []
    by_line = {record.line: record.memory_id for record in summary.records}
    return [(topic, block_id, by_line[line]) for note, block_id, line in wanted
            if line in by_line and (topic := names.resolve(note, summary.path)) is not None]


def derived_views(tree: TreeState, created_order: dict[str, int], budget: int, recent_limit: int,
                  days: set[str] | None = None) -> tuple[dict[str, str | None], CoreRender]:
    """Derived files' content (None = should not exist) and the core render.

    ``days`` limits the timeline to the day files an edit can have touched
    (None = every day, for a full rebuild).
    """
    core = render_core(tree, budget)
    files: dict[str, str | None] = {CORE_RENDER: core.text or None}
    files.update(timeline_files(tree, created_order, days))
    files[RECENT] = recent_events(tree, created_order, recent_limit)
    files[RELATIONS] = relations(tree)
    return files, core
