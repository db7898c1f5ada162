"""A process keeps the lines of its last revision and looks again only at files whose signature moved, or that
were too recent to trust: whatever happens to the files in between, the revision it gives is the digest of
their bytes (architecture §2.4) — the same a new process, or the definition itself, gives."""

from __future__ import annotations

import hashlib
import os
import random

from openprogram_memory.workspace.state import RevisionCache


def _by_definition(root) -> str:
    """sha256 over sorted ``relpath \\0 sha256-hex(bytes) \\n`` of every file (no .git/, .scriptorium/)."""
    lines = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        lines.append(b"%s\0%s\n" % (rel.encode(), hashlib.sha256(path.read_bytes()).hexdigest().encode()))
    return hashlib.sha256(b"".join(lines)).hexdigest()[:32]


def test_a_kept_revision_follows_every_kind_of_change(tmp_path):
    rng = random.Random(3)
    root = tmp_path / "memory"
    (root / "topics").mkdir(parents=True)
    names = [f"topics/{d}/f{n}.md" for d in "abc" for n in range(12)]
    cache = RevisionCache()
    for step in range(160):
        rel = rng.choice(names)
        path = root / rel
        move = rng.random()
        if move < 0.4 or not path.exists():
            path.parent.mkdir(exist_ok=True)
            path.write_text(f"record {step} {rng.random()}\n")
        elif move < 0.6:
            path.unlink()
        elif move < 0.8:  # same size, signature put back: only a file too recent to trust is read again
            before = path.stat()
            text = path.read_text()
            path.write_text(text[::-1][1:] + "\n" if len(text) > 1 else "x")
            os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        else:  # several files at once, some of them in a directory of their own
            for other in rng.sample(names, 5):
                (root / other).parent.mkdir(exist_ok=True)
                (root / other).write_text(f"batch {step}\n" * rng.randint(1, 3))
        assert cache.revision(root) == _by_definition(root), step


def test_a_file_that_could_not_be_read_is_read_again_next_time(tmp_path, monkeypatch):
    """A read error (permissions, I/O) leaves the file out of that revision only: the next one reads it, though
    its signature never moved."""
    root = tmp_path / "memory"
    (root / "topics").mkdir(parents=True)
    for n in range(3):
        (root / f"topics/f{n}.md").write_text(f"record {n}\n")
        os.utime(root / f"topics/f{n}.md", ns=(10**18, 10**18 + n))  # long ago: trusted by signature
    cache = RevisionCache()
    cache.revision(root)
    (root / "topics/f1.md").write_text("record one, changed\n")
    os.utime(root / "topics/f1.md", ns=(10**18, 10**18 + 7))
    real = RevisionCache._digest
    monkeypatch.setattr(RevisionCache, "_digest",
                        lambda self, path, sig: None if path.endswith("f1.md") else real(self, path, sig))
    without = cache.revision(root)
    monkeypatch.setattr(RevisionCache, "_digest", real)
    assert without != _by_definition(root)
    assert cache.revision(root) == _by_definition(root)


def test_the_signatures_key_tells_any_moved_signature_or_path_apart_even_past_64_bit_inodes():
    """The key that says "every file as it was" (status memo, organized, revision) differs whenever a path or any
    part of a signature differs — also for inode numbers past 2**63, which overlay file systems hand out."""
    from openprogram_memory.workspace.state import signatures_key

    base = {"topics/a.md": ("/m/topics/a.md", (10, 20, 30), False), "topics/b.md": ("/m/topics/b.md", (1, 2, 3), False)}
    keys = {signatures_key(base)}
    for rel, sig in (("topics/a.md", (11, 20, 30)), ("topics/a.md", (10, 21, 30)), ("topics/a.md", (10, 20, 31)),
                     ("topics/b.md", (1, 2, 2**64 - 1)), ("topics/b.md", (1, 2, 2**64 - 2))):
        keys.add(signatures_key({**base, rel: (base[rel][0], sig, False)}))
    keys.add(signatures_key({"topics/a.md": base["topics/a.md"], "topics/c.md": base["topics/b.md"]}))
    assert len(keys) == 7
    assert signatures_key(dict(reversed(base.items()))) == signatures_key(base)  # the order of the scan is not in it
    scanned = {**base, "topics/z.md": ("/m/topics/z.md", (5, 6, 7), False)}  # (not the files keyed last)
    before = signatures_key(scanned)
    scanned["topics/a.md"] = ("/m/topics/a.md", (10, 20, 99), False)  # the same dict, changed after it was keyed
    assert signatures_key(scanned) != before
