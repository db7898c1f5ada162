"""Generate ``docs/cli.md`` from the CLI's own ``--help`` (a test checks it is current).

    python -m openprogram_memory.cli.reference docs/cli.md
"""

from __future__ import annotations

import sys
from pathlib import Path

import click
from typer.main import get_command

from .app import app

HEADER = "# CLI reference\n\nGenerated from `--help` by `python -m openprogram_memory.cli.reference docs/cli.md`.\n"


def _walk(command: click.Command, path: list[str]):
    yield path, command
    if isinstance(command, click.Group):
        for name in sorted(command.commands):
            yield from _walk(command.commands[name], [*path, name])


def reference() -> str:
    root = get_command(app)
    parts = [HEADER]
    for path, command in _walk(root, ["openprogram"]):
        with click.Context(command, info_name=" ".join(path), terminal_width=100, max_content_width=100) as ctx:
            formatter = ctx.make_formatter()
            click.Command.format_help(command, ctx, formatter)  # plain click help: no Rich boxes
            text = formatter.getvalue().rstrip()
        parts.append(f"\n## `{' '.join(path)}`\n\n```text\n{text}\n```\n")
    return "".join(parts)


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/cli.md")
    target.write_text(reference(), encoding="utf-8")
    print(target)
