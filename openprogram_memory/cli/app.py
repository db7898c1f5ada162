"""The ``openprogram`` console command: ``memory`` and ``session`` groups."""

from __future__ import annotations

import importlib

import typer

from .common import Group

app = typer.Typer(
    name="openprogram",
    cls=Group,
    help="OpenProgram: long-term memory for AI agents, kept as plain files.",
    no_args_is_help=True,
    add_completion=False,
)
memory_app = typer.Typer(help="Long-term memory: topics, core block, writer, search.", no_args_is_help=True, cls=Group)
app.add_typer(memory_app, name="memory")

# Each module registers its verbs on memory_app via register(memory_app).
MEMORY_VERB_MODULES = (
    "openprogram_memory.cli.workspace_cmds",
    "openprogram_memory.cli.record_cmds",
    "openprogram_memory.cli.write_cmds",
    "openprogram_memory.cli.search_cmds",
    "openprogram_memory.cli.config_cmds",
    "openprogram_memory.cli.demo_cmds",
    "openprogram_memory.cli.serve_cmds",
    "openprogram_memory.cli.organize_cmds",
    "openprogram_memory.cli.mcp_cmds",
    "openprogram_memory.cli.hook_cmds",
    "openprogram_memory.cli.sync_cmds",
    "openprogram_memory.cli.trust_cmds",
)


def _register() -> None:
    for name in MEMORY_VERB_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue  # verb group not built in this tree
            raise
        module.register(memory_app)
    try:
        from .session_cmds import app as session_app
    except ModuleNotFoundError as exc:
        if exc.name != "openprogram_memory.cli.session_cmds":
            raise
    else:
        app.add_typer(session_app, name="session", help="The bundled session store.")


_register()


def main() -> None:
    """Run the app; a usage mistake exits 64 (EX_USAGE), as one JSON object under ``--json``."""
    import sys

    import click
    from typer.completion import completion_init

    completion_init()  # lets completions/ scripts ask for candidates
    try:
        code = app(standalone_mode=False, prog_name="openprogram")
    except click.exceptions.UsageError as exc:  # unknown verb or option, missing argument, bad value
        sys.exit(usage_error(exc, "--json" in sys.argv[1:]))
    except click.exceptions.Abort:  # Ctrl-C at a prompt
        print("aborted", file=sys.stderr)
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)


def usage_error(exc, as_json: bool) -> int:
    """Report a command-line mistake the way every failure is reported; the exit code (64)."""
    from ..failures import EXIT_USAGE
    from .output import print_json

    # typer marks every option show_envvar, so click names an env var even where there is none
    usage = exc.ctx.get_usage() if exc.ctx is not None else None
    if type(exc).__name__ == "NoArgsIsHelpError":  # a group without its command: its help is already out
        if as_json:
            print_json({"ok": False, "code": "INVALID_ARGUMENT", "retryable": False,
                        "message": "missing command", "usage": usage})
        return EXIT_USAGE
    message = exc.format_message().replace(" (env var: 'None')", "")
    if as_json:
        print_json({"ok": False, "code": "INVALID_ARGUMENT", "retryable": False, "message": message, "usage": usage})
    else:
        import sys

        if exc.ctx is not None:
            print(f"{usage}\nTry '{exc.ctx.command_path} --help' for help.\n", file=sys.stderr)
        print(f"Error: {message}", file=sys.stderr)
    return EXIT_USAGE
