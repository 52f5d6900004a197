"""The hw_classification codemod (seed phase 3, "Distribute": mechanical rules).

``label_classes`` writes ``hw_classification = HardwareClassification.<MEMBER>`` into every
top-level class that defines ``test_*`` and declares none (the plan's label, else the one
its instantiation implies) and ``merge_import`` binds the enum from common_utils, merged
into the file's own import of that module (wrapped one name a line, as ufmt/black would,
when a line outgrows the line length). libcst is imported inside the functions.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from flow.workflows.refactor.codemods import Change, CodemodResult
from flow.workflows.refactor.errors import SourceSyntaxError
from flow.workflows.refactor.hwclass import ATTR, COMMON_UTILS, ENUM, infer, is_test_class

if TYPE_CHECKING:
    import libcst as cst

#: black's default line length; ufmt formats PyTorch's Python with it.
BLACK_LINE_LENGTH = 88


def _import_line(stmt: cst.SimpleStatementLine, module: cst.Module) -> str:
    return module.code_for_node(stmt).rstrip("\n")


def _wrapped(imp: cst.ImportFrom) -> cst.ImportFrom:
    """``imp`` with one name a line in parentheses and a trailing comma (black's layout for an
    import that does not fit on a line)."""
    import libcst as cst

    names = list(imp.names) if not isinstance(imp.names, cst.ImportStar) else []
    indent = cst.ParenthesizedWhitespace(first_line=cst.TrailingWhitespace(), indent=True,
                                         last_line=cst.SimpleWhitespace("    "))
    close = cst.ParenthesizedWhitespace(first_line=cst.TrailingWhitespace(), indent=True,
                                        last_line=cst.SimpleWhitespace(""))
    rebuilt = [a.with_changes(comma=cst.Comma(whitespace_after=indent if i < len(names) - 1 else close))
               for i, a in enumerate(names)]
    return imp.with_changes(names=rebuilt, lpar=cst.LeftParen(whitespace_after=indent), rpar=cst.RightParen())


def merge_import(module: cst.Module, line_length: int = BLACK_LINE_LENGTH) -> tuple[cst.Module, bool]:
    """Bind ``HardwareClassification`` from common_utils: merged, case-folded in order, into the
    file's top-level ``from torch.testing._internal.common_utils import`` (a star import already
    binds it), else a new line after the last top-level import. When a line of the merged
    import passes ``line_length`` it is wrapped one name a line. Returns (module, changed)."""
    import libcst as cst

    body = list(module.body)
    home = None
    for n, stmt in enumerate(body):
        if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
                and isinstance(stmt.body[0], cst.ImportFrom)):
            continue
        imp = stmt.body[0]
        if imp.relative or imp.module is None or cst.helpers.get_full_name_for_node(imp.module) != COMMON_UTILS:
            continue
        if isinstance(imp.names, cst.ImportStar):
            return module, False
        if any((a.evaluated_alias or a.evaluated_name) == ENUM for a in imp.names):
            return module, False
        home = home if home is not None else n
    if home is None:
        new = cst.parse_statement(f"from {COMMON_UTILS} import {ENUM}\n")
        last = max((i for i, s in enumerate(body) if isinstance(s, cst.SimpleStatementLine)
                    and isinstance(s.body[0], cst.Import | cst.ImportFrom)), default=-1)
        body.insert(last + 1, new)
        return module.with_changes(body=body), True
    stmt = body[home]
    imp = stmt.body[0]  # type: ignore[attr-defined]
    names = list(imp.names)
    keys = [a.evaluated_name.casefold() for a in names]
    at = sum(1 for k in keys if k < ENUM.casefold()) if keys == sorted(keys) else len(names)
    sep = next((a.comma for a in names[:-1] if isinstance(a.comma, cst.Comma)), None)
    sep = sep or cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    new_alias = cst.ImportAlias(name=cst.Name(ENUM))
    merged = [*names[:at], new_alias, *names[at:]]
    last_comma = names[-1].comma
    rebuilt = [a.with_changes(comma=sep) for a in merged[:-1]] + [merged[-1].with_changes(comma=last_comma)]
    fixed = imp.with_changes(names=rebuilt)
    line = stmt.with_changes(body=[fixed])
    text = _import_line(line, module)
    if any(len(row) > line_length for row in text.splitlines()):
        line = stmt.with_changes(body=[_wrapped(fixed)])
    body[home] = line
    return module.with_changes(body=body), True


def label_classes(code: str, labels: dict[str, str], line_length: int = BLACK_LINE_LENGTH) -> CodemodResult:
    """Write ``hw_classification = HardwareClassification.<label>`` into every top-level class
    that defines ``test_*`` and declares none: the label from ``labels`` (the plan's, by class
    name), else ``infer``-red from its instantiation. The statement goes first in the body
    (after a docstring); the enum's import is merged (``merge_import``). A class that already
    declares a label is left alone (the linter judges it). Idempotent."""
    import libcst as cst

    try:
        tree = ast.parse(code)
        module = cst.parse_module(code)
    except (SyntaxError, cst.ParserSyntaxError) as exc:
        raise SourceSyntaxError("<codemod input>", getattr(exc, "lineno", None) or getattr(exc, "raw_line", 0),
                                str(exc)) from None
    wanted: dict[str, tuple[str, int, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and is_test_class(node) and not _has_attr(node):
            label = labels.get(node.name)
            how = "the plan" if label else "its instantiation"
            wanted[node.name] = (label or infer(tree, node.name), node.lineno, how)
    if not wanted:
        return CodemodResult(code=code, changes=[])
    body = []
    for stmt in module.body:
        if isinstance(stmt, cst.ClassDef) and stmt.name.value in wanted:
            label = wanted[stmt.name.value][0]
            assign = cst.parse_statement(f"{ATTR} = {ENUM}.{label}\n")
            inner = list(stmt.body.body)  # type: ignore[attr-defined]
            at = 1 if inner and _is_docstring(inner[0]) else 0
            if at < len(inner) and isinstance(inner[at], cst.FunctionDef | cst.ClassDef) \
                    and not inner[at].leading_lines:
                # black puts one empty line between a class attribute and a method.
                inner[at] = inner[at].with_changes(leading_lines=[cst.EmptyLine(indent=False)])
            inner.insert(at, assign)
            stmt = stmt.with_changes(body=stmt.body.with_changes(body=inner))
        body.append(stmt)
    module, _ = merge_import(module.with_changes(body=body), line_length)
    changes = [Change(rule_id="HW001", line=line, description=f"{name}: hw_classification = {ENUM}.{label} (from {how})")
               for name, (label, line, how) in wanted.items()]
    return CodemodResult(code=module.code, changes=changes)


def _has_attr(node: ast.ClassDef) -> bool:
    """Whether the class assigns ``hw_classification`` at all (valid or not: the linter says which)."""
    for s in node.body:
        if isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == ATTR for t in s.targets):
            return True
        if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.target.id == ATTR:
            return True
    return False


def _is_docstring(stmt: cst.BaseStatement) -> bool:
    import libcst as cst

    return (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
            and isinstance(stmt.body[0], cst.Expr) and isinstance(stmt.body[0].value, cst.SimpleString | cst.ConcatenatedString))


#: Keyword arguments the device-generic constructors take as the CUDA ones do: a call with only
#: these is rewritten, anything else (a positional argument, ``device=``, ``priority=``) is left.
_EVENT_KWARGS = frozenset({"enable_timing", "blocking", "interprocess"})
_AUTOCAST_KWARGS = frozenset({"enabled", "dtype", "cache_enabled"})
#: profiler event attributes: the CUDA name -> the device-generic one
_TIME_TOTALS = {"self_cuda_time_total": "self_device_time_total", "cuda_time_total": "device_time_total"}
_DEVICE_TYPE = "torch.device(device).type"


def _comma(arg: cst.Arg, more: bool) -> cst.Arg:
    """``arg`` followed by ``, `` when other arguments follow it."""
    import libcst as cst

    return arg.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))) if more else arg


def rename_device_apis(code: str) -> CodemodResult:
    """In tests that run on every accelerator (a class declaring ACCELERATOR, or a test with
    ``@onlyAccelerator``), rewrite the catalogue's same-call CUDA APIs to their
    ``torch.accelerator`` names (``torch.cuda.synchronize()`` -> ``torch.accelerator.synchronize()``),
    and, where it is safe, the ones that take other arguments, in a test that has ``device``:
    ``torch.cuda.Stream()`` -> ``torch.Stream(device=device)``, ``torch.cuda.Event(enable_timing=...)``
    -> ``torch.Event(device=device, enable_timing=...)``, ``torch.cuda.amp.autocast(...)`` and
    ``torch.autocast("cuda", ...)`` -> ``torch.autocast(device_type=torch.device(device).type, ...)``,
    ``.self_cuda_time_total`` / ``.cuda_time_total`` -> ``.self_device_time_total`` /
    ``.device_time_total``. A call with other arguments is left to the coder (lint L014), as are
    the device-specific APIs. Idempotent."""
    import libcst as cst

    from flow.workflows.refactor.deviceapis import rename
    from flow.workflows.refactor.hwclass import declared

    table = rename()
    tree = ast.parse(code)
    wide_classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef) and declared(n) == "ACCELERATOR"}
    changes: list[Change] = []

    def name_of(node: cst.BaseExpression) -> str:
        return cst.helpers.get_full_name_for_node(node) or ""

    class Renamer(cst.CSTTransformer):
        METADATA_DEPENDENCIES = (cst.metadata.PositionProvider,)

        def __init__(self) -> None:
            self.cls: list[str] = []
            self.wide = 0
            self.has_device: list[bool] = []  # per wide test: does it take `device`

        def visit_ClassDef(self, node: cst.ClassDef) -> None:
            self.cls.append(node.name.value)

        def leave_ClassDef(self, original: cst.ClassDef, updated: cst.ClassDef) -> cst.ClassDef:
            self.cls.pop()
            return updated

        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            decos = {name_of(d.decorator).rsplit(".", 1)[-1] for d in node.decorators}
            in_wide = bool(self.cls) and self.cls[-1] in wide_classes
            if node.name.value.startswith("test") and (in_wide or "onlyAccelerator" in decos):
                self.wide += 1
                params = node.params
                names = {p.name.value for p in [*params.posonly_params, *params.params, *params.kwonly_params]}
                self.has_device.append("device" in names)

        def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
            decos = {name_of(d.decorator).rsplit(".", 1)[-1] for d in original.decorators}
            in_wide = bool(self.cls) and self.cls[-1] in wide_classes
            if original.name.value.startswith("test") and (in_wide or "onlyAccelerator" in decos):
                self.wide -= 1
                self.has_device.pop()
            return updated

        def _note(self, node: cst.CSTNode, what: str) -> None:
            line = self.get_metadata(cst.metadata.PositionProvider, node).start.line
            changes.append(Change(rule_id="HW002", line=line, description=what))

        def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
            if self.wide <= 0:
                return updated
            new = table.get(name_of(original))
            if new is None:
                total = _TIME_TOTALS.get(original.attr.value)
                if total is None or name_of(original).startswith("torch."):
                    return updated
                self._note(original, f".{original.attr.value} -> .{total}")
                return updated.with_changes(attr=cst.Name(total))
            self._note(original, f"{name_of(original)} -> {new}")
            return cst.parse_expression(new)

        def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
            if self.wide <= 0 or not self.has_device or not self.has_device[-1]:
                return updated
            name = name_of(original.func)
            args = list(updated.args)
            kwargs = {a.keyword.value for a in args if a.keyword is not None}
            positional = [a for a in args if a.keyword is None and not a.star]
            starred = any(a.star for a in args)
            device = cst.Arg(keyword=cst.Name("device"), value=cst.Name("device"),
                             equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                                   whitespace_after=cst.SimpleWhitespace("")))
            if name in ("torch.cuda.Stream", "torch.cuda.Event") and not positional and not starred:
                allowed = frozenset() if name.endswith("Stream") else _EVENT_KWARGS
                if kwargs <= allowed:
                    new = "torch.Stream" if name.endswith("Stream") else "torch.Event"
                    self._note(original, f"{name}(...) -> {new}(device=device, ...)")
                    return updated.with_changes(func=cst.parse_expression(new), args=[_comma(device, bool(args)), *args])
            cuda_type = None
            if name in ("torch.autocast", "torch.amp.autocast", "autocast") and not starred:
                first = positional[0].value if positional else next(
                    (a.value for a in args if a.keyword is not None and a.keyword.value == "device_type"), None)
                cuda_type = first if isinstance(first, cst.SimpleString) and first.evaluated_value == "cuda" else None
            if name == "torch.cuda.amp.autocast" and not positional and not starred and kwargs <= _AUTOCAST_KWARGS:
                kind = cst.Arg(keyword=cst.Name("device_type"), value=cst.parse_expression(_DEVICE_TYPE),
                               equal=device.equal)
                self._note(original, "torch.cuda.amp.autocast(...) -> torch.autocast(device_type=..., ...)")
                return updated.with_changes(func=cst.parse_expression("torch.autocast"), args=[_comma(kind, bool(args)), *args])
            if cuda_type is not None:
                rest = [a for a in args if a.value is not cuda_type]
                if kwargs - {"device_type"} <= _AUTOCAST_KWARGS:
                    kind = cst.Arg(keyword=cst.Name("device_type"), value=cst.parse_expression(_DEVICE_TYPE),
                                   equal=device.equal)
                    self._note(original, 'torch.autocast("cuda", ...) -> torch.autocast(device_type=..., ...)')
                    return updated.with_changes(args=[_comma(kind, bool(rest)), *rest])
            return updated

    wrapper = cst.metadata.MetadataWrapper(cst.parse_module(code))
    out = wrapper.visit(Renamer())
    return CodemodResult(code=out.code if changes else code, changes=changes)
