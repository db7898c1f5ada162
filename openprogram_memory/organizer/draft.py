"""A draft of the topic layout that planners edit while they emit memory_changes.

Planners look at the tree, decide, and record each decision both as an
operation (``draft.changes``) and in this lightweight model (which file and
heading chain each record is in, in which order, with which IDs and
evidence), so that a later stage sees the result of the earlier ones — the
splitter counts records the core cleanup just moved in, the core ordering
sees the core after the cleanup. The model mirrors how
:mod:`openprogram_memory.transaction.structured` places records.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass
from typing import Any

from ..topics.model import Heading
from ..topics.wikilinks import WikilinkIndex
from ..transaction.structured import definition_meaning
from ..workspace.caches import TreeState

UNKNOWN_ORDER = 1 << 60


@dataclass(eq=False)
class DraftRecord:
    """One record (paragraph) as planners see it."""

    ids: list[str]
    topic: str
    chain: tuple[str, ...]
    content: str
    evidence: dict[str, tuple]  # citation label -> meaning
    order: int = UNKNOWN_ORDER  # creation order of the identity

    @property
    def identity(self) -> str:
        return self.ids[-1]


class _Lazy(MutableMapping[str, Any]):
    """A map over the tree's topic files whose values are worked out the first time one is asked for: a
    planner that looks at a few files (the changed ones and their duplicate candidates) pays for those."""

    def __init__(self, known: set[str], load: Callable[[str], Any]) -> None:
        self._data: dict[str, Any] = {}
        self._known = known
        self._load = load

    def __getitem__(self, key: str) -> Any:
        try:
            return self._data[key]
        except KeyError:
            if key not in self._known:
                raise
            value = self._data[key] = self._load(key)
            return value

    def __setitem__(self, key: str, value: Any) -> None:
        self._data[key] = value
        self._known.add(key)

    def __delitem__(self, key: str) -> None:
        if key not in self._known:
            raise KeyError(key)
        self._data.pop(key, None)
        self._known.discard(key)

    def __contains__(self, key: object) -> bool:
        return key in self._known

    def __iter__(self) -> Iterator[str]:
        return iter(self._known)

    def __len__(self) -> int:
        return len(self._known)


class DraftTree:
    """Files → records in file order, plus the operations that got them there.

    Made from a tree, a file's records, title and citation meanings are read from it when first asked for
    (:meth:`count` needs none of them)."""

    def __init__(self, files: MutableMapping[str, list[DraftRecord]], titles: MutableMapping[str, str | None],
                 meanings: MutableMapping[str, dict[str, tuple]], sizes: Callable[[str], int] | None = None,
                 tree: TreeState | None = None) -> None:
        self.files = files
        self.titles = titles
        self.meanings = meanings
        self.changes: list[dict[str, Any]] = []
        self._sizes = sizes
        self._tree = tree
        self._linked: tuple[set[str | None], set[str]] | None = None

    @classmethod
    def from_tree(cls, tree: TreeState, created_order: dict[str, int]) -> "DraftTree":
        def meanings_of(rel: str) -> dict[str, tuple]:
            summary = tree.files[rel]
            cached = summary.__dict__.get("_meanings")  # (once per parse of the file)
            if cached is None:
                cached = summary.__dict__["_meanings"] = {
                    label: definition_meaning(d, rel) for label, d in summary.doc.definitions().items()}
            return dict(cached)  # (a draft adds to its copy as records move)

        def title_of(rel: str) -> str | None:
            return next((b.title for b in tree.files[rel].doc.blocks if isinstance(b, Heading) and b.level == 1),
                        None)

        meanings = _Lazy(set(tree.files), meanings_of)

        def records_of(rel: str) -> list[DraftRecord]:
            meaning = meanings[rel]
            return [
                DraftRecord(
                    ids=list(record.ids),
                    topic=rel,
                    chain=tuple(record.headings),
                    content=record.content,
                    evidence={ev.label: meaning.get(ev.label, ()) for ev in record.evidence},
                    order=created_order.get(record.memory_id, UNKNOWN_ORDER),
                )
                for record in tree.files[rel].records
            ]

        files = _Lazy(set(tree.files), records_of)
        read = files._data

        def size(rel: str) -> int:
            return len(read[rel]) if rel in read else len(tree.files[rel].records)

        return cls(files, _Lazy(set(tree.files), title_of), meanings, size, tree)

    def count(self, topic: str) -> int:
        """How many records ``topic`` holds now (without reading a file no stage has touched)."""
        if self._sizes is not None and topic in self.files:
            return self._sizes(topic)
        return len(self.files.get(topic, []))

    # -- reading ------------------------------------------------------
    def records(self, topic: str | None = None) -> list[DraftRecord]:
        if topic is not None:
            return list(self.files.get(topic, []))
        return [r for rel in sorted(self.files) for r in self.files[rel]]

    def exists(self, topic: str) -> bool:
        return bool(self.files.get(topic))

    def may_empty(self, topic: str, homes: int) -> bool:
        """Whether moving every record of ``topic`` to ``homes`` files leaves each link to the note as a whole a
        target.

        The file goes when its last record leaves. A wikilink to the note or a heading in it (``[[people]]``,
        ``[[people#Walter]]``) follows it when all its records go to one file (a rename, as Obsidian does); a
        markdown link to the file (``[x](people.md)``) is not rewritten. Either left with no target would refuse
        the organize as a dangling link, every night.
        """
        if self._tree is None:
            return True
        if self._linked is None:  # (read once, only when a plan would empty a file)
            index = WikilinkIndex(self._tree.files)
            self._linked = (
                {index.resolve(note, rel) for rel, summary in self._tree.files.items()
                 for note, block_id, _line in summary.wikilink_targets if note and block_id is None},
                {target for summary in self._tree.files.values() for target, _line in summary.file_link_targets})
        wikilinked, file_linked = self._linked
        return topic not in file_linked and (topic not in wikilinked or homes == 1)

    def conflicts(self, record: DraftRecord, topic: str) -> bool:
        """Would ``record``'s evidence clash with a same-labelled definition in ``topic``?"""
        defined = self.meanings.get(topic, {})
        return any(label in defined and defined[label] != meaning for label, meaning in record.evidence.items())

    def free_topic(self, wanted: str) -> str:
        """``wanted`` if no file with records has that path, else ``…-2.md``, ``…-3.md`` …"""
        if not self.exists(wanted):
            return wanted
        stem = wanted.removesuffix(".md")
        n = 2
        while self.exists(f"{stem}-{n}.md"):
            n += 1
        return f"{stem}-{n}.md"

    # -- editing ------------------------------------------------------
    def merge(self, keep: DraftRecord, dups: list[DraftRecord], reason: str) -> None:
        """``merge_records``: ``keep`` absorbs ``dups``; their IDs become aliases before its identity."""
        ids = keep.ids[:-1]
        for dup in dups:
            self.files[dup.topic].remove(dup)
            ids.extend(dup.ids)
            for label, meaning in dup.evidence.items():
                keep.evidence.setdefault(label, meaning)
                self.meanings.setdefault(keep.topic, {}).setdefault(label, meaning)
        keep.ids = ids + [keep.identity]
        self.changes.append({"op": "merge_records", "memory_ids": [keep.identity] + [d.identity for d in dups],
                             "reason": reason})

    def move(self, records: list[DraftRecord], topic: str, chain: tuple[str, ...], position: str,
             reason: str) -> None:
        """``move_records`` of whole records, in order, to ``topic`` under ``chain``."""
        for record in records:
            self.files[record.topic].remove(record)
        target = self.files.setdefault(topic, [])
        if topic not in self.titles:
            self.titles[topic] = chain[0] if chain else None
        at = _insertion_index(target, chain, position)
        for offset, record in enumerate(records):
            record.topic, record.chain = topic, chain
            target.insert(at + offset, record)
            for label, meaning in record.evidence.items():
                self.meanings.setdefault(topic, {}).setdefault(label, meaning)
        self.changes.append({
            "op": "move_records",
            "memory_ids": [i for record in records for i in record.ids],
            "destination": {"topic_path": topic, "headings": list(chain), "position": position},
            "reason": reason,
        })


def _insertion_index(records: list[DraftRecord], chain: tuple[str, ...], position: str) -> int:
    same = [i for i, r in enumerate(records) if r.chain == chain]
    if same:
        return same[0] if position == "start" else same[-1] + 1
    if not chain:
        return 0  # records without a heading come before the first heading
    for k in range(len(chain) - 1, 0, -1):  # a new chain goes after its longest existing prefix's section
        under = [i for i, r in enumerate(records) if r.chain[:k] == chain[:k]]
        if under:
            return under[-1] + 1
    return len(records)
