"""Phase 1, Assess: read a test file with stdlib ``ast`` and describe it.

``assess_source(text, path)`` returns an ``Assessment`` (serialised as
``assessment.json``): every top-level class with bases, decorators, line range and
tests; per test its decorators, whether it takes ``device``, hard-coded device strings
and CUDA availability gates; the ``instantiate_device_type_tests`` /
``instantiate_parametrized_tests`` calls; imports; the coder count (the seed uses a
single coder iterating per rule) and its line ranges, one per class.
"""

from __future__ import annotations

import ast
import re
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from flow.workflows.astnames import dotted
from flow.workflows.refactor.deviceapis import scan_calls
from flow.workflows.refactor.devices import DEVICE_STRING, GATE_NAMES, scan
from flow.workflows.refactor.errors import SourceSyntaxError

__all__ = ["DEVICE_STRING", "GATE_NAMES", "Assessment", "assess_source", "assess_tree", "dotted", "parse"]

#: Cheap text prefilter: a function whose source matches none of these cannot hold a
#: device literal or a gate, so its subtree is not walked (walking dominates run time).
SUSPECT = re.compile(r"cuda|xpu|mps|hpu|TEST_")
INSTANTIATORS = {
    "instantiate_device_type_tests": "device_type",
    "instantiate_parametrized_tests": "parametrized",
}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Decorator(_Model):
    """One decorator: its dotted name (``onlyCUDA``, ``unittest.skipIf``) and source line."""

    name: str
    line: int
    args: list[str] = []  # ast.unparse of each positional / keyword argument


class DeviceLiteral(_Model):
    """A hard-coded device: a string like ``"cuda:0"`` or a ``.cuda()`` call."""

    value: str
    line: int


class Gate(_Model):
    """A device-availability gate: ``torch.cuda.is_available()`` or a ``TEST_CUDA`` flag."""

    kind: Literal["is_available", "flag"]
    text: str
    line: int


class TestInfo(_Model):
    """One ``test*`` method."""

    __test__: ClassVar[bool] = False  # a model, not a test class for pytest to collect

    name: str
    start: int
    end: int
    decorators: list[Decorator]
    takes_device: bool
    device_literals: list[DeviceLiteral]
    gates: list[Gate]
    #: calls into the device API catalog (``flow.workflows.refactor.deviceapis``): value is the name
    device_apis: list[DeviceLiteral] = []
    #: the ``def`` line (``start`` is the first decorator's); 0 in assessments written before it
    def_line: int = 0

    def decorator_names(self) -> set[str]:
        """Return the last dotted part of every decorator name (``unittest.skipIf`` -> ``skipIf``)."""
        return {d.name.rsplit(".", 1)[-1] for d in self.decorators}


class ClassInfo(_Model):
    """One top-level class."""

    name: str
    bases: list[str]
    decorators: list[Decorator]
    start: int
    end: int
    tests: list[TestInfo]
    setup_guard_line: int | None  # setUp holding a device gate or hard-coded device


class Instantiation(_Model):
    """A call (or class decorator) that instantiates a test class."""

    kind: Literal["device_type", "parametrized"]
    target: str
    line: int
    only_for: list[str] | None = None
    except_for: list[str] | None = None


class ImportInfo(_Model):
    """``import module`` (name is None) or ``from module import name as asname``."""

    module: str
    name: str | None
    asname: str | None
    line: int

    @property
    def bound(self) -> str:
        """The name this import binds in the module namespace."""
        if self.asname:
            return self.asname
        return self.name if self.name is not None else self.module.split(".", 1)[0]


class CoderRange(_Model):
    """A line range handed to the (single) coder, one per class."""

    class_name: str
    start: int
    end: int


class Assessment(_Model):
    """Everything phase 1 learns about a file; ``model_dump_json`` is ``assessment.json``."""

    path: str
    lines: int
    bytes: int
    classes: list[ClassInfo]
    instantiations: list[Instantiation]
    imports: list[ImportInfo]
    coder_count: int
    coder_ranges: list[CoderRange]

    def test_ids(self) -> list[str]:
        """Every test as ``Class.test_name``, in file order."""
        return [f"{c.name}.{t.name}" for c in self.classes for t in c.tests]

    def class_named(self, name: str) -> ClassInfo | None:
        """Return the class called ``name`` or None."""
        return next((c for c in self.classes if c.name == name), None)

    def instantiations_of(self, name: str) -> list[Instantiation]:
        """Every instantiation whose target is ``name``."""
        return [i for i in self.instantiations if i.target == name]


def _segment(lines: list[str], node: ast.expr) -> str:
    """Source text of ``node``: sliced from its line when it is one ASCII line, else unparsed.

    Slicing is several times cheaper than ``ast.unparse``; ast's column offsets are UTF-8
    byte offsets, so a non-ASCII line falls back to unparsing.
    """
    if node.lineno == node.end_lineno and node.end_col_offset is not None:
        line = lines[node.lineno - 1]
        if line.isascii():
            return line[node.col_offset : node.end_col_offset]
    return ast.unparse(node)


def _decorator(node: ast.expr, lines: list[str]) -> Decorator:
    args: list[str] = []
    if isinstance(node, ast.Call):
        args = [_segment(lines, a) for a in node.args]
        args += [f"{k.arg}={_segment(lines, k.value)}" if k.arg else f"**{_segment(lines, k.value)}" for k in node.keywords]
    return Decorator(name=dotted(node), line=node.lineno, args=args)


def _scan_body(nodes: list[ast.stmt] | list[ast.expr]) -> tuple[list[DeviceLiteral], list[Gate]]:
    """Hard-coded devices and availability gates under ``nodes`` (``flow.workflows.refactor.devices``)."""
    literals, gates = scan(nodes)
    return ([DeviceLiteral(value=v, line=n) for v, n in literals],
            [Gate(kind=k, text=t, line=n) for k, t, n in gates])  # type: ignore[arg-type]


def _takes_device(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    args = fn.args
    # TEST_LINTER accepts either: `devices` is what @deviceCountAtLeast passes
    return any(a.arg in ("device", "devices") for a in (*args.posonlyargs, *args.args, *args.kwonlyargs))


def _start(node: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    return min([node.lineno, *(d.lineno for d in node.decorator_list)])


def _suspect(lines: list[str], node: ast.AST) -> bool:
    start, end = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
    return any(SUSPECT.search(line) for line in lines[start - 1 : end])


def _class(node: ast.ClassDef, instantiations: list[Instantiation], lines: list[str]) -> ClassInfo:
    tests: list[TestInfo] = []
    guard: int | None = None
    for item in node.body:
        if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        suspect = _suspect(lines, item) or any(_suspect(lines, d) for d in item.decorator_list)
        if item.name.startswith("test"):
            # Device strings in decorators (onlyOn(["cuda"])) belong to the decorator
            # rules; gates there (skipIf(not torch.cuda.is_available())) still count.
            literals, gates = _scan_body(item.body) if suspect else ([], [])
            if suspect:
                gates = [g for d in item.decorator_list for g in _scan_body([d])[1]] + gates
            tests.append(
                TestInfo(
                    name=item.name,
                    start=_start(item),
                    end=item.end_lineno or item.lineno,
                    decorators=[_decorator(d, lines) for d in item.decorator_list],
                    takes_device=_takes_device(item),
                    device_literals=literals,
                    gates=gates,
                    device_apis=[DeviceLiteral(value=v, line=n) for v, n in scan_calls(item.body)] if suspect else [],
                    def_line=item.lineno,
                )
            )
        elif item.name in ("setUp", "setUpClass") and suspect:
            literals, gates = _scan_body(item.body)
            if literals or gates:
                guard = item.lineno
    decorators = [_decorator(d, lines) for d in node.decorator_list]
    for dec in decorators:
        kind = INSTANTIATORS.get(dec.name.rsplit(".", 1)[-1])
        if kind is not None:
            instantiations.append(Instantiation(kind=kind, target=node.name, line=dec.line))  # type: ignore[arg-type]
    return ClassInfo(
        name=node.name,
        bases=[_segment(lines, b) for b in node.bases],
        decorators=decorators,
        start=_start(node),
        end=node.end_lineno or node.lineno,
        tests=tests,
        setup_guard_line=guard,
    )


def _device_list(node: ast.expr) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return [ast.unparse(node)]


def _instantiation(call: ast.Call) -> Instantiation | None:
    kind = INSTANTIATORS.get(dotted(call.func).rsplit(".", 1)[-1])
    if kind is None or not call.args:
        return None
    inst = Instantiation(kind=kind, target=dotted(call.args[0]), line=call.lineno)  # type: ignore[arg-type]
    for kw in call.keywords:
        if kw.arg == "only_for":
            inst.only_for = _device_list(kw.value)
        elif kw.arg == "except_for":
            inst.except_for = _device_list(kw.value)
    return inst


def _module_calls(stmt: ast.stmt) -> list[ast.Call]:
    """Calls made by a top-level statement, including under ``if`` blocks."""
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        return [stmt.value]
    if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call):
        return [stmt.value]
    if isinstance(stmt, ast.If):
        return [c for s in (*stmt.body, *stmt.orelse) for c in _module_calls(s)]
    return []


def _imports(stmt: ast.Import | ast.ImportFrom) -> list[ImportInfo]:
    if isinstance(stmt, ast.Import):
        return [ImportInfo(module=a.name, name=None, asname=a.asname, line=a.lineno) for a in stmt.names]
    module = "." * stmt.level + (stmt.module or "")
    return [ImportInfo(module=module, name=a.name, asname=a.asname, line=a.lineno) for a in stmt.names]


def parse(text: str, path: str) -> ast.Module:
    """``ast.parse`` that raises ``SourceSyntaxError`` (with the line) instead of SyntaxError."""
    try:
        return ast.parse(text, filename=path)
    except SyntaxError as exc:
        raise SourceSyntaxError(path, exc.lineno, exc.msg) from exc


def assess_tree(tree: ast.Module, text: str, path: str) -> Assessment:
    """Assess an already parsed module (lets callers parse once and reuse the tree)."""
    classes: list[ClassInfo] = []
    instantiations: list[Instantiation] = []
    imports: list[ImportInfo] = []
    lines = text.splitlines()
    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef):
            classes.append(_class(stmt, instantiations, lines))
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            imports.extend(_imports(stmt))
        else:
            for call in _module_calls(stmt):
                inst = _instantiation(call)
                if inst is not None:
                    instantiations.append(inst)
    return Assessment(
        path=path,
        lines=text.count("\n") + (0 if text.endswith("\n") or not text else 1),
        bytes=len(text.encode("utf-8")),
        classes=classes,
        instantiations=instantiations,
        imports=imports,
        coder_count=1,
        coder_ranges=[CoderRange(class_name=c.name, start=c.start, end=c.end) for c in classes],
    )


def assess_source(text: str, path: str) -> Assessment:
    """Assess the test file ``text`` (named ``path`` in findings).

    Raises ``SourceSyntaxError`` when the text does not parse; never imports the file.
    """
    return assess_tree(parse(text, path), text, path)
