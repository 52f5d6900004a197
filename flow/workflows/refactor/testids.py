"""A test's own function behind its test id, and the ids a function gets (seed phase 6.5,
"Local test gate": a deferred failure is looked up in the original's run; phase 7,
"Finalize": the PR lists the tests that move with their new ids).

``instantiate_device_type_tests(TestFoo, globals())`` makes ``TestFooCPU.test_x_cpu`` of
``TestFoo.test_x`` (``test_x_cpu_float32`` with ``@dtypes``, ``test_x_<op>_cpu_<dtype>`` with
``@ops``, ``test_x_<param>_cpu`` with ``@parametrize``); ``instantiate_parametrized_tests``
makes ``test_x_<param>`` of a plain class's ``test_x``. ``FileTests(text)`` reads a file's
classes, their ``test_*`` defs (a same-file base's included) and which classes are
device-instantiated; ``origin(name)`` takes a JUnit or pytest name back to the def it came
from (``Origin``: class, def, the id's variant without its device, the device); ``ids``
shows the ids a def gets; ``moved_tests(before, after)`` lists the tests whose ids a change
changes. Pure stdlib ``ast``; a file that does not parse has no tests.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from flow.workflows.refactor.hwclass import devices_kwarg, instantiation_call

#: the suffixes instantiate_device_type_tests appends to a class per device type
GENERATED = ("CPU", "CUDA", "MPS", "XPU", "META", "HPU", "LAZY", "MTIA", "PRIVATEUSE1")
#: decorators that make several ids of one def (a dtype, an op, a parameter each)
VARIANTS = frozenset({"dtypes", "dtypesIfCPU", "dtypesIfCUDA", "dtypesIfMPS", "dtypesIfXPU",
                      "dtypesIfHPU", "ops", "modules", "parametrize", "sample_inputs"})
#: ``@only*`` decorators and the device types whose ids of the test run (not skipped)
ONLY = {"onlyCPU": ("cpu",), "onlyCUDA": ("cuda",), "onlyMPS": ("mps",), "onlyXPU": ("xpu",),
        "onlyAccelerator": ("cuda",), "onlyCUDAAndPRIVATEUSE1": ("cuda",)}
#: the device types shown for a class instantiated for every device (in-tree CI's two)
SHOWN = ("cpu", "cuda")


@dataclass(frozen=True)
class Origin:
    """Where a test id comes from."""

    cls: str  # the class of the file that defines (or inherits) the def
    fn: str  # the def's name
    variant: str  # the id's suffix past the def's name, without the device ("" for none)
    device: str  # the device type the id was instantiated for ("" for a plain class)


def _name(dec: ast.expr) -> str:
    node = dec.func if isinstance(dec, ast.Call) else dec
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def _module_level(tree: ast.Module) -> list[ast.stmt]:
    """Top-level statements, those of top-level ``if``/``try`` blocks included (``if
    dist.is_available(): class TestFooDistributed(...)``)."""
    out: list[ast.stmt] = []
    todo = list(tree.body)
    while todo:
        stmt = todo.pop(0)
        out.append(stmt)
        if isinstance(stmt, ast.If | ast.Try):
            todo[:0] = [*stmt.body, *stmt.orelse, *getattr(stmt, "finalbody", [])]
    return out


def split_name(name: str) -> tuple[str, str, str]:
    """(class, method, device) of a gate name: ``test.test_foo.TestFooCPU.test_x_cpu [cuda]``
    gives (``TestFooCPU``, ``test_x_cpu``, ``cuda``); the device is "" without the suffix."""
    device = ""
    if name.endswith("]") and " [" in name:
        name, _, device = name[:-1].rpartition(" [")
    parts = name.split(".")
    return (parts[-2] if len(parts) > 1 else ""), parts[-1], device


class FileTests:
    """The test functions of one file as its classes define them."""

    def __init__(self, text: str) -> None:
        try:
            tree = ast.parse(text)
        except SyntaxError:
            tree = ast.Module(body=[], type_ignores=[])
        self.tree = tree
        stmts = _module_level(tree)
        nodes = {n.name: n for n in stmts if isinstance(n, ast.ClassDef)}
        self.nodes = nodes
        #: class -> its own test defs -> their decorator names
        self.own: dict[str, dict[str, list[str]]] = {
            c: {f.name: [_name(d) for d in f.decorator_list] for f in n.body
                if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef) and f.name.startswith("test_")}
            for c, n in nodes.items()}
        self.device_classes = {
            node.args[0].id for node in ast.walk(tree)
            if isinstance(node, ast.Call) and _name(node.func) == "instantiate_device_type_tests"
            and node.args and isinstance(node.args[0], ast.Name)}
        self.parametrized = {
            node.args[0].id for node in ast.walk(tree)
            if isinstance(node, ast.Call) and _name(node.func) == "instantiate_parametrized_tests"
            and node.args and isinstance(node.args[0], ast.Name)}
        self.parametrized |= {n.name for n in nodes.values()
                              if any(_name(d) == "instantiate_parametrized_tests" for d in n.decorator_list)}

    def defs(self, cls: str, seen: frozenset[str] = frozenset()) -> dict[str, list[str]]:
        """The test defs ``cls`` has: its own and those of its same-file bases."""
        node = self.nodes.get(cls)
        if node is None or cls in seen:
            return {}
        out: dict[str, list[str]] = {}
        for base in node.bases:
            if isinstance(base, ast.Name):
                out.update(self.defs(base.id, seen | {cls}))
        out.update(self.own.get(cls, {}))
        return out

    def test_classes(self) -> list[str]:
        """Classes that have a test def (their own or a base's), in the file's order."""
        return [c for c in self.nodes if self.defs(c)]

    def origin(self, name: str) -> Origin | None:
        """The def behind a test id (None when its class or def is not this file's)."""
        cls, method, _ = split_name(name)
        device = ""
        if cls not in self.nodes or not self.defs(cls):
            src = next((s for s in sorted(self.nodes, key=len, reverse=True)
                        if cls.startswith(s) and cls[len(s):] in GENERATED and self.defs(s)), None)
            if src is None:
                return None
            cls, device = src, cls[len(src):].lower()
        fn = max((d for d in self.defs(cls) if method == d or method.startswith(d + "_")), key=len, default=None)
        if fn is None:
            return None
        tokens = [t for t in method[len(fn) + 1:].split("_") if t] if method != fn else []
        if device and device in tokens:
            del tokens[len(tokens) - 1 - tokens[::-1].index(device)]
        return Origin(cls, fn, "_".join(tokens), device)

    def devices(self, cls: str, fn: str) -> list[str]:
        """The device types whose ids of ``cls.fn`` run: the instantiation's ``only_for`` (less
        its ``except_for``), narrowed by an ``@only*`` decorator; in-tree CI's CPU and CUDA
        for a class instantiated for every device type."""
        call = instantiation_call(self.tree, cls)
        only = devices_kwarg(call, "only_for")
        shown = list(only) if only and "?" not in only else list(SHOWN)
        shown = [d for d in shown if d not in (devices_kwarg(call, "except_for") or [])]
        for dec in self.defs(cls).get(fn, []):
            if dec in ONLY:
                shown = [d for d in shown if d in ONLY[dec]] or list(ONLY[dec])
        return shown

    def ids(self, cls: str, fn: str) -> list[str]:
        """The ids ``cls.fn`` gets: ``TestFooCPU.test_x_cpu`` per device type shown for a
        device-instantiated class, ``TestFoo.test_x`` for a plain one; a def with several
        ids (``@dtypes``, ``@ops``, ``@parametrize``) as a glob (``test_x_*cpu*``)."""
        many = any(d in VARIANTS for d in self.defs(cls).get(fn, []))
        if cls not in self.device_classes:
            return [f"{cls}.{fn}" + ("_*" if many and cls in self.parametrized else "")]
        return [f"{cls}{d.upper()}.{fn}_" + (f"*{d}*" if many else d) for d in self.devices(cls, fn)]


@dataclass(frozen=True)
class MovedTest:
    """A test whose ids change: another class, or its class now (not) device-instantiated."""

    fn: str
    old_class: str
    new_class: str
    old_ids: tuple[str, ...]
    new_ids: tuple[str, ...]
    old_pattern: str = ""  # the ids of any test of the old class: ``TestFooCPU.<test>_cpu, ...``
    new_pattern: str = ""


def moved_tests(before: str, after: str) -> list[MovedTest]:
    """The tests of ``before`` whose ids differ in ``after``, in the original's order: a test
    is found in its own class, else in the one class of ``after`` that newly has a def of
    its name (a test that is gone, or ambiguous, is not listed)."""
    old, new = FileTests(before), FileTests(after)
    out = []
    for cls in old.nodes:
        for fn in old.own.get(cls, {}):
            if fn in new.own.get(cls, {}):
                home = cls
            else:
                homes = [c for c in new.nodes if fn in new.own.get(c, {}) and fn not in old.own.get(c, {})]
                if len(homes) != 1:
                    continue
                home = homes[0]
            before_ids, after_ids = tuple(old.ids(cls, fn)), tuple(new.ids(home, fn))
            if home != cls or (cls in old.device_classes) != (home in new.device_classes):
                out.append(MovedTest(fn, cls, home, before_ids, after_ids, ", ".join(old.ids(cls, "<test>")),
                                     ", ".join(new.ids(home, "<test>"))))
    return out
