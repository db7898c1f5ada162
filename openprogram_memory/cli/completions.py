"""Shell completion scripts for bash, zsh and fish (checked in under completions/).

The scripts are thin: at completion time the shell runs ``openprogram`` with
``_OPENPROGRAM_COMPLETE`` set, so new verbs complete without regenerating.
Regenerate with ``python -m openprogram_memory.cli.completions completions/``.
"""

from __future__ import annotations

import sys
from pathlib import Path

PROG = "openprogram"
COMPLETE_VAR = "_OPENPROGRAM_COMPLETE"
SHELLS = {"bash": "openprogram.bash", "zsh": "_openprogram", "fish": "openprogram.fish"}


def completion_script(shell: str) -> str:
    from typer._completion_shared import get_completion_script

    return get_completion_script(prog_name=PROG, complete_var=COMPLETE_VAR, shell=shell).rstrip("\n") + "\n"


def write_all(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for shell, name in SHELLS.items():
        path = directory / name
        path.write_text(completion_script(shell), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for path in write_all(Path(sys.argv[1] if len(sys.argv) > 1 else "completions")):
        print(path)
