"""``memory check``: the installed workspace against every rule, like ``git fsck`` (issue 10 item 2).

Each finding is a :class:`Problem` with the file, the line where there is
one, the rule (the same names ``INVALID_TOPIC_FORMAT`` carries), what is
wrong, and the command that fixes it. Nothing here changes a byte: topic
files are checked as they are on disk, without normalizing them, with the
same strict rules a transaction applies to what it installs; then the
tree (IDs unique, links resolve, citations find their message), the source
archives, the derived views (byte for byte against a fresh render), git
(HEAD, lock files, index, files that differ from the last commit) and the
runtime state.
"""

from __future__ import annotations

import itertools
import os
from collections import Counter
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Iterator

from ..fsutil import shell_args
from ..topics.model import decode_topic, not_utf8, parse_topic
from ..workspace.caches import checkout_command, edit_command
from . import validate
from .moves import move_fixes
from .staging import NOT_TEXT

if TYPE_CHECKING:

    from .host import Workspace
    from ..workspace.caches import TreeState

REBUILD = "openprogram memory rebuild"


@dataclass
class Problem:
    """One finding of ``memory check``."""

    file: str | None
    line: int | None
    rule: str
    message: str
    fix: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.file and self.line else (self.file or "workspace")
        return f"{where}: [{self.rule}] {self.message} — fix: {self.fix}"


def check_workspace(ws: "Workspace") -> list[Problem]:
    """Every problem found in the installed workspace (empty when it is sound)."""
    from .adopt import on_disk_tree

    tree = ws.tree()
    problems = list(_topic_files(ws))
    problems += _tree_rules(ws, on_disk_tree(ws))  # (a file held back from adoption is served as committed)
    problems += _held(ws, problems)
    problems += _archives(ws)
    problems += _derived_views(ws, tree, problems)  # (a file that is not text is served, and rendered, as committed)
    problems += _git(ws, problems)
    problems += _runtime(ws)
    return sorted(_move_fixes(ws, problems), key=_report_order)


def _report_order(problem: Problem) -> tuple[int, str, float]:
    """Memory files (topics, archives) by file, then line, what is about the whole file after (outside history:
    the rules it breaks come first); after them what is derived from them or about the whole workspace (views,
    git, runtime state), as found: their fix can name "the file(s) named above"."""
    if problem.file and problem.file.startswith(("topics/", "sources/")):
        return 0, problem.file, problem.line or float("inf")
    return 1, "", 0


def report_lines(problems: list[Problem]) -> list[str]:
    """``problems`` as lines for people: a fix that is the same for several problems of one file is said once,
    after them (a note moved outside the product: one fix for each of its lines; 300 block IDs stripped by hand:
    one fix for the 300, whatever the file's other problems ask), not repeated on each."""
    lines: list[str] = []
    for _file, group in itertools.groupby(problems, key=lambda p: p.file):
        found = list(group)
        shared = {fix: n for fix, n in Counter(p.fix for p in found).items() if n > 1 and fix}
        lines += [str(p).removesuffix(f" — fix: {p.fix}") if p.fix in shared else str(p) for p in found]
        lines += [f"  fix ({n} problems of {found[0].file or 'the workspace'}): {fix}" for fix, n in shared.items()]
    return lines


def repaired_on_open(ws: "Workspace") -> list[str]:
    """What opening the workspace for this check already repaired (a killed process's leftovers)."""
    return list(ws.recovery_notes)


def _restore_hint(ws: "Workspace", rel: str) -> str:
    from ..workspace.caches import committed_text

    if committed_text(ws.root, rel) is None:  # a file made outside the product: there is no version to take back
        return (f"correct it with `{edit_command(rel)}`, or remove it (`rm {shell_args(ws.root / rel)}`): "
                "it was never committed")
    from .adopt import moved_from

    left = moved_from(ws, rel)
    if left:  # (taken back alone, the records that came here are gone from both files: adopted as deleted)
        return (f"correct it with `{edit_command(rel)}`; its record(s) from {', '.join(left)} are held "
                f"until then; or take the committed versions back together with `{checkout_command(ws.root, rel, *left)}`")
    return f"correct it with `{edit_command(rel)}`, or take the committed version back with `{checkout_command(ws.root, rel)}`"


def _topic_files(ws: "Workspace") -> Iterator[Problem]:
    """The strict record rules, file by file, on the bytes as they are. A file that is not readable text (or not
    a file) is named with :func:`~..workspace.caches.unreadable_fix`, the fix status and search give; the files
    of a folder that cannot be opened, once under the folder's name."""
    from ..workspace.caches import SYMLINK, unreadable_problem, unreadable_reason
    from ..workspace.scan import scan

    lookup = ws.cache.sources.lookup
    links = {rel for rel, link, _sig in scan(ws.root, "topics", suffix=".md", skip_hidden=True) if link}
    named: set[str] = set()
    for rel in sorted(set(ws.cache.list_topic_paths()) | links):  # (a link out of the workspace is not listed)
        path = ws.root / rel
        line = None
        try:
            reason = f"{SYMLINK} (to {os.readlink(path)})" if rel in links else None
            data = b"" if reason else path.read_bytes()
            text = decode_topic(data)
        except UnicodeDecodeError as exc:
            reason, line = not_utf8(data, exc)
        except OSError as exc:
            reason = unreadable_reason(ws.root, rel, exc)
        if reason:
            name, message, fix = unreadable_problem(ws.root, rel, reason)
            rule = "symlink" if rel in links else "encoding" if reason.startswith("not valid") else "unreadable"
            if name not in named:
                named.add(name)
                yield Problem(name, line, rule, message, fix)
            continue
        doc = parse_topic(text, rel)
        for violation in itertools.chain(
                validate.record_violations(doc, lookup, lambda target: os.path.islink(ws.root / target)),
                validate.ids_unique_in_file(doc)):
            message = violation.message.removeprefix(f"{rel}:{violation.line}: ")  # file and line have their own fields
            if violation.rule == "missing-block-id":
                message += _lost_id(ws, rel, doc, violation.line)
            yield Problem(rel, violation.line, violation.rule, message, _restore_hint(ws, rel))


def _lost_id(ws: "Workspace", rel: str, doc, line: int | None) -> str:
    """Which block ID the paragraph at ``line`` of ``rel`` lost, when its last commit had one: the committed
    record with the same citations; "" when none can be named (not "the one ID the file no longer holds": beside
    a record deleted by hand, a new paragraph typed without an ID would be told to take the deleted one's, and
    sync and history would read it as an edit of that record)."""
    from ..topics.model import Paragraph
    from ..workspace.caches import committed_text

    text = committed_text(ws.root, rel)
    if text is None:
        return ""
    here = next((p for p in doc.paragraphs() if p.line == line), None)
    now = {i for p in doc.paragraphs() for i in p.ids}
    lost = [p for p in parse_topic(text, rel).paragraphs() if isinstance(p, Paragraph) and p.identity
            and p.identity not in now]
    same = [p for p in lost if here is not None and p.citations == here.citations]
    found = same if len(same) == 1 else []
    return f" (its last commit has ^{found[0].identity} here: add it back at the end)" if found else ""


def _tree_rules(ws: "Workspace", tree: "TreeState") -> Iterator[Problem]:
    """IDs unique across the tree, links resolve: the engine's tree rules, on the tree as it is on disk. (IDs
    unique within a file, and a citation whose archived message is gone, are rules of the file alone, reported
    with its other rules: a file that breaks one is served from its last commit.)"""
    id_files = tree.id_files()
    edited = set(getattr(ws.cache, "held", {})) | set(getattr(ws.cache, "invalid", {}))
    for block_id, where in sorted(id_files.items()):
        files = list(dict.fromkeys(where))  # (twice in one file is that file's own rule)
        if len(files) < 2:
            continue
        # a file served as committed took the ID (a record pasted with its ID): each copy is named, not the original
        original = next((rel for rel in files if rel not in edited), files[0])
        first = tree.files[original].by_id[block_id].line
        for copy in files:
            if copy != original:
                yield Problem(copy, tree.files[copy].by_id[block_id].line, "duplicate-id",
                              f"block ID ^{block_id} is also at {original}:{first}",
                              f"keep one: give the copy a new block ID or remove it with "
                              f"`{edit_command(copy)}` (git history has both versions)")
    dangling = list(validate.dangling_link_violations(tree))
    if not dangling:
        return
    from .history import differing_paths

    involved = {rel for v in dangling for rel in (v.file, v.details.get("target")) if rel}
    changed = set(differing_paths(ws.root, sorted(involved)))  # (read only when a link dangles)
    for violation in dangling:
        assert violation.file is not None
        target, link_id = violation.details.get("target"), violation.details.get("block_id")
        moved = _moved_to(tree, target, link_id)
        message = violation.message.removeprefix(f"{violation.file}:{violation.line}: ")
        if moved:  # (renamed or moved in an editor that does not update links: Obsidian's default)
            message += (f"; ^{link_id} is now in {moved}" + (
                f": {target} was renamed to {moved}" if target not in tree.files else ""))
        yield Problem(violation.file, violation.line, violation.rule, message,
                      _link_fix(ws, violation.file, target, changed, moved and f"{moved}#^{link_id}"))


def _moved_to(tree: "TreeState", target: str | None, block_id: str | None) -> str | None:
    """The one file of ``tree`` that holds ``block_id`` a link expects in ``target``, if the record went there."""
    where = list(dict.fromkeys(tree.id_files().get(block_id, ()))) if block_id else []
    return where[0] if len(where) == 1 and where[0] != target else None


def _link_fix(ws: "Workspace", rel: str, target: str | None, changed: set[str], moved: str | None = None) -> str:
    """The fix for a link of ``rel`` that does not resolve. When ``rel`` is as committed, the link broke because
    its target changed outside the product (a block ID or the whole file removed): checking ``rel`` out again
    would change nothing, so the fix is the target's committed version, or the link itself. When the ID is now
    in another file (``moved``: ``path#^id``), the fix is the link: the committed target would hold it twice."""
    from ..workspace.caches import committed_text, moved_link_fix

    if moved:
        return moved_link_fix(rel, moved)
    if rel in changed:  # (this edit made the link, or kept it while its target went)
        return _restore_hint(ws, rel)
    edit = f"remove or correct the link with `{edit_command(rel)}`"
    if target in changed and committed_text(ws.root, target) is not None:
        return (f"{target} changed outside the product and no longer has what the link points at: take its "
                f"committed version back with `{checkout_command(ws.root, target)}`, or {edit}")
    return edit


def _held(ws: "Workspace", found: list[Problem]) -> Iterator[Problem]:
    """Hand edits held back from adoption by what no finding above names: a record moved to a file that is not
    valid (adopting the file it left alone would lose its ID). Links and IDs used twice are named above."""
    for rel, problem in sorted(getattr(ws.cache, "held", {}).items()):
        rule, _, message = problem.partition("] ")
        if rule.lstrip("[") in ("dangling-link", "duplicate-id") or any(p.file == rel for p in found):
            continue
        yield Problem(rel, None, rule.lstrip("["), message, _restore_hint(ws, rel))




def _move_fixes(ws: "Workspace", problems: list[Problem]) -> list[Problem]:
    """``problems`` with the fix of each one a move made outside the product explains (:func:`move_fixes`)."""
    fix_of = move_fixes(ws)
    for problem in problems:
        fix = fix_of(problem.file, problem.rule)
        if fix is not None:
            problem.fix = fix
    return problems


def _archives(ws: "Workspace") -> Iterator[Problem]:
    for rel, _sig in sorted(ws.cache.sources.scan().items()):
        if not rel.endswith(".md"):
            continue
        archive, _anchors = ws.cache.sources.archive(rel)
        if archive.damaged:
            yield Problem(rel, None, "archive-damaged",
                          f"the archive does not parse whole (parsed {len(archive.frames)} frame(s) before the damage); "
                          "sources/ is append-only", f"`{checkout_command(ws.root, rel)}` restores the committed archive")


def _derived_views(ws: "Workspace", tree: "TreeState", found: list[Problem]) -> Iterator[Problem]:
    """core.md, timeline/, recent_events.jsonl and relations.json must be what ``memory rebuild`` renders: the
    tree with every file that breaks a rule as committed (:func:`~.adopt.valid_tree`).

    Views are written by the transaction that changes the topics: before the first one (a fresh ``init``, an
    import with no write yet) there are no topic files and no views, and a missing view is what that renders.
    While a file breaks a rule the fix starts there: a rebuild never takes its text in."""
    from ..views.derived import derived_views
    from ..workspace.layout import TIMELINE
    from ..workspace.state import RuntimeState
    from .adopt import valid_tree

    runtime = RuntimeState.load(ws.layout)
    fix = REBUILD
    if any(p.rule not in NOT_CONTENT for p in found):
        fix = f"correct the file(s) named above first (a rebuild renders their committed version), then `{REBUILD}`"
    views, _core = derived_views(valid_tree(ws, tree), runtime.created_order,
                                 ws.settings["memory.core.budget_tokens"],
                                 ws.settings["memory.recent.limit"], None)
    on_disk = {p.relative_to(ws.root).as_posix() for p in (ws.root / TIMELINE).rglob("*.md")}
    for rel in sorted(set(views) | on_disk):
        expected = views.get(rel)
        path = ws.root / rel
        actual = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None
        if actual is None and not tree.files:
            continue  # no topic file yet: nothing was ever rendered
        if actual != expected:
            state = "missing" if actual is None else ("should not exist" if expected is None else "out of date")
            yield Problem(rel, None, "stale-view", f"derived view {state}", fix)


def _git(ws: "Workspace", found: list[Problem]) -> Iterator[Problem]:
    """HEAD usable, and no memory file outside history. (Stale git locks, a damaged index, an interrupted
    install and commits left pending are repaired when any command opens the workspace, this one included.)"""
    from . import gitcheck

    problem = gitcheck.head_problem(ws.root)
    if problem:
        yield Problem(".git", None, "git-head", problem, gitcheck.repair_hint(ws.root))
        return
    drift = _drift(ws)
    repairable = set(repairable_archives(ws, found, drift))
    content = any(p.rule not in NOT_CONTENT for p in found)
    not_text = {p.file: p.fix for p in found if p.rule in NOT_TEXT}  # (their fix is the file's, not an edit)
    for rel, state in drift:
        yield Problem(rel, None, "uncommitted", f"{state} outside the product: not in history, and not validated",
                      not_text.get(rel) or _uncommitted_fix(ws, rel, state, rel in repairable or (
                          rel.startswith("topics/") and not content)))


def _uncommitted_fix(ws: "Workspace", rel: str, state: str, repairable: bool) -> str:
    """``--repair`` only where it commits the file; otherwise what a person does (never a fix that does nothing).

    A topic edit that keeps every rule was already adopted when this check opened the workspace: one still
    outside history breaks a rule named in the same report (``--repair`` retries only when none is named, say
    the adoption could not take the lock). An archive is committed only when it parses whole and only appends."""
    back = (f"`{checkout_command(ws.root, rel)}` takes the committed version back" if state != "new file"
            else f"or remove it (`rm {shell_args(ws.root / rel)}`)")
    if repairable:
        return f"`openprogram memory check --repair` commits it; {back}"
    if rel.startswith("sources/"):
        return f"sources/ is append-only and this is not an append that parses whole: {back}"
    if state == "deleted":  # (there is no file left to edit: the problems are in the files that still need it)
        from ..workspace.caches import deleted_fix

        return deleted_fix(ws.root, rel)
    return f"correct the problem(s) named in this report with `{edit_command(rel)}`; {back}"


def _drift(ws: "Workspace") -> list[tuple[str, str]]:
    """Memory files that differ from HEAD (runtime state excluded), as ``git status`` would list them: topics and
    archives only, never what an editor or vault app leaves beside them (:func:`~..workspace.layout.is_memory_file`)."""
    from dulwich import porcelain

    from ..workspace.layout import is_memory_file

    try:
        status = porcelain.status(str(ws.root), untracked_files="all")
    except Exception:  # noqa: BLE001 - damage is reported by the HEAD check
        return []
    out = []
    for raw in status.unstaged:
        rel = os.fsdecode(raw)
        out.append((rel, "changed" if os.path.lexists(ws.root / rel) else "deleted"))
    for raw in (*status.staged.get("add", []), *status.staged.get("modify", [])):
        out.append((os.fsdecode(raw), "staged"))
    for rel in status.untracked:
        out.append((os.fsdecode(rel), "new file"))
    return sorted({(rel, state) for rel, state in out
                   if rel.startswith(("topics/", "sources/")) and is_memory_file(rel)})


# Findings that are about the whole file being outside history, not about its content.
NOT_CONTENT = frozenset({"uncommitted", "stale-view", "runtime-state", "git-head"})


def repairable_archives(ws: "Workspace", problems: list[Problem], drift: list[tuple[str, str]]) -> list[str]:
    """The archives changed outside a commit that ``--repair`` commits: no rule broken, parse whole, only append."""
    blocked = {p.file for p in problems if p.rule not in NOT_CONTENT}
    return [rel for rel, _state in drift if rel not in blocked and rel.startswith("sources/") and _append_only(ws, rel)]


def _append_only(ws: "Workspace", rel: str) -> bool:
    """Whether the archive on disk parses whole and only adds to what is committed."""
    from ..failures import MemoryFailure
    from .engine import _read_bytes
    from .history import files_at

    data = _read_bytes(ws.root / rel)
    if data is None or not rel.endswith(".md"):
        return False
    archive, _anchors = ws.cache.sources.archive(rel)
    if archive.damaged:
        return False
    try:
        committed = files_at(ws.root, "HEAD", rel).get(rel)
    except (MemoryFailure, KeyError):
        committed = None
    return committed is None or data.startswith(committed)


def _runtime(ws: "Workspace") -> Iterator[Problem]:
    from ..fsutil import read_json

    for name in ("runtime.json", "writer-status.json", "session-end.json", "scheduled.json"):
        path = ws.layout.state(name)
        if path.exists() and not isinstance(read_json(path, None), dict):
            yield Problem(f".scriptorium/{name}", None, "runtime-state",
                          "not a JSON object; read as defaults", f"delete it (`rm {shell_args(path)}`): it is rebuilt")
