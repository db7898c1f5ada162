"""What ``memory search|recall|status|apply|sleep --json`` need, without Typer or Rich, and a direct route for them.

Scripts and agents call the JSON verbs once per question; importing Typer
and Rich (with Markdown and Pygments behind them) cost more than the
search itself. :func:`main` answers ``openprogram memory search QUERY
[--top-k N] [--all] [--state DIR] --json``, ``recall`` the same way and
``status [--verbose] [--state DIR] --json``, ``apply [FILE|-] [--base-revision R] [--state DIR] --json``
and ``sleep [--model M] [--full] [--state DIR] --json`` with no third-party import; anything else it does not recognise — help,
another option, a mistake — goes to the Typer app, which prints the usage
error. The Typer verbs build their output with the same functions, so
both routes answer byte for byte the same (tests/cli/test_fast_json.py).
"""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager, nullcontext
from typing import Any, Callable, ContextManager, Iterator

from ..config import MAX_TOP_K, Settings, load_settings
from ..failures import EXIT_BUG, FailureCode, MemoryFailure
from .stopping import ended_by, stdout_closed

VERBS = ("search", "recall", "status", "apply", "sleep")


def print_json(data: Any) -> None:
    """The one JSON object a verb prints for programs."""
    sys.stdout.write(json.dumps(data, ensure_ascii=False, sort_keys=True, default=str) + "\n")
    sys.stdout.flush()


def bug_json(exc: BaseException) -> dict[str, Any]:
    """The error object of an unexpected exception (exit 1)."""
    return {"ok": False, "code": "TRANSACTION_FAILURE_UNKNOWN", "retryable": False,
            "message": f"unexpected {type(exc).__name__}: {exc}"}


def _warn_plain(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def _say_plain(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@contextmanager
def deferred_interrupt(boundary: str = "the current session",
                       say: Callable[[str], None] = _say_plain) -> Iterator[Callable[[], bool]]:
    """Inside the block the first Ctrl-C only asks long work to stop at its next boundary (the function
    yielded says whether it was pressed); a second one interrupts at once (every change is crash-safe)."""
    import signal
    import threading

    pressed: list[bool] = []
    if threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return

    def ask(_signum, _frame) -> None:
        if pressed:
            raise KeyboardInterrupt
        pressed.append(True)
        say(f"stopping after {boundary} (Ctrl-C again to stop at once)")

    previous = signal.signal(signal.SIGINT, ask)
    try:
        yield lambda: bool(pressed)
    finally:
        signal.signal(signal.SIGINT, previous)


def checked_settings(state: str | None, overrides: dict[str, Any] | None = None,
                     warn: Callable[[str], None] = _warn_plain) -> Settings:
    """Effective settings for a ``memory`` verb; refuses when memory is off.

    ``memory.backend=none`` refuses every memory verb with MEMORY_DISABLED
    before any file or directory is created.
    """
    settings = load_settings(state, overrides)
    for warning in settings.warnings:
        warn(warning)
    if not settings.enabled:
        raise MemoryFailure(
            FailureCode.MEMORY_DISABLED,
            "memory is disabled (memory.backend=none); set memory.backend=files in config.toml "
            "or unset OPENPROGRAM_MEMORY_BACKEND to use it",
        )
    return settings


def top_k(flag: int | None, settings: Settings) -> int:
    """``--top-k`` (1..MAX_TOP_K) or ``memory.retrieval.top_k``."""
    if flag is None:
        return int(settings["memory.retrieval.top_k"])
    if not 1 <= flag <= MAX_TOP_K:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"--top-k must be from 1 to {MAX_TOP_K}, got {flag}")
    return flag


def left_out(settings: Settings) -> list[str]:
    """Warnings of the topic files the search index left out (not text) or holds as their last committed version
    (not valid); the index keeps them, so an answer from its saved copy warns too. Only a search that met one
    pays for the import of the wording. A topic moved outside the product gets the fix ``memory check`` gives
    (:func:`~..transaction.moves.moved_fixes`), read from the files and git: no workspace is opened here."""
    from ..search.cache import left_out as index_left_out

    unreadable, invalid = index_left_out(settings.memory_dir)
    if not unreadable and not invalid:
        return []
    from ..workspace.caches import left_out_warnings

    root = settings.memory_dir.resolve()
    fix_of = None
    if invalid:  # (a move leaves the moved file, or the one it left, served as committed)
        from ..transaction.moves import moved_fixes, moved_on_disk

        fix_of = moved_fixes(root, moved_on_disk(root))
    return left_out_warnings(root, unreadable, invalid, fix_of)


def search_json(settings: Settings, query: str, flag: int | None, include_pending: bool) -> tuple[dict, list]:
    """``memory search --json``'s object, and the hits (for the human printer)."""
    from ..search import search

    hits = search(settings.memory_dir, query, top_k(flag, settings), include_pending=include_pending)
    data: dict[str, Any] = {"results": [hit.to_json() for hit in hits]}
    warnings = left_out(settings)
    if warnings:
        data["warnings"] = warnings
    return data, hits


def recall_json(settings: Settings, query: str, flag: int | None) -> dict[str, Any]:
    """``memory recall --json``'s object: the fenced block an agent would receive."""
    from ..search import recall_block, search

    hits = search(settings.memory_dir, query, top_k(flag, settings))
    data: dict[str, Any] = {"recall": recall_block(hits), "count": len(hits)}
    warnings = left_out(settings)
    if warnings:
        data["warnings"] = warnings
    return data


def status_json(settings: Settings, verbose: bool) -> tuple[dict[str, Any], dict[str, int]]:
    """``memory status --json``'s object, and the pending turns per session (for the human printer)."""
    from ..memory import MemoryWorkspace
    from ..writer.pending import pending_counts

    ws = MemoryWorkspace.open(settings, scan_all=True)
    data = ws.status()
    waiting = pending_counts(ws)
    data["writer"]["pending"] = sum(waiting.values())  # turns waiting across every session, live
    if verbose:
        data["writer"]["pending_by_session"] = dict(sorted(waiting.items()))
    return data, waiting


SLEEP_BOUNDARY = "this organize run (one transaction)"
SLEEP_STOPPED = "stopped by Ctrl-C after the organize run, which is one transaction: it is installed and committed"


def sleep_json(settings: Settings, model: str | None, full: bool,
               busy: Callable[[], ContextManager[Any]] = nullcontext) -> dict[str, Any]:
    """``memory sleep``'s report: one organize run, its outcome kept for ``status`` (a cron job failing every
    night must show there); ``busy`` wraps the run (the spinner people see)."""
    from ..memory import MemoryWorkspace
    from ..organizer import reorganize
    from ..workspace.state import record_outcome

    ws = MemoryWorkspace.open(settings)
    try:
        with busy():
            report = reorganize(ws, model=model, full=full)
    except MemoryFailure as failure:
        record_outcome(ws.layout, "sleep", failure)
        raise
    record_outcome(ws.layout, "sleep", None)
    return report


# per verb: its flags (no value), its options (one value) and whether its one word is required
_FLAGS = {"search": {"--all"}, "recall": set(), "status": {"--verbose", "-v"}, "apply": set(), "sleep": {"--full"}}
_OPTIONS = {"search": {"--top-k"}, "recall": {"--top-k"}, "status": set(), "apply": {"--base-revision"},
            "sleep": {"--model"}}
# True required, False optional, None none
_WORD = {"search": True, "recall": True, "status": None, "apply": False, "sleep": None}


def parse(argv: list[str]) -> tuple[str, dict[str, Any]] | None:
    """``[verb, args…]`` after ``memory`` → the verb and its arguments, or None to leave it to Typer."""
    if not argv or argv[0] not in VERBS or "--json" not in argv:
        return None
    verb = argv[0]
    args: dict[str, Any] = {"word": None, "state": None}
    rest = argv[1:]
    i = 0
    while i < len(rest):
        token = rest[i]
        value = rest[i + 1] if i + 1 < len(rest) else None
        name, eq, given = token.partition("=")
        inline: str | None = given
        if token == "--json":
            pass
        elif name in ("--state", *_OPTIONS[verb]) and (eq or (value is not None and not value.startswith("--"))):
            if not eq:
                inline, i = value, i + 1
            args[name.lstrip("-")] = inline
        elif token in _FLAGS[verb]:
            args[token.lstrip("-")] = True
        elif (token.startswith("-") and token != "-") or args["word"] is not None or _WORD[verb] is None:
            return None  # help, another option, a second word: Typer's to answer (or refuse)
        else:
            args["word"] = token
        i += 1
    if _WORD[verb] and args["word"] is None:
        return None
    top_k = args.get("top-k")
    if top_k is not None:
        if not top_k.lstrip("-").isdigit():
            return None
        args["top-k"] = int(top_k)
    return verb, args


APPLY_BOUNDARY = "this change (one transaction)"
APPLY_STOPPED = "stopped by Ctrl-C after the change, which is one transaction: it is installed and committed"


def apply_json(settings: Settings, path: str | None, base_revision: str | None,
               say: Callable[[str], None] = _say_plain) -> tuple[dict[str, Any], bool]:
    """``memory apply --json``'s object: the request read from ``path`` (or stdin), through the transaction; and
    whether Ctrl-C was pressed while it ran (the first press lets the transaction finish, so the person learns
    what happened instead of guessing whether the change went in; reading the request stops at once)."""
    from ..memory import MemoryWorkspace
    from ..transaction.update_request import load_request_json, parse_update_request

    try:
        data = sys.stdin.buffer.read() if path in (None, "-") else open(path, "rb").read()
    except OSError as exc:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"cannot read {path}: {exc.strerror}") from None
    request = parse_update_request(load_request_json(data))
    if base_revision:
        request["base_revision"] = base_revision
    with deferred_interrupt(APPLY_BOUNDARY, say) as stop_asked:
        ws = MemoryWorkspace.open(settings)
        return with_opening_notes(ws, ws.update(**request).to_json()), stop_asked()


def with_opening_notes(ws: Any, data: dict[str, Any]) -> dict[str, Any]:
    """A write command's answer with ``warnings`` on what opening ``ws`` did first (hand edits made outside the
    product adopted as their own commit, in the words ``status`` and ``check`` use): the person learns that a
    commit of theirs went in before this command's."""
    notes = ws.opening_notes()
    if notes:
        data["warnings"] = [*data.get("warnings", []), *notes]
    return data


def _stopped(data: dict[str, Any], notice: str) -> int:
    """The answer of a transaction that finished after a Ctrl-C: printed whole, then the notice; exit 130."""
    print_json(data)
    _say_plain(notice)
    return 130


def main(argv: list[str]) -> int | None:
    """Answer a JSON search or recall; the exit code, or None when Typer must handle ``argv``."""
    parsed = parse(argv)
    if parsed is None:
        return None
    verb, args = parsed
    try:
        settings = checked_settings(args["state"])
        if verb == "search":
            data = search_json(settings, args["word"], args.get("top-k"), bool(args.get("all")))[0]
        elif verb == "status":
            data = status_json(settings, bool(args.get("verbose") or args.get("v")))[0]
        elif verb == "apply":
            data, stopped = apply_json(settings, args["word"], args.get("base-revision"))
            if stopped:
                return _stopped(data, APPLY_STOPPED)
        elif verb == "sleep":
            with deferred_interrupt(SLEEP_BOUNDARY) as stop_asked:
                data = sleep_json(settings, args.get("model"), bool(args.get("full")))
            if stop_asked():
                return _stopped(data, SLEEP_STOPPED)
        else:
            data = recall_json(settings, args["word"], args.get("top-k"))
    except MemoryFailure as failure:
        print_json(failure.to_json())
        return failure.exit_code
    except KeyboardInterrupt as exc:  # a second Ctrl-C, or one before the work began
        return ended_by(exc)
    except Exception as exc:  # an unexpected bug: exit 1, still one JSON object
        if isinstance(exc, BrokenPipeError) and stdout_closed():
            raise  # the reader went away (`| head`): no failure, the entry point ends quietly
        print_json(bug_json(exc))
        return EXIT_BUG
    print_json(data)
    return 0
