"""The rules writer finds the records a statement updates or repeats through indexes (rare tokens, the topic,
person attributes), not by comparing it with every record; what it decides must be what a full pass decides."""

from __future__ import annotations

from pathlib import Path

from openprogram_memory.sessions.store import SessionStore
from openprogram_memory.writer import rules_backend
from openprogram_memory.writer.backend import BatchTurn
from openprogram_memory.writer.pipeline import write_report
from openprogram_memory.writer.quality import load_corpus

from tests.engine.helpers import make_workspace

CORPUS = Path(__file__).parent / "corpus" / "train.jsonl"


def _turns(lines: list[dict], start: int) -> list[BatchTurn]:
    return [BatchTurn(f"openprogram/later/u{i}", f"u{i}", "user", "Dana", f"2026-09-{1 + i % 28:02d}T10:00:00+00:00",
                      line["text"]) for i, line in enumerate(lines, start)]


def test_indexed_candidates_decide_what_a_full_pass_decides(tmp_path, monkeypatch):
    lines = load_corpus(CORPUS)
    ws = make_workspace(tmp_path / "state")
    store = SessionStore(ws.settings.sessions_dir)
    store.create_session("first", created_at="2026-08-01T09:00:00+00:00")
    for i, line in enumerate(lines[:300]):  # a tree written from real phrasing: people, slots, projects, core
        store.append("first", "user", line["text"], node_id=f"n{i}", created_at=f"2026-08-{1 + i % 28:02d}T10:00:00+00:00")
    write_report(ws, "first", force=True)
    tree = ws.tree()
    assert len(tree.records()) > 100
    later = _turns(lines[300:], 300)  # the rest says new things, repeats and changes old ones

    indexed = rules_backend.plan_statements(later, tree)
    monkeypatch.setattr(rules_backend, "records_with_any", lambda tree, wanted: tree.records())
    monkeypatch.setattr(rules_backend._Plan, "_update_candidates",
                        lambda self, statement, topic: self.tree.records())
    full = rules_backend.plan_statements(later, tree)
    assert indexed == full
    decided = {action["action"] for action in full[1]}
    assert {"create", "update", "skip"} <= decided  # the comparison covers every kind of decision


def _tree_with(tmp_path, records: dict[str, str]):
    ws = make_workspace(tmp_path / "small")
    for i, (path, text) in enumerate(records.items()):
        ws.update(changes=[{"path": path, "content": f"# T\n\n{text}[^e1]\n\n[^e1]: Sources: [n](openprogram/s1/u{1 + i % 3})\n"}])
    return ws.tree()


def _decision(tree, text: str) -> dict:
    _changes, actions = rules_backend.plan_statements(_turns([{"text": text}], 0), tree)
    return actions[0]


def test_a_near_duplicate_elsewhere_is_found_though_it_lacks_the_rarest_word(tmp_path):
    tree = _tree_with(tmp_path, {"topics/notes.md": "The user prefers dark roast coffee with oat milk every morning.",
                                 "topics/other.md": "The user keeps a kite in the garden shed."})
    decided = _decision(tree, "I prefer dark roast coffee with soy milk every morning.")
    assert decided["action"] == "update" and decided["topic"] == "topics/notes.md"  # ("soy" is in no record)


def test_a_record_holding_the_replaced_value_is_found_through_it(tmp_path):
    common = {f"topics/p{i}.md": f"The zorblat pipeline {word} uses Flask and the old scheduler."
              for i, word in enumerate(["also", "still", "mostly", "often"])}
    tree = _tree_with(tmp_path, {"topics/projects/zorblat-pipeline.md": "The zorblat pipeline runs on Flask.", **common})
    decided = _decision(tree, "We switched the zorblat pipeline from Flask to FastAPI.")
    assert decided["action"] == "update" and decided["target"].startswith("^")


def test_project_names_come_from_topics_wherever_the_person_keeps_them_but_never_from_the_writers_own(tmp_path):
    """Every topic under topics/ names a project by its file name (and title): projects/ first, then one moved
    anywhere else; never core, notes, people (nor a person's own file) or personal, whose names are no subjects."""
    tree = _tree_with(tmp_path, {path: f"A line about {path}." for path in (
        "topics/core.md", "topics/notes.md", "topics/people.md", "topics/people/walter.md", "topics/personal.md",
        "topics/projects/db.md", "topics/work/db.md", "topics/work/ledger.md", "topics/projects/infra/queue.md")})
    known = rules_backend._project_topics(tree)
    assert {name: known[name] for name in ("db", "ledger", "queue")} == {
        "db": "topics/projects/db.md", "ledger": "topics/work/ledger.md", "queue": "topics/projects/infra/queue.md"}
    assert not {"core", "notes", "people", "walter", "personal"} & set(known)
