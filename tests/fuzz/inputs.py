"""Generated requests and hand edits, and the one property every input must keep.

Shared by the bounded test (``tests/fuzz/test_fuzz_inputs.py``) and the long
run (``benchmarks/fuzz_inputs.py``). An input is installed only if the
validators accept it — the installed topics then pass the strict rules and
every block ID is unique — otherwise it fails with a code from the closed
enum and no byte of the workspace changes. Anything else (another
exception: exit 1 at the CLI, HTTP 500) is a property violation.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from openprogram_memory.config import load_settings
from openprogram_memory.failures import FailureCode, MemoryFailure
from openprogram_memory.sources.archive import SourceMessage
from openprogram_memory.topics.model import parse_topic
from openprogram_memory.transaction.validate import check_strict
from openprogram_memory.transaction.update_request import load_request_json, parse_update_request
from openprogram_memory.memory import MemoryWorkspace

MESSAGES = [
    SourceMessage("openprogram/s1/u1", "Dana", "user-1", "2026-08-09T10:00:00+08:00", "I run a bike shop."),
    SourceMessage("openprogram/s1/u2", "Dana", "user-1", "2026-08-10T09:00:00+08:00", "Always answer in metric."),
]
SEED = ("# Dana\n\n## Work\n\nDana runs a bike shop.[^e1]\n\nDana answers in metric.[^e2]\n\n"
        "[^e1]: Sources: [shop](openprogram/s1/u1)\n[^e2]: Sources: [metric](openprogram/s1/u2)\n")
SEED_PATH = "topics/people/dana.md"
OUTSIDE_NAME = "outside-secret.md"


def make_workspace(state: Path) -> MemoryWorkspace:
    ws = MemoryWorkspace.open(load_settings(state), create=True)
    ws.archive(MESSAGES)
    ws.update(changes=[{"path": SEED_PATH, "content": SEED}])
    (state / OUTSIDE_NAME).write_text("# Outside\n\nNot memory.\n")
    return ws


def fresh_copy(template: Path, state: Path) -> MemoryWorkspace:
    """The template state directory copied to ``state``: every input starts from the same tree,
    so what Hypothesis draws never depends on what an earlier input installed."""
    if state.exists():
        shutil.rmtree(state)
    shutil.copytree(template, state, symlinks=True)
    return MemoryWorkspace.open(load_settings(state))


def tree_digest(root: Path) -> str:
    """One digest of every file's path and bytes (symlinks by target), runtime locks excluded."""
    digest = hashlib.sha256()
    for dirpath, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for name in sorted(files):
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            # caches of what was read, keyed by file signatures (tree cache, manifest): not memory
            if rel.endswith("write.lock") or rel == ".scriptorium/tree-cache.pickle" \
                    or rel.startswith(".scriptorium/manifest.sqlite"):
                continue
            digest.update(rel.encode("utf-8", "surrogateescape") + b"\0")
            data = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
            digest.update(hashlib.sha256(data).digest())
    return digest.hexdigest()


# -- generated pieces ------------------------------------------------------------
def current_ids(ws: MemoryWorkspace) -> list[str]:
    return sorted(ws.tree().by_id)


def _current_text(ws: MemoryWorkspace) -> str:
    try:
        return ws.read_topic(SEED_PATH)
    except MemoryFailure:
        return SEED


PATHS = st.one_of(
    st.sampled_from([
        SEED_PATH, "topics/new.md", "notes.md", "topics/a/b/c.md", "../x.md", "topics/../../x.md", "/etc/x.md",
        "topics/a\nb.md", "topics/\u202egpj.md", "topics/~/x.md", "topics/x\x00.md", "topics/link.md",
        "topics/linkdir/x.md", "sources/openprogram/_v2/s1.md", "core.md", "timeline/2026/08/09.md",
        "topics/.hidden.md", "topics/x.txt", "", " ", "topics/" + "d/" * 20 + "x.md", "topics/" + "n" * 300 + ".md",
        "C:/x.md", "topics\\win.md",
    ]),
    st.text(max_size=40).map(lambda t: "topics/" + t + ".md"),
    st.integers(),
    st.none(),
)


def _mutations(draw, text: str) -> str:
    """Apply a few text mutations: the damage hand edits and models actually do."""
    kinds = draw(st.lists(st.sampled_from([
        "drop_id", "dup_id", "drop_def", "rename_cite", "nul", "crlf", "bom", "long_line", "deep_heading",
        "uncited", "text_after", "bad_date", "surrogate", "control", "append_record", "empty", "fence",
    ]), max_size=3))
    lines = text.split("\n")
    for kind in kinds:
        ids = [token for token in text.split() if token.startswith("^") and len(token) == 9]
        if kind == "drop_id" and ids:
            text = text.replace(" " + draw(st.sampled_from(ids)), "", 1)
        elif kind == "dup_id" and ids:
            text = text.replace(ids[-1], draw(st.sampled_from(ids)))
        elif kind == "drop_def":
            text = "\n".join(line for line in text.split("\n") if not line.startswith("[^")) + "\n"
        elif kind == "rename_cite":
            text = text.replace("[^", "[^x", 1)
        elif kind == "nul":
            text = text.replace("Dana", "Da\x00na", 1)
        elif kind == "crlf":
            text = text.replace("\n", "\r\n")
        elif kind == "bom":
            text = "\ufeff" + text
        elif kind == "long_line":
            text = text.replace("bike shop", "bike shop " + "x" * draw(st.sampled_from([1000, 100_000])), 1)
        elif kind == "deep_heading":
            text = "#" * draw(st.integers(1, 300)) + " Deep\n\n" + text
        elif kind == "uncited":
            text += "\nAn uncited line.\n"
        elif kind == "text_after":
            text = text.replace("] ^", "] trailing words ^", 1)
        elif kind == "bad_date":
            text = text.replace("Time: `", "Time: `2026-02-30", 1)
        elif kind == "surrogate":
            text = text.replace("shop", "sh\ud800op", 1)
        elif kind == "control":
            text = text.replace("shop", "sh\x1bop\u202e", 1)
        elif kind == "append_record":
            text += "\nDana rides to work.[^e9]\n\n[^e9]: Sources: [ride](openprogram/s1/u1)\n"
        elif kind == "empty":
            text = draw(st.sampled_from(["", "\n", "# Only a heading\n"]))
        elif kind == "fence":
            text += "\n```\nunclosed fence\n"
    del lines
    return text


@st.composite
def topic_text(draw, base: str) -> str:
    choice = draw(st.integers(0, 9))
    if choice < 6:
        return _mutations(draw, base)
    if choice < 8:
        return base + "\n" + draw(st.sampled_from([
            "Dana sells e-bikes.[^n1]\n\n[^n1]: Sources: [e-bikes](openprogram/s1/u1)\n",
            "## Home\n\nDana lives near the shop.[^n2]\n\n[^n2]: Time: `2026-08`; Sources: [near](openprogram/s1/u2)\n"]))
    return draw(st.one_of(st.text(max_size=200), st.just(base + draw(st.text(max_size=50)))))


JSON_LEAF = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20))
JSON_ANY = st.recursive(JSON_LEAF, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)), max_leaves=20)


@st.composite
def structured_change(draw, ids: list[str]) -> Any:
    op = draw(st.sampled_from(["create_record", "update_record", "delete_record", "move_records", "create", "bogus"]))
    change: dict[str, Any] = {"op": op}
    known = st.sampled_from(ids) if ids else st.just("deadbeef")
    if op in ("create_record", "update_record", "create") or draw(st.integers(0, 4)) == 0:
        change["content"] = draw(st.one_of(st.just("Dana fixes bikes."), st.just("Dana fixes bikes.[^x] ^abc"),
                                           st.text(max_size=60), JSON_LEAF))
    if op in ("update_record", "delete_record") or draw(st.integers(0, 4)) == 0:
        change["memory_id"] = draw(st.one_of(known, known, st.text(max_size=10), JSON_LEAF))
    if op == "move_records" or draw(st.integers(0, 4)) == 0:
        change["memory_ids"] = draw(st.lists(st.one_of(known, st.text(max_size=10)), max_size=3))
    if op in ("create_record", "update_record", "create") or draw(st.integers(0, 4)) == 0:
        change["sources"] = draw(st.one_of(
            st.just([{"source": "openprogram/s1/u1", "label": "shop"}]),
            st.just([{"source": "openprogram/s1/u1", "label": "shop"}]),
            st.just([{"source": "new-source-a", "label": "said"}]),
            st.lists(st.dictionaries(st.sampled_from(["source", "label", "x"]), JSON_LEAF, max_size=3), max_size=2),
            JSON_ANY))
    if draw(st.booleans()):
        change["time"] = draw(st.one_of(st.sampled_from(["2026", "2026-02-30", "undated", "2026-08-09"]), JSON_LEAF))
    if op in ("create_record", "move_records", "create") or draw(st.integers(0, 4)) == 0:
        change["destination"] = draw(st.one_of(
            st.fixed_dictionaries({"topic_path": st.sampled_from([SEED_PATH, "topics/new.md"])}),
            st.fixed_dictionaries({"topic_path": PATHS}, optional={
                "headings": st.one_of(st.lists(st.text(max_size=15), max_size=8), JSON_LEAF),
                "position": st.sampled_from(["start", "end", "before", "after", "middle"]),
                "anchor_memory_id": st.one_of(st.text(max_size=9), JSON_LEAF)}),
            JSON_ANY))
    if draw(st.integers(0, 9)) == 0:
        change[draw(st.text(max_size=8))] = draw(JSON_ANY)
    return change


@st.composite
def request_body(draw, base: str, ids: list[str]) -> Any:
    """One request object of any of the three forms (or none of them)."""
    form = draw(st.sampled_from(["changes"] * 3 + ["patch"] * 3 + ["memory_changes"] * 3 + ["junk"]))
    body: dict[str, Any]
    if form == "changes":
        items = draw(st.lists(st.one_of(
            st.fixed_dictionaries({"path": st.sampled_from([SEED_PATH, "topics/new.md"]), "content": topic_text(base)}),
            st.fixed_dictionaries({"path": PATHS, "content": topic_text(base)}),
            st.fixed_dictionaries({"path": PATHS, "action": st.sampled_from(["delete", "write", "move"])}),
            JSON_ANY), min_size=1, max_size=3))
        body = {"changes": items}
    elif form == "patch":
        new = draw(topic_text(base))
        if new == base:
            new = base + "\nDana sells e-bikes.[^n1]\n\n[^n1]: Sources: [e-bikes](openprogram/s1/u1)\n"
        import difflib

        path = draw(st.one_of(st.just(SEED_PATH), PATHS.filter(lambda p: isinstance(p, str))))
        diff = "".join(difflib.unified_diff(base.splitlines(True), new.splitlines(True), f"a/{path}", f"b/{path}"))
        if draw(st.booleans()):
            diff = diff.replace("@@ -1,", "@@ -1,9999", 1)
        body = {"patch": diff if draw(st.integers(0, 5)) else draw(st.text(max_size=80))}
    elif form == "memory_changes":
        body = {"memory_changes": draw(st.lists(structured_change(ids), min_size=1, max_size=3))}
        if draw(st.booleans()):
            body["sources"] = draw(st.one_of(
                st.just([{"label": "new-source-a", "role": "user", "content": "I fix bikes.",
                          "observed_at": "2026-08-12T10:00:00Z"}]),
                st.lists(st.dictionaries(st.sampled_from(["label", "role", "content", "observed_at", "trust"]),
                                         JSON_LEAF, max_size=4), max_size=2)))
    else:
        return draw(JSON_ANY)
    choice = draw(st.integers(0, 9))
    if choice < 5:
        body["base_revision"] = "<current>"
    elif choice == 5:
        body["base_revision"] = draw(st.one_of(st.just("0" * 32), JSON_LEAF))
    choice = draw(st.integers(0, 9))
    if choice < 3:
        body["commit_message"] = draw(st.sampled_from(["memory: fuzz", "fix\n\nbody"]))
    elif choice == 3:
        body["commit_message"] = draw(st.one_of(st.text(max_size=30), JSON_LEAF))
    return body


@st.composite
def raw_request(draw, base: str, ids: list[str] = ()) -> bytes:
    """Request bytes as stdin or an HTTP body carry them: JSON, damaged JSON, deep JSON, bad UTF-8."""
    body = draw(request_body(base, list(ids)))
    if isinstance(body, dict) and body.get("base_revision") == "<current>":
        body["base_revision"] = None  # filled in at run time (see run_request)
    data = json.dumps(body, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")
    damage = draw(st.sampled_from(["none"] * 16 + ["utf8", "truncate", "deep", "bom"]))
    if damage == "utf8":
        data = data[: len(data) // 2] + b"\xff\xfe" + data[len(data) // 2:]
    elif damage == "truncate":
        data = data[: max(0, len(data) - draw(st.integers(1, 10)))]
    elif damage == "deep":
        depth = draw(st.sampled_from([40, 1000, 100_000]))
        data = b'{"changes": ' + b"[" * depth + b"]" * depth + b"}"
    elif damage == "bom":
        data = b"\xef\xbb\xbf" + data
    return data


SETUPS = st.sampled_from(["none", "symlink_out", "symlink_in", "symlink_dir"])


def prepare(ws: MemoryWorkspace, setup: str) -> None:
    """Optional symlinks created inside topics/ before the input arrives."""
    link = ws.root / "topics" / "link.md"
    linkdir = ws.root / "topics" / "linkdir"
    for path in (link, linkdir):
        if path.is_symlink():
            path.unlink()
    if setup == "symlink_out":
        os.symlink(ws.root.parent / OUTSIDE_NAME, link)
    elif setup == "symlink_in":
        os.symlink("people/dana.md", link)
    elif setup == "symlink_dir":
        os.symlink(ws.root.parent, linkdir)


# -- the property ------------------------------------------------------------------
@dataclass
class Outcome:
    kind: str  # "installed", "no-change", or the failure code
    detail: str = ""


def _check_installed(ws: MemoryWorkspace, changed: list[str]) -> None:
    tree = ws.tree()
    for rel in changed:
        path = ws.root / rel
        if not path.exists():
            continue
        assert not path.is_symlink(), f"installed through a symlink: {rel}"
        text = path.read_text(encoding="utf-8")
        assert "\x00" not in text, f"NUL installed in {rel}"
        check_strict(parse_topic(text, rel), ws.cache.sources.lookup, lambda _rel: False)
    seen: dict[str, str] = {}
    for record in tree.records():
        for block_id in record.ids:
            assert block_id not in seen, f"^{block_id} in {seen.get(block_id)} and {record.topic}"
            seen[block_id] = record.topic


def run_request(ws: MemoryWorkspace, data: bytes) -> Outcome:
    """Feed request bytes through the same parsing as CLI and HTTP; check the property."""
    before = tree_digest(ws.root)
    try:
        body = load_request_json(data)
        if isinstance(body, dict) and "base_revision" in body and body["base_revision"] is None:
            body["base_revision"] = ws.revision()
        result = ws.update(**parse_update_request(body))
    except MemoryFailure as failure:
        assert isinstance(failure.code, FailureCode)
        assert failure.code is not FailureCode.TRANSACTION_FAILURE_UNKNOWN, failure.message
        after = tree_digest(ws.root)
        assert after == before, f"{failure.code.value} but the tree changed"
        return Outcome(failure.code.value, failure.message)
    if not result.changed_files:
        return Outcome("no-change")
    _check_installed(ws, result.changed_files)
    return Outcome("installed")


def run_hand_edit(ws: MemoryWorkspace, path: Any, draft: bytes) -> Outcome:
    """A hand edit: draft bytes as an editor leaves them, installed like ``memory edit`` does."""
    before = tree_digest(ws.root)
    try:
        try:
            text = draft.decode("utf-8")
        except UnicodeDecodeError:
            raise MemoryFailure(FailureCode.INVALID_ARGUMENT, "draft is not UTF-8") from None
        result = ws.write_topic(path, text, base_revision=ws.revision())
    except MemoryFailure as failure:
        assert failure.code is not FailureCode.TRANSACTION_FAILURE_UNKNOWN, failure.message
        assert tree_digest(ws.root) == before, f"{failure.code.value} but the tree changed"
        return Outcome(failure.code.value, failure.message)
    if not result.changed_files:
        return Outcome("no-change")
    _check_installed(ws, result.changed_files)
    return Outcome("installed")


@st.composite
def hand_edit(draw, base: str) -> tuple[Any, bytes]:
    path = SEED_PATH if draw(st.integers(0, 3)) else draw(PATHS)
    text = draw(topic_text(base))
    data = text.encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 5)) == 0:
        data = data.replace(b"Dana", b"D\xffana", 1)
    return path, data
