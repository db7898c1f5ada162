"""The ``openprogram`` console command: ``memory`` and ``session`` groups."""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(
    name="openprogram",
    help="OpenProgram: long-term memory for AI agents, kept as plain files.",
    no_args_is_help=True,
    add_completion=False,
)
memory_app = typer.Typer(help="Long-term memory: topics, core block, writer, search.", no_args_is_help=True)
app.add_typer(memory_app, name="memory")

# Each module registers its verbs on memory_app via register(memory_app).
MEMORY_VERB_MODULES = (
    "openprogram_memory.cli.workspace_cmds",
    "openprogram_memory.cli.write_cmds",
    "openprogram_memory.cli.search_cmds",
    "openprogram_memory.cli.config_cmds",
    "openprogram_memory.cli.demo_cmds",
    "openprogram_memory.cli.serve_cmds",
    "openprogram_memory.cli.organize_cmds",
    "openprogram_memory.cli.mcp_cmds",
    "openprogram_memory.cli.hook_cmds",
    "openprogram_memory.cli.sync_cmds",
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
    from typer.completion import completion_init

    completion_init()  # lets completions/ scripts ask for candidates
    app()
