"""``memory hook install claude-code``: our entries in Claude Code's ``settings.json``, and only ours.

Claude Code reads hooks from ``<project>/.claude/settings.json`` or
``~/.claude/settings.json``::

    {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "…"}]}], …}}

Install adds one matcher group per event holding our command (no matcher:
every source, reason and trigger) and leaves every other key, hook and
group alone; an entry of ours already there is updated in place (the
executable moved) or left as is, so installing twice changes nothing.
Uninstall removes our commands, and the groups, event lists and ``hooks``
object that removing them left empty. Ours = a ``command`` hook running
``… memory hook claude-code``.

The file is rewritten atomically in the indentation it had (Claude Code
writes two spaces), keeping its mode and its final newline or lack of one,
so install then uninstall gives back the same bytes for a file in that
canonical JSON layout. A file that is not a JSON object, or whose
``hooks`` is not one, is refused (``INVALID_ARGUMENT``) and left untouched.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..failures import FailureCode, MemoryFailure
from ..fsutil import atomic_write_text
from .claude_code_hook import EVENTS

OURS = re.compile(r"(^|[\s/'\"])openprogram['\"]?\s+memory\s+hook\s+claude-code(\s|$)")


@dataclass(frozen=True)
class InstallReport:
    """What install/uninstall did to one settings file."""

    path: Path
    changed: bool
    events: list[str]  # events whose entries were added, updated or removed

    def to_json(self) -> dict[str, Any]:
        """The ``memory hook install --json`` object."""
        return {"settings": str(self.path), "changed": self.changed, "events": list(self.events)}


def hook_command(executable: str, state: str | None = None) -> str:
    """The shell command Claude Code runs: ``<abs openprogram> memory hook claude-code [--state DIR]``."""
    command = f"{shlex.quote(executable)} memory hook claude-code"
    return command + (f" --state {shlex.quote(state)}" if state else "")


def settings_path(project: Path | None, user_home: Path | None) -> Path:
    """``<project>/.claude/settings.json``, or ``<home>/.claude/settings.json`` for ``--user``."""
    base = user_home if user_home is not None else project
    assert base is not None
    return base / ".claude" / "settings.json"


def is_ours(hook: Any) -> bool:
    """Whether a hook entry is one this command installed."""
    return isinstance(hook, dict) and hook.get("type") == "command" and isinstance(hook.get("command"), str) \
        and OURS.search(hook["command"]) is not None


def install(path: Path, command: str) -> InstallReport:
    """Merge our hook entries into the settings file at ``path`` (created if missing)."""
    text, data = _load(path)
    hooks = data.setdefault("hooks", {})
    changed: list[str] = []
    for event in EVENTS:
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"{path}: hooks.{event} is not a list; fix it by hand",
                                details={"path": str(path)})
        ours = [hook for group in groups if isinstance(group, dict) and isinstance(group.get("hooks"), list)
                for hook in group["hooks"] if is_ours(hook)]
        if not ours:
            groups.append({"hooks": [{"type": "command", "command": command}]})
            changed.append(event)
        elif any(hook["command"] != command for hook in ours):
            for hook in ours:
                hook["command"] = command
            changed.append(event)
    return _save(path, text, data, changed)


def uninstall(path: Path) -> InstallReport:
    """Remove our hook entries (and only the containers that removing them emptied)."""
    if not path.exists():
        return InstallReport(path, False, [])
    text, data = _load(path)
    hooks = data.get("hooks")
    changed: list[str] = []
    if isinstance(hooks, dict):
        for event in list(hooks):
            groups = hooks[event]
            if not isinstance(groups, list):
                continue
            kept_groups = []
            for group in groups:
                inner = group.get("hooks") if isinstance(group, dict) else None
                if isinstance(inner, list) and any(is_ours(hook) for hook in inner):
                    group["hooks"] = [hook for hook in inner if not is_ours(hook)]
                    changed.append(event)
                    if not group["hooks"]:
                        continue
                kept_groups.append(group)
            hooks[event] = kept_groups
            if event in changed and not kept_groups:
                del hooks[event]
        if changed and not hooks:
            del data["hooks"]
    return _save(path, text, data, sorted(set(changed), key=changed.index))


def _load(path: Path) -> tuple[str | None, dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, {}
    except (OSError, UnicodeDecodeError) as exc:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"cannot read {path}: {exc}",
                            details={"path": str(path)}) from None
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT, f"{path} is not valid JSON ({exc}); fix it by hand first",
                            details={"path": str(path)}) from None
    if not isinstance(data, dict) or not isinstance(data.get("hooks", {}), dict):
        raise MemoryFailure(FailureCode.INVALID_ARGUMENT,
                            f"{path}: expected a JSON object whose \"hooks\" is an object; fix it by hand first",
                            details={"path": str(path)})
    return text, data


def _indent(text: str | None) -> int | str:
    """The indentation ``text`` uses (two spaces when it has none to copy)."""
    match = re.search(r"^([ \t]+)\S", text or "", re.MULTILINE)
    if match is None:
        return 2
    unit = match.group(1)
    return unit if "\t" in unit else len(unit)


def _save(path: Path, text: str | None, data: dict[str, Any], changed: list[str]) -> InstallReport:
    if not changed:
        return InstallReport(path, False, [])
    trailing = "\n" if text is None or text.endswith("\n") else ""
    new_text = json.dumps(data, indent=_indent(text), ensure_ascii=False) + trailing
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644  # settings.json is not a secret: keep its mode
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, new_text, mode=mode)
    return InstallReport(path, True, changed)
