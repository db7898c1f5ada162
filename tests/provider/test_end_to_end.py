"""From a conversation to recall, through the provider, as a runtime would drive it."""

from __future__ import annotations

from openprogram_memory.config import load_settings
from openprogram_memory.provider import get_provider
from openprogram_memory.search.query import search
from openprogram_memory.search.cache import current_index
from openprogram_memory.sessions.store import SessionStore
from openprogram_memory.memory import MemoryWorkspace


def test_conversation_to_search_and_edit_refresh():
    settings = load_settings()
    memory = get_provider(settings)
    store = SessionStore(settings.sessions_dir)
    session = store.create_session("chat-1")
    memory.initialize(session)
    for role, text in [
        ("user", "Hi, I'm Dana. We decided to use FastAPI for the billing service."),
        ("assistant", "Noted: FastAPI for billing."),
        ("user", "Our Postgres cluster runs in Frankfurt."),
        ("assistant", "Got it."),
    ]:
        store.append(session, role, text)
        assert memory.write(session) is None  # per turn: below the threshold, nothing to report
    memory.shutdown()  # the forced write at the end of the session
    ws = MemoryWorkspace.open(settings)
    hits = search(ws.root, "billing framework")
    assert hits and "FastAPI" in hits[0].content
    recall = memory.search("which framework for billing?")
    assert recall.count("<memory-context>") == 1 and "FastAPI" in recall

    # edit the record: the next search sees the new text, and only that file is re-indexed
    topic = hits[0].topic
    other_topics = [p for p in ws.tree().files if p != topic]
    assert other_topics
    text = ws.read_topic(topic).replace("FastAPI", "Litestar")
    ws.update(changes=[{"path": topic, "content": text}])
    index, report = current_index(ws.root)
    assert report.indexed == [topic] and not set(report.indexed) & set(other_topics)
    fresh = search(ws.root, "billing framework")
    assert "Litestar" in fresh[0].content and fresh[0].memory_id == hits[0].memory_id
