"""Options and helpers every CLI verb shares."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Optional

import click
import typer
import typer.core

from ..config import Settings
from .fast import checked_settings

StateOption = typer.Option(None, "--state", help="State directory (default: $OPENPROGRAM_STATE or ~/.openprogram).")
JsonOption = typer.Option(False, "--json", help="Print one JSON object for programs.")


@contextmanager
def _stopped_as_ended_by() -> Iterator[None]:
    """Ctrl-C or a closed stdout in the block ends the command with :func:`.stopping.ended_by`'s exit code."""
    from .stopping import ended_by

    try:
        yield
    except (KeyboardInterrupt, BrokenPipeError) as exc:
        code = ended_by(exc)
        if code is None:
            raise
        raise click.exceptions.Exit(code) from None


class Group(typer.core.TyperGroup):
    """Every command group of the CLI (``cls=`` of each ``typer.Typer``)."""

    def invoke(self, ctx: click.Context) -> Any:
        """Ctrl-C or a closed stdout inside any command ends it as :func:`.stopping.ended_by` says: Typer would
        end the first silently and call the second a failure (exit 1)."""
        with _stopped_as_ended_by():
            return super().invoke(ctx)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """The same for this group's own ``--help``, printed while its arguments are parsed (a subcommand's is
        printed inside :meth:`invoke`)."""
        with _stopped_as_ended_by():
            return super().parse_args(ctx, args)

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        """A mistyped command gets the nearest one, as a mistyped option does."""
        import difflib

        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as exc:
            typed = click.utils.make_str(args[0]) if args else ""
            near = difflib.get_close_matches(typed, self.list_commands(ctx), n=1)
            if near and exc.message.startswith("No such command"):
                exc.message += f" Did you mean '{near[0]}'?"
            raise


def memory_settings(state: Optional[str], overrides: dict[str, Any] | None = None) -> Settings:
    """Effective settings for a ``memory`` verb; refuses when memory is off (see :func:`.fast.checked_settings`)."""
    from .output import warn

    return checked_settings(state, overrides, warn)


def open_workspace(settings: Settings, *, create: bool = False):
    """Open the workspace under ``settings.memory_dir`` (create it on ``create``)."""
    from ..memory import MemoryWorkspace

    return MemoryWorkspace.open(settings, create=create)
