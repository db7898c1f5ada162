"""``sleep`` compares for duplicates only pairs with a record changed since the last organize (``--full``: all)."""

from __future__ import annotations

import random

from openprogram_memory.organizer import reorganize
from openprogram_memory.organizer.planner import topic_fingerprint
from openprogram_memory.organizer.sleep import ORGANIZED
from openprogram_memory.placement.similarity import _Components, _duplicates, duplicate_groups, tokens
from openprogram_memory.workspace.manifest import Manifest

from .helpers import archive, topic, workspace

WORDS = "the user keeps a blue red kite bike shed garden in on every friday not 3 4 metric units tea".split()


def test_focused_groups_equal_the_full_groups_when_the_rest_was_compared_before():
    rng = random.Random(5)
    for _ in range(40):
        texts: list[str] = []
        for _ in range(60):  # half of them one word away from an earlier text: near and exact duplicates
            if texts and rng.random() < 0.5:
                words = rng.choice(texts).split()
                words.insert(rng.randrange(len(words) + 1), rng.choice(WORDS))
                texts.append(" ".join(words))
            else:
                texts.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 9))))
        sets = [frozenset(tokens(t)) for t in texts]
        # the "unchanged" records: a set with no duplicate pair inside (as a previous organize leaves it)
        unchanged: list[int] = []
        for i in range(len(texts)):
            if rng.random() < 0.7 and not any(_duplicates(texts, sets, i, j, 0.8) for j in unchanged):
                unchanged.append(i)
        focus = set(range(len(texts))) - set(unchanged)
        assert duplicate_groups(texts, focus=focus) == duplicate_groups(texts)
        assert duplicate_groups(texts, focus=focus, token_sets=sets) == duplicate_groups(texts)


def test_components_join_transitively():
    components = _Components(5)
    components.union(3, 1)
    components.union(1, 4)
    assert components.groups() == [[1, 3, 4]]


def _two_dupes(tmp_path):
    ws = workspace(tmp_path / "state")
    ids = archive(ws, 4)
    ws.update(changes=[
        {"path": "topics/a.md", "content": topic([("Dana keeps a blue kite in the garden shed.", ids[0])])},
        {"path": "topics/b.md", "content": topic([("Dana rides her bike to work every Friday.", ids[1])])},
    ])
    reorganize(ws)  # nothing to merge; records the organized state
    return ws, ids


def test_a_new_duplicate_in_another_file_is_merged_by_the_next_sleep(tmp_path):
    ws, ids = _two_dupes(tmp_path)
    assert Manifest(ws.root).meta(ORGANIZED)
    ws.update(changes=[{"path": "topics/c.md",
                        "content": topic([("Dana keeps a blue kite in the garden shed.", ids[2])])}])
    report = reorganize(ws)
    assert report["merged"] == 1 and len(ws.records()) == 2


def test_pairs_of_unchanged_records_wait_for_a_full_sleep(tmp_path):
    ws, ids = _two_dupes(tmp_path)
    # two copies written while the manifest said both files were organized (another tool put them there)
    ws.update(changes=[{"path": "topics/d.md", "content": topic([("Dana keeps a blue kite in the garden shed!", ids[2])])}])
    tree = ws.tree()
    Manifest(ws.root).put_meta(ORGANIZED, {rel: topic_fingerprint(s) for rel, s in tree.files.items()})
    assert reorganize(ws)["merged"] == 0
    assert reorganize(ws, full=True)["merged"] == 1
    Manifest(ws.root).path.unlink()  # the record lost: everything is compared again (nothing left to merge)
    assert reorganize(ws)["merged"] == 0 and len(ws.records()) == 2
