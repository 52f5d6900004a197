"""Mechanical rules as libcst codemods that keep formatting and comments.

Each codemod is ``fn(code: str, ...) -> CodemodResult``; it never raises for valid
Python (a parse failure raises ``SourceSyntaxError``). libcst is imported inside the
functions so importing this module stays cheap.

- ``decorator_rules``    TR001 + TR002 in one parse and one pass (what distribute runs):
- ``only_accelerator``   TR001: ``@onlyCUDA`` / ``@onlyOn(...)`` / ``@onlyCUDAAndPRIVATEUSE1`` /
  ``@onlyHPU`` -> ``@onlyAccelerator``
- ``remove_only_native`` TR002: drop ``@onlyNativeDeviceTypes`` / ``@onlyNativeDeviceTypesAnd(...)``
- imports are fixed and sorted by ``flow.workflows.refactor.imports`` (PyTorch's usort settings)
- ``decorate_info``      TR009: rewrite ``DecorateInfo`` class names after moves
- sentinel renames (TR010) live in ``flow.workflows.refactor.sentinels`` (they rename files)
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from flow.workflows.refactor.analysis import TestMove
from flow.workflows.refactor.errors import SourceSyntaxError

if TYPE_CHECKING:
    import libcst as cst
    from usort import Config as UsortConfig

from flow.workflows.refactor.imports import (
    DEVICE_TYPE_MODULE, bare_uses, block_end, fix_imports, sort_imports,
)

__all__ = ["DEVICE_TYPE_MODULE", "decorator_rules", "decorate_info", "only_accelerator",
           "remove_only_native", "sort_imports"]


class Change(BaseModel):
    """One edit a codemod made, with the line in the input it applied to."""

    model_config = ConfigDict(extra="forbid")

    rule_id: str
    line: int
    description: str


class CodemodResult(BaseModel):
    """The rewritten code and what changed; ``code`` equals the input when nothing did."""

    model_config = ConfigDict(extra="forbid")

    code: str
    changes: list[Change]

    @property
    def changed(self) -> bool:
        """True when at least one edit was made."""
        return bool(self.changes)


def _parse(code: str) -> cst.Module:
    import libcst as cst

    try:
        return cst.parse_module(code)
    except cst.ParserSyntaxError as exc:
        raise SourceSyntaxError("<codemod input>", exc.raw_line, exc.message) from exc


def _decorator_name(node: cst.BaseExpression) -> str:
    import libcst as cst

    if isinstance(node, cst.Call):
        return _decorator_name(node.func)
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return ""


#: The file's decorator codemods: name -> (rule id, decorator names, replacement or None to remove).
FILE_RULES: dict[str, tuple[str, frozenset[str], str | None]] = {
    "only_accelerator": ("TR001", frozenset({"onlyCUDA", "onlyOn", "onlyCUDAAndPRIVATEUSE1", "onlyHPU"}),
                         "onlyAccelerator"),
    "remove_only_native": ("TR002", frozenset({"onlyNativeDeviceTypes", "onlyNativeDeviceTypesAnd"}), None),
}


def _functions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Functions not nested in functions, in source order (the order libcst visits them)."""
    return [f for f, _ in _owned_functions(tree)]


def _owned_functions(tree: ast.Module) -> list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, str]]:
    """``_functions`` with the name of the class each is defined in ("" at module level)."""
    out: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, str]] = []

    def walk(node: ast.AST, owner: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                out.append((child, owner))
            elif isinstance(child, ast.ClassDef):
                walk(child, child.name)
            elif isinstance(child, ast.stmt):
                walk(child, owner)
            elif isinstance(child, ast.excepthandler | ast.match_case):
                walk(child, owner)

    walk(tree, "")
    return out


def _short(node: ast.expr) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def _bare(node: ast.expr) -> bool:
    """``@name`` or ``@name(...)``: a use of the imported name (``@mod.name`` is not)."""
    return isinstance(node.func if isinstance(node, ast.Call) else node, ast.Name)


def _carry_lines(dec: cst.Decorator) -> list[cst.EmptyLine]:
    """The lines above a removed decorator (the test's comments), so they survive the removal.

    The comment on the decorator's own line (``@onlyNativeDeviceTypes  # fails on XLA``) said
    why that decorator was there; it goes with it instead of being left behind, orphaned."""
    return list(dec.leading_lines)


def decorator_rules(code: str, codemods: tuple[str, ...] = tuple(FILE_RULES),
                    usort_config: UsortConfig | None = None,
                    keep_device: frozenset[tuple[str, str]] = frozenset()) -> CodemodResult:
    """Apply the decorator ``codemods`` (TR001, TR002) in ONE libcst parse and ONE pass.

    ``keep_device`` names the tests (``(class, method)``) the plan keeps on one device
    (``device_specific``: CUDA graphs, cuDNN, ...): TR001 leaves their ``@onlyCUDA`` as it is,
    as widening it to ``@onlyAccelerator`` would run a CUDA-only test on every accelerator
    (and the PR would list it as wider coverage); their move to a one-device class is the
    coder's task.

    Lines come from a stdlib ``ast`` parse (a fraction of libcst's cost) instead of libcst's
    position metadata; the transformer does not descend into function bodies or simple
    statements, where no decorator of a test method can be. A file with nothing to change
    is returned as it is without a libcst parse at all. Imports are fixed on the top-level
    statements; with ``usort_config`` the import block is then sorted the way PyTorch's lint
    (usort) wants, when the original block already passed it (``sort_imports``).
    """
    import libcst as cst

    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise SourceSyntaxError("<codemod input>", exc.lineno, exc.msg) from exc
    targets: dict[str, tuple[str, str | None]] = {
        name: (FILE_RULES[c][0], FILE_RULES[c][2]) for c in codemods for name in FILE_RULES[c][1]}
    owned = _owned_functions(tree)
    functions = [f for f, _ in owned]
    widen = FILE_RULES["only_accelerator"][1]
    held = {id(f) for f, owner in owned if (owner, f.name) in keep_device}

    def applies(f: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
        return name in targets and not (name in widen and id(f) in held)

    if not any(applies(f, _short(d)) for f in functions for d in f.decorator_list):
        return CodemodResult(code=code, changes=[])
    changes: list[Change] = []
    removed_uses: dict[str, int] = {}
    replacements: set[str] = set()

    class Rewriter(cst.CSTTransformer):
        index = 0

        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
            return False

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

        def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
            info = functions[self.index]
            self.index += 1
            if info.name != updated.name.value or len(info.decorator_list) != len(updated.decorators):
                raise AssertionError(f"codemod lost its place at {updated.name.value}")  # a bug, not input
            decorators: list[cst.Decorator] = []
            carried: list[cst.EmptyLine] = []
            seen: set[str] = set()
            for node, dec in zip(info.decorator_list, updated.decorators, strict=True):
                name = _short(node)
                if not applies(info, name):
                    if carried:
                        dec = dec.with_changes(leading_lines=[*carried, *dec.leading_lines])
                        carried = []
                    decorators.append(dec)
                    continue
                rid, replacement = targets[name]
                if _bare(node):
                    removed_uses[name] = removed_uses.get(name, 0) + 1
                if replacement is None or replacement in seen:
                    carried += _carry_lines(dec)
                    changes.append(Change(rule_id=rid, line=node.lineno, description=f"removed @{name} from {info.name}"))
                    continue
                seen.add(replacement)
                replacements.add(replacement)
                decorators.append(dec.with_changes(decorator=cst.Name(replacement)))
                changes.append(Change(rule_id=rid, line=node.lineno, description=f"@{name} -> @{replacement} on {info.name}"))
            if carried:
                if decorators:
                    return updated.with_changes(decorators=decorators, lines_after_decorators=[*updated.lines_after_decorators, *carried])
                return updated.with_changes(decorators=decorators, leading_lines=[*updated.leading_lines, *carried])
            return updated.with_changes(decorators=decorators)

    module = _parse(code).visit(Rewriter())
    drop = {n for n in targets if bare_uses(code, tree, n) - removed_uses.get(n, 0) <= 0}
    for add in sorted(replacements) or [None]:
        module = fix_imports(module, drop, add)
        drop = set()
    out = module.code
    if usort_config is not None:
        out = sort_imports(code, out, usort_config, block_end(code, tree))
    return CodemodResult(code=out, changes=sorted(changes, key=lambda c: (c.line, c.rule_id)))


def only_accelerator(code: str, usort_config: UsortConfig | None = None) -> CodemodResult:
    """TR001: ``@onlyCUDA`` / ``@onlyOn(...)`` / ``@onlyCUDAAndPRIVATEUSE1`` / ``@onlyHPU`` ->
    ``@onlyAccelerator``, imports fixed."""
    return decorator_rules(code, ("only_accelerator",), usort_config)


def remove_only_native(code: str, usort_config: UsortConfig | None = None) -> CodemodResult:
    """TR002: remove ``@onlyNativeDeviceTypes`` / ``@onlyNativeDeviceTypesAnd(...)``."""
    return decorator_rules(code, ("remove_only_native",), usort_config)


def decorate_info(code: str, class_map: Mapping[tuple[str, str], str]) -> CodemodResult:
    """TR009: rewrite ``DecorateInfo(deco, "OldClass", "test_x", ...)`` after moves.

    ``class_map`` maps ``(old_class, test_name)`` to the new class; the key
    ``(old_class, "*")`` renames every entry of that class, including ones with no
    test name. Positional and ``cls_name=`` / ``test_name=`` keyword forms are handled;
    the string's quote style is kept.
    """
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    changes: list[Change] = []

    def text(node: cst.BaseExpression | None) -> str | None:
        if isinstance(node, cst.SimpleString):
            value = node.evaluated_value
            return value if isinstance(value, str) else None
        return None

    class Rewriter(cst.CSTTransformer):
        METADATA_DEPENDENCIES = (PositionProvider,)

        def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
            if _decorator_name(updated.func) != "DecorateInfo":
                return updated
            positional = [a for a in updated.args if a.keyword is None and a.star == ""]
            cls_arg = next((a for a in updated.args if a.keyword and a.keyword.value == "cls_name"), None)
            test_arg = next((a for a in updated.args if a.keyword and a.keyword.value == "test_name"), None)
            cls_arg = cls_arg or (positional[1] if len(positional) > 1 else None)
            test_arg = test_arg or (positional[2] if len(positional) > 2 else None)
            old = text(cls_arg.value) if cls_arg else None
            if cls_arg is None or old is None:
                return updated
            test = text(test_arg.value) if test_arg else None
            new = class_map.get((old, test or "*")) or class_map.get((old, "*"))
            if new is None or new == old:
                return updated
            assert isinstance(cls_arg.value, cst.SimpleString)
            quote = cls_arg.value.quote
            prefix = cls_arg.value.prefix
            new_arg = cls_arg.with_changes(value=cls_arg.value.with_changes(value=f"{prefix}{quote}{new}{quote}"))
            line = self.get_metadata(PositionProvider, original).start.line
            changes.append(Change(rule_id="TR009", line=line, description=f"DecorateInfo {old}.{test or '*'} -> {new}"))
            return updated.with_changes(args=[new_arg if a is cls_arg else a for a in updated.args])

    module = MetadataWrapper(_parse(code)).visit(Rewriter())
    return CodemodResult(code=module.code if changes else code, changes=changes)


def class_map(moves: list[TestMove]) -> dict[tuple[str, str], str]:
    """The ``decorate_info`` map for ``moves``: ``(old_class, test) -> new_class``.

    DecorateInfo names the generic class (``TestFoo``, never ``TestFooCPU``), so a
    mechanism-only change (same class, now per device) needs no entry.
    """
    return {(m.old_class, m.test): m.new_class for m in moves if m.old_class != m.new_class}
