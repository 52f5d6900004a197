"""Mechanical rules as libcst codemods that keep formatting and comments.

Each codemod is ``fn(code: str, ...) -> CodemodResult``; it never raises for valid
Python (a parse failure raises ``SourceSyntaxError``). libcst is imported inside the
functions so importing this module stays cheap.

- ``only_accelerator``   TR001: ``@onlyCUDA`` / ``@onlyOn(...)`` -> ``@onlyAccelerator``
- ``remove_only_native`` TR002: drop ``@onlyNativeDeviceTypes`` / ``@onlyNativeDeviceTypesAnd(...)``
- ``decorate_info``      TR009: rewrite ``DecorateInfo`` class names after moves
- sentinel renames (TR010) live in ``flow.refactor.sentinels`` (they rename files)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from flow.refactor.analysis import TestMove
from flow.refactor.errors import SourceSyntaxError

if TYPE_CHECKING:
    import libcst as cst

DEVICE_TYPE_MODULE = "torch.testing._internal.common_device_type"


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


def _used_names(module: cst.Module) -> set[str]:
    """Names referenced outside import statements."""
    import libcst as cst

    names: set[str] = set()

    class Collector(cst.CSTVisitor):
        def visit_Import(self, node: cst.Import) -> bool:
            return False

        def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
            return False

        def visit_Name(self, node: cst.Name) -> None:
            names.add(node.value)

    module.visit(Collector())
    return names


def _fix_imports(module: cst.Module, drop: set[str], add: str | None) -> cst.Module:
    """Remove unused ``drop`` names from ``from X import`` lists; add ``add`` if missing.

    ``add`` goes into the import of common_device_type (the first one that imported a
    dropped name, else any); with no such import, a new ``from ... import`` line is
    inserted after the last top-level import.
    """
    import libcst as cst

    used = _used_names(module)
    drop = {n for n in drop if n not in used}
    imported: set[str] = set()
    for stmt in module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
                    imported |= {a.evaluated_alias or a.evaluated_name for a in small.names}
    need_add = add is not None and add not in imported

    class Fixer(cst.CSTTransformer):
        added = False

        def leave_ImportFrom(self, original: cst.ImportFrom, updated: cst.ImportFrom) -> cst.ImportFrom | cst.RemovalSentinel:
            if isinstance(updated.names, cst.ImportStar):
                return updated
            module_name = cst.helpers.get_full_name_for_node(updated.module) if updated.module else ""
            aliases = list(updated.names)
            had_drop = any(a.evaluated_name in drop and a.asname is None for a in aliases)
            kept = [a for a in aliases if not (a.evaluated_name in drop and a.asname is None)]
            if need_add and add is not None and not self.added and (
                    had_drop or module_name == DEVICE_TYPE_MODULE):  # need_add implies add is set
                # Keep the list sorted when it was; otherwise append.
                new_alias = cst.ImportAlias(name=cst.Name(add))
                names = [a.evaluated_name for a in kept]
                if names == sorted(names):
                    at = sum(1 for n in names if n < add)
                    kept = [*kept[:at], new_alias, *kept[at:]]
                else:
                    kept = [*kept, new_alias]
                self.added = True
            if not kept:
                return cst.RemoveFromParent()
            if kept == aliases:
                return updated
            # Between names reuse the file's own separator (keeps one-per-line layouts);
            # the last name keeps whatever trailing comma the original list had.
            sep = next((a.comma for a in aliases[:-1] if isinstance(a.comma, cst.Comma)), None)
            sep = sep or cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            rebuilt = [a.with_changes(comma=sep) for a in kept[:-1]]
            rebuilt.append(kept[-1].with_changes(comma=aliases[-1].comma))
            return updated.with_changes(names=rebuilt)

    fixer = Fixer()
    module = module.visit(fixer)
    if need_add and not fixer.added and add is not None:
        new = cst.parse_statement(f"from {DEVICE_TYPE_MODULE} import {add}\n")
        body = list(module.body)
        last_import = max(
            (i for i, s in enumerate(body) if isinstance(s, cst.SimpleStatementLine) and isinstance(s.body[0], (cst.Import, cst.ImportFrom))),
            default=-1,
        )
        body.insert(last_import + 1, new)
        module = module.with_changes(body=body)
    return module


def _carry_lines(dec: cst.Decorator) -> list[cst.EmptyLine]:
    """The comment lines a removed decorator owned, so they survive the removal."""
    import libcst as cst

    lines = list(dec.leading_lines)
    comment = dec.trailing_whitespace.comment
    if comment is not None:
        lines.append(cst.EmptyLine(indent=True, comment=comment))
    return lines


def _rewrite_decorators(code: str, rule_id: str, targets: set[str], replacement: str | None) -> tuple[cst.Module, list[Change]]:
    """Replace (or, with ``replacement=None``, remove) decorators named in ``targets``."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    changes: list[Change] = []

    class Rewriter(cst.CSTTransformer):
        METADATA_DEPENDENCIES = (PositionProvider,)

        def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
            decorators: list[cst.Decorator] = []
            carried: list[cst.EmptyLine] = []
            seen: set[str] = set()
            for orig, dec in zip(original.decorators, updated.decorators, strict=True):
                name = _decorator_name(dec.decorator)
                line = self.get_metadata(PositionProvider, orig).start.line
                if name not in targets:
                    if carried:
                        dec = dec.with_changes(leading_lines=[*carried, *dec.leading_lines])
                        carried = []
                    decorators.append(dec)
                    continue
                if replacement is None or replacement in seen:
                    carried += _carry_lines(dec)
                    changes.append(Change(rule_id=rule_id, line=line, description=f"removed @{name} from {original.name.value}"))
                    continue
                seen.add(replacement)
                decorators.append(dec.with_changes(decorator=cst.Name(replacement)))
                changes.append(Change(rule_id=rule_id, line=line, description=f"@{name} -> @{replacement} on {original.name.value}"))
            if carried:
                if decorators:
                    return updated.with_changes(decorators=decorators, lines_after_decorators=[*updated.lines_after_decorators, *carried])
                return updated.with_changes(decorators=decorators, leading_lines=[*updated.leading_lines, *carried])
            return updated.with_changes(decorators=decorators)

    module = MetadataWrapper(_parse(code)).visit(Rewriter())
    return module, changes


def only_accelerator(code: str) -> CodemodResult:
    """TR001: ``@onlyCUDA`` / ``@onlyOn(...)`` -> ``@onlyAccelerator``, imports fixed."""
    module, changes = _rewrite_decorators(code, "TR001", {"onlyCUDA", "onlyOn"}, "onlyAccelerator")
    if not changes:
        return CodemodResult(code=code, changes=[])
    module = _fix_imports(module, {"onlyCUDA", "onlyOn"}, "onlyAccelerator")
    return CodemodResult(code=module.code, changes=changes)


def remove_only_native(code: str) -> CodemodResult:
    """TR002: remove ``@onlyNativeDeviceTypes`` / ``@onlyNativeDeviceTypesAnd(...)``."""
    names = {"onlyNativeDeviceTypes", "onlyNativeDeviceTypesAnd"}
    module, changes = _rewrite_decorators(code, "TR002", names, None)
    if not changes:
        return CodemodResult(code=code, changes=[])
    module = _fix_imports(module, names, None)
    return CodemodResult(code=module.code, changes=changes)


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
