"""The house reads as its parts: no import circles, the core below the workflows, each
workflow folder named by what it holds, every module opening with what it holds.

The graph is built with ``ast`` from every import a shipped module spells (lazy imports
inside functions and ``TYPE_CHECKING`` imports included): an import made late to dodge a
circle is still a circle.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ("orchestrator.py", "flow", "agents", "workspace", "reference")


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for top in SHIPPED:
        base = ROOT / top
        for path in [base] if base.is_file() else sorted(base.rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


MODULES = _modules()


def _imports(path: Path) -> set[str]:
    """The shipped modules ``path`` imports (a name imported from a package counts as its
    submodule when one of that name exists)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    shipped: set[str] = set()
    for name in names:
        while name and name not in MODULES:
            name = name.rpartition(".")[0]
        if name:
            shipped.add(name)
    return shipped


@functools.cache
def _graph() -> dict[str, set[str]]:
    graph = {}
    for name, path in MODULES.items():
        # a module naming its own package (``from flow.x import y`` inside flow.x) is not an edge
        graph[name] = {t for t in _imports(path) if t != name and not name.startswith(t + ".")}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
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


def test_the_cycle_finder_finds_a_cycle() -> None:
    """The check below would catch a circle: a -> b -> c -> a is one, d hangs off it."""
    assert [["a", "b", "c"]] == _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})


def test_no_shipped_module_is_in_an_import_circle() -> None:
    """Every import counts, lazy and type-only ones too: put the shared name in the lower module."""
    assert [] == _cycles(_graph())


# Which layer may import which: the machine knows no workflow, no front end, no store and no
# harness (the stores implement its interface, ``flow.core.store``; the command line hands it
# the harness's adapter); the stores know no harness; the GitHub adapter knows no workflow; a
# workflow knows no front end. (prefix of the importer ->
# prefixes it must not import)
LAYERS = {
    "flow.core": ("flow.workflows", "flow.cli", "flow.mcp", "flow.web", "flow.github", "orchestrator",
                  "workspace", "agents"),
    "workspace": ("flow.workflows", "flow.cli", "flow.mcp", "flow.web", "flow.github", "orchestrator",
                  "agents"),
    "agents": ("flow.workflows", "flow.cli", "flow.mcp", "flow.web", "flow.github", "orchestrator"),
    "flow.github": ("flow.workflows", "flow.cli", "flow.mcp", "flow.web", "orchestrator"),
    "flow.workflows": ("flow.cli", "flow.mcp", "flow.web", "orchestrator"),
}


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_a_layer_imports_nothing_above_it(layer: str) -> None:
    """The engine core is never used by a workflow's code path upward, only the other way."""
    graph = _graph()
    above = LAYERS[layer]
    wrong = sorted(f"{m} -> {t}" for m, targets in graph.items()
                   if m == layer or m.startswith(layer + ".")
                   for t in targets if any(t == a or t.startswith(a + ".") for a in above))
    assert [] == wrong


def test_no_workflow_module_is_named_after_a_flow() -> None:
    """Modules are named after what they hold (``stage2/steps.py``), not ``buildflow.py``."""
    named = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "flow" / "workflows").rglob("*flow.py"))
    assert [] == named


def test_every_folder_of_the_library_is_a_package_that_says_what_it_holds() -> None:
    """Each folder has an ``__init__.py`` whose docstring lists its parts (setuptools ships
    only packages; a reader starts there)."""
    missing = sorted(str(d.relative_to(ROOT)) for d in (ROOT / "flow").rglob("*")
                     if d.is_dir() and d.name != "__pycache__"
                     and not ast.get_docstring(ast.parse((d / "__init__.py").read_text())
                                               if (d / "__init__.py").is_file() else ast.Module([], [])))
    assert [] == missing


_TRACKER = re.compile(r"\b[Ii]ssues? \d+|\(#\d+\)")


def test_every_module_opens_with_a_docstring_and_cites_no_tracker_number() -> None:
    """A docstring says what the module holds and which seed section it serves; "issue 11"
    means nothing to the next reader."""
    bare, cited = [], []
    for name, path in sorted(MODULES.items()):
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        if not ast.get_docstring(tree) and text.strip():
            bare.append(name)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)):
                doc = ast.get_docstring(node) or ""
                if _TRACKER.search(doc):
                    cited.append(f"{name}: {_TRACKER.search(doc).group(0)}")
        cited += [f"{name}: {m.group(0)}" for line in text.splitlines()
                  if line.lstrip().startswith("#") for m in [_TRACKER.search(line)] if m]
    assert ([], []) == (bare, cited)
