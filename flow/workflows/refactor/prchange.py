"""What a refactor's change does, in the words a reviewer of PyTorch's test-refactoring PRs
looks for (seed phase 7, "Finalize"): where tests now run on more device types (``only_for``
removed from an instantiation, an ``@only*`` decorator widened to ``@onlyAccelerator`` or
dropped in a class instantiated for every device), and whether the change only labels the
classes (``hw_classification`` and its import, nothing else), and whether it takes
CUDA-only markers out (``cuda_decoupled``: the title says "Decouple ... from CUDA-specific"
only then). Pure; a file that does not parse gives no coverage lines, is not label-only
and is not decoupled.
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


def _tests(tree: ast.Module) -> dict[tuple[str, str], list[str]]:
    """(class, test method) -> the method's decorator names, for every top-level class (a
    method name may recur in several classes: ``test_determinism`` of each key class)."""
    out: dict[tuple[str, str], list[str]] = {}
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        for fn in cls.body:
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and fn.name.startswith("test_"):
                out[(cls.name, fn.name)] = [_name(d) for d in fn.decorator_list]
    return out


def _shown(devices: list[str]) -> str:
    return repr(devices[0]) if len(devices) == 1 else repr(devices)


def _where(old: dict[tuple[str, str], list[str]], new: dict[tuple[str, str], list[str]],
           key: tuple[str, str]) -> tuple[str, str] | None:
    """Where the test ``key`` of the old file is in the new one: the same class, else the one
    class that now has a method of that name (a moved test); None when gone or ambiguous."""
    if key in new:
        return key
    homes = [k for k in new if k[1] == key[1] and k not in old]
    return homes[0] if len(homes) == 1 else None


def wider_coverage(before: str, after: str) -> list[str]:
    """One line per widening: a class whose ``only_for`` went (and the ``except_for`` that
    replaced it, if any), and per decorator the tests it no longer narrows (a test moved to a
    class of one device is not wider). A test is named ``Class.test`` where its method name
    recurs in several classes of the original."""
    old, new = _parse(before), _parse(after)
    if old is None or new is None:
        return []
    out = []
    classes = {n.name for n in new.body if isinstance(n, ast.ClassDef)}
    for cls in (n.name for n in old.body if isinstance(n, ast.ClassDef)):
        only = devices_kwarg(instantiation_call(old, cls), "only_for")
        call = instantiation_call(new, cls)
        if only and cls in classes and call is not None and devices_kwarg(call, "only_for") is None:
            skipped = devices_kwarg(call, "except_for")
            out.append(f"`{cls}`: `only_for={_shown(only)}` removed, so its tests now run on every device type"
                       + (f" but those of `except_for={_shown(skipped)}`" if skipped else ""))
    before_tests, after_tests = _tests(old), _tests(new)
    names = [t for _, t in before_tests]
    widened: dict[tuple[str, str], list[str]] = defaultdict(list)
    for key, decs in before_tests.items():
        home = _where(before_tests, after_tests, key)
        if home is None:
            continue
        now = after_tests[home]
        call = instantiation_call(new, home[0])
        if call is None or devices_kwarg(call, "only_for") is not None:
            continue  # moved to a plain class or a class of one device: not wider
        shown = key[1] if names.count(key[1]) == 1 else f"{key[0]}.{key[1]}"
        for dec in decs:
            if dec.startswith("only") and dec != "onlyAccelerator" and dec not in now:
                to = ("`@onlyAccelerator` (every accelerator)" if "onlyAccelerator" in now
                      else "no `@only*` (every device type)")
                widened[(dec, to)].append(shown)
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


#: decorators that tie a test to CUDA alone
_CUDA_ONLY = frozenset({"onlyCUDA", "onlyCUDAAndPRIVATEUSE1", "largeTensorTest"})
#: names that gate a test on CUDA being there
_CUDA_GATES = frozenset({"TEST_CUDA", "TEST_MULTIGPU", "TEST_CUDNN", "TEST_CUDA_GRAPH"})


def _cuda_markers(tree: ast.Module) -> int:
    """How many CUDA-only markers the file has: ``@onlyCUDA``-style decorators, ``@onlyOn("cuda")``,
    ``only_for`` naming cuda, ``.cuda()`` calls, ``"cuda"`` / ``"cuda:N"`` strings, ``torch.cuda.*``
    uses and ``TEST_CUDA``-style gates."""
    n = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            n += sum(1 for d in node.decorator_list if _name(d) in _CUDA_ONLY)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "cuda" \
                and not node.args:
            n += 1
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                node.value == "cuda" or node.value.startswith("cuda:")):
            n += 1
        elif isinstance(node, ast.Attribute) and node.attr == "cuda" and isinstance(node.value, ast.Name) \
                and node.value.id == "torch":
            n += 1
        elif isinstance(node, ast.Name) and node.id in _CUDA_GATES:
            n += 1
    return n


def cuda_decoupled(before: str, after: str) -> bool:
    """Whether the change takes CUDA-only markers out of the file (fewer after than before)."""
    old, new = _parse(before), _parse(after)
    return old is not None and new is not None and _cuda_markers(new) < _cuda_markers(old)
