"""Layering rules, read from the source: who may import what, who reads the environment."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "openprogram_memory"
UI_LIBRARIES = {"typer", "rich", "click"}
ENV_READERS = {"config.py", "writer/anthropic_backend.py"}  # the API key is read where it is used


def modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text(), str(path))


def imported_roots(tree: ast.AST) -> set[str]:
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_only_the_cli_imports_typer_and_rich():
    offenders = [rel for rel, tree in modules() if not rel.startswith("cli/") and imported_roots(tree) & UI_LIBRARIES]
    assert offenders == []


def test_only_config_reads_the_environment():
    offenders = []
    for rel, tree in modules():
        for node in ast.walk(tree):
            reads = (isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv")
                     and isinstance(node.value, ast.Name) and node.value.id == "os")
            if reads and rel not in ENV_READERS:
                offenders.append(f"{rel}:{node.lineno}")
    assert offenders == []


def test_library_import_does_no_io(tmp_path):
    import os
    import subprocess
    import sys

    env = {**os.environ, "OPENPROGRAM_STATE": str(tmp_path / "state"), "HOME": str(tmp_path / "home")}
    code = "import openprogram_memory, openprogram_memory.provider, openprogram_memory.cli.app"
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    assert not (tmp_path / "state").exists() and not (tmp_path / "home").exists()
