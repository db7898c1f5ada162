#!/usr/bin/env python3
"""Turn each validator rule off in turn and check that a test goes red.

A rule is one ``raise`` in the validating code, or one ``yield`` of a
violation in ``transaction/validate.py`` (the strict topic rules, the
transaction's tree rules, path and content guards, the patch parser). For
each, a temporary copy of the package gets that one statement replaced by
``pass``; the relevant tests then run against the copy (``-x``: the first
red test is enough). A rule whose tests all stay green is "NOT CAUGHT".

    .venv/bin/python scripts/mutate_rules.py               # every named rule
    .venv/bin/python scripts/mutate_rules.py --guards      # and every other raise (paths, patch, envelope)
    .venv/bin/python scripts/mutate_rules.py text-after    # rules whose label contains the word

Exit status: 0 when every rule is caught, 1 otherwise.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "openprogram_memory"
# (module file, functions whose raises are rules)
TARGETS = [
    ("topics/normalize.py", {"_resolve_definition_sources"}),
    ("topics/rules.py", {"record_violations", "_paragraph_violations", "_definition_violations"}),
    ("transaction/validate.py", {"duplicate_id_violations", "unique_in_file", "lost_id_violations",
                                 "_rewritten_without_id", "delete_needs_base_violations", "dangling_link_violations"}),
    ("transaction/engine.py", {"staged_edit", "_validate_and_install", "_stage_topics"}),
    ("workspace/layout.py", {"check_topic_path", "_check_components"}),
    ("transaction/patch.py", {"parse_patch", "apply_file_patch"}),
    ("transaction/staging.py", {"write"}),
    ("transaction/update_request.py", {"parse_update_request", "check_json_shape", "check_envelope_values"}),
]
# The tests that state the rules, most targeted first: with -x a caught rule
# stops at its first red test. (The crash tests spawn many processes and
# state no rule; they are left out to keep a run within minutes.)
TESTS = ["tests/engine/test_rules.py", "tests/engine/test_input_guards.py", "tests/engine/test_patch_guards.py",
         "tests/structured/test_validation.py",
         "tests/structured/test_ops.py", "tests/engine/test_core_and_views.py", "tests/cli/test_cli_input_guards.py",
         "tests/cli/test_workspace_cli.py", "tests/structured/test_update_request.py"]


@dataclass
class Site:
    file: str
    function: str
    start: int  # 1-based first and last line of the raise statement
    end: int
    label: str


def _rule_name(call: ast.expr | None) -> str | None:
    """The rule a raise or a yielded violation names: ``_fail(path, line, "rule", …)``, ``_reject(msg, "rule")``,
    ``_violation(path, line, "rule", …)``, ``_tree_violation("rule", …)``, ``Violation(file, line, "rule", …)``
    or a details rule."""
    if not isinstance(call, ast.Call):
        return None
    name = getattr(call.func, "id", getattr(call.func, "attr", ""))
    position = {"_fail": 2, "_reject": 1, "_violation": 2, "_tree_violation": 0, "Violation": 2}.get(name)
    if position is not None and len(call.args) > position and isinstance(call.args[position], ast.Constant):
        return str(call.args[position].value)
    for keyword in call.keywords:
        if keyword.arg == "details" and isinstance(keyword.value, ast.Dict):
            for key, value in zip(keyword.value.keys, keyword.value.values):
                if isinstance(key, ast.Constant) and key.value == "rule" and isinstance(value, ast.Constant):
                    return str(value.value)
    return None


def find_sites() -> list[Site]:
    sites: list[Site] = []
    for rel, functions in TARGETS:
        source = (ROOT / PACKAGE / rel).read_text(encoding="utf-8")
        tree = ast.parse(source)
        for func in ast.walk(tree):
            if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)) or func.name not in functions:
                continue
            for node in ast.walk(func):
                site = node.exc if isinstance(node, ast.Raise) else (
                    node.value.value if isinstance(node, ast.Expr) and isinstance(node.value, ast.Yield) else None)
                if site is not None:
                    rule = _rule_name(site)
                    label = f"{rule} ({rel}:{node.lineno})" if rule else f"{rel}:{func.name}:{node.lineno}"
                    sites.append(Site(rel, func.name, node.lineno, node.end_lineno or node.lineno, label))
    return sites


def mutated_copy(site: Site, into: Path) -> None:
    """A copy of the package with ``site``'s raise replaced by ``pass`` (line numbers kept)."""
    target = into / PACKAGE
    shutil.copytree(ROOT / PACKAGE, target, ignore=shutil.ignore_patterns("__pycache__"))
    path = target / site.file
    lines = path.read_text(encoding="utf-8").split("\n")
    first = lines[site.start - 1]
    indent = first[: len(first) - len(first.lstrip())]
    lines[site.start - 1] = indent + "pass  # mutated: rule off"
    for index in range(site.start, site.end):
        lines[index] = ""
    path.write_text("\n".join(lines), encoding="utf-8")


def run_tests(copy: Path) -> tuple[bool, str]:
    """Whether a test failed against the copy, and the first failing test's id."""
    env = dict(os.environ, PYTHONPATH=str(copy))
    # -P: the working directory must not shadow the mutated copy on sys.path
    # Its own --basetemp: pytest prunes old numbered temp dirs, which would
    # pull files from under a concurrent run and fake a red test.
    command = [sys.executable, "-P", "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
               f"--basetemp={copy / 'pytest-tmp'}", *TESTS]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    failed = [line.split(" ")[1] for line in done.stdout.splitlines() if line.startswith(("FAILED ", "ERROR "))]
    if done.returncode != 0 and not failed:  # red, but no test named: show why
        failed = [(done.stdout.strip().splitlines() or ["?"])[-1]]
    return done.returncode != 0, failed[0] if failed else ""


def imports_copy(copy: Path) -> bool:
    """Guard: the tests really import the copy, not the installed package."""
    env = dict(os.environ, PYTHONPATH=str(copy))
    done = subprocess.run([sys.executable, "-P", "-c", f"import {PACKAGE}; print({PACKAGE}.__file__)"],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    return done.stdout.strip().startswith(str(copy))


def main(argv: list[str]) -> int:
    guards = "--guards" in argv
    argv = [a for a in argv if a != "--guards"]
    sites = [s for s in find_sites() if guards or not s.label.startswith(tuple(rel for rel, _ in TARGETS))]
    with tempfile.TemporaryDirectory(prefix="mutate-rules-") as tmp:
        shutil.copytree(ROOT / PACKAGE, Path(tmp) / PACKAGE)
        if not imports_copy(Path(tmp)):
            print("the tests would not import the mutated copy; nothing measured", file=sys.stderr)
            return 2
    if argv:
        sites = [s for s in sites if any(word in s.label for word in argv)]
    caught = 0
    missed: list[str] = []
    started = time.monotonic()
    print(f"{len(sites)} rule sites; tests: {' '.join(TESTS)}", flush=True)
    for site in sites:
        with tempfile.TemporaryDirectory(prefix="mutate-rules-") as tmp:
            mutated_copy(site, Path(tmp))
            red, first = run_tests(Path(tmp))
        if red:
            caught += 1
            print(f"caught      {site.label}  ← {first}", flush=True)
        else:
            missed.append(site.label)
            print(f"NOT CAUGHT  {site.label}", flush=True)
    print(f"\n{caught}/{len(sites)} rules caught in {time.monotonic() - started:.0f} s")
    for label in missed:
        print(f"  not caught: {label}")
    return 0 if not missed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
