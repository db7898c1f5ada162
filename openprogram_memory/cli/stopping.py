"""How a command ends when the person stops it: Ctrl-C, or ``| head`` closing stdout (no third-party imports)."""

from __future__ import annotations

import sys

STOPPED = "stopped by Ctrl-C"


def stdout_closed() -> bool:
    """Whether stdout is a pipe whose reader has gone (``| head`` read what it wanted).

    A BrokenPipeError can also come from a socket (a model provider, a
    remote): only a widowed stdout means "stop quietly". Linux marks such a
    pipe with POLLERR; where poll cannot tell, a broken pipe is taken as stdout's.
    """
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), 0)
        return any(event & select.POLLERR for _fd, event in poller.poll(0))
    except (AttributeError, OSError, ValueError):
        return True


def ended_by(exc: BaseException) -> int | None:
    """The exit code when ``exc`` is the person stopping the command, or None (a real failure).

    Ctrl-C says so in one line (130); a closed stdout is not an error, as
    for git or ls: nothing more is printed (the rest would go nowhere) and
    the exit code is 0. Both end every command the same way, wherever they land.
    """
    import os

    if isinstance(exc, KeyboardInterrupt):
        print(STOPPED, file=sys.stderr, flush=True)
        return 130
    if isinstance(exc, BrokenPipeError) and stdout_closed():
        # what is still buffered must not fail again at exit: stdout now writes to /dev/null
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError):  # stdout is no file (a test's capture)
            pass
        return 0
    return None
