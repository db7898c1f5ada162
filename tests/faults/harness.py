"""Crash fault-injection runner: kill an operation before its N-th mutation, then check.

An operation is one ``openprogram`` command run on a copy of a prepared
state directory. :func:`record` runs it once to completion with the seam in
record mode (the list of mutations and the *new* state); :func:`trial`
copies the base state again, kills the command before mutation N, and
checks what a person would notice afterwards (architecture §3 crash safety, §4.2):

- ``next-command``: the next ``memory status`` (and ``session show``) exits 0;
- ``fsck``: ``git fsck --strict`` is clean; ``tree==HEAD``: ``git status`` is empty;
- ``records``: the topic tree and its block IDs are the old or the new ones, no ID twice;
- ``sessions``: every session directory is exactly the old or the new one
  (for ``write``: every turn is marked or still pending, and no turn is
  marked while its batch is not installed);
- ``rebuild``: deleting the derived views and running ``memory rebuild``
  reproduces them byte for byte;
- ``leftovers``: no install journal, ``.git/*.lock``, staging or scratch
  directory, session journal or temp file is left behind;
- ``probe``: a new ``memory apply`` then installs *and commits* (``git_committed``).

Commands run in a forked child of this process (fast: the library is
imported once) or, with ``spawn=True``, as a real subprocess armed through
``seam/sitecustomize.py`` on ``PYTHONPATH``.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
SEAM_DIR = HERE / "seam"
GIT = shutil.which("git")
WORKSPACE_ID = "w-fa017000"
DERIVED = ("core.md", "recent_events.jsonl", "relations.json", "timeline")
STAGE_PREFIXES = ("openprogram-memory-",)
_BLOCK_ID = re.compile(r"(?<![#\w^])\^([0-9a-f]{8})(?=[ \t]*$|[ \t]+\^)", re.M)

# -- running commands ------------------------------------------------------


@dataclass
class Run:
    code: int  # exit code; -9 when killed
    out: str

    @property
    def killed(self) -> bool:
        return self.code == -signal.SIGKILL

    def json(self) -> Any:
        try:
            return json.loads(self.out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            return None


def cli(argv: list[str], trial: Path, *, kill_at: int | None = None, record: Path | None = None,
        spawn: bool = False, stdin: str | None = None, env: dict[str, str] | None = None,
        module: str | None = None) -> Run:
    """Run ``openprogram <argv>`` (or ``python -m <module> <argv>``) for ``trial`` (its ``state/``,
    ``tmp/``), armed when asked."""
    state = trial / "state"
    tmp = trial / "tmp"
    tmp.mkdir(exist_ok=True)
    out_path = trial / f"out-{os.getpid()}-{random.random():.6f}.txt"
    full_env = {"OPENPROGRAM_STATE": str(state), "TMPDIR": str(tmp), **(env or {})}
    armed = kill_at is not None or record is not None
    stdin_path = None
    if stdin is not None:
        stdin_path = trial / "stdin.txt"
        stdin_path.write_text(stdin)
    if spawn:
        env_all = {k: v for k, v in os.environ.items() if not k.startswith("OPENPROGRAM_MEMORY_")}
        env_all.update(full_env)
        if armed:
            env_all.update({"PYTHONPATH": str(SEAM_DIR), "OPM_FAULT_ROOT": str(state),
                            "OPM_FAULT_KILL_AT": "" if kill_at is None else str(kill_at),
                            "OPM_FAULT_RECORD": "" if record is None else str(record)})
        command = [sys.executable, "-m", module] if module else [str(Path(sys.executable).with_name("openprogram"))]
        with open(out_path, "w") as out, open(stdin_path or os.devnull) as inp:
            proc = subprocess.run([*command, *argv], env=env_all, stdout=out, stderr=subprocess.STDOUT, stdin=inp)
        code = proc.returncode
    else:
        code = _forked(argv, full_env, state, kill_at, record, out_path, stdin_path, module)
    text = out_path.read_text(errors="replace")
    out_path.unlink()
    return Run(code, text)


def _forked(argv, env, state, kill_at, record, out_path, stdin_path, module=None) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 1
        try:
            os.environ.update(env)
            for name in list(os.environ):
                if name.startswith("OPENPROGRAM_MEMORY_") and name not in env:
                    del os.environ[name]
            tempfile.tempdir = None  # re-read TMPDIR
            fd_in = os.open(stdin_path or os.devnull, os.O_RDONLY)
            os.dup2(fd_in, 0)
            fd_out = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(fd_out, 1)
            os.dup2(fd_out, 2)
            # pytest's capture replaces sys.stdout with its own object: write to the real fds
            sys.stdout = sys.__stdout__ = open(1, "w", encoding="utf-8", closefd=False)
            sys.stderr = sys.__stderr__ = open(2, "w", encoding="utf-8", closefd=False)
            sys.stdin = sys.__stdin__ = open(0, encoding="utf-8", closefd=False)
            seam = None
            if kill_at is not None or record is not None:
                sys.path.insert(0, str(HERE))
                import faultseam

                seam = faultseam.install(str(state), kill_at, None if record is None else str(record))
            try:
                if module:
                    import runpy

                    sys.argv = [module, *argv]
                    runpy.run_module(module, run_name="__main__", alter_sys=True)
                else:
                    from openprogram_memory.cli.app import app

                    app(args=argv, prog_name="openprogram")
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if seam is not None:
                seam.dump()
        except BaseException:
            traceback.print_exc()
            code = 1
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


# -- operations ------------------------------------------------------------


@dataclass
class Operation:
    """One command to crash: ``argv`` may use ``{trial}``; ``prepare`` writes its inputs into the trial."""

    name: str
    argv: list[str]
    prepare: Callable[[Path], None] | None = None
    sessions: tuple[str, ...] = ()  # sessions this operation may change (old or new state)
    writes_turns: bool = False  # marks turns written (checked as marked-or-pending)
    # resumable in steps (an import): after a kill, running it again must
    # give exactly the clean run's sessions
    redo: bool = False
    stdin: str | None = None
    module: str | None = None  # run ``python -m module argv`` instead of the CLI
    env: dict[str, str] = field(default_factory=dict)

    def args(self, trial: Path) -> list[str]:
        return [part.replace("{trial}", str(trial)) for part in self.argv]


def _json_file(name: str, data: Any) -> Callable[[Path], None]:
    def prepare(trial: Path) -> None:
        (trial / name).write_text(json.dumps(data))
    return prepare


def _src(source: str, label: str = "said") -> list[dict[str, str]]:
    return [{"source": source, "label": label}]


def operations(base: "Base") -> list[Operation]:
    """Every operation the sweep crashes (architecture §3: every change goes through one transaction)."""
    dana, bike = base.ids["dana"], base.ids["bike"]
    editor = HERE / "scripted_editor.py"
    return [
        Operation("apply create", ["memory", "apply", "{trial}/req.json", "--json"], _json_file("req.json", {
            "memory_changes": [{"op": "create_record", "content": "Dana's daughter starts school in September.",
                                "time": "2026-08-12", "sources": _src("openprogram/s1/u4"),
                                "destination": {"topic_path": "topics/people/family.md", "headings": ["Family"]}}]})),
        Operation("apply update", ["memory", "apply", "{trial}/req.json", "--json"], _json_file("req.json", {
            "memory_changes": [{"op": "update_record", "memory_id": dana,
                                "content": "Dana runs a bike shop in Utrecht.", "time": "2026-08-09",
                                "sources": _src("openprogram/s1/u1")}]})),
        Operation("apply delete", ["memory", "apply", "{trial}/req.json", "--json"], _json_file("req.json", {
            "memory_changes": [{"op": "delete_record", "memory_id": bike}]})),
        Operation("apply move", ["memory", "apply", "{trial}/req.json", "--json"], _json_file("req.json", {
            "memory_changes": [{"op": "move_records", "memory_ids": [bike],
                                "destination": {"topic_path": "topics/projects/shop.md", "headings": ["Shop"]}}]})),
        Operation("whole-file change", ["memory", "apply", "{trial}/req.json", "--json"], _json_file("req.json", {
            "changes": [{"path": "topics/people/erin.md",
                         "content": "# Erin\n\nErin maintains the billing service.[^e1]\n\n"
                                    "[^e1]: Sources: [said](openprogram/s1/u3)\n"}]})),
        Operation("patch", ["memory", "apply", "{trial}/req.json", "--json"], _json_file("req.json", {
            "patch": base.patch})),
        Operation("memory edit", ["memory", "edit", "topics/people/dana.md", "--json", "--no-reopen"],
                  env={"EDITOR": f"{sys.executable} {editor}"}),
        Operation("write (archive, pass, markers)", ["memory", "write", "--session", "s1", "--force", "--json"],
                  sessions=("s1",), writes_turns=True),
        Operation("sleep", ["memory", "sleep", "--json"]),
        Operation("backfill", ["memory", "backfill", "--json"]),
        Operation("session append", ["session", "append", "s2", "--role", "user", "--text", "And the shop opens at 9.",
                                     "--id", "n9", "--time", "2026-08-12T10:00:00+00:00", "--json"], sessions=("s2",)),
        Operation("session fork", ["session", "fork", "s2", "--from", "n2", "--role", "user", "--text",
                                   "Actually, let's talk about Erin.", "--id", "f1",
                                   "--time", "2026-08-12T11:00:00+00:00", "--json"], sessions=("s2",)),
        Operation("session rewind", ["session", "rewind", "s2", "--to", "n2", "--json"], sessions=("s2",)),
        Operation("import", ["memory", "import", "claude-code", str(base.fixture), "--json"],
                  sessions=tuple(base.import_sessions), redo=True),
        Operation("restore", ["memory", "restore", base.first_commit, "--json"]),
        # a person's trust decision: a trust frame appended, the core and views re-rendered, one commit
        Operation("trust demote", ["memory", "trust", "demote", "openprogram/s1/u1", "--json"]),
        # the record made on another machine comes in: fetch, merge by record, install, commit, push
        Operation("sync", ["memory", "sync", "--remote", "{trial}/remote.git", "--json"], _remote_copy(base.dir)),
        # the hook command hands import + write to this detached worker; the worker is what can die midway
        Operation("hook worker (SessionEnd: import + forced write)",
                  ["--state", "{trial}/state", "--session", base.import_sessions[0], "--transcript", str(base.fixture),
                   "--force"], module="openprogram_memory.agents.hook_worker",
                  sessions=tuple(base.import_sessions), writes_turns=True),
    ]


# -- the base state ------------------------------------------------------


@dataclass
class Base:
    dir: Path
    ids: dict[str, str]
    patch: str
    first_commit: str
    fixture: Path
    import_sessions: list[str]
    head: str

    @property
    def state(self) -> Path:
        return self.dir / "state"


def build_base(where: Path) -> Base:
    """A workspace with topics, history, an archive with uncited sources, and two sessions."""
    from openprogram_memory.config import load_settings
    from openprogram_memory.sessions.importers import import_paths
    from openprogram_memory.sessions.markers import mark_written
    from openprogram_memory.sessions.store import SessionStore
    from openprogram_memory.sources.archive import SourceMessage
    from openprogram_memory.transaction import history
    from openprogram_memory.memory import MemoryWorkspace

    state = where / "state"
    settings = load_settings(str(state))
    ws = MemoryWorkspace.open(settings, create=True)
    ws.layout.state("workspace-id").write_text(WORKSPACE_ID + "\n")
    texts = ["I run a bike shop.", "Always answer in metric units.", "We use FastAPI for billing.",
             "I prefer short answers in the morning.", "We decided to use Postgres for the billing database.", "The shop sells cargo bikes."]
    ws.archive([SourceMessage(f"openprogram/s1/u{n}", "Dana", "user-1", f"2026-08-{8 + n:02d}T10:00:00+00:00", text)
                for n, text in enumerate(texts, start=1)])

    def record(text: str, source: str) -> str:
        return f"{text}[^e1]\n\n[^e1]: Sources: [said]({source})\n"

    ws.update(changes=[
        {"path": "topics/people/dana.md", "content": "# Dana\n\n" + record("Dana runs a bike shop.", "openprogram/s1/u1")},
        {"path": "topics/projects/billing.md", "content": "# Billing\n\n" + record("Billing uses FastAPI.", "openprogram/s1/u3")},
        {"path": "topics/core.md", "content": "# Core\n\n" + record("Answer in metric units.", "openprogram/s1/u2")
         + "\n" + record("The billing service runs on FastAPI.", "openprogram/s1/u3").replace("e1", "e2")},
    ])
    first_commit = history.head_id(ws.root)
    ws.update(changes=[{"path": "topics/projects/shop.md", "content": "# Shop\n\n"
                        + record("The shop sells cargo bikes.", "openprogram/s1/u6")
                        + "\n" + record("The shop sells cargo bikes to families.", "openprogram/s1/u6")
                        .replace("e1", "e2")}])
    records = {r.content.split("[")[0].strip(): r.memory_id for r in ws.records()}
    ids = {"dana": records["Dana runs a bike shop."], "bike": records["The shop sells cargo bikes."]}
    dana_text = (ws.root / "topics/people/dana.md").read_text()
    new_text = dana_text.rstrip("\n").replace("Dana runs a bike shop.", "Dana runs a bike shop in Utrecht.") + "\n"
    patch = "".join(_unified("topics/people/dana.md", dana_text, new_text))

    store = SessionStore(settings.sessions_dir)
    store.create_session("s1", created_at="2026-08-12T09:00:00+00:00")
    turns = [("m1", "user", "I'm Dana and I run a bike shop in Utrecht."), ("m2", "assistant", "Noted, Dana."),
             ("m3", "user", "I prefer metric units. Always answer in English."), ("m4", "assistant", "Got it."),
             ("m5", "user", "We decided to use Django for the billing service."),
             ("m6", "assistant", "Understood: billing now uses Django.")]
    for index, (node, role, text) in enumerate(turns):
        store.append("s1", role, text, node_id=node, created_at=f"2026-08-12T09:{index:02d}:00+00:00")
    mark_written(store, "s1", ["m1", "m2"], WORKSPACE_ID)
    store.create_session("s2", created_at="2026-08-12T09:00:00+00:00")
    for index, (node, role, text) in enumerate([("n1", "user", "Hello"), ("n2", "assistant", "Hi"),
                                                ("n3", "user", "Tell me about the shop."),
                                                ("n4", "assistant", "It sells cargo bikes.")]):
        store.append("s2", role, text, node_id=node, created_at=f"2026-08-12T09:{index:02d}:00+00:00")
    fixture = Path(__file__).resolve().parents[2] / "fixtures" / "sessions" / "claude-code" / "rewind.jsonl"
    probe = where / "probe"
    probe.mkdir()
    before = {p.name for p in settings.sessions_dir.iterdir()}
    probe_settings = load_settings(str(probe / "state"))
    import_paths(SessionStore(probe_settings.sessions_dir), "claude-code", [fixture])
    imported = sorted(p.name for p in probe_settings.sessions_dir.iterdir() if p.name not in before)
    shutil.rmtree(probe)
    _remote_ahead(where, state)
    return Base(where, ids, patch, first_commit, fixture, imported, history.head_id(ws.root))


def _remote_ahead(where: Path, state: Path) -> None:
    """``where/remote.git``: the base's memory as another machine pushed it, plus one record from there."""
    from dulwich.repo import Repo

    from openprogram_memory.config import load_settings
    from openprogram_memory.sync import sync
    from openprogram_memory.memory import MemoryWorkspace

    Repo.init_bare(str(where / "remote.git"), mkdir=True)
    shutil.copytree(state / "memory", where / "laptop" / "memory", symlinks=True)
    laptop = MemoryWorkspace.open(load_settings(str(where / "laptop")))
    laptop.update(changes=[{"path": "topics/people/erin.md", "content": "# Erin\n\nErin maintains the shop's website."
                            "[^e1]\n\n[^e1]: Sources: [said](openprogram/s1/u4)\n"}])
    sync(laptop, str(where / "remote.git"))
    shutil.rmtree(where / "laptop")


def _remote_copy(base_dir: Path) -> Callable[[Path], None]:
    def prepare(trial: Path) -> None:
        shutil.copytree(base_dir / "remote.git", trial / "remote.git", symlinks=True)
    return prepare


def _unified(rel: str, old: str, new: str):
    import difflib

    return difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                fromfile=f"a/{rel}", tofile=f"b/{rel}")


# -- snapshots -------------------------------------------------------------


def _sha(path: Path) -> str:
    """The git blob id of the file's bytes (so a tree can be compared with a commit's)."""
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _files(root: Path, skip: Callable[[str], bool] = lambda rel: False) -> dict[str, str]:
    out = {}
    if not root.is_dir():
        return out
    for dirpath, dirs, names in os.walk(root):
        for name in names:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if not skip(rel):
                out[rel] = _sha(path) if not path.is_symlink() else "symlink:" + os.readlink(path)
    return out


@dataclass
class Snapshot:
    memory: dict[str, str]  # every file but .git/ and .scriptorium/
    topics: dict[str, str]
    ids: list[str]  # sorted, with repeats
    sessions: dict[str, Any]
    markers: set[tuple[str, str]]
    # (topics, ids) of every commit the clean run made: a multi-transaction
    # operation (write then organize) may stop between two of them
    passed: list[tuple[dict[str, str], list[str]]] = field(default_factory=list)


def snapshot(state: Path) -> Snapshot:
    memory = state / "memory"
    files = _files(memory, lambda rel: rel.startswith((".git/", ".scriptorium/")))
    topics = {rel: sha for rel, sha in files.items() if rel.startswith("topics/")}
    ids: list[str] = []
    for rel in topics:
        ids.extend(_BLOCK_ID.findall((memory / rel).read_text(encoding="utf-8", errors="replace")))
    sessions: dict[str, Any] = {}
    markers: set[tuple[str, str]] = set()
    root = state / "sessions"
    if root.is_dir():
        for session in sorted(p for p in root.iterdir() if p.is_dir()):
            sessions[session.name] = _session_view(session)
            for node in (session / "history").glob("*.json"):
                try:
                    data = json.loads(node.read_text())
                except ValueError:
                    continue
                if data.get("metadata", {}).get("memory_written_scriptorium") == WORKSPACE_ID:
                    markers.add((session.name, data["id"]))
    return Snapshot(files, topics, sorted(ids), sessions, markers)


def _session_view(directory: Path) -> dict[str, Any]:
    """Every file of a session directory, ``meta.json``'s clock masked (a rewind stamps now)."""
    view: dict[str, Any] = {}
    for rel, sha in _files(directory, lambda rel: rel == ".lock").items():
        if rel == "meta.json":
            try:
                meta = json.loads((directory / rel).read_text())
                meta.pop("updated_at", None)
                view[rel] = meta
                continue
            except ValueError:
                pass
        view[rel] = sha
    return view


# -- one trial -------------------------------------------------------------


@dataclass
class Trial:
    point: int
    killed: bool
    failures: list[str]
    details: list[str]


def _git(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([GIT or "git", *args], cwd=root, capture_output=True, text=True)


def fsck(root: Path) -> str | None:
    """``git fsck --strict`` with the real CLI, dulwich's object check otherwise; None when clean."""
    if GIT:
        proc = _git(root, "fsck", "--strict", "--no-progress")
        return None if proc.returncode == 0 else (proc.stderr or proc.stdout).strip()[:300]
    from dulwich.repo import Repo

    repo = Repo(str(root))
    try:
        for sha in repo.object_store:
            repo.object_store[sha].check()
        repo[repo.head()].check()
    except Exception as exc:  # noqa: BLE001 - any damage is a finding
        return f"{type(exc).__name__}: {exc}"
    return None


def tree_matches_head(root: Path) -> str | None:
    if GIT:
        proc = _git(root, "status", "--porcelain")
        return None if proc.returncode == 0 and not proc.stdout else (proc.stdout + proc.stderr).strip()[:300]
    from dulwich import porcelain

    status = porcelain.status(str(root))
    dirty = [*status.staged.values(), status.unstaged, status.untracked]
    return None if not any(dirty) else str(dirty)[:300]


def leftovers(trial: Path) -> list[str]:
    memory = trial / "state" / "memory"
    found = []
    if (memory / ".scriptorium" / "install").exists():
        found.append(".scriptorium/install")
    git_dir = memory / ".git"
    found += [p.relative_to(memory).as_posix() for p in git_dir.rglob("*.lock")] if git_dir.is_dir() else []
    tmp = trial / "tmp"
    if tmp.is_dir():
        found += [f"$TMPDIR/{p.name}" for p in tmp.iterdir() if p.name.startswith(STAGE_PREFIXES)]
    sessions = trial / "state" / "sessions"
    if sessions.is_dir():
        found += [p.relative_to(sessions).as_posix() for p in sessions.rglob("*")
                  if p.name.endswith(".tmp") or p.name == "journal.json"]
    return found


def run_trial(op: Operation, base: Base, old: Snapshot, new: Snapshot, work: Path, point: int,
              spawn: bool = False) -> Trial:
    trial = work / f"t{point}"
    shutil.copytree(base.state, trial / "state", symlinks=True)
    if op.prepare:
        op.prepare(trial)
    run = cli(op.args(trial), trial, kill_at=point, spawn=spawn, env=op.env, stdin=op.stdin, module=op.module)
    failures: list[str] = []
    details: list[str] = []

    def fail(check: str, detail: str) -> None:
        if check not in failures:
            failures.append(check)
        details.append(f"{check}: {detail}")

    if not run.killed and run.code != 0:
        fail("op-exit", f"exit {run.code}: {run.out.strip()[-300:]}")
    nxt = cli(["memory", "status", "--json"], trial, spawn=spawn)
    if nxt.code != 0:
        fail("next-command", f"memory status exit {nxt.code}: {nxt.out.strip()[-300:]}")
    for session in op.sessions:
        shown = cli(["session", "show", session, "--all", "--json"], trial, spawn=spawn)
        if shown.code != 0 and session in new.sessions and session in old.sessions:
            fail("next-command", f"session show {session} exit {shown.code}: {shown.out.strip()[-200:]}")
    memory = trial / "state" / "memory"
    after = snapshot(trial / "state")
    problem = fsck(memory)
    if problem:
        fail("fsck", problem)
    problem = tree_matches_head(memory)
    if problem:
        fail("tree==HEAD", problem)
    states = [(old.topics, old.ids), *new.passed]
    if after.topics not in [topics for topics, _ids in states]:
        fail("records", "topic tree is neither the old nor the new one (nor one the clean run committed)")
    if after.ids not in [ids for _topics, ids in states]:
        fail("records", f"block IDs neither old nor new: lost {sorted(set(old.ids) - set(after.ids))[:5]}")
    if len(set(after.ids)) != len(after.ids):
        fail("records", "a block ID appears twice")
    if op.redo:
        again = cli(op.args(trial), trial, spawn=spawn, env=op.env, stdin=op.stdin, module=op.module)
        if again.code != 0:
            fail("next-command", f"running it again: exit {again.code}: {again.out.strip()[-200:]}")
        after.sessions = snapshot(trial / "state").sessions
    for session in set(after.sessions) | set(old.sessions) | set(new.sessions):
        view = after.sessions.get(session)
        if op.writes_turns and session in op.sessions:
            continue  # checked by turns below
        if view not in (old.sessions.get(session), new.sessions.get(session)):
            fail("sessions", f"session {session} is neither the old nor the new state")
    if op.writes_turns:
        problem = _turns_problem(trial, after, old)
        if problem:
            fail("turns", problem)
    problem = _rebuild_problem(trial, spawn)
    if problem:
        fail("rebuild", problem)
    left = leftovers(trial)
    if left:
        fail("leftovers", ", ".join(left[:5]))
    probe = cli(["memory", "apply", str(trial / "probe.json"), "--json"], trial, spawn=spawn) \
        if _write_probe(trial) else None
    data = probe.json() if probe else None
    if probe is None or probe.code != 0 or not isinstance(data, dict) or data.get("git_committed") is not True:
        fail("probe", f"exit {probe.code if probe else '?'}: {(probe.out.strip() if probe else '')[-300:]}")
    else:
        problem = tree_matches_head(memory) or fsck(memory)
        if problem:
            fail("probe", "after the probe: " + problem)
    if not failures:
        shutil.rmtree(trial, ignore_errors=True)
    return Trial(point, run.killed, failures, details)


def _write_probe(trial: Path) -> bool:
    (trial / "probe.json").write_text(json.dumps({"memory_changes": [{
        "op": "create_record", "content": "Probe record written after the crash.", "time": "2026-08-20",
        "sources": _src("openprogram/s1/u2"), "destination": {"topic_path": "topics/probe.md"}}]}))
    return True


def _turns_problem(trial: Path, after: Snapshot, old: Snapshot) -> str | None:
    """Every input turn marked or pending; no turn marked while its batch is not installed."""
    from openprogram_memory.sessions.markers import is_memory_input, live_tips, pending_turns
    from openprogram_memory.sessions.store import SessionStore

    store = SessionStore(trial / "state" / "sessions")
    for session in after.sessions:
        try:
            pending = {n.id for tip in live_tips(store, session) for n in pending_turns(store, session, WORKSPACE_ID, tip)}
            nodes = [store.get_node(session, node_id) for node_id in store.parent_map(session)]
        except Exception as exc:  # noqa: BLE001
            return f"session {session} unreadable: {exc}"
        for node in nodes:
            if is_memory_input(node) and (session, node.id) not in after.markers and node.id not in pending:
                return f"turn {session}/{node.id} is neither marked nor pending (lost)"
    if after.markers - old.markers and after.topics == old.topics:
        return "turns marked written but their records are not installed"
    return None


def _rebuild_problem(trial: Path, spawn: bool) -> str | None:
    memory = trial / "state" / "memory"
    before = {rel: sha for rel, sha in _files(memory).items() if rel.startswith(DERIVED)}
    for name in DERIVED:
        path = memory / name
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    run = cli(["memory", "rebuild", "--json"], trial, spawn=spawn)
    if run.code != 0:
        return f"rebuild exit {run.code}: {run.out.strip()[-200:]}"
    rebuilt = {rel: sha for rel, sha in _files(memory).items() if rel.startswith(DERIVED)}
    if rebuilt != before:
        differ = sorted(set(before.items()) ^ set(rebuilt.items()))
        return "derived views differ after rebuild: " + ", ".join(sorted({rel for rel, _ in differ})[:4])
    return None


# -- a sweep ----------------------------------------------------------------


@dataclass
class OpReport:
    name: str
    mutations: int
    tried: int = 0
    failed: int = 0
    checks: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)
    error: str | None = None


def record_op(op: Operation, base: Base, work: Path, spawn: bool = False) -> tuple[list[str], Snapshot, Run]:
    """Run ``op`` to completion once, recording its mutations; return them and the new state."""
    trial = work / "record"
    shutil.copytree(base.state, trial / "state", symlinks=True)
    if op.prepare:
        op.prepare(trial)
    log_path = work / "mutations.json"
    run = cli(op.args(trial), trial, record=log_path, spawn=spawn, env=op.env, stdin=op.stdin, module=op.module)
    mutations = json.loads(log_path.read_text()) if log_path.exists() else []
    for session in op.sessions:
        cli(["session", "show", session, "--all", "--json"], trial, spawn=spawn)
    new = snapshot(trial / "state")
    new.passed = _committed_states(trial / "state" / "memory", base.head)
    shutil.rmtree(trial)
    return mutations, new, run


def _committed_states(memory: Path, since: str) -> list[tuple[dict[str, str], list[str]]]:
    from openprogram_memory.transaction import history

    states = []
    for info in history.log(memory, 100):
        if info.id == since:
            break
        files = history.files_at(memory, info.id, "topics/")
        topics = {rel: hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() for rel, data in files.items()}
        ids = sorted(i for data in files.values() for i in _BLOCK_ID.findall(data.decode("utf-8", "replace")))
        states.append((topics, ids))
    return states


def sweep_op(op: Operation, base: Base, work: Path, *, every: int = 1, seed: int = 0, spawn: bool = False,
             limit: int | None = None, samples: int | None = None) -> OpReport:
    """Kill ``op`` at every ``every``-th mutation (seeded offset), or at ``samples`` seeded points, and check."""
    work.mkdir(parents=True, exist_ok=True)
    mutations, new, run = record_op(op, base, work, spawn)
    report = OpReport(op.name, len(mutations))
    if run.code != 0:
        report.error = f"the clean run failed: exit {run.code}: {run.out.strip()[-300:]}"
        return report
    old = snapshot(base.state)
    rng = random.Random(f"{seed}:{op.name}")
    if samples is not None:
        points = sorted(rng.sample(range(len(mutations)), min(samples, len(mutations))))
    else:
        offset = rng.randrange(every) if every > 1 else 0
        points = list(range(offset, len(mutations), every))
    if limit is not None:
        points = points[:limit]
    for point in points:
        trial = run_trial(op, base, old, new, work, point, spawn)
        report.tried += 1
        if trial.failures:
            report.failed += 1
            for check in trial.failures:
                report.checks[check] = report.checks.get(check, 0) + 1
            if len(report.examples) < 3:
                where = mutations[point] if point < len(mutations) else "?"
                report.examples.append(f"kill before #{point} ({where}): " + " | ".join(trial.details)[:500])
    return report


def format_table(reports: list[OpReport]) -> str:
    lines = ["| operation | mutations | kill points tried | failures | failed checks |",
             "|---|---|---|---|---|"]
    for r in reports:
        checks = ", ".join(f"{k} ×{v}" for k, v in sorted(r.checks.items())) or ("ERROR: " + r.error if r.error else "")
        lines.append(f"| {r.name} | {r.mutations} | {r.tried} | {r.failed} | {checks} |")
    return "\n".join(lines)
