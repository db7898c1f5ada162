"""``memory config get|set|list``.

Unlike the other memory verbs, these keep working when
``memory.backend=none``: they touch only ``<state>/config.toml``, never the
workspace, and they are how memory is switched back on.
"""

from __future__ import annotations

from typing import Optional

import typer
from rich.markup import escape
from rich.table import Table

from ..config import KEYS, config_path, env_name, load_settings, parse_value, write_config_value
from ..failures import FailureCode, MemoryFailure
from .common import Group, JsonOption, StateOption
from .output import console, emit, reporting, warn

config_app = typer.Typer(help="Configuration: flags > OPENPROGRAM_MEMORY_* env > config.toml > defaults.",
                         no_args_is_help=True, cls=Group)


def _existing_state(state: Optional[str]):
    """The settings of a state directory that exists: reading the configuration of a mistyped ``--state`` is
    refused rather than answered with defaults."""
    settings = load_settings(state)
    if not settings.state_dir.is_dir():
        raise MemoryFailure(FailureCode.MEMORY_NOT_FOUND,
                            f"no state directory at {settings.state_dir}; create it with "
                            f"`openprogram memory init --state {settings.state_dir}` (or fix the path)",
                            details={"state": str(settings.state_dir)})
    return settings


def _entry(settings, key: str) -> dict:
    return {"key": key, "value": settings.values[key], "origin": settings.origin[key], "env": env_name(key),
            "help": KEYS[key].help}


def _settings(state: Optional[str]):
    settings = _existing_state(state)
    for warning in settings.warnings:
        warn(warning)
    return settings


@config_app.command("get")
def get(key: str = typer.Argument(..., help="e.g. memory.writer.model"), state: Optional[str] = StateOption,
        json: bool = JsonOption) -> None:
    """Print one effective value and where it comes from."""
    with reporting(json):
        if key not in KEYS:
            raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"unknown key {key!r}; see `openprogram memory config list`")
        entry = _entry(_settings(state), key)
        emit(entry, json, lambda: console.print(f"{escape(str(entry['value']))}  [dim]({entry['origin']})[/]"))


@config_app.command("set")
def set_(key: str = typer.Argument(...), value: str = typer.Argument(...), state: Optional[str] = StateOption,
         json: bool = JsonOption) -> None:
    """Validate and store a value in <state>/config.toml."""
    with reporting(json):
        from ..memory import require_state

        settings = load_settings(state)
        # A mistyped --state gets no config.toml of its own; turning memory off may come before init (and makes
        # the directory), so that no workspace is ever made there.
        parsed = parse_value(key, value)  # a bad key or value is named first, whatever the directory
        if not (key == "memory.backend" and parsed == "none"):
            require_state(settings)
        stored = write_config_value(settings.state_dir, key, value)
        effective = load_settings(state)
        out = {"ok": True, "key": key, "value": stored, "path": str(config_path(settings.state_dir)),
               "effective": effective.values[key], "origin": effective.origin[key]}

        def human() -> None:
            console.print(escape(f"{key} = {stored!r} written to {out['path']}"))
            if effective.origin[key] != "config.toml":
                console.print(f"[yellow]note[/]: {env_name(key)} overrides it (effective: {escape(repr(effective.values[key]))})")

        emit(out, json, human)


@config_app.command("list")
def list_(state: Optional[str] = StateOption, json: bool = JsonOption) -> None:
    """Every key with its effective value and origin."""
    with reporting(json):
        settings = _settings(state)
        entries = [_entry(settings, key) for key in KEYS]

        def human() -> None:
            table = Table("key", "value", "origin", "allowed")
            for entry in entries:
                table.add_row(entry["key"], repr(entry["value"]), entry["origin"], entry["help"])
            console.print(table)

        emit({"settings": entries, "path": str(config_path(settings.state_dir)),
              "warnings": list(settings.warnings)}, json, human)


def register(memory_app: typer.Typer) -> None:
    memory_app.add_typer(config_app, name="config")
