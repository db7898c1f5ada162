"""The offline ``rules`` organizer: plans memory_changes from the topic tree.

Four stages, each seeing the result of the ones before (via :class:`DraftTree`):

1. **merge duplicates** — exact and near duplicates anywhere in the tree
   (:mod:`.similarity`) become one record: the kept record (one in the core
   if any; then the one whose words cover most of the group, so "Oslo,
   Norway" wins over "Oslo"; then the earliest created) absorbs the others'
   block IDs as aliases, placed *before* its identity (``^dup ^keep`` — the
   last ID stays the identity, so links and creation order are untouched),
   and their citations are unioned. Nothing is deleted: every old ID still
   resolves. Near (not exact) duplicates filed under two different projects
   stay apart: each is about its own project.
2. **clean the core** — a core record that :func:`classify_statement` calls
   ``project`` moves to ``topics/projects/<slug>.md`` (an existing project
   topic it names, else a new one titled with the name); ``other``
   (stale status, tool procedure, facts about no one in particular) moves
   to ``topics/notes.md``. The core keeps rules, preferences and identity.
3. **split overgrown topics** — a topic (not the core) with more than
   :data:`MAX_TOPIC_RECORDS` records is split by its sections: every
   level-2 section (level-1 when the file has no single title) goes to
   ``<topic>/<section-slug>.md`` with its heading chain; records directly
   under the title stay. A file that is still too big keeps its first
   :data:`MAX_TOPIC_RECORDS` records and the rest go, in order, to
   ``<topic>/part-2.md``, ``part-3.md`` …
   A split happens once: a section whose file an earlier split made
   (``<topic>/<section-slug>.md``, or ``-2.md`` … after it, holding that
   section's heading chain) goes on to that file, whatever the topic's size,
   so new records about Walter in ``people.md`` join ``people/walter.md``
   and never make a ``people/walter-2.md``; such twins left by older
   versions (``walter.md`` and ``walter-2.md``, one section) become one
   file, the unnumbered one.
   A file another record links as a whole note is never emptied where
   that link would be left with no target (:meth:`DraftTree.may_empty`):
   ``people.md`` that ``[[people]]`` or ``[x](people.md)`` names, all of it
   under ``## <name>``, stays whole (a topic file holds only cited
   records, so no index note could stand in for it).
4. **order the core** — within each core section: rules, then
   preferences, then identity (stable otherwise).

Every stage emits ordinary ``merge_records``/``move_records`` operations;
the transaction validates them like any other change, so the plan never
loses a block ID (STRUCTURED policy with no deletes).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Callable, Mapping

from ..workspace.layout import CORE_TOPIC
from ..workspace.caches import FileSummary, TreeState
from ..placement.classify import CORE_CATEGORIES, core_rank, explain_statement, project_name
from ..placement.paths import GENERAL_PROJECT, NOTES, PROJECTS_DIR, slugify
from .draft import DraftRecord, DraftTree
from ..placement.similarity import candidate_tokens, duplicate_groups, normalized, record_token_sets, tokens

MAX_TOPIC_RECORDS = 30


def plan_rules(tree: TreeState, created_order: dict[str, int],
               changed: set[str] | None = None) -> list[dict[str, Any]]:
    """The rules organizer's memory_changes for ``tree`` (``[]`` when it is tidy).

    ``changed``: the topic files whose records changed since the last organize (None: all); duplicates are
    looked for only in pairs with a record of one of them.
    """
    draft = DraftTree.from_tree(tree, created_order)
    merge_duplicates(draft, tree, changed)
    clean_core(draft)
    split_topics(draft)
    order_core(draft)
    return draft.changes


# -- 1. duplicates --------------------------------------------------------
def merge_duplicates(draft: DraftTree, tree: TreeState | None = None, changed: set[str] | None = None) -> None:
    """Merge each duplicate cluster into its first record (only clusters touching ``changed`` topics, if given)."""
    token_sets = None
    focus = None
    if changed is not None and tree is not None:
        files_with = tree.index("tokens")  # (kept from tree to tree: a token's files, for its rarity)
        frequency = lambda token: len(files_with.get(token, ()))  # noqa: E731
        rels = _candidate_files(tree, changed, frequency, files_with)
        records = [r for rel in rels for r in draft.records(rel)]
        token_sets = [s for rel in rels for s in record_token_sets(tree.files[rel])]
        focus = {i for i, record in enumerate(records) if record.topic in changed}
    else:
        records = draft.records()
    for group in duplicate_groups([r.content for r in records], focus=focus, token_sets=token_sets):
        members = [records[i] for i in group]
        words = {id(r): {t for t in tokens(r.content) if len(t) > 3} for r in members}  # content words only
        union = set().union(*words.values())

        def key(record: DraftRecord) -> tuple:
            # the core is what sessions see, so a core copy is kept; then the one that says the most
            # ("Oslo, Norway" over "Oslo"); then the oldest
            return (record.topic != CORE_TOPIC, len(union - words[id(record)]), record.order, record.topic)

        left = sorted(members, key=key)
        while len(left) > 1:
            keep, rest = left[0], left[1:]
            # (a near duplicate filed under another project is kept apart, and merged with its own project's)
            left = [r for r in rest if _of_other_projects(r, keep)]
            dups = [r for r in rest if r not in left and not draft.conflicts(r, keep.topic)]
            if not dups:
                continue
            kind = "exact" if all(normalized(d.content) == normalized(keep.content) for d in dups) else "near"
            draft.merge(keep, dups, f"{kind} duplicate(s) of ^{keep.identity}: "
                        + ", ".join(f"^{d.identity} ({d.topic})" for d in dups))


def _of_other_projects(a: DraftRecord, b: DraftRecord) -> bool:
    """Near duplicates filed under two projects ("We decided to use Postgres for the alpha project." and "… the
    bravo project.": one word apart) are each about their own project; an exact copy is still one record."""
    projects = {_project_of(a.topic), _project_of(b.topic)}
    return None not in projects and len(projects) == 2 and normalized(a.content) != normalized(b.content)


def _project_of(topic: str) -> str | None:
    """The project a topic is filed under (``topics/projects/<name>.md`` or a part split from it), or None."""
    if not topic.startswith(PROJECTS_DIR + "/") or topic == GENERAL_PROJECT[0]:
        return None
    return topic[len(PROJECTS_DIR) + 1:].split("/", 1)[0].removesuffix(".md")


def _candidate_files(tree: TreeState, changed: set[str], frequency: Callable[[str], int],
                     files_with: Mapping[str, list[str]]) -> list[str]:
    """The changed files and every file holding one of the tokens the duplicate pass looks a changed record's
    candidates up by (the rarest of its tokens, :func:`duplicate_groups`): the only files whose records it can
    pair with one of them, so the only ones read."""
    present = sorted(rel for rel in changed if rel in tree.files)
    found = set(present)
    for rel in present:
        for token_set in record_token_sets(tree.files[rel]):
            for token in candidate_tokens(token_set, frequency):
                found.update(files_with.get(token, ()))
    return sorted(found)


# -- 2. the core ------------------------------------------------------------
def _project_topics(draft: DraftTree) -> dict[str, str]:
    """Known project names (title and file stem, lower-cased) → topic path."""
    out: dict[str, str] = {}
    for rel in sorted(draft.files):
        if not rel.startswith(PROJECTS_DIR + "/") or rel == GENERAL_PROJECT[0]:
            continue
        stem = rel[len(PROJECTS_DIR) + 1:].removesuffix(".md")
        if "/" in stem:
            continue
        out.setdefault(stem.casefold(), rel)
        title = draft.titles.get(rel)
        if title:
            out.setdefault(title.casefold(), rel)
    return out


def _destination(draft: DraftTree, topic: str, title: str) -> tuple[str, tuple[str, ...]]:
    """``topic`` under its existing title (or none), or under ``title`` when new."""
    if topic in draft.files:
        existing = draft.titles.get(topic)
        return topic, (existing,) if existing else ()
    draft.files[topic] = []  # later records find the new topic as known
    draft.titles[topic] = title
    return topic, (title,)


def _project_destination(draft: DraftTree, content: str) -> tuple[str, tuple[str, ...]]:
    known = _project_topics(draft)
    name = project_name(content, known)
    if name is None:
        return _destination(draft, *GENERAL_PROJECT)
    topic = known.get(name.casefold()) or f"{PROJECTS_DIR}/{slugify(name, 'project')}.md"
    return _destination(draft, topic, name)


def clean_core(draft: DraftTree) -> None:
    """Move project and other non-core records out of ``topics/core.md``."""
    plan: dict[tuple[str, tuple[str, ...]], list[tuple[DraftRecord, str]]] = {}
    for record in draft.records(CORE_TOPIC):
        category, reason = explain_statement(record.content, _project_topics(draft))
        if category in CORE_CATEGORIES:
            continue
        if category == "project":
            destination = _project_destination(draft, record.content)
        else:
            destination = _destination(draft, *NOTES)
        if draft.conflicts(record, destination[0]):
            continue
        plan.setdefault(destination, []).append((record, reason))
    for (topic, chain), entries in plan.items():
        reason = "the core keeps rules, preferences and identity: " + "; ".join(
            f"^{record.identity} {why}" for record, why in entries)
        draft.move([record for record, _ in entries], topic, chain, "end", reason)


# -- 3. overgrown topics ----------------------------------------------------
_NUMBERED_RE = re.compile(r"^(?P<base>.+)-\d+\.md$")


def split_topics(draft: DraftTree) -> None:
    """Split every non-core topic over :data:`MAX_TOPIC_RECORDS` records; send sections of a topic split before
    to the files that split made."""
    children = _children(draft)
    _join_twins(draft, children)
    for topic in sorted(draft.files):
        stem = topic.removesuffix(".md")
        overgrown = draft.count(topic) > MAX_TOPIC_RECORDS
        if topic == CORE_TOPIC or not overgrown and not children.get(stem):
            continue  # (counted without reading the file's records)
        records = draft.records(topic)
        if not records:
            continue
        titled = all(r.chain and r.chain[0] == records[0].chain[0] for r in records)
        depth = 2 if titled else 1
        keys = list(dict.fromkeys(r.chain[:depth] for r in records if len(r.chain) >= depth))
        # (key, records, the file an earlier split gave it or None for a new one)
        sections: list[tuple[tuple[str, ...], list[DraftRecord], str | None]] = []
        for key in keys:
            group = [r for r in records if r.chain[:depth] == key]
            home = _section_file(draft, children.get(stem, []), stem, key)
            if home is not None:  # split before: the section's file takes it (a record whose citation clashes stays)
                sections.append((key, [r for r in group if not draft.conflicts(r, home)], home))
            elif overgrown and len(keys) >= 2:
                sections.append((key, group, None))
        if sum(len(group) for _key, group, _home in sections) == len(records) and not draft.may_empty(
                topic, len({home or " > ".join(key) for key, _group, home in sections})):
            continue  # it would empty the file, and a link to the note as a whole would have no target: left whole
        targets = [topic]
        for key, group, home in sections:
            if home is not None:
                if group:
                    _move_in_runs(draft, group, home, f"section {' > '.join(key)!r} of {topic} was split to {home}")
            else:
                target = draft.free_topic(f"{stem}/{slugify(key[-1], 'section')}.md")
                _move_in_runs(draft, group, target, f"{topic} has {len(records)} records (> {MAX_TOPIC_RECORDS}): "
                              f"section {' > '.join(key)!r} gets its own file")
                targets.append(target)
        for target in targets:
            _chunk(draft, target)


def _children(draft: DraftTree) -> dict[str, list[str]]:
    """Topic stem → the files directly under its folder (``topics/people`` → ``topics/people/walter.md`` …)."""
    out: dict[str, list[str]] = {}
    for rel in sorted(draft.files):
        out.setdefault(rel.rpartition("/")[0], []).append(rel)
    return out


def _unnumbered(rel: str) -> str:
    """``people/walter-2.md`` → ``people/walter.md`` (the name :meth:`DraftTree.free_topic` numbered)."""
    match = _NUMBERED_RE.match(rel)
    return f"{match['base']}.md" if match else rel


def _section_chain(draft: DraftTree, topic: str) -> tuple[str, ...]:
    """The heading chain every record of ``topic`` is under (a file a split made holds one section), or ()."""
    chains = [r.chain for r in draft.records(topic)]
    common = chains[0] if chains else ()
    for chain in chains[1:]:
        while chain[:len(common)] != common:
            common = common[:-1]
    return common


def _section_file(draft: DraftTree, siblings: list[str], stem: str, key: tuple[str, ...]) -> str | None:
    """The file an earlier split gave section ``key`` of ``<stem>.md``: ``<stem>/<slug>.md`` or a numbered one
    after it (``-2.md`` …) that holds that section, the unnumbered first; None if there is none."""
    first = f"{stem}/{slugify(key[-1], 'section')}.md"
    named = sorted((rel for rel in siblings if first in (rel, _unnumbered(rel))), key=lambda rel: rel != first)
    return next((rel for rel in named if draft.exists(rel) and _section_chain(draft, rel) == key), None)


def _join_twins(draft: DraftTree, children: dict[str, list[str]]) -> None:
    """``walter-2.md`` (``-3.md`` …) holding the same section as ``walter.md`` beside it: one topic in two files
    (an older organizer split ``people.md`` again); its records go to the end of ``walter.md``, in order."""
    for siblings in children.values():
        for rel in siblings:
            first = _unnumbered(rel)
            if first == rel or first not in siblings or not draft.exists(first) or not draft.exists(rel):
                continue
            chain = _section_chain(draft, first)
            if chain and _section_chain(draft, rel) == chain:
                records = [r for r in draft.records(rel) if not draft.conflicts(r, first)]
                if records and (len(records) < draft.count(rel) or draft.may_empty(rel, 1)):
                    _move_in_runs(draft, records, first, f"{rel} holds the same section as {first}: "
                                  f"{' > '.join(chain)!r}")


def _chunk(draft: DraftTree, topic: str) -> None:
    records = draft.records(topic)
    if len(records) <= MAX_TOPIC_RECORDS:
        return
    stem = topic.removesuffix(".md")
    rest = records[MAX_TOPIC_RECORDS:]
    for n, start in enumerate(range(0, len(rest), MAX_TOPIC_RECORDS), start=2):
        piece = rest[start:start + MAX_TOPIC_RECORDS]
        target = draft.free_topic(f"{stem}/part-{n}.md")
        _move_in_runs(draft, piece, target, f"{topic} has {len(records)} records (> {MAX_TOPIC_RECORDS}): "
                      f"records {MAX_TOPIC_RECORDS + start + 1}–{MAX_TOPIC_RECORDS + start + len(piece)} go to part {n}")


def _move_in_runs(draft: DraftTree, records: list[DraftRecord], target: str, reason: str) -> None:
    """One move per run of records that share a heading chain, keeping their order."""
    run: list[DraftRecord] = []
    for record in records + [None]:  # type: ignore[list-item]
        if run and (record is None or record.chain != run[0].chain):
            draft.move(run, target, run[0].chain, "end", reason)
            run = []
        if record is not None:
            run.append(record)


# -- 4. core order ----------------------------------------------------------
def order_core(draft: DraftTree) -> None:
    """Within each core section: rules, then preferences, then identity."""
    records = draft.records(CORE_TOPIC)
    for chain in dict.fromkeys(r.chain for r in records):
        section = [r for r in records if r.chain == chain]
        ranked = sorted(section, key=lambda r: core_rank(explain_statement(r.content)[0]))
        if ranked != section:
            draft.move(ranked, CORE_TOPIC, chain, "start",
                       "core order: standing rules first, then preferences, then identity")


def topic_fingerprint(summary: "FileSummary") -> str:
    """What the duplicate pass compared of a topic file: its records' IDs and words (kept on the summary)."""
    cached = summary.__dict__.get("_organized_fingerprint")
    if cached is None:
        digest = hashlib.blake2b(digest_size=16)
        for record in summary.records:
            digest.update("\x1f".join(record.ids).encode("utf-8") + b"\x1e" + record.content.encode("utf-8") + b"\x1d")
        cached = summary.__dict__["_organized_fingerprint"] = digest.hexdigest()
    return cached
