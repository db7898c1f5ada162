"""``RulesWriter`` (model ``rules``): the offline writer, a real extractor.

From the person's turns only (role ``user``) it takes the durable
statements :mod:`.statements` finds, and plans structured changes — the
same ``create_record``/``update_record`` operations the public API uses,
applied by the same :class:`~openprogram_memory.transaction.structured.TopicEditor`
to the pipeline's staging copy, so they meet the same transaction.

Routing ("core is for the person"; one rule, shared with the organizer so
it never has to undo it):

- **identity**, **preference** and **rule** statements go to
  ``topics/core.md`` under ``## Identity``, ``## Preferences``,
  ``## Rules`` — when the organizer's
  :func:`~openprogram_memory.placement.classify.classify_statement` agrees
  they are core material and the corpus-trained sentence classifier does
  not doubt their kind (``Statement.doubted``); one it calls ``project``
  goes to that project's topic, any other to ``topics/notes.md``. Only the person's
  own turns are read: the pipeline never batches runtime-scheduled turns
  (wrappers, tool output, sub-agent prompts and reports, compaction
  summaries; ``sessions/markers.py``), and the extractor yields nothing for
  agent-generated text that arrives as a plain user turn;
- **people** go to ``topics/people.md`` under a heading per person;
- **personal** facts go to ``topics/personal.md``;
- **decision**, **fact** and **schedule** statements go to
  ``topics/projects/<slug>.md`` (under ``## Decisions`` / ``## Facts`` /
  ``## Schedule``) when they name a project or subject ("billing service" →
  ``projects/billing-service.md``; an existing project topic it names
  wins, and so does one an earlier statement of the batch started: "our
  staging database is called nw_staging and it lives on db-stg-02" files
  both facts in ``projects/staging.md``), else to ``topics/notes.md`` under
  the same sections.

Dedupe and updates: a statement whose normalized text an existing record
already has is skipped. A statement that gives a new value for the same
fact — the same single-valued person attribute (name, role, employer,
location, time zone, pronouns — read from each record's own wording, so
"backend engineer at Acme" and "now works at Globex" are the same
employer), an explicitly replaced value ("we switched from Flask to …",
"we're dropping Redis for …": of a fact or decision, never a rule,
preference or person's record that merely names Redis), or a near duplicate (the organizer's
:func:`~openprogram_memory.placement.similarity.is_near_duplicate`: the
same sentence with a word changed) — updates that record in place: new
text, same block ID and place, the old sources kept and the new one added.
A statement that only repeats part of a record ("Oslo" after "Oslo,
Norway") keeps the richer text and adds its source.
An update only goes forward in time: a statement older than what the
record already rests on is skipped (so of two branches that chose Flask and
FastAPI with the same words, the later choice stands).

Records from an abandoned branch (``request.superseded``, architecture §15): one
whose slot the batch fills again is replaced — new text, the abandoned
sources dropped, the new one cited, same block ID; one the batch does not
touch is kept, its evidence labels marked ``…, abandoned branch`` (the
archived message it cites stays: the archive is append-only). Once the
person goes back to that branch (``request.restored``), the mark is dropped.

Each record cites its source turn with a 1–3 word keyword from the
statement. A batch with nothing new ends with an explicit
``nothing_durable`` verdict covering every turn.
"""

from __future__ import annotations

import json
import posixpath
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from ..failures import MemoryFailure
from ..placement.classify import CORE_CATEGORIES, classify_statement, project_name
from ..timeutil import parse_instant
from ..placement.paths import NOTES, PROJECTS_DIR, slugify
from ..placement.similarity import is_near_duplicate, near_duplicate_prefix, normalized, records_with_any, tokens
from ..topics.model import Heading
from ..topics.normalize import valid_time
from ..transaction.structured import TopicEditor, parse_request
from ..workspace.layout import CORE_TOPIC
from ..workspace.caches import RecordInfo, TreeState
from .backend import NOTHING_DURABLE, BatchTurn, WriterRequest, WriterRun
from .statements import Statement, extract_statements, same_attribute, slotted_records, subject_person
from ..topics.normalize import ABANDONED_QUALIFIER
from .superseded import SupersededRecord

if TYPE_CHECKING:
    from ..transaction.staging import Staging
    from ..memory import MemoryWorkspace

__all__ = ["RulesWriter", "Statement", "extract_statements", "plan_statements"]

# what a fact is about when it names nothing ("Our project is using Spring Boot 2.7"): no project topic of its own
_UNNAMED = frozenset({"project", "app", "codebase", "repo", "repository", "code", "stack", "setup", "system", "team",
                      "company", "lab"})
CORE_SECTIONS = {"rule": "Rules", "preference": "Preferences", "identity": "Identity"}
PROJECT_SECTIONS = {"decision": "Decisions", "fact": "Facts", "schedule": "Schedule", "rule": "Rules",
                    "preference": "Preferences", "identity": "People", "people": "People", "personal": "Personal"}
CORE_TITLE = "Core"
PEOPLE = ("topics/people.md", "People")
PERSONAL = ("topics/personal.md", "Personal")
_FILLER_TOKENS = frozenset({"now", "currently", "also", "still", "actually", "really", "just", "the", "user"})


def reaches_core(statement: Statement, known: dict[str, str] | None = None) -> bool:
    """Whether the writer files ``statement`` in ``topics/core.md``: a rule, preference or identity statement that
    the organizer's :func:`~openprogram_memory.placement.classify.classify_statement` calls core material (given
    the ``known`` project topics) and the corpus-trained classifier does not doubt (``Statement.doubted``)."""
    return statement.kind in CORE_SECTIONS and not statement.doubted and \
        classify_statement(statement.text, known or {}) in CORE_CATEGORIES


def _one_value_changed(new: str, old: str) -> bool:
    """The same sentence with one value swapped ("settled on Flask for X" → "settled on FastAPI for X", "runs on
    Python 3.11" → "… 3.12").

    Not a swapped numbered name: "Postgres 31073 for project papa-31073" and "Postgres 51359 for project
    papa-51359" (or "owns the svc-1 repository" and "owns the svc-2 repository") name different things."""
    a, b = frozenset(tokens(new)), frozenset(tokens(old))
    return len(a & b) >= 4 and len(a - b) <= 1 and len(b - a) <= 1 and _numbered_names(new) == _numbered_names(old)


_NUMBERED_NAME_RE = re.compile(r"\b[A-Za-z][\w.]*[-_#/]\d[\w.-]*")  # "svc-31070", "papa-51359", "INC-4412"


def _numbered_names(text: str) -> set[str]:
    return {name.casefold() for name in _NUMBERED_NAME_RE.findall(text)}


# a standing rule or preference said again as a change ("… from now on", "… anymore", "no longer …")
_CHANGE_MARK_RE = re.compile(r"\b(?:from now on|anymore|no longer)\b", re.I)
_PLAIN_TOKENS = frozenset("""the a an in on of to for from now user user's their they is are and anymore doesn't don't
not no longer prefers prefer uses use always never""".split())
_USES_RE = re.compile(r"^The user uses\b")


def _changed_mind(new: str, old: str) -> bool:
    """Whether the person's rule or preference ``new`` changes the one ``old`` states: a value swapped ("Answer in
    British English." → "Answer in American English from now on.": a name each side) or the same thing
    taken back ("The user doesn't prefer dark mode anymore" against "The user prefers dark mode in every tool.")."""
    if not _CHANGE_MARK_RE.search(new):
        return False
    a, b = set(tokens(new)) - _PLAIN_TOKENS, set(tokens(old)) - _PLAIN_TOKENS
    if len(a - b) == 1 and len(b - a) == 1 and a & b:
        return all(_named_value(word, text) for word, text in ((min(a - b), new), (min(b - a), old)))
    taken_back = re.search(r"\b(?:doesn't|no longer)\b", new)  # (of the same thing: "no longer uses Vim", "uses Vim")
    return bool(taken_back) and (len(a & b) >= 2 or a == b)


def _named_value(word: str, text: str) -> bool:
    """Whether ``word`` is written in ``text`` as a name ("British"), not at the start."""
    found = re.search(rf"(?<=\s)(?i:{re.escape(word)})\b", text)
    return found is not None and found.group(0)[:1].isupper()


def _richer_or_same(old: str, new: str) -> bool:
    """Whether ``new`` says nothing ``old`` does not ("Oslo" against "Oslo, Norway")."""
    return set(tokens(new)) - _FILLER_TOKENS <= set(tokens(old))


@dataclass
class _Planned:
    """One planned create or update, with what it rests on."""

    content: str
    kind: str
    time: str
    sources: list[dict[str, str]]
    topic: str
    headings: tuple[str, ...]
    stamp: str  # newest source timestamp
    memory_id: str | None = None  # set for updates of an existing record
    slot: str | None = None
    touched: bool = True  # an update candidate becomes a change only once a statement updates it

    def change(self) -> dict[str, Any]:
        if self.memory_id is not None:
            return {"op": "update_record", "memory_id": self.memory_id, "content": self.content,
                    "time": self.time, "sources": self.sources}
        return {"op": "create_record", "content": self.content, "time": self.time, "sources": self.sources,
                "destination": {"topic_path": self.topic, "headings": list(self.headings), "position": "end"}}


@dataclass
class _Plan:
    """Statements turned into changes, and a note on every decision taken."""

    tree: TreeState
    planned: list[_Planned] = field(default_factory=list)
    actions: list[dict[str, Any]] = field(default_factory=list)
    superseded: tuple[SupersededRecord, ...] = ()  # records resting only on an abandoned branch
    restored: tuple[SupersededRecord, ...] = ()  # records marked as from one the person went back to

    def __post_init__(self) -> None:
        self.known = _project_topics(self.tree)
        self.started: dict[str, str] = {}  # project topics this batch creates, by name: known to the facts after
        self.new_titles: dict[str, str] = {}
        self._people_files: dict[str, str] | None = None
        self.abandoned_ids = {record.memory_id for record in self.superseded}
        self.abandoned_sources = {source for record in self.superseded for source in record.sources}

    # -- routing ---------------------------------------------------------
    def route(self, statement: Statement) -> tuple[str, tuple[str, ...]]:
        """Where a statement goes: core section, people, personal, a project topic, or notes."""
        if statement.kind in CORE_SECTIONS:
            if reaches_core(statement, self.known):
                return CORE_TOPIC, self._chain(CORE_TOPIC, CORE_TITLE, CORE_SECTIONS[statement.kind])
            if classify_statement(statement.text, self.known) == "project":
                name = project_name(statement.text, self.known) or statement.subject
                if name:
                    return self._project(name, statement.kind)
            return NOTES[0], self._chain(NOTES[0], NOTES[1], None)
        if statement.kind == "people":
            person = statement.subject or subject_person(statement.text) or "Others"  # ("Trent is my colleague and …")
            section = person[:1].upper() + person[1:]
            topic = self._person_topics().get(section.casefold(), PEOPLE[0])
            return topic, self._chain(topic, PEOPLE[1], section)
        if statement.kind == "personal":
            return PERSONAL[0], self._chain(PERSONAL[0], PERSONAL[1], None)
        # a project topic started earlier in the batch counts as known, as it would for the next batch: "our
        # staging database is called nw_staging and it lives on db-stg-02" files both of its facts in staging.md
        known = {**self.started, **self.known}
        name = project_name(statement.text, known) or statement.subject
        held = self._person_topics().get(name.casefold()) if name and name.casefold() not in known else None
        if name and held is not None:  # ("Walter is on call every other weekend": a person memory knows)
            return held, self._chain(held, PEOPLE[1], name[:1].upper() + name[1:])
        if name and name.casefold() not in _UNNAMED:
            return self._project(name, statement.kind)
        return NOTES[0], self._chain(NOTES[0], NOTES[1], PROJECT_SECTIONS[statement.kind])

    def _person_topics(self) -> dict[str, str]:
        """``{person's section, casefolded: the file that holds it}``: people.md's ``## Walter``, or the file the
        organizer split it into (``topics/people/walter.md``), where a new fact about them goes (not back into
        people.md, and not into a project topic named after them)."""
        if self._people_files is None:
            folder = PEOPLE[0].removesuffix(".md") + "/"
            self._people_files = {}
            for path in sorted(p for p in self.tree.files if p.startswith(folder)) + [PEOPLE[0]]:
                for record in self.tree.files[path].records if path in self.tree.files else ():
                    if record.headings:
                        self._people_files.setdefault(record.headings[-1].casefold(), path)
        return self._people_files

    def _project(self, name: str, kind: str) -> tuple[str, tuple[str, ...]]:
        topic = self.known.get(name.casefold()) or f"{PROJECTS_DIR}/{slugify(name, 'project')}.md"
        if topic not in self.tree.files:
            self.started.setdefault(name.casefold(), topic)
        title = name[:1].upper() + name[1:]
        return topic, self._chain(topic, title, PROJECT_SECTIONS[kind])

    def _chain(self, topic: str, title: str, section: str | None) -> tuple[str, ...]:
        """The heading chain for ``section`` in ``topic``: an existing one, else under the file's title."""
        summary = self.tree.files.get(topic)
        if summary is not None:
            for record in summary.records:
                if section and record.headings and record.headings[-1].casefold() == section.casefold():
                    return record.headings
            titles = [b.title for b in summary.doc.blocks if isinstance(b, Heading) and b.level == 1]
            head: tuple[str, ...] = (titles[0],) if len(titles) == 1 else ()
        else:
            head = (self.new_titles.setdefault(topic, title),)
        return head + ((section,) if section else ())

    # -- planning ----------------------------------------------------------
    def add(self, statement: Statement, turn: BatchTurn) -> None:
        """Create, update or skip one statement of ``turn``."""
        note = {"node": turn.node_id, "kind": statement.kind, "statement": statement.text}
        duplicate = self._exact(statement.text)
        if duplicate is not None:
            self.actions.append({**note, "action": "skip", "reason": f"already recorded ({duplicate})"})
            return
        topic, headings = self.route(statement)
        source = {"source": turn.source_id, "label": statement.keyword}
        time = turn.date if valid_time(turn.date) else "undated"
        target = self._to_update(statement, topic)
        if target is not None and target.memory_id in self.abandoned_ids:
            self._replace_abandoned(target, statement, source, time, turn)
            self.actions.append({**note, "action": "replace", "target": _name(target), "topic": target.topic})
            return
        if target is not None:
            if _instant(turn.timestamp) < _instant(target.stamp):
                self.actions.append({**note, "action": "skip", "reason": f"older than {_name(target)}"})
                return
            if not _richer_or_same(target.content, statement.text):
                target.content = statement.text
            target.time = time
            target.stamp = turn.timestamp
            target.touched = True
            if all(s["source"] != turn.source_id for s in target.sources):
                target.sources.append(source)
            self.actions.append({**note, "action": "update", "target": _name(target), "topic": target.topic})
            return
        self.planned.append(_Planned(statement.text, statement.kind, time, [source], topic, headings,
                                     turn.timestamp, slot=statement.slot))
        self.actions.append({**note, "action": "create", "topic": topic})

    def _exact(self, text: str) -> str | None:
        """The record (existing or planned) that says exactly this already, by normalized text.

        A record from an abandoned branch does not count: the new branch saying
        it again re-cites it (see :meth:`_replace_abandoned`).
        """
        key = normalized(text)
        # the same normalized text has the same tokens: only records holding its rarest token can say it
        said = frozenset(tokens(text))
        records = records_with_any(self.tree, near_duplicate_prefix(said, self.tree, 1.0)) if said \
            else self.tree.records()
        for record in records:
            if normalized(record.content) == key and record.memory_id not in self.abandoned_ids:
                return "^" + record.memory_id
        for planned in self.planned:
            if normalized(planned.content) == key:
                return _name(planned)
        return None

    def _update_candidates(self, statement: Statement, topic: str) -> list[RecordInfo]:
        """Every record :meth:`_to_update` could accept, in tree order, found through indexes instead of a pass
        over the whole tree: records sharing one of the statement's rarest tokens (a near duplicate must, by
        prefix filtering), holding the replaced value, or stating a person attribute."""
        said = frozenset(tokens(statement.text))
        wanted = set(near_duplicate_prefix(said, self.tree)) if said else set()
        if statement.old and statement.kind in ("decision", "fact"):
            old = frozenset(tokens(statement.old))
            if not old:
                return self.tree.records()
            wanted.update(near_duplicate_prefix(old, self.tree, 1.0))
        # (a record of the same topic with one value changed shares all but one token: the prefix finds it)
        found = {(r.topic, r.line): r for r in records_with_any(self.tree, sorted(wanted))}
        if statement.slot is not None:
            for record in slotted_records(self.tree):
                found[(record.topic, record.line)] = record
        if statement.kind in ("preference", "rule") and _CHANGE_MARK_RE.search(statement.text):
            core = self.tree.files.get(CORE_TOPIC)  # (a change of the person's mind: the core, which is small)
            for record in core.records if core is not None else ():
                found[(record.topic, record.line)] = record
        return [found[key] for key in sorted(found)]

    def _to_update(self, statement: Statement, topic: str) -> _Planned | None:
        """The record this statement gives a new value or wording for (planned first, then existing).

        Same slot, an explicitly replaced value, or a near duplicate (the
        same sentence with a changed word: "use Flask" → "use FastAPI").
        """
        def same(content: str, where: str, headings: tuple[str, ...]) -> bool:
            if statement.slot is not None and same_attribute(statement, content):
                return True
            if statement.old and statement.kind in ("decision", "fact"):
                mentions = re.search(rf"(?<![\w-]){re.escape(statement.old)}(?![\w-])", content, re.I)
                if mentions and _states_facts(where, headings, content) and (where == topic or where != CORE_TOPIC and (
                        statement.subject is None or statement.subject.casefold() in content.casefold())):
                    return True
                if mentions and where == CORE_TOPIC and statement.text.startswith("The user ") and _USES_RE.match(content):
                    return True  # "I switched from VS Code to Zed": the tool the person used is no more
            if statement.kind in ("preference", "rule") and where == CORE_TOPIC and _changed_mind(statement.text, content):
                return True
            if statement.subject is not None and statement.subject.casefold() not in content.casefold():
                return False  # "Postgres for the alpha project" against "… the bravo project": another thing
            if statement.kind in ("decision", "fact", "schedule") and where == topic and _one_value_changed(
                    statement.text, content):
                return True
            return is_near_duplicate(statement.text, content)

        for planned in reversed(self.planned):
            if same(planned.content, planned.topic, planned.headings):
                return planned
        candidates = [r for r in self._update_candidates(statement, topic) if same(r.content, r.topic, r.headings)]
        candidates.sort(key=lambda r: (r.topic != topic, r.topic != CORE_TOPIC))
        for record in candidates:
            existing = next((p for p in self.planned if p.memory_id == record.memory_id), None)
            if existing is not None:
                return existing
            planned = _Planned(record.content, statement.kind, record.time or "undated", list(record.sources),
                               record.topic, record.headings, _record_stamp(record), memory_id=record.memory_id,
                               slot=statement.slot, touched=False)
            self.planned.append(planned)
            return planned
        return None

    # -- records from an abandoned branch (writer/superseded.py) -----------
    def _replace_abandoned(self, target: _Planned, statement: Statement, source: dict[str, str], time: str,
                           turn: BatchTurn) -> None:
        """The new branch fills the slot again: its value and evidence replace the abandoned ones.

        No "only forward in time" check: the abandoned branch is not the
        person's word any more, whatever its timestamps say.
        """
        target.content = statement.text
        target.time, target.stamp, target.touched = time, turn.timestamp, True
        target.sources = [s for s in target.sources if s["source"] not in self.abandoned_sources
                          and s["source"] != turn.source_id] + [source]

    def keep_abandoned(self) -> None:
        """Records from an abandoned branch the batch did not touch stay, marked as such in their evidence;
        those marked before whose branch the person went back to lose the mark."""
        for candidate in self.superseded:
            self._retime(candidate, ABANDONED_QUALIFIER, "keep",
                         "from an abandoned branch; the new branch does not say otherwise")
        for candidate in self.restored:
            self._retime(candidate, "", "restore", "its branch is the current one again")

    def _retime(self, candidate: SupersededRecord, qualifier: str, action: str, reason: str) -> None:
        """Plan ``candidate`` unchanged but for its footnote time (``qualifier`` says where it came from)."""
        record = self.tree.find(candidate.memory_id)
        if record is None or any(p.touched and p.memory_id == record.memory_id for p in self.planned):
            return  # gone, or the batch said something about it already
        sources = [{"source": s["source"], "label": s["label"]} for s in record.sources]
        self.planned = [p for p in self.planned if p.memory_id != record.memory_id]
        self.planned.append(_Planned(record.content, "fact", (record.time or "undated") + qualifier, sources,
                                     record.topic, record.headings, _record_stamp(record),
                                     memory_id=record.memory_id))
        self.actions.append({"action": action, "target": "^" + record.memory_id, "topic": record.topic,
                             "reason": reason})

    def changes(self) -> list[dict[str, Any]]:
        """The planned operations. Each record keeps its own keyword: records of one file citing
        one turn with other keywords get footnotes of their own (a keyword-qualified evidence id),
        so no record shows a label taken from another statement of the message."""
        return [p.change() for p in self.planned if p.touched]


# sections whose records state no fact or decision ("Never push to main."): "we're migrating from Celery to
# Dramatiq" is no new value for them, only a statement sharing a word
_NO_FACT_SECTIONS = frozenset(section.casefold() for kind, section in [*PROJECT_SECTIONS.items(), *CORE_SECTIONS.items()]
                              if kind not in ("decision", "fact", "schedule"))


# an instruction, as the organizer leaves one it moves out of the core right under a project topic's title
_INSTRUCTION_RE = re.compile(r"^(?:always|never|don't|do not|keep|use|avoid|make sure|prefer|please|only|no)\b", re.I)


def _states_facts(topic: str, headings: tuple[str, ...], content: str) -> bool:
    """Whether a record (``content``) filed under ``headings`` in ``topic`` can state a fact or decision a switch
    ("we switched from Flask to FastAPI") gives a new value.

    Not a record about a person (people, personal), nor one in a rules, preferences … section, nor an instruction
    right under a topic's title, where the writer files the rules and preferences the core does not take and the
    organizer leaves those it moves out of the core ("Keep the Celery tasks idempotent."); other records under a
    title are facts ("The zorblat pipeline runs on Flask.", typed by hand)."""
    if topic in (PEOPLE[0], PERSONAL[0]) or topic.startswith(PEOPLE[0].removesuffix(".md") + "/"):
        return False
    if len(headings) <= 1:
        return not _INSTRUCTION_RE.match(content)
    return headings[-1].casefold() not in _NO_FACT_SECTIONS


def _name(planned: _Planned) -> str:
    return ("^" + planned.memory_id) if planned.memory_id else f"new record in {planned.topic}"


def _instant(stamp: str | None):
    from datetime import datetime, timezone

    return parse_instant(stamp) or datetime.min.replace(tzinfo=timezone.utc)


def _record_stamp(record: RecordInfo) -> str:
    """The newest timestamp of the messages a record rests on ('' if none resolves)."""
    stamps = [ref.source.timestamp for ev in record.evidence for ref in ev.refs if ref.source is not None]
    return max(stamps, key=lambda s: _instant(s)) if stamps else ""


def _project_topics(tree: TreeState) -> dict[str, str]:
    """Known project names (file stem and title, case-folded) → topic path: the files directly in
    ``topics/projects/`` first, then a topic the person moved anywhere else under ``topics/``
    ("projects/infra/db/postgres.md", "work/billing-service.md"), so the next fact about it follows the move."""
    out: dict[str, str] = {}
    reserved = {CORE_TOPIC, NOTES[0], PEOPLE[0], PERSONAL[0]}
    nested = [rel for rel in sorted(tree.files) if rel.startswith("topics/") and rel not in reserved
              and not rel.startswith(PEOPLE[0].removesuffix(".md") + "/")]
    for rel in sorted(nested, key=lambda rel: posixpath.dirname(rel) != PROJECTS_DIR):
        summary = tree.files[rel]
        stem = posixpath.basename(rel).removesuffix(".md")
        if stem == "general":
            continue
        out.setdefault(stem.casefold(), rel)
        out.setdefault(stem.replace("-", " ").casefold(), rel)
        titles = [b.title for b in summary.doc.blocks if isinstance(b, Heading) and b.level == 1]
        if titles:
            out.setdefault(titles[0].casefold(), rel)
    return out


def plan_statements(turns: list[BatchTurn], tree: TreeState, superseded: Sequence[SupersededRecord] = (),
                    restored: Sequence[SupersededRecord] = ()) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(memory_changes, actions)`` for the person's turns of a batch against ``tree``.

    ``superseded`` records (from an abandoned branch) whose slot the batch
    fills again are replaced; the others are kept and marked. ``restored``
    records (marked, their branch current again) lose the mark.
    """
    plan = _Plan(tree, superseded=tuple(superseded), restored=tuple(restored))
    for turn in turns:
        if turn.role != "user":
            continue
        for statement in extract_statements(turn.text):
            plan.add(statement, turn)
    plan.keep_abandoned()
    changes = []
    for change in plan.changes():
        try:
            parse_request([change], internal=True)  # one odd statement must not sink the batch
        except MemoryFailure as failure:
            plan.actions.append({"action": "drop", "content": change.get("content"), "reason": failure.message})
            continue
        changes.append(change)
    return changes, plan.actions


class RulesWriter:
    """The offline writer: durable statements from the person's turns, through structured changes."""

    name = "rules"

    def run(self, request: WriterRequest, staging: "Staging", ws: "MemoryWorkspace") -> WriterRun:
        """Plan and apply this batch's records in ``staging``; say so when there are none."""
        tree = ws.cache.snapshot()  # the baseline this staging copy starts from
        user_turns = [t for t in request.turns if t.role == "user"]
        changes, actions = plan_statements(request.turns, tree, request.superseded, request.restored)
        run = WriterRun(backend=self.name, rounds=1, committed=True, stop_reason="end_turn",
                        prompt=f"rules: durable statements from {len(user_turns)} user turn(s) of "
                               f"{len(request.turns)}: " + ", ".join(t.node_id for t in user_turns))
        run.reply = json.dumps({"changes": len(changes), "actions": actions}, ensure_ascii=False)
        if changes:
            TopicEditor(staging, tree, ws).apply(parse_request(changes, internal=True))
        else:
            run.verdict = NOTHING_DURABLE
            run.reviewed = [t.source_id for t in request.turns]
        return run
