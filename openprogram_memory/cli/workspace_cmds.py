"""Workspace verbs: init, status, show, core show, edit, rebuild, log, restore, export."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape
from rich.table import Table

from ..failures import EXIT_OK, EXIT_REJECTED, FailureCode, MemoryFailure
from .common import Group, JsonOption, StateOption, memory_settings, open_workspace
from .fast import status_json, with_opening_notes
from .output import console, emit, err_console, reporting, warn


def _tx_human(result: dict) -> None:
    files = result.get("changed_files") or []
    if not files:
        console.print("No change.")
    else:
        console.print(f"[green]Committed[/] revision {result['revision']} ({len(files)} file(s)):")
        for path in files:
            console.print(f"  {escape(path)}")
        if not result.get("git_committed"):
            console.print(f"[yellow]warning[/]: installed, but the git commit failed: "
                          f"{escape(str(result.get('git_error')))}")
    for warning in result.get("warnings", []):  # (what opening the workspace did first)
        warn(warning)


def init(state: Optional[str] = StateOption, json: bool = JsonOption) -> None:
    """Create the memory workspace (layout and git repository)."""
    with reporting(json):
        settings = memory_settings(state)
        from ..memory import MemoryWorkspace

        ws = MemoryWorkspace(settings)
        created = ws.init()
        emit({"ok": True, "root": str(ws.root), "created": created, "revision": ws.revision(),
              "workspace_id": ws.workspace_id}, json,
             lambda: console.print(f"{'Created' if created else 'Already exists'}: {ws.root}"))


def status(state: Optional[str] = StateOption, json: bool = JsonOption,
           verbose: bool = typer.Option(False, "--verbose", "-v", help="Also the pending turns of each session.")
           ) -> None:
    """Revision, writer health, pending counts, last organize, core budget."""
    with reporting(json):
        data, waiting = status_json(memory_settings(state), verbose)

        def human() -> None:
            table = Table(show_header=False, box=None)
            table.add_row("workspace", escape(data["root"]))
            table.add_row("revision", data["revision"])
            table.add_row("topics / records", f"{data['topics']} / {data['records']}")
            writer = data["writer"]
            failure = writer["last_failure"]
            table.add_row("writer", f"{writer['model']}; last success {writer['last_success'] or 'never'}"
                          + (f"; last failure {failure['code']} at {failure['at']}" if failure else ""))
            table.add_row("pending turns", f"{writer['pending']} in {len(waiting)} session(s)")
            for session, count in writer.get("pending_by_session", {}).items():
                table.add_row("", escape(f"{session}: {count}"))
            table.add_row("last organize", data["last_organize"] or "never")
            core = data["core"]
            table.add_row("core", f"{core['tokens']:,} / {core['budget']:,} tokens"
                          + ("" if core["inject"] else " (injection off: effective block is empty)"))
            console.print(table)
            deferred = writer["last_deferred"]
            if deferred:  # not a warning: nothing is wrong, the turns are safe in the store
                console.print(escape(f"note: the {deferred['hook_event'] or 'hook'} hook's write at {deferred['at']} "
                                     f"(session {deferred['session']}) found the workspace busy: its turns wait for "
                                     f"the next write — its log: {deferred['log']}"))
            for warning in data["warnings"]:
                console.print(f"[yellow]warning[/]: {escape(warning)}")

        emit(data, json, human)


def show(path: str = typer.Argument(..., help="Topic path, e.g. topics/core.md"),
         state: Optional[str] = StateOption, json: bool = JsonOption) -> None:
    """Print a topic file."""
    with reporting(json):
        ws = open_workspace(memory_settings(state))
        text = ws.read_topic(path)
        emit({"path": path, "content": text, "revision": ws.revision()}, json,
             lambda: sys.stdout.write(text))


core_app = typer.Typer(help="The core block injected into every session.", no_args_is_help=True, cls=Group)


@core_app.command("show")
def core_show(
    view: str = typer.Option("effective", "--view", help="effective | rendered | canonical"),
    state: Optional[str] = StateOption,
    json: bool = JsonOption,
) -> None:
    """The core block and its tokens against the budget."""
    with reporting(json):
        if view not in ("effective", "rendered", "canonical"):
            raise MemoryFailure(FailureCode.INVALID_ARGUMENT, "--view must be effective, rendered or canonical")
        from ..memory import CORE_JSON_KEYS

        ws = open_workspace(memory_settings(state))
        data = ws.core_view()
        out = {key: data[key] for key in CORE_JSON_KEYS}
        out["view"] = view
        if data.get("write_in_progress"):
            out["write_in_progress"] = True
        warnings = ws.unreadable_warnings()  # of the snapshot the core was rendered from
        if warnings:
            out["warnings"] = warnings

        def human() -> None:
            text = data[view]
            if view == "effective" and not data["inject"]:
                console.print("[yellow]memory.core.inject=false: the injected core block is empty[/]")
            elif not text:
                console.print("(empty)")
            else:
                sys.stdout.write(text)
            console.print(f"[dim]{view}: {data['tokens']:,} / {data['budget']:,} tokens injected[/]")
            if data.get("write_in_progress"):
                console.print("[dim]a write is in progress: this is the core as last installed[/]")
            if data["excluded_block_ids"]:
                console.print(f"[yellow]warning[/]: {len(data['excluded_block_ids'])} record(s) over the budget, "
                              "not injected: " + ", ".join("^" + i for i in data["excluded_block_ids"]))
            for warning in warnings:
                warn(warning)

        emit(out, json, human)


def rebuild(state: Optional[str] = StateOption, json: bool = JsonOption) -> None:
    """Regenerate the derived views (core.md, timeline, recent, relations)."""
    with reporting(json):
        ws = open_workspace(memory_settings(state))
        rebuilt = ws.rebuild()
        result = rebuilt.to_json()
        result["derived_files"] = rebuilt.derived_files

        def human() -> None:
            if not rebuilt.memory_committed:  # (said as it is: nothing was written, nothing committed)
                console.print(f"Every derived view already matches the topics; nothing changed. Revision "
                              f"{result['revision']}")
                return
            shown = ", ".join(rebuilt.derived_files[:5]) + (" …" if len(rebuilt.derived_files) > 5 else "")
            console.print(f"Rebuilt {len(rebuilt.derived_files)} derived view(s): {shown}; revision {result['revision']}")

        emit(result, json, human)


def log(limit: int = typer.Option(20, "--limit", "-n", min=1), state: Optional[str] = StateOption,
        json: bool = JsonOption) -> None:
    """History of memory changes, from git."""
    with reporting(json):
        ws = open_workspace(memory_settings(state))
        entries = ws.log(limit)

        def human() -> None:
            if not entries:  # `memory init` commits nothing: silence would read as a broken history
                console.print("no history yet: the first change to memory (a write, `openprogram memory apply`, "
                              "a hand edit adopted) makes the first commit")
            for entry in entries:
                when = datetime.fromtimestamp(entry["time"], timezone.utc).strftime("%Y-%m-%d %H:%M")
                console.print(f"[yellow]{entry['commit'][:12]}[/] {when}  {escape(entry['message'].splitlines()[0])}")

        emit({"commits": entries}, json, human)


def restore(rev: str = typer.Argument(..., help="Commit to restore topics from: an id (or its first 4+ digits), "
                                                "HEAD, HEAD~N, HEAD^"),
            state: Optional[str] = StateOption, json: bool = JsonOption) -> None:
    """Make topics as they were at REV, as a new transaction."""
    with reporting(json):
        ws = open_workspace(memory_settings(state))
        result = ws.restore(rev).to_json()
        emit(result, json, lambda: _tx_human(result))


def export(out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output .tar.gz"),
           state: Optional[str] = StateOption, json: bool = JsonOption) -> None:
    """Write a tar.gz of the workspace (topics, sources, views, history)."""
    with reporting(json):
        ws = open_workspace(memory_settings(state))
        target = out or Path(f"openprogram-memory-{datetime.now().strftime('%Y%m%d-%H%M%S')}.tar.gz")
        ws.export(target)
        emit({"ok": True, "path": str(target), "revision": ws.revision()}, json,
             lambda: console.print(f"Exported to {target}"))


def _run_editor(path: Path) -> None:
    from ..config import editor_command

    editor = editor_command()
    try:
        code = subprocess.call([*shlex.split(editor), str(path)])
    except (OSError, ValueError) as exc:  # not installed, not executable, unbalanced quotes
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT,
                            f"cannot run the editor {editor!r} ({exc}); set $VISUAL or $EDITOR to an editor "
                            "command; nothing installed") from None
    if code != 0:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"editor {editor!r} exited with {code}; nothing installed")


def _read_draft(scratch: Path) -> str:
    from ..topics.model import decode_topic, not_utf8

    try:
        data = scratch.read_bytes()
        return decode_topic(data)
    except UnicodeDecodeError as exc:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"the draft is {not_utf8(data, exc)[0]}; "
                            "topics are UTF-8 text") from None
    except FileNotFoundError:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, "the editor removed the draft; nothing installed") from None


def edit(
    path: str = typer.Argument("topics/core.md", help="Topic to edit"),
    new: bool = typer.Option(False, "--new", help="Create PATH if it does not exist (asked when interactive)."),
    state: Optional[str] = StateOption,
    json: bool = JsonOption,
    reopen: Optional[bool] = typer.Option(None, "--reopen/--no-reopen",
                                          help="On rejection, reopen the draft (default: ask when interactive)"),
) -> None:
    """Edit a topic in $EDITOR on a scratch copy; install only when valid."""
    from ..workspace.layout import check_topic_path
    from ..workspace.scratch import keep, make_scratch

    with reporting(json):
        ws = open_workspace(memory_settings(state))
        rel = check_topic_path(path)
        # The revision first: an update landing after it (even before the
        # read) makes the install a CONCURRENT_UPDATE instead of a lost write.
        base = ws.revision()
        try:
            original = ws.read_topic(rel)
        except MemoryFailure as failure:
            if failure.code is not FailureCode.MEMORY_NOT_FOUND:
                raise
            moved = ws.moved_fix(rel)
            if moved is not None:  # (moved by hand: the file to edit is where it went)
                raise MemoryFailure(FailureCode.MEMORY_NOT_FOUND, f"{rel} does not exist: {moved}",
                                    details={"file": rel}) from None
            _confirm_new(ws.root, rel, new, json)
            original = ""
        scratch_dir = make_scratch(ws.root, "edit")
        scratch = scratch_dir / Path(rel).name
        scratch.write_text(original, encoding="utf-8")
        try:
            _edit_loop(ws, rel, scratch, original, base, json, reopen)
        except BaseException as exc:
            named = isinstance(exc, typer.Exit) and exc.exit_code == EXIT_REJECTED  # "Your draft is kept at …"
            drafted = scratch.exists() and (named or scratch.read_text(encoding="utf-8", errors="replace") != original)
            if drafted and not (isinstance(exc, typer.Exit) and exc.exit_code == 0):
                keep(scratch_dir)  # a draft that did not install stays for its person; reclaim() leaves it
            else:
                shutil.rmtree(scratch_dir, ignore_errors=True)
            raise
        shutil.rmtree(scratch_dir, ignore_errors=True)


def _confirm_new(root: Path, rel: str, new: bool, json: bool) -> None:
    """A path that does not exist is created only when asked for: a typo must not open an empty buffer."""
    if new:
        return
    if not json and sys.stdin.isatty() and sys.stdout.isatty():
        if typer.confirm(f"{rel} does not exist yet. Create it?", default=False):
            return
        raise typer.Exit(EXIT_OK)
    raise MemoryFailure(FailureCode.MEMORY_NOT_FOUND,
                        f"{rel} does not exist; check the name (`ls -R {root / 'topics'}` lists the topics) "
                        f"or pass --new to create it")


def _edit_loop(ws, rel: str, scratch: Path, original: str, base: str, json: bool, reopen: Optional[bool]) -> None:
    while True:
        _run_editor(scratch)
        try:
            draft = _read_draft(scratch)
            # unchanged from the file on disk; a file held back as invalid is validated all the same (its rule and
            # line, as for any draft), since it is not what memory holds
            if draft == original and ws.held_back(rel) is None:
                unchanged = with_opening_notes(ws, {"ok": True, "changed_files": [], "revision": base})
                emit(unchanged, json, lambda: _tx_human(unchanged))
                return
            result = with_opening_notes(ws, ws.write_topic(rel, draft, base_revision=base).to_json())
        except MemoryFailure as failure:
            if failure.code not in (FailureCode.INVALID_TOPIC_FORMAT, FailureCode.MISSING_SOURCE,
                                    FailureCode.INVALID_ARGUMENT, FailureCode.MEMORY_NOT_FOUND):
                raise
            err_console.print(f"[bold red]{failure.code.value}[/]: {escape(failure.message)}")
            err_console.print(escape(f"Your draft is kept at {scratch}"))
            again = reopen
            if again is None:
                again = sys.stdin.isatty() and typer.confirm("Reopen the draft to fix it?", default=True)
            if again:
                continue
            failure.details["draft"] = str(scratch)
            if json:
                from .output import print_json

                print_json(failure.to_json())
            raise typer.Exit(EXIT_REJECTED)
        emit(result, json, lambda: _tx_human(result))
        return


def check(state: Optional[str] = StateOption, json: bool = JsonOption,
          repair: bool = typer.Option(False, "--repair", help="Also repair what needs no judgement: a damaged HEAD, "
                                      "valid hand edits made outside the product (committed), stale views, "
                                      "unreadable runtime state.")) -> None:
    """Check the workspace like `git fsck`: every problem with file, line, rule and the fix (exit 65 if any)."""
    with reporting(json):
        from ..transaction.check import check_workspace, repaired_on_open, report_lines

        ws = open_workspace(memory_settings(state))
        problems = check_workspace(ws)
        on_open = repaired_on_open(ws)
        repaired: list[str] = []
        if repair and problems:
            from ..transaction.repair import repair_workspace

            repaired = repair_workspace(ws, problems)
            problems = check_workspace(ws)
        data = {"ok": not problems, "problems": [p.to_json() for p in problems], "repaired": on_open + repaired}

        def human() -> None:
            # what opening did (every command does it: adopt valid hand edits, recover a crash) in the words status
            # uses; "repaired:" only for what --repair did
            for note in ws.opening_notes():
                console.print(escape(note))
            for note in repaired:
                console.print(f"repaired: {escape(note)}")
            if not problems:
                console.print(f"No problem found in {escape(str(ws.root))}.")
            for line in report_lines(problems):
                console.print(escape(line))

        emit(data, json, human)
    if problems:
        raise typer.Exit(EXIT_REJECTED)


def register(memory_app: typer.Typer) -> None:
    memory_app.command("init")(init)
    memory_app.command("status")(status)
    memory_app.command("check")(check)
    memory_app.command("show")(show)
    memory_app.command("edit")(edit)
    memory_app.command("rebuild")(rebuild)
    memory_app.command("log")(log)
    memory_app.command("restore")(restore)
    memory_app.command("export")(export)
    memory_app.add_typer(core_app, name="core")
