"""``memory write``, ``memory watch``, ``memory backfill`` and ``memory import``.

JSON shapes are the stable contract of architecture §12.1; failures leave as the
one error object with the sysexits code (75 retryable — e.g. the write lock
is busy —, 65 rejected, 64 usage).
"""

from __future__ import annotations

from typing import Any, List, Optional

import typer
from rich.markup import escape

from ..failures import EXIT_OK, EXIT_REJECTED, EXIT_RETRYABLE, FailureCode, MemoryFailure
from .common import JsonOption, StateOption, memory_settings, open_workspace
from .fast import with_opening_notes
from .output import console, deferred_interrupt, emit, err_console, print_json, reporting, warn


WRITE_BOUNDARY = "the current pass (one transaction)"


def write_command(
    named: Optional[str] = typer.Argument(None, metavar="[SESSION]", show_default=False,
                                          help="Session id to write (the same as --session)."),
    session: Optional[str] = typer.Option(None, "--session", "-s", help="Session id to write."),
    force: bool = typer.Option(False, "--force", help="Session boundary: write everything pending, every branch."),
    all_idle: bool = typer.Option(False, "--all-idle", help="One idle-watcher poll over every session."),
    rereview: bool = typer.Option(False, "--rereview",
                                  help="Re-read turns another writer settled as nothing durable (after switching "
                                       "memory.writer.model); every session, or --session."),
    since: Optional[str] = typer.Option(None, "--since", metavar="DATE",
                                        help="With --rereview: only turns dated on or after YYYY-MM-DD."),
    state: Optional[str] = StateOption,
    json: bool = JsonOption,
) -> None:
    """Write a session into memory (per turn, or --force at the session boundary)."""
    if named is not None and session is not None and named != session:
        with reporting(json):
            raise MemoryFailure(FailureCode.INVALID_ARGUMENT,
                                f"two sessions named: {named!r} and --session {session!r}; write one at a time")
    session = session if session is not None else named
    given = [flag for flag, value in (("--session", session is not None), ("--force", force),
                                      ("--rereview", rereview), ("--since", since is not None)) if value]
    if all_idle and given:  # each would be silently ignored
        with reporting(json):
            raise MemoryFailure(FailureCode.INVALID_ARGUMENT,
                                f"--all-idle writes every idle session: it does not go with {' or '.join(given)}; "
                                "give one or the other")
    if force and (rereview or since is not None):
        with reporting(json):
            raise MemoryFailure(FailureCode.INVALID_ARGUMENT,
                                "--force writes what is pending, --rereview re-reads settled turns; run one at a time")
    if all_idle:
        _poll(state, json, "memory write --all-idle")
        return
    if rereview or since is not None:
        _rereview(session, since, rereview, state, json)
        return
    with reporting(json), deferred_interrupt(WRITE_BOUNDARY) as stop_asked:
        from ..writer.pipeline import write_report

        if not session:
            raise MemoryFailure(FailureCode.MISSING_SESSION_ID,
                                "no session id: use --session ID (or --all-idle for every idle session)")
        ws = open_workspace(memory_settings(state))
        report = write_report(ws, session, force=force, should_stop=stop_asked)
        data = with_opening_notes(ws, report.to_json())
        if data["revision"] is None:
            data["revision"] = ws.revision()

        def human() -> None:
            console.print(_write_counts(data))
            if report.passes or not report.skipped:
                for path in data["changed_files"]:
                    console.print(f"  {escape(path)}")
                for item in data.get("superseded", []):  # records from a branch the person abandoned
                    console.print(f"  ^{item['memory_id']} ({item['topic']}) from an abandoned branch: {item['action']}")
            console.print(f"revision {data['revision']}")
            for warning in data.get("warnings", []):
                warn(warning)

        emit(data, json, human)
    if stop_asked():  # the first Ctrl-C let the running pass (one transaction) finish
        err_console.print(f"stopped by Ctrl-C after {data['passes']} pass(es); what was written stays written"
                          + (", and running the same command again continues" if data["pending"] else ""))
        raise typer.Exit(130)


def _rereview(session: Optional[str], since: Optional[str], rereview: bool, state: Optional[str],
              as_json: bool) -> None:
    with reporting(as_json):
        from datetime import date

        from ..writer.rereview import rereview_sessions

        if not rereview:
            raise MemoryFailure(FailureCode.INVALID_ARGUMENT, "--since goes with --rereview")
        try:
            day = date.fromisoformat(since) if since is not None else None
        except ValueError:
            raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"--since {since!r}: expected YYYY-MM-DD") from None
        ws = open_workspace(memory_settings(state))
        data = rereview_sessions(ws, session_id=session, since=day)

        def human() -> None:
            if not data["reopened"]:
                console.print(f"Nothing to re-review: no settled turn was reviewed by a writer other than "
                              f"{data['writer']}.")
            else:
                written = sum(len(r["written"]) for r in data["sessions"])
                reviewed = sum(len(r["reviewed"]) for r in data["sessions"])
                console.print(f"{data['reopened']} settled turn(s) re-read by {data['writer']} in "
                              f"{len(data['sessions'])} session(s): {written} written, {reviewed} reviewed with "
                              "nothing durable.")
                for path in data["changed_files"]:
                    console.print(f"  {escape(path)}")
            console.print(f"revision {data['revision']}")

        emit(data, as_json, human)


def _poll(state: Optional[str], as_json: bool, command: str, *, watched: bool = False) -> None:
    """One poll of idle sessions; ``watched``: import the transcripts under ``memory.watch.paths`` first
    (``watch --once``, as every ``memory watch`` mode does), said per file and under --json as
    ``"imported": [{"path", "imported"}]``."""
    imported: list[dict[str, Any]] = []
    with reporting(as_json), deferred_interrupt(WRITE_BOUNDARY) as stop_asked:  # inside a long session too
        from ..writer.watcher import import_watched, watch_once

        settings = memory_settings(state)
        if watched:
            from ..memory import require_workspace

            require_workspace(settings)
            import_watched(settings, lambda path, count: imported.append({"path": str(path), "imported": count}))
        if as_json or not err_console.is_terminal:
            outcomes = watch_once(settings, should_stop=stop_asked, command=command)
        else:
            from rich.progress import Progress

            with Progress(console=err_console, transient=True) as bar:
                task = bar.add_task("writing idle sessions", total=None)
                outcomes = watch_once(settings, should_stop=stop_asked, command=command,
                                      progress=lambda done, total, session: bar.update(
                                          task, completed=done, total=total,
                                          description=f"writing {escape(session)}"))
    data: dict[str, Any] = {"ok": all(o.ok for o in outcomes), "sessions": [o.to_json() for o in outcomes]}
    if watched:
        data["imported"] = imported
    if outcomes.interrupted:
        data["interrupted"] = True
        data["remaining"] = outcomes.remaining
    if outcomes.organize is not None:
        data["organize"] = outcomes.organize
    if outcomes.sync is not None:
        data["sync"] = outcomes.sync
    if as_json:
        print_json(data)
    else:
        for done in imported:
            _print_imported(done["path"], done["imported"])
        if not outcomes and not outcomes.interrupted:  # stopped before the first: the stop line below says so
            console.print("No idle session to write.")
        for o in outcomes:
            if not o.interrupted:  # the stop line below says what became of it
                _print_outcome(o)
        if outcomes.organize is not None:
            organized = outcomes.organize
            console.print("nightly organize: " + (f"{len(organized['changed_files'])} file(s) changed" if organized["ok"]
                                                  else f"{organized['code']}: {organized['message']}"))
        if outcomes.sync is not None:
            synced = outcomes.sync
            console.print("sync: " + ("pushed" if synced.get("pushed") else "up to date") if synced["ok"]
                          else f"sync: {synced['code']}: {escape(synced['message'])} (retried next poll)")
        if outcomes.interrupted:
            err_console.print(f"stopped by Ctrl-C: {outcomes.due - outcomes.remaining} of {outcomes.due} idle "
                              "session(s) done; "
                              "what was written stays written, and running the same command again continues")
    raise typer.Exit(130 if outcomes.interrupted else _exit_code(outcomes))


def _write_counts(data: dict[str, Any]) -> str:
    """What one session's write did, from its ``memory write --json`` object: passes and turns written,
    reviewed and pending (``write --session`` and every idle session a poll wrote say it alike)."""
    if data.get("skipped") and not data["passes"]:
        return f"Nothing written ({data['skipped']}); {data['pending']} turn(s) pending."
    return (f"{data['passes']} pass(es): {len(data['written'])} turn(s) written, "
            f"{len(data['reviewed'])} reviewed with nothing durable; {data['pending']} pending.")


def _print_imported(path: Any, count: int) -> None:
    """One watched transcript's new lines, as every ``memory watch`` mode says it."""
    console.print(f"{escape(str(path))}: {count} new node(s) imported")


def _print_outcome(o: Any) -> None:
    """One idle session's outcome, as every poll prints it (``write --all-idle``, ``watch``)."""
    status = "ok" if o.ok else f"{o.reason} ({'recorded' if o.settled else _waits(o)})"
    if o.ok and o.write is not None:
        status += " — " + escape(_write_counts(o.write))
    console.print(f"{escape(o.session)}: {status}")
    if not o.ok and o.message:  # what failed and how to fix it, not only its code
        console.print(f"  {escape(o.message)}")


def _waits(o: Any) -> str:
    """Why a failed session the poll did not record is tried again: the failure passes, or the person's fix."""
    return "retry next poll" if o.retryable else "held until you fix what is named below; the next poll writes it"


def _exit_code(outcomes: list[Any]) -> int:
    if any(not o.ok and not o.retryable for o in outcomes):
        return EXIT_REJECTED
    if any(not o.ok for o in outcomes):
        return EXIT_RETRYABLE
    return EXIT_OK


def watch_command(
    once: bool = typer.Option(False, "--once", help="One poll, then exit."),
    poll: bool = typer.Option(False, "--poll", help="Poll on a timer instead of reacting to file events."),
    state: Optional[str] = StateOption,
    json: bool = JsonOption,
) -> None:
    """The idle watcher: force-write quiet sessions; organize nightly at memory.organize.at."""
    if once:
        _poll(state, json, "memory watch --once", watched=True)
        return
    with reporting(json):
        from ..memory import require_workspace
        from ..writer.watch_events import watch_events
        from ..writer.watcher import watch

        settings = memory_settings(state)
        require_workspace(settings)  # as --once does: --poll would otherwise log the refusal at every poll

        def report(outcomes: list[Any]) -> None:
            for o in outcomes:
                if json:
                    print_json(o.to_json())
                else:
                    _print_outcome(o)

        def imported(path: Any, count: int) -> None:
            if json:
                print_json({"imported": count, "path": str(path)})
            else:
                _print_imported(path, count)

        what = "(sessions" + "".join(f", {p}" for p in settings["memory.watch.paths"]) + ")"
        how = f"polling every {settings['memory.watcher.poll_seconds']} s {what}" if poll else f"on file events {what}"
        err_console.print(f"watching {how}; idle after {settings['memory.watcher.idle_seconds']} s; Ctrl-C stops")
        # Ctrl-C ends watch as every verb (exit 130, "stopped by Ctrl-C"): see common.Group.invoke
        if poll:
            watch(settings, on_poll=report, on_import=imported)
        else:
            watch_events(settings, on_poll=report, on_import=imported)


def backfill_command(
    state: Optional[str] = StateOption,
    json: bool = JsonOption,
) -> None:
    """Write trusted archived sources that no topic cites yet, in normal batches."""
    with reporting(json):
        from ..writer.backfill import backfill

        ws = open_workspace(memory_settings(state))
        if json:
            report = backfill(ws)
        else:
            from rich.progress import Progress

            with Progress(console=err_console, transient=True) as progress:
                task = progress.add_task("backfill", total=None)
                report = backfill(ws, progress=lambda done, total: progress.update(task, completed=done, total=total))

        def human() -> None:
            if not report["considered"]:
                console.print("Nothing to backfill: every trusted source is cited or was reviewed.")
                return
            console.print(f"{report['written']} of {report['considered']} source(s) written in {report['batches']} "
                          f"batch(es): {report['cited']} cited, {report['reviewed']} reviewed with nothing durable; "
                          f"{report['remaining']} remaining.")
            for failure in report["failures"]:
                err_console.print(f"[red]{failure['code']}[/]: {failure['message']}")

        emit(report, json, human)
        if report["remaining"]:
            if not json:
                err_console.print(f"{report['remaining']} source(s) remain unwritten; run `openprogram memory backfill` again")
            raise typer.Exit(EXIT_REJECTED)


def import_command(
    fmt: str = typer.Argument(..., metavar="FORMAT", help="Transcript format: claude-code, pi or codex."),
    paths: List[str] = typer.Argument(..., metavar="PATH...", help="Transcript files or directories."),
    state: Optional[str] = StateOption,
    json: bool = JsonOption,
) -> None:
    """Import other agents' transcripts into the session store (idempotent).

    Every line that does not become a node is counted by reason (blank,
    malformed_json, not_an_object, missing_id, duplicate_id, malformed_line,
    unknown_type, not_a_turn, already_present, fork_prefix). --json prints
    {"sessions": [...], "imported": N, "skipped": {reason: n}}. A file named
    here that is of another format is refused (exit 64) before anything is
    imported; in a directory such a file is skipped with one line saying why
    ("skipped_files" under --json), and the import fails (exit 64) only when
    every file found is skipped.
    """
    with reporting(json), deferred_interrupt("the current file") as stop_asked:
        from ..memory import require_workspace
        from ..sessions.importers import import_paths
        from ..sessions.store import SessionStore

        settings = memory_settings(state)
        require_workspace(settings)  # a mistyped --state must not grow a session store of its own
        store = SessionStore(settings.sessions_dir)
        if json or not err_console.is_terminal:
            result = import_paths(store, fmt, paths, should_stop=stop_asked)
        else:
            from rich.progress import Progress

            with Progress(console=err_console, transient=True) as bar:
                task = bar.add_task("importing", total=None)
                result = import_paths(store, fmt, paths, should_stop=stop_asked,
                                      progress=lambda done, total: bar.update(task, completed=done, total=total))
        data = result.to_json()

        def human() -> None:
            for skipped in result.skipped_files:
                err_console.print(f"[yellow]skipped[/]: {escape(skipped['reason'])}")
            if not data["sessions"] and not result.skipped_total and not result.interrupted:
                console.print(f"Nothing found to import: no {escape(fmt)} transcript lines in {escape(', '.join(paths))}.")
                return
            console.print(f"{data['imported']} node(s) imported; sessions: {escape(', '.join(data['sessions'])) or '-'}")
            if data["skipped"]:
                reasons = ", ".join(f"{reason} {count}" for reason, count in data["skipped"].items())
                console.print(f"{result.skipped_total} line(s) skipped: {reasons}")
            if result.interrupted:
                err_console.print(f"stopped by Ctrl-C with {result.remaining} file(s) not read yet; what was "
                                  "imported stays, and running the same command again imports only what is missing")

        emit(data, json, human)
    if result.interrupted:
        raise typer.Exit(130)


def register(memory_app: typer.Typer) -> None:
    """Add ``write``, ``watch``, ``backfill`` and ``import`` to the ``memory`` group."""
    memory_app.command("write")(write_command)
    memory_app.command("watch")(watch_command)
    memory_app.command("backfill")(backfill_command)
    memory_app.command("import")(import_command)
