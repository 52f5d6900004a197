"""Phase 5, Verify: deterministic checks of a refactored file, each reporting findings.

``verify(VerifyInput) -> VerificationReport`` runs the checks named in
``input.checks`` (a field profile's list) in order. Everything arrives as text: the
adapter that reads files, lists sentinel folders or runs ``pytest --collect-only``
(``flow.workflows.refactor.collect``) sits outside. A file that does not parse stops the run
after the syntax check, since every later check needs its tree.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict, Field

from flow.workflows.refactor.analysis import AnalystReport, moves
from flow.workflows.refactor.assess import Assessment, assess_tree
from flow.workflows.refactor.fields import CORE_CHECKS
from flow.workflows.refactor.findings import Finding, Severity, VerificationReport, summarise
from flow.workflows.refactor.lint import NATIVE, RESTRICTIONS, lint
from flow.workflows.refactor.sentinels import DEVICE_SUFFIXES, plan_renames

DEFAULT_KEEP = ("skipXPU", "skipCUDAIf", "skipMPS", "skipMeta")


class VerifyInput(BaseModel):
    """Everything one verify run reads; IO happened before this was built."""

    model_config = ConfigDict(extra="forbid")

    path: str
    before: str
    after: str
    plan: AnalystReport | None = None
    checks: tuple[str, ...] = CORE_CHECKS
    keep_decorators: tuple[str, ...] = DEFAULT_KEEP
    decorate_info_files: dict[str, str] = Field(default_factory=dict)  # path -> text
    external_files: dict[str, str] = Field(default_factory=dict)  # path -> text
    sentinel_names: dict[str, list[str]] = Field(default_factory=dict)  # folder -> file names
    #: Phase 1's assessment of ``before`` (assessment.json); when given, ``before`` is not re-parsed.
    before_assessment: Assessment | None = None


class _Ctx:
    """Parsed state shared by the checks of one run."""

    def __init__(self, inp: VerifyInput, before: Assessment, after: Assessment, tree: ast.Module) -> None:
        self.inp = inp
        self.before = before
        self.after = after
        self.tree = tree
        plan = inp.plan.by_test() if inp.plan else {}
        # Where each original test should live afterwards (identity when no plan).
        self.target: dict[str, str] = {
            tid: plan[tid].target_class if tid in plan else tid.split(".", 1)[0] for tid in before.test_ids()
        }
        self.after_tests: dict[tuple[str, str], int] = {(c.name, t.name): t.start for c in after.classes for t in c.tests}
        # An @onlyCPU/@onlyMPS/@onlyXPU test the plan left in an ACCELERATOR class is TR011's: it
        # moves to the class of its device (distribute names it), and is found there, not lost.
        if inp.plan is not None:
            from flow.workflows.refactor.distribute import one_device_class, only_in_accelerator

            for tid, dev in only_in_accelerator(inp.plan, before):
                if dev.startswith("@"):
                    continue  # no classification names its device: no class to look in
                moved = one_device_class(tid.split(".", 1)[0], dev)
                if (moved, tid.split(".", 1)[1]) in self.after_tests:
                    self.target[tid] = moved

    def f(self, check: str, code: str, severity: Severity, line: int, message: str, file: str | None = None) -> Finding:
        return Finding(check=check, code=code, severity=severity, file=file or self.inp.path, line=line, message=message)


def _test_count(ctx: _Ctx) -> list[Finding]:
    out: list[Finding] = []
    expected = set()
    starts = {f"{c.name}.{t.name}": t.start for c in ctx.before.classes for t in c.tests}
    for tid, target in ctx.target.items():
        name = tid.split(".", 1)[1]
        expected.add((target, name))
        if (target, name) not in ctx.after_tests:
            out.append(ctx.f("test_count", "V201", "error", starts[tid],
                             f"test {tid} (line {starts[tid]} before) is missing from {target} after the refactor; restore it"))
    for (cls, name), line in sorted(ctx.after_tests.items(), key=lambda kv: kv[1]):
        if (cls, name) not in expected:
            out.append(ctx.f("test_count", "V202", "warning", line, f"{cls}.{name} is new: it did not exist before; a refactor adds no tests"))
    return out


def _class_structure(ctx: _Ctx) -> list[Finding]:
    if ctx.inp.plan is None:
        return []
    out: list[Finding] = []
    for target, strategy in ctx.inp.plan.target_strategies().items():
        cls = ctx.after.class_named(target)
        if cls is None:
            out.append(ctx.f("class_structure", "V301", "error", 1, f"planned class {target} ({strategy}) does not exist; create it"))
            continue
        insts = [i for i in ctx.after.instantiations_of(target) if i.kind == "device_type"]
        if strategy == "cpu_only" and insts:
            out.append(ctx.f("class_structure", "V302", "error", insts[0].line, f"CPU-only class {target} must not be instantiated per device"))
        elif strategy == "device_agnostic" and (not insts or any(i.only_for for i in insts)):
            out.append(ctx.f("class_structure", "V303", "error", cls.start,
                             f"device-agnostic class {target} needs instantiate_device_type_tests({target}, globals()) without only_for"))
        elif strategy == "device_specific" and not any(i.only_for for i in insts):
            out.append(ctx.f("class_structure", "V304", "error", cls.start,
                             f"device-specific class {target} needs instantiate_device_type_tests({target}, globals(), only_for=...)"))
    return out


def _str(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _decorate_info(ctx: _Ctx) -> list[Finding]:
    out: list[Finding] = []
    ours = {c.name for c in ctx.before.classes} | {c.name for c in ctx.after.classes}
    after_classes = {c.name: {t.name for t in c.tests} for c in ctx.after.classes}
    for path, text in ctx.inp.decorate_info_files.items():
        try:
            tree = ast.parse(text)
        except SyntaxError as exc:
            out.append(ctx.f("decorate_info", "V400", "error", exc.lineno or 1, f"cannot parse: {exc.msg}", path))
            continue
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute)):
                continue
            if (node.func.id if isinstance(node.func, ast.Name) else node.func.attr) != "DecorateInfo":
                continue
            kw = {k.arg: k.value for k in node.keywords}
            cls = _str(kw.get("cls_name", node.args[1] if len(node.args) > 1 else None))
            test = _str(kw.get("test_name", node.args[2] if len(node.args) > 2 else None))
            if cls is None or cls not in ours:
                continue
            if cls not in after_classes:
                out.append(ctx.f("decorate_info", "V401", "error", node.lineno, f"DecorateInfo names class {cls!r}, which no longer exists; run the TR009 codemod", path))
            elif test is not None and test not in after_classes[cls]:
                moved = [c for c, tests in after_classes.items() if test in tests]
                hint = f"; it moved to {moved[0]}" if moved else ""
                out.append(ctx.f("decorate_info", "V402", "error", node.lineno, f"DecorateInfo {cls}.{test}: {cls} has no {test}{hint}", path))
    return out


def _external_refs(ctx: _Ctx) -> list[Finding]:
    out: list[Finding] = []
    gone = sorted({c.name for c in ctx.before.classes} - {c.name for c in ctx.after.classes})
    if gone:
        suffixes = "|".join(DEVICE_SUFFIXES)
        pattern = re.compile(rf"\b({'|'.join(map(re.escape, gone))})(?:{suffixes})?\b")
        for path, text in ctx.inp.external_files.items():
            for lineno, line in enumerate(text.splitlines(), 1):
                for m in pattern.finditer(line):
                    out.append(ctx.f("external_refs", "V501", "error", lineno, f"reference to removed class {m.group(0)!r}; update it to the new class", path))
    if ctx.inp.plan is not None:
        test_moves = moves(ctx.inp.plan, ctx.before)
        for folder, names in ctx.inp.sentinel_names.items():
            plan = plan_renames(names, test_moves)
            for r in plan.renames:
                out.append(ctx.f("external_refs", "V502", "error", 0, f"stale sentinel {r.old}; rename it to {r.new} (TR010)", f"{folder}/{r.old}"))
            for u in plan.unresolved:
                out.append(ctx.f("external_refs", "V503", "warning", 0, f"sentinel {u.name} names a moved test: {u.reason}", f"{folder}/{u.name}"))
    return out


def _stale_patterns(ctx: _Ctx) -> list[Finding]:
    out: list[Finding] = []
    strategies = ctx.inp.plan.target_strategies() if ctx.inp.plan else {}
    for cls in ctx.after.classes:
        # lint reports a placement in a device-instantiated class itself (L006): one finding a line
        linted = "lint" in ctx.inp.checks and any(
            i.kind == "device_type" for i in ctx.after.instantiations_of(cls.name))
        for t in cls.tests:
            for d in t.decorators:
                short = d.name.rsplit(".", 1)[-1]
                if short in RESTRICTIONS | NATIVE:
                    out.append(ctx.f("stale_patterns", "V601", "error", d.line, f"@{short} left on {cls.name}.{t.name}"))
            if strategies.get(cls.name) == "device_agnostic":
                for lit in ([] if linted else t.device_literals):
                    out.append(ctx.f("stale_patterns", "V602", "error", lit.line, f"hard-coded {lit.value!r} in device-agnostic {cls.name}.{t.name}"))
                for gate in t.gates:
                    out.append(ctx.f("stale_patterns", "V603", "warning", gate.line, f"{gate.text} gate left in device-agnostic {cls.name}.{t.name}"))
    after_decos = {(c.name, t.name): t.decorator_names() for c in ctx.after.classes for t in c.tests}
    keep = set(ctx.inp.keep_decorators)
    for c in ctx.before.classes:
        for t in c.tests:
            target = ctx.target[f"{c.name}.{t.name}"]
            now = after_decos.get((target, t.name))
            if now is None:
                continue  # test_count reports it
            plain = not any(i.kind == "device_type" for i in ctx.after.instantiations_of(target))
            for lost in sorted((t.decorator_names() & keep) - now):
                if plain and lost in DEVICE_TYPE_SKIPS:
                    continue  # it reads self.device_type: a plain (GENERIC) class can neither keep nor need it
                out.append(ctx.f("stale_patterns", "V604", "error", ctx.after_tests[(target, t.name)],
                                 f"blacklist skip @{lost} was removed from {target}.{t.name}; KEEP blacklist skips"))
    return out


#: blacklist skips of common_device_type: they read ``self.device_type``, which only a class
#: instantiated per device has, so a test moved to a plain class drops them rightly.
DEVICE_TYPE_SKIPS = frozenset({"skipXPU", "skipCUDAIf", "skipMPS", "skipMeta", "skipCUDAIfRocm", "skipCPUIf"})


#: pyflakes message classes -> (code, severity, what to do). Anything else pyflakes says is
#: left to PyTorch's own lint.
PYFLAKES = {
    "UndefinedName": ("V702", "error", "define or import it"),
    "UndefinedLocal": ("V702", "error", "assign it before use"),
    "UndefinedExport": ("V702", "error", "define it or drop it from __all__"),
    "UnusedImport": ("V701", "warning", "remove it"),
    "RedefinedWhileUnused": ("V703", "warning", "remove the unused definition"),
}


def _pyflakes(tree: ast.Module, path: str) -> list[tuple[str, int, str]]:
    """(message class, line, message) from pyflakes on an already parsed module."""
    from pyflakes.checker import Checker

    found = Checker(tree, filename=path).messages
    return [(type(m).__name__, m.lineno, m.message % m.message_args) for m in found
            if type(m).__name__ in PYFLAKES]


def _import_audit(ctx: _Ctx) -> list[Finding]:
    """pyflakes on the whole refactored file: undefined names (error), unused imports and
    redefinitions (warning).

    This catches an edit that removed a still-used import, or code moved to where a name is
    not bound, in lines that only run on CUDA too. A message the original file already had
    (same kind and text) is the file's, not the refactor's: it says "(already so in the
    original)", and an error is then kept as a warning. The original is parsed and checked
    only when the refactored file has a message, which keeps a clean file's cost at one pass.
    """
    after = _pyflakes(ctx.tree, ctx.inp.path)
    before: set[tuple[str, str]] = set()
    if after:
        try:
            before = {(kind, msg) for kind, _, msg in _pyflakes(ast.parse(ctx.inp.before), ctx.inp.path)}
        except SyntaxError:
            pass
    out: list[Finding] = []
    for kind, line, msg in after:
        code, severity, todo = PYFLAKES[kind]
        if (kind, msg) in before:
            out.append(ctx.f("import_audit", code, "warning", line, f"{msg} (already so in the original)"))
        else:
            out.append(ctx.f("import_audit", code, severity, line, f"{msg}; {todo}"))  # type: ignore[arg-type]
    return out


def _lint(ctx: _Ctx) -> list[Finding]:
    return lint(ctx.after, ctx.inp.plan)


CHECKS: dict[str, Callable[[_Ctx], list[Finding]]] = {
    "test_count": _test_count,
    "class_structure": _class_structure,
    "decorate_info": _decorate_info,
    "external_refs": _external_refs,
    "stale_patterns": _stale_patterns,
    "import_audit": _import_audit,
    "lint": _lint,
}


def verify(inp: VerifyInput) -> VerificationReport:
    """Run ``inp.checks`` on the refactored text; never raises for bad input code.

    An unparsable *before* text is reported as a syntax finding too, since nothing can
    be compared against it. With ``before_assessment`` set, ``before`` is not parsed.
    """
    findings: list[Finding] = []
    results = []
    texts = [("after", inp.after)] if inp.before_assessment is not None else [("before", inp.before), ("after", inp.after)]
    trees: list[ast.Module] = []
    for label, text in texts:
        try:
            trees.append(ast.parse(text, filename=inp.path))
        except SyntaxError as exc:
            findings.append(Finding(check="syntax", code="V101", severity="error", file=inp.path,
                                    line=exc.lineno or 1, message=f"{label} text does not parse: {exc.msg}"))
    results.append(summarise("syntax", findings))
    if len(trees) < len(texts):
        return VerificationReport(file=inp.path, checks=results, findings=findings)
    before = inp.before_assessment or assess_tree(trees[0], inp.before, inp.path)
    ctx = _Ctx(inp, before, assess_tree(trees[-1], inp.after, inp.path), trees[-1])
    for name in inp.checks:
        if name == "syntax":
            continue
        check = CHECKS.get(name)
        if check is None:
            raise ValueError(f"unknown verify check {name!r}; use one of {sorted(CHECKS)}")
        found = check(ctx)
        findings += found
        results.append(summarise(name, found))
    return VerificationReport(file=inp.path, checks=results, findings=findings)
