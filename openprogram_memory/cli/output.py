"""Output for people (Rich) and programs (one JSON object), and exit codes.

Mode order: ``--json`` wins; otherwise Rich output for people. Every failure
leaves as a :class:`MemoryFailure` turned into the one error object and the
sysexits code of architecture §6; an unexpected exception exits 1.
"""

from __future__ import annotations

import errno
import json
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import typer
from rich.markup import escape
from rich.console import Console
from typer import rich_utils

from ..failures import EXIT_BUG, MemoryFailure
from . import fast
from .fast import bug_json, print_json
from .stopping import stdout_closed


def _pass_broken_pipe_on() -> None:
    """Rich exits 1 on a broken pipe; it goes on to the entry point instead, which decides
    (:func:`.stopping.ended_by`)."""
    raise BrokenPipeError(errno.EPIPE, "Broken pipe")


class _Console(Console):
    def on_broken_pipe(self) -> None:
        _pass_broken_pipe_on()


console = _Console(highlight=False, soft_wrap=True)
err_console = _Console(stderr=True, highlight=False, soft_wrap=True)

_typer_console = rich_utils._get_rich_console


def _help_console(stderr: bool = False) -> Console:
    """Typer's console for help (its theme and width), passing a broken pipe on as ours do: ``--help | head -1``
    ends quietly with exit 0, as every command does."""
    made = _typer_console(stderr)
    made.on_broken_pipe = _pass_broken_pipe_on  # type: ignore[method-assign]
    return made


rich_utils._get_rich_console = _help_console  # typer looks it up at each use


def emit(data: dict[str, Any], as_json: bool, human: Callable[[], object] | None = None) -> None:
    """Print ``data`` as JSON, or call ``human`` to print it for people."""
    if as_json:
        print_json(data)
    elif human is not None:
        human()
    else:
        console.print_json(json.dumps(data, ensure_ascii=False, default=str))


def fail(failure: MemoryFailure, as_json: bool) -> None:
    """Report ``failure`` and exit with its code."""
    if as_json:
        print_json(failure.to_json())
    else:
        tag = "retryable" if failure.retryable else "error"
        err_console.print(f"[bold red]{failure.code.value}[/] ({tag}): {escape(failure.message)}")
        for line in human_details(failure.details, said=failure.message):
            err_console.print(f"  {escape(line)}")
    raise typer.Exit(failure.exit_code)


def human_details(details: dict[str, Any], said: str = "") -> Iterator[str]:
    """A failure's details as lines for people: no Python ``None``, list or dict syntax; a list gives a line per
    item (an item that says why, such as a skipped file or a rejected edit, by its reason or message). Files all
    skipped for looking like one other format are said once by the message (with their count), not again per file
    (``--json`` lists them); nor is a text the message (``said``) already holds word for word (a held file's
    problem: ``--json`` has it as a field)."""
    for key, value in details.items():
        if key == "draft" or value is None or (key == "skipped_files" and details.get("looks_like")):
            continue
        label = str(key).replace("_", " ")
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, dict):
                item = item.get("reason") or item.get("message") or ", ".join(
                    f"{k}: {v}" for k, v in item.items()
                    if v is not None and not isinstance(v, (dict, list)) and not _already_said(v, said))
            if item != "" and not _already_said(item, said):
                yield f"{label}: {item}"


def _already_said(value: object, said: str) -> bool:
    """Whether ``value`` is a text of more than a few words that the message ``said`` holds as it is."""
    return isinstance(value, str) and len(value.split()) > 3 and value in said


@contextmanager
def reporting(as_json: bool) -> Iterator[None]:
    """Turn failures inside the block into output + exit code."""
    try:
        yield
    except typer.Exit:
        raise
    except MemoryFailure as failure:
        fail(failure, as_json)
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # an unexpected bug: exit 1, still one JSON object
        if isinstance(exc, BrokenPipeError) and stdout_closed():
            raise  # the reader went away (`| head`): no failure, the entry point ends quietly
        if as_json:
            print_json(bug_json(exc))
        else:
            err_console.print(f"[bold red]unexpected error[/]: {type(exc).__name__}: {escape(str(exc))}")
        raise typer.Exit(EXIT_BUG)


def warn(text: str) -> None:
    """A warning on stderr, in Rich (stdout keeps only the answer)."""
    err_console.print(f"[yellow]warning[/]: {escape(text)}")


def notice(text: str) -> None:
    """A notice on stderr ("stopping after …"), in Rich."""
    err_console.print(f"[yellow]{escape(text)}[/]")


@contextmanager
def deferred_interrupt(boundary: str = "the current session") -> Iterator[Callable[[], bool]]:
    """:func:`.fast.deferred_interrupt`, its notice in Rich."""
    with fast.deferred_interrupt(boundary, notice) as asked:
        yield asked
