"""An agent runtime holds its provider from session start to shutdown and asks it before every turn: the
provider watches the memory files meanwhile, so a search checks no file while nothing moves, and sees a hand
edit once the watch reports it. Shutdown lets the watch go (the last holder stops it)."""

from __future__ import annotations

import time

import pytest

from openprogram_memory.config import load_settings
from openprogram_memory.memory import MemoryWorkspace
from openprogram_memory.provider import FilesMemory
from openprogram_memory.search.index import SearchIndex
from openprogram_memory.sources.archive import SourceMessage
from openprogram_memory.workspace import watch

SOURCE = SourceMessage("openprogram/s1/u1", "Dana", "user-1", "2026-08-09T10:00:00+00:00", "Dana runs a bike shop.")


@pytest.fixture
def provider(tmp_path):
    settings = load_settings(tmp_path / "state")
    ws = MemoryWorkspace.open(settings, create=True)
    ws.archive([SOURCE])
    ws.update(changes=[{"path": "topics/work.md", "content": (
        "# Work\n\nDana runs a bike shop.[^e1]\n\n[^e1]: Sources: [shop](openprogram/s1/u1)\n")}])
    memory = FilesMemory(settings)
    yield memory
    memory.shutdown()
    watch.stop()


def _live(root) -> watch.RootWatch:
    running = watch._WATCHES[root.resolve()]
    deadline = time.monotonic() + 10
    while not running.live and time.monotonic() < deadline:
        time.sleep(0.01)
    assert running.live
    return running


def test_between_session_start_and_shutdown_searches_check_no_file(provider, monkeypatch):
    provider.initialize("s1")
    root = provider._workspace().root
    running = _live(root)
    assert "bike shop" in provider.search("bike")  # (the check after the watch began)
    refreshes: list[int] = []
    real = SearchIndex.refresh
    monkeypatch.setattr(SearchIndex, "refresh", lambda self: refreshes.append(1) or real(self))
    for _ in range(5):
        assert "bike shop" in provider.search("bike")
    assert refreshes == []
    before = running.generation
    work = root / "topics/work.md"
    work.write_text(work.read_text().replace("bike shop", "kayak rental"))  # by hand, in another editor
    deadline = time.monotonic() + 10
    while running.generation == before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert "kayak rental" in provider.search("kayak") and refreshes == [1]
    provider.shutdown()
    assert watch.token(root.resolve()) is None  # let go: searches check the files again
    running._thread.join(5)
    assert not running._thread.is_alive()  # and its thread is gone


def test_the_last_of_two_providers_stops_the_watch_and_a_served_root_stays_watched(provider, tmp_path):
    provider.initialize("s1")
    root = provider._workspace().root.resolve()
    other = FilesMemory(provider.settings)
    other.initialize("s2")
    _live(root)
    provider.shutdown()
    assert watch.token(root) is not None  # the other session still runs
    other.shutdown()
    assert watch.token(root) is None
    provider.initialize("s3")
    served = watch.start(root)  # `memory serve` / `memory mcp` in the same process: for the rest of it
    provider.shutdown()
    assert watch._WATCHES.get(root) is served
    provider.initialize("s4")
    provider.shutdown()
    assert watch._WATCHES.get(root) is served
