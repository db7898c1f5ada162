"""The package's floors hold: no import cycle between modules, and no package imports one above it.

The import graph is read from the package's own source (every ``import``
and ``from … import``, type-only and function-local ones included: a
cycle through a type hint is still two modules that cannot be read one
without the other). The floors, bottom first, are what docs/architecture.md
describes: a search goes only downward, and so does every other walk.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "openprogram_memory"

# Bottom first. A module may import its own floor and the floors below it.
FLOORS: list[set[str]] = [
    {"<root>", "failures", "frozen", "fsutil", "timeutil"},  # no memory concepts: errors, values, files, time
    {"config", "sessions"},  # settings; the conversation store (knows nothing of memory)
    {"tokens"},
    {"topics", "sources"},  # the two file formats: topic files and the source archive
    {"workspace"},  # layout, runtime state, the derived caches of the installed tree
    {"views", "search", "placement"},  # what is read out of the tree: views, BM25 search; where a record belongs
    {"transaction"},  # the one door: staged edit, validation, install, git
    {"memory"},  # MemoryWorkspace, the facade every caller opens
    {"sync"},
    {"organizer", "writer"},  # what turns conversations into records, and tidies them
    {"provider"},  # the agent-facing provider: core block + recall
    {"agents", "mcp_server", "web"},  # the agents people run: hooks, MCP, the local page
    {"cli", "__main__"},  # the command line (`python -m openprogram_memory` runs it too)
]


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def import_graph() -> dict[str, set[str]]:
    """``{module: modules of the package it imports}``."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                targets = [f"{module}.{alias.name}" if f"{module}.{alias.name}" in modules else module
                           for alias in node.names]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _floor(module: str) -> int:
    parts = module.split(".")
    package = parts[1] if len(parts) > 1 else "<root>"
    for number, names in enumerate(FLOORS):
        if package in names:
            return number
    raise AssertionError(f"{module}: package {package!r} is on no floor; add it to FLOORS (and docs/architecture.md)")


def test_no_module_imports_itself_back():
    assert cycles(import_graph()) == []


def test_no_package_imports_one_above_it():
    upward = sorted(f"{module} -> {target}" for module, targets in import_graph().items() for target in targets
                    if _floor(target) > _floor(module))
    assert upward == []


def test_the_checks_see_a_cycle_and_an_upward_import():
    graph = {"openprogram_memory.topics.a": {"openprogram_memory.topics.b"},
             "openprogram_memory.topics.b": {"openprogram_memory.topics.a"},
             "openprogram_memory.topics.c": {"openprogram_memory.cli.app"}, "openprogram_memory.cli.app": set()}
    assert cycles(graph) == [["openprogram_memory.topics.a", "openprogram_memory.topics.b"]]
    assert _floor("openprogram_memory.cli.app") > _floor("openprogram_memory.topics.c")
    assert "openprogram_memory.memory" in import_graph()["openprogram_memory.cli.common"]  # relative imports resolve


def test_every_section_the_code_cites_is_in_docs_architecture():
    import re

    doc = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    sections = set(re.findall(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", doc, re.M))
    cited = {match.rstrip(".") for path in PACKAGE.rglob("*.py")
             for match in re.findall(r"architecture §(\d+(?:\.\d+)*)", path.read_text(encoding="utf-8"))}
    assert cited and cited <= sections, sorted(cited - sections)
    floors = re.findall(r"^\| (\d+) \| ([^|]+) \|", doc, re.M)
    table = [{name.strip(" `") for name in names.split(",")} for _, names in floors]
    assert table == [floor - {"<root>"} for floor in FLOORS]  # the page says what this test enforces
