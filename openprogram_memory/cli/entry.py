"""The ``openprogram`` console entry point: the Claude Code hook before anything else.

``openprogram memory hook claude-code`` runs on every prompt the person
types, so it must answer fast; typer and rich alone cost about as much as
the whole answer may. This module (no third-party imports) dispatches that
one command straight to :mod:`openprogram_memory.agents.claude_code_hook`;
everything else — including ``--help`` on it — goes to the Typer app.
"""

from __future__ import annotations

import sys

HOOK_ARGV = ["memory", "hook", "claude-code"]


def _plain_hook_args(rest: list[str]) -> bool:
    """Only ``--state DIR`` / ``--state=DIR`` may follow: anything else is for Typer (help, errors)."""
    if not rest:
        return True
    if len(rest) == 1:
        return rest[0].startswith("--state=")
    return len(rest) == 2 and rest[0] == "--state"


def run() -> None:
    """The console script: :func:`main`, then leave without tearing the heap down.

    At exit the interpreter frees every object one by one and runs the
    cyclic GC over them: about 1 s of a 2 s ``memory status`` at 10,000
    records, after the answer is printed. Everything a verb writes to disk
    is finished (and fsynced where it matters) before it returns, so the
    process runs its exit handlers (logging, temporary files, anything a
    library registered with ``atexit``), flushes what it printed and ends.
    """
    import atexit
    import os

    try:
        main()
        code: object = 0
    except SystemExit as exc:
        code = exc.code
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    atexit._run_exitfuncs()  # what a normal exit runs first; the heap teardown after it is what is skipped
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main() -> None:
    """Run ``openprogram`` (raises SystemExit with the exit code); Ctrl-C or a closed stdout at any moment
    ends it as :func:`.stopping.ended_by` says, never with a traceback."""
    try:
        _dispatch()
    except (KeyboardInterrupt, BrokenPipeError) as exc:
        from .stopping import ended_by

        code = ended_by(exc)
        if code is None:
            raise
        sys.exit(code)


def _dispatch() -> None:
    argv = sys.argv[1:]
    if argv[:3] == HOOK_ARGV and _plain_hook_args(argv[3:]):
        from ..agents.claude_code_hook import main as hook_main

        sys.exit(hook_main(argv[3:]))
    if argv[:1] == ["memory"] and "--json" in argv:
        from .fast import main as fast_main

        code = fast_main(argv[1:])
        if code is not None:
            sys.exit(code)
    from .app import main as app_main

    app_main()


if __name__ == "__main__":  # ``python -m openprogram_memory.cli.entry …`` is the console script too
    run()
