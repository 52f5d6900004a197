"""Which device strings in a test are hard-coded placements, and which are PyTorch device checks.

``scan(nodes)`` returns the hard-coded devices (``"cuda"``, ``"cuda:0"``, ``.cuda()``) and the
availability gates (``torch.cuda.is_available()``, ``TEST_CUDA``-style flags) under a test's
statements. A device string that places nothing is not reported: comparisons and membership
tests on the device kind, ``startswith``, assertions on a device kind, dicts keyed by device
type, ``only_for=`` / ``except_for=`` selectors, and code inside a branch on the device kind
(see ``_exempt``). Pure stdlib ``ast``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from flow.workflows.astnames import dotted

DEVICE_STRING = re.compile(r"^(cuda|xpu|mps|hpu)(:\d+)?$")
#: Module-level flags PyTorch tests use as availability gates.
GATE_NAMES = frozenset({"TEST_CUDA", "TEST_MULTIGPU", "TEST_CUDNN", "TEST_XPU", "TEST_MPS", "TEST_PRIVATEUSE1"})


def _walk(nodes: list[ast.stmt] | list[ast.expr]) -> Iterator[ast.AST]:
    for node in nodes:
        yield from ast.walk(node)


#: Attribute / name parts that say "this expression is a device kind", e.g. ``self.device_type``,
#: ``x.device.type``, ``torch.device(device).type``, ``device``.
DEVICE_KIND = frozenset({"device", "device_type", "type", "devices"})
#: Calls that compare a device string rather than place anything on a device.
STRING_TESTS = frozenset({"startswith", "endswith", "assertEqual", "assertNotEqual", "assertIn", "assertNotIn"})
#: Keywords naming devices to select or exclude (``only_for="cuda"``), never a placement.
SELECTOR_KEYWORDS = frozenset({"only_for", "except_for"})


def _is_device_kind(node: ast.expr) -> bool:
    """``device``, ``self.device_type``, ``t.device.type``, ``str(device)``, ``torch.device(d).type``."""
    if isinstance(node, ast.Call) and dotted(node.func) == "str" and node.args:
        return _is_device_kind(node.args[0])
    if isinstance(node, ast.Attribute):
        return node.attr in DEVICE_KIND
    return isinstance(node, ast.Name) and node.id in DEVICE_KIND


def _strings(node: ast.expr) -> Iterator[ast.Constant]:
    """String constants that are ``node`` or direct elements of a tuple/list/set ``node``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        for e in node.elts:
            yield from _strings(e)


def _is_device_check(node: ast.expr) -> bool:
    """True for an ``if`` test that branches on the device kind under test: a comparison with a
    device string or a device-kind expression, or ``device.startswith("cuda")``.

    Availability gates (``TEST_CUDA``, ``torch.cuda.is_available()``) are not: under them a
    test still uses CUDA whatever device it was instantiated for, so what they guard stays
    hard-coded (the gate itself is reported as a gate).
    """
    for sub in ast.walk(node):
        if isinstance(sub, ast.Compare):
            operands = [sub.left, *sub.comparators]
            if any(_is_device_kind(o) for o in operands) or any(
                    DEVICE_STRING.match(c.value) for o in operands for c in _strings(o)):
                return True
        elif isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute):
            if sub.func.attr in ("startswith", "endswith") and _is_device_kind(sub.func.value):
                return True
    return False


def _exempt(nodes: list[ast.stmt] | list[ast.expr]) -> set[int]:
    """ids of the device strings and ``.cuda()`` calls that are not hard-coded placements.

    PyTorch idioms that name a device without putting anything on it: a comparison or
    membership test (``self.device_type == "cuda"``, ``"cuda" in device``,
    ``x.device.type != "cpu"``), ``device.startswith("cuda")``, an assertion on a device kind
    (``self.assertEqual(t.device.type, "cuda")``), a dict keyed by device type
    (``{"cpu": 1e-5, "cuda": 1e-3}[self.device_type]``), ``only_for=`` / ``except_for=``
    selectors, and anything inside a branch that already checks the device kind (``if
    self.device_type == "cuda": x.cuda()``). ``TEST_CUDA``-style flags are availability
    gates, reported as such, never as hard-coded devices.
    """
    out: set[int] = set()
    for sub in _walk(nodes):
        if isinstance(sub, ast.Compare):
            out.update(id(c) for o in (sub.left, *sub.comparators) for c in _strings(o))
        elif isinstance(sub, ast.Dict):
            out.update(id(c) for k in sub.keys if k is not None for c in _strings(k))
        elif isinstance(sub, ast.Call):
            name = sub.func.attr if isinstance(sub.func, ast.Attribute) else ""
            if name in ("startswith", "endswith"):
                out.update(id(c) for a in sub.args for c in _strings(a))
            elif name in STRING_TESTS and any(_is_device_kind(a) for a in sub.args):
                out.update(id(c) for a in sub.args for c in _strings(a))
            out.update(id(c) for k in sub.keywords if k.arg in SELECTOR_KEYWORDS for c in _strings(k.value))
        elif isinstance(sub, (ast.If, ast.IfExp)) and _is_device_check(sub.test):
            branches = [*sub.body, *sub.orelse] if isinstance(sub, ast.If) else [sub.body, sub.orelse]
            out.update(id(n) for n in _walk(branches))
    return out


def scan(nodes: list[ast.stmt] | list[ast.expr]) -> tuple[list[tuple[str, int]], list[tuple[str, str, int]]]:
    """Collect hard-coded devices and availability gates anywhere under ``nodes``.

    A ``.cuda()`` call is reported on the line of ``.cuda`` itself, which in a multi-line
    chain (``torch.ones(3)\\n    .cuda()``) is not the line the expression starts on.
    """
    literals: list[tuple[str, int]] = []
    gates: list[tuple[str, str, int]] = []
    exempt: set[int] | None = None
    for sub in _walk(nodes):
        if isinstance(sub, ast.Constant):
            if isinstance(sub.value, str) and DEVICE_STRING.match(sub.value):
                exempt = _exempt(nodes) if exempt is None else exempt
                if id(sub) not in exempt:
                    literals.append((sub.value, sub.lineno))
        elif isinstance(sub, ast.Call):
            func = sub.func
            if isinstance(func, ast.Attribute):
                if func.attr == "cuda" and not sub.args:
                    exempt = _exempt(nodes) if exempt is None else exempt
                    if id(sub) not in exempt:
                        literals.append((".cuda()", func.end_lineno or sub.lineno))
                elif func.attr == "is_available" and dotted(func).endswith("cuda.is_available"):
                    gates.append(("is_available", dotted(func) + "()", sub.lineno))
        elif isinstance(sub, ast.Name) and sub.id in GATE_NAMES:
            gates.append(("flag", sub.id, sub.lineno))
    literals.sort(key=lambda lit: lit[1])
    return literals, gates


#: The public name of the device-kind branch test (used by ``deviceapis``).
is_device_check = _is_device_check
