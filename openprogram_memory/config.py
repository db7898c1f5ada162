"""Settings: flags > ``OPENPROGRAM_MEMORY_*`` env > ``<state>/config.toml`` > defaults.

This is the only module that reads the environment (besides the Anthropic
backend reading its own API key). Loading never raises for a bad
hand-edited value: it falls back to the default and records a warning.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Callable, NamedTuple

from .failures import FailureCode, MemoryFailure
from .frozen import Frozen

STATE_ENV = "OPENPROGRAM_STATE"
# The most records one search answers, whoever asks (library, CLI, HTTP, MCP).
MAX_TOP_K = 100
ENV_PREFIX = "OPENPROGRAM_MEMORY_"


def resolve_state_dir(state: str | os.PathLike[str] | None = None) -> Path:
    """``--state DIR``, else ``$OPENPROGRAM_STATE``, else ``~/.openprogram``."""
    if state:
        return Path(state).expanduser().resolve()
    env = os.environ.get(STATE_ENV)
    if env:
        return Path(env).expanduser().resolve()
    return (Path.home() / ".openprogram").resolve()


def editor_command() -> str:
    """``$VISUAL``, else ``$EDITOR``, else ``vi`` — for ``memory edit``."""
    return os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"


def user_cache_dir() -> Path:
    """Per-user cache for derived, rebuildable data (``$XDG_CACHE_HOME`` or ``~/.cache``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "openprogram-memory"


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in {"1", "true", "yes", "on"}:
        return True
    if text in {"0", "false", "no", "off"}:
        return False
    raise ValueError(f"not a boolean: {value!r}")


def _choice(*allowed: str) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        text = str(value).strip()
        if text not in allowed:
            raise ValueError(f"expected one of {', '.join(allowed)}")
        return text

    return parse


def _int_range(lo: int, hi: int) -> Callable[[Any], int]:
    def parse(value: Any) -> int:
        if isinstance(value, bool):
            raise ValueError("expected an integer")
        number = int(str(value).strip())
        if not lo <= number <= hi:
            raise ValueError(f"expected an integer from {lo} to {hi}")
        return number

    return parse


def _int_choice(*allowed: int) -> Callable[[Any], int]:
    def parse(value: Any) -> int:
        number = int(str(value).strip())
        if number not in allowed:
            raise ValueError(f"expected one of {', '.join(map(str, allowed))}")
        return number

    return parse


def _writer_model(value: Any) -> str:
    text = str(value).strip()
    if text == "rules" or (text.startswith("anthropic:") and len(text) > len("anthropic:")):
        return text
    raise ValueError("expected 'rules' or 'anthropic:<model>'")


def _path_list(value: Any) -> tuple[str, ...]:
    """A list of directories: a TOML list, or one string split on ``os.pathsep`` (env, ``config set``)."""
    items = value.split(os.pathsep) if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(item, str) for item in items):
        raise ValueError("expected a list of directory paths")
    paths = tuple(item.strip() for item in items if item.strip())
    if any("\0" in item for item in paths):
        raise ValueError("a path cannot contain a NUL character")
    return paths


def _remote(value: Any) -> str:
    text = str(value).strip()
    if "\x00" in text or "\n" in text:
        raise ValueError("a remote URL is one line of text")
    return text


def _clock(value: Any) -> str:
    text = str(value).strip()
    match = re.fullmatch(r"(\d{2}):(\d{2})", text)
    if not match or int(match.group(1)) > 23 or int(match.group(2)) > 59:
        raise ValueError("expected HH:MM")
    return text


class Key(NamedTuple):
    """One configuration key: its default, parser and help text."""

    name: str
    default: Any
    parse: Callable[[Any], Any]
    help: str


KEYS: dict[str, Key] = {
    k.name: k
    for k in [
        Key("memory.backend", "files", _choice("files", "none"), "files | none"),
        Key("memory.writer.model", "rules", _writer_model, "rules | anthropic:<model>"),
        Key("memory.writer.enabled", True, _bool, "true | false"),
        Key("memory.writer.trigger_tokens", 8000, _int_choice(8000, 16000, 32000), "8000 | 16000 | 32000"),
        Key("memory.retrieval.method", "bm25", _choice("bm25", "embedding", "hybrid"), "bm25 | embedding | hybrid"),
        Key("memory.retrieval.top_k", 5, _int_range(1, 10), "1-10"),
        Key("memory.core.inject", True, _bool, "true | false"),
        Key("memory.core.budget_tokens", 2000, _int_range(1, 1_000_000), "tokens"),
        Key("memory.recent.limit", 50, _int_range(1, 500), "1-500"),
        Key("memory.watcher.poll_seconds", 300, _int_range(1, 86_400), "seconds"),
        Key("memory.watcher.idle_seconds", 1800, _int_range(0, 604_800), "seconds"),
        Key("memory.organize.at", "03:00", _clock, "HH:MM local time"),
        Key("memory.watch.paths", (), _path_list,
            f"Claude Code / codex / pi transcript directories `memory watch` imports from "
            f"(list; {os.pathsep!r}-separated in env)"),
        Key("memory.sync.remote", "", _remote, "git URL or path `memory sync` merges with (empty: none)"),
        Key("memory.sync.auto", False, _bool, "true | false: `memory watch` syncs after a poll that changed memory"),
        Key("memory.fs_watch", True, _bool,
            "true | false: a long-lived process watches the workspace's files instead of a stat pass per edit"),
    ]
}


def env_name(key: str) -> str:
    """``memory.writer.model`` → ``OPENPROGRAM_MEMORY_WRITER_MODEL``."""
    return ENV_PREFIX + key.removeprefix("memory.").replace(".", "_").upper()


class Settings(Frozen):
    """Effective configuration. ``origin`` says where each value came from.

    Immutable and compared by value. A plain class, not a dataclass: the
    Claude Code hook imports this on every prompt, and ``dataclasses``
    pulls in ``inspect`` (about 15 ms of a 150 ms budget).
    """

    __slots__ = ("state_dir", "values", "origin", "warnings")
    state_dir: Path
    values: dict[str, Any]
    origin: dict[str, str]
    warnings: tuple[str, ...]

    def __init__(self, state_dir: Path, values: dict[str, Any], origin: dict[str, str],
                 warnings: tuple[str, ...] = ()) -> None:
        self._init(state_dir, values, origin, tuple(warnings))  # immutable: use with_overrides

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    @property
    def memory_dir(self) -> Path:
        return self.state_dir / "memory"

    @property
    def sessions_dir(self) -> Path:
        return self.state_dir / "sessions"

    @property
    def enabled(self) -> bool:
        return self.values["memory.backend"] != "none"

    def with_overrides(self, overrides: dict[str, Any]) -> "Settings":
        """A copy with flag-level overrides (already-parsed or raw values)."""
        values = dict(self.values)
        origin = dict(self.origin)
        for key, raw in overrides.items():
            values[key] = parse_value(key, raw)
            origin[key] = "flag"
        return Settings(self.state_dir, values, origin, self.warnings)


def config_path(state_dir: Path) -> Path:
    return state_dir / "config.toml"


def _flatten(table: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for name, value in table.items():
        full = f"{prefix}{name}"
        if isinstance(value, dict):
            flat.update(_flatten(value, full + "."))
        else:
            flat[full] = value
    return flat


def parse_value(key: str, raw: Any) -> Any:
    """Parse ``raw`` for ``key``; unknown key or bad value → INVALID_ARGUMENT."""
    spec = KEYS.get(key)
    if spec is None:
        raise MemoryFailure(
            FailureCode.INVALID_ARGUMENT,
            f"unknown configuration key {key!r}; known keys: {', '.join(KEYS)}",
        )
    try:
        return spec.parse(raw)
    except (ValueError, TypeError) as exc:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"{key}: {exc} (got {raw!r})") from None


def read_config_file(state_dir: Path) -> tuple[dict[str, Any], list[str]]:
    """Raw values from config.toml, and warnings for an unreadable file."""
    path = config_path(state_dir)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, []
    except (OSError, UnicodeDecodeError) as exc:
        return {}, [f"{path}: unreadable ({exc}); using defaults"]
    import tomllib  # only with a config file: its regexes cost ~10 ms per start (every hook call)

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return {}, [f"{path}: unreadable ({exc}); using defaults"]
    return _flatten(data), []


def load_settings(
    state: str | os.PathLike[str] | None = None,
    overrides: dict[str, Any] | None = None,
    environ: dict[str, str] | None = None,
) -> Settings:
    """Resolve the effective settings. Never raises for bad config values."""
    env = os.environ if environ is None else environ
    state_dir = resolve_state_dir(state)
    file_values, warnings = read_config_file(state_dir)
    values: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for key, spec in KEYS.items():
        values[key] = spec.default
        origin[key] = "default"
        layers = [("config.toml", file_values.get(key)), ("env", env.get(env_name(key)))]
        for where, raw in layers:
            if raw is None:
                continue
            try:
                values[key] = spec.parse(raw)
                origin[key] = where
            except (ValueError, TypeError) as exc:
                warnings.append(f"{key} from {where}: {exc} (got {raw!r}); using {values[key]!r}")
    for key in file_values:
        if key not in KEYS:
            warnings.append(f"config.toml: unknown key {key!r} ignored")
    settings = Settings(state_dir, values, origin, tuple(warnings))
    if overrides:
        settings = settings.with_overrides({k: v for k, v in overrides.items() if v is not None})
    return settings


def _toml_value(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_config_value(state_dir: Path, key: str, raw: Any) -> Any:
    """Validate and persist one key in config.toml (atomic replace)."""
    from .fsutil import atomic_write_text

    value = parse_value(key, raw)
    current, _ = read_config_file(state_dir)
    current = {k: v for k, v in current.items() if k in KEYS}
    current[key] = value
    tables: dict[str, dict[str, Any]] = {}
    for full, val in sorted(current.items()):
        table, _, leaf = full.rpartition(".")
        tables.setdefault(table, {})[leaf] = val
    lines: list[str] = []
    for table in sorted(tables):
        lines.append(f"[{table}]")
        lines.extend(f"{leaf} = {_toml_value(val)}" for leaf, val in sorted(tables[table].items()))
        lines.append("")
    state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    atomic_write_text(config_path(state_dir), "\n".join(lines))
    return value
