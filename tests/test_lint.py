"""The lint and type gate, run with the tests so a new error turns the suite red.

ruff (config in pyproject.toml: pyflakes, pycodestyle errors/warnings, complexity
≤ 12 in transaction/ and topics/), mypy on the package at default settings, and
a length limit for the functions of transaction/ and topics/.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "openprogram_memory"
BIN = Path(sys.executable).parent
MAX_FUNCTION_LINES = 60
STRICT_PACKAGES = ("transaction", "topics")
# Functions still over the limit, each to be split (issue 11); the test fails once one fits, so the list only shrinks.
NOT_YET_SPLIT: set[str] = set()


def _tool(name: str) -> str:
    path = BIN / name
    if path.exists():
        return str(path)
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed; run bash scripts/setup.sh (it installs the dev extra)")
    return found


def test_ruff_finds_nothing():
    run = subprocess.run([_tool("ruff"), "check", "--no-cache", "--output-format", "concise", "."],
                         cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_mypy_finds_nothing():
    run = subprocess.run([_tool("mypy"), "openprogram_memory"], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def long_functions(package: Path = PACKAGE, packages: tuple[str, ...] = STRICT_PACKAGES,
                   limit: int = MAX_FUNCTION_LINES) -> dict[str, int]:
    """``{"pkg/module.py:function": lines}`` for every function longer than ``limit`` lines."""
    out = {}
    for name in packages:
        for path in sorted((package / name).rglob("*.py")):
            rel = path.relative_to(package).as_posix()
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    lines = node.end_lineno - node.lineno + 1
                    if lines > limit:
                        out[f"{rel}:{node.name}"] = lines
    return out


def test_functions_in_transaction_and_topics_fit_in_sixty_lines():
    found = long_functions()
    assert sorted(set(found) - NOT_YET_SPLIT) == []
    assert sorted(NOT_YET_SPLIT - set(found)) == [], "split already: take it off NOT_YET_SPLIT"


def test_the_length_check_sees_a_long_function(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    (tmp_path / "topics").mkdir()
    (tmp_path / "topics" / "long.py").write_text(f"def short():\n    pass\n\n\ndef long():\n{body}\n")
    assert long_functions(tmp_path, ("topics",)) == {"topics/long.py:long": MAX_FUNCTION_LINES + 1}
