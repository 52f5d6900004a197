"""What a refactor's change does, in the words a reviewer of PyTorch's test-refactoring PRs
looks for (seed phase 7, "Finalize"): where tests now run on more device types (``only_for``
removed from an instantiation, an ``@only*`` decorator widened to ``@onlyAccelerator`` or
dropped in a class instantiated for every device), and whether the change only labels the
classes (``hw_classification`` and its import, nothing else). Pure; a file that does not
parse gives no coverage lines and is not label-only.
"""

from __future__ import annotations

import ast
from collections import defaultdict

from flow.workflows.refactor.hwclass import ATTR, ENUM, devices_kwarg, instantiation_call


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except SyntaxError:
        return None


def _name(dec: ast.expr) -> str:
    node = dec.func if isinstance(dec, ast.Call) else dec
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def _tests(tree: ast.Module) -> dict[str, tuple[str, list[str]]]:
    """test method -> (its class, its decorator names) for every top-level class."""
    out: dict[str, tuple[str, list[str]]] = {}
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        for fn in cls.body:
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and fn.name.startswith("test_"):
                out[fn.name] = (cls.name, [_name(d) for d in fn.decorator_list])
    return out


def _shown(devices: list[str]) -> str:
    return repr(devices[0]) if len(devices) == 1 else repr(devices)


def wider_coverage(before: str, after: str) -> list[str]:
    """One line per widening: a class whose ``only_for`` went, and per decorator the tests it
    no longer narrows (a test moved to a class of one device is not wider)."""
    old, new = _parse(before), _parse(after)
    if old is None or new is None:
        return []
    out = []
    classes = {n.name for n in new.body if isinstance(n, ast.ClassDef)}
    for cls in (n.name for n in old.body if isinstance(n, ast.ClassDef)):
        only = devices_kwarg(instantiation_call(old, cls), "only_for")
        call = instantiation_call(new, cls)
        if only and cls in classes and call is not None and devices_kwarg(call, "only_for") is None:
            out.append(f"`{cls}`: `only_for={_shown(only)}` removed, so its tests now run on every "
                       "device type")
    after_tests = _tests(new)
    widened: dict[tuple[str, str], list[str]] = defaultdict(list)
    for test, (_, decs) in _tests(old).items():
        if test not in after_tests:
            continue
        cls, now = after_tests[test]
        call = instantiation_call(new, cls)
        if call is None or devices_kwarg(call, "only_for") is not None:
            continue  # moved to a plain class or a class of one device: not wider
        for dec in decs:
            if dec.startswith("only") and dec != "onlyAccelerator" and dec not in now:
                to = ("`@onlyAccelerator` (every accelerator)" if "onlyAccelerator" in now
                      else "no `@only*` (every device type)")
                widened[(dec, to)].append(test)
    for (dec, to), tests in widened.items():
        out.append(f"`@{dec}` widened to {to}: {', '.join(f'`{t}`' for t in tests)}")
    return out


def _strip_labels(tree: ast.Module) -> str:
    """The tree's dump without ``hw_classification`` assignments and the enum's import."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            node.body = [s for s in node.body if not (
                isinstance(s, ast.Assign | ast.AnnAssign)
                and any(isinstance(t, ast.Name) and t.id == ATTR
                        for t in (s.targets if isinstance(s, ast.Assign) else [s.target])))] or [ast.Pass()]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            node.names = [a for a in node.names if a.name != ENUM]
    tree.body = [s for s in tree.body if not (isinstance(s, ast.ImportFrom) and not s.names)]
    return ast.dump(tree)


def label_only(before: str, after: str) -> bool:
    """Whether the change only adds ``hw_classification`` labels (and the enum's import)."""
    old, new = _parse(before), _parse(after)
    if old is None or new is None or before == after:
        return False
    return _strip_labels(old) == _strip_labels(new)
