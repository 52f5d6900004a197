"""Imports the PyTorch way: the codemods' import edits, and usort with PyTorch's settings.

``fix_imports`` drops names a codemod left unused and merges a new name into the file's
import of common_device_type (case-folded order, as usort sorts names); ``sort_imports``
then sorts the leading import block with usort as a library, using the checkout's own
``[tool.usort]`` (``usort_config``) or the bundled copy of PyTorch's
(``reference/refactor/usort.toml``). PyTorch's lintrunner runs usort through ufmt, so a
file that passed it before the refactor passes it after. libcst and usort are imported
inside the functions.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import TYPE_CHECKING
from reference import DIR as REFERENCE

if TYPE_CHECKING:
    import libcst as cst
    from usort import Config as UsortConfig

BUNDLED_USORT = REFERENCE / "refactor" / "usort.toml"
DEVICE_TYPE_MODULE = "torch.testing._internal.common_device_type"


def _insert_sorted(kept: list[cst.ImportAlias], new: cst.ImportAlias, add: str) -> list[cst.ImportAlias]:
    """Put ``add`` where usort would (names compare case-folded); append to an unsorted list."""
    names = [a.evaluated_name.casefold() for a in kept]
    if names == sorted(names):
        at = sum(1 for n in names if n < add.casefold())
        return [*kept[:at], new, *kept[at:]]
    return [*kept, new]


def _fix_import(stmt: cst.ImportFrom, drop: set[str], add: str | None) -> cst.ImportFrom | None:
    """``stmt`` without the ``drop`` names and with ``add`` (None: nothing left, remove it)."""
    import libcst as cst

    aliases = list(stmt.names) if not isinstance(stmt.names, cst.ImportStar) else []
    kept = [a for a in aliases if not (a.evaluated_name in drop and a.asname is None)]
    if add is not None:
        kept = _insert_sorted(kept, cst.ImportAlias(name=cst.Name(add)), add)
    if not kept:
        return None
    if kept == aliases:
        return stmt
    # Between names reuse the file's own separator (keeps one-per-line layouts); the last
    # name keeps whatever trailing comma the original list had.
    sep = next((a.comma for a in aliases[:-1] if isinstance(a.comma, cst.Comma)), None)
    sep = sep or cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    last = aliases[-1].comma if aliases else cst.MaybeSentinel.DEFAULT
    rebuilt = [a.with_changes(comma=sep) for a in kept[:-1]]
    rebuilt.append(kept[-1].with_changes(comma=last))
    return stmt.with_changes(names=rebuilt)


def fix_imports(module: cst.Module, drop: set[str], add: str | None) -> cst.Module:
    """Drop the unused ``drop`` names from top-level ``from X import`` lists; add ``add`` if missing.

    ``add`` merges into the top-level import of common_device_type (the first one that
    imported a dropped name, else any); with none, a new ``from ... import`` line goes after
    the last top-level import. Only top-level statements are read: the imports of a test
    file live there, and walking the whole tree would cost more than parsing it.
    """
    import libcst as cst

    def from_import(stmt: cst.BaseStatement) -> cst.ImportFrom | None:
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.ImportFrom):
            return stmt.body[0]
        return None

    def module_of(imp: cst.ImportFrom) -> str:
        return cst.helpers.get_full_name_for_node(imp.module) or "" if imp.module and not imp.relative else ""

    body = list(module.body)
    imported = {a.evaluated_alias or a.evaluated_name for s in body if (i := from_import(s)) is not None
                and not isinstance(i.names, cst.ImportStar) for a in i.names}
    need_add = add if add is not None and add not in imported else None
    home = None
    if need_add is not None:
        dropped_in = [n for n, s in enumerate(body) if (i := from_import(s)) is not None and not isinstance(i.names, cst.ImportStar)
                      and any(a.evaluated_name in drop and a.asname is None for a in i.names)]
        device_type = [n for n, s in enumerate(body) if (i := from_import(s)) is not None
                       and not isinstance(i.names, cst.ImportStar) and module_of(i) == DEVICE_TYPE_MODULE]
        home = (dropped_in or device_type or [None])[0]
    out: list[cst.BaseStatement] = []
    for n, stmt in enumerate(body):
        imp = from_import(stmt)
        if imp is None or isinstance(imp.names, cst.ImportStar):
            out.append(stmt)
            continue
        fixed = _fix_import(imp, drop, need_add if n == home else None)
        if fixed is None:
            continue
        out.append(stmt if fixed is imp else stmt.with_changes(body=[fixed]))
    if need_add is not None and home is None:
        new = cst.parse_statement(f"from {DEVICE_TYPE_MODULE} import {need_add}\n")
        last_import = max((i for i, s in enumerate(out) if isinstance(s, cst.SimpleStatementLine)
                           and isinstance(s.body[0], cst.Import | cst.ImportFrom)), default=-1)
        out.insert(last_import + 1, new)
    return module.with_changes(body=out)


def bare_uses(code: str, tree: ast.Module, name: str) -> int:
    """How often ``name`` appears as a bare word outside the top-level imports.

    A text count (comments and strings included) is a fraction of the cost of walking the
    tree, and errs only towards keeping an import, which verify then reports as unused.
    """
    pattern = re.compile(rf"(?<![\w.]){re.escape(name)}\b")
    lines = code.splitlines(keepends=True)
    total = len(pattern.findall(code))
    for stmt in tree.body:
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            total -= len(pattern.findall("".join(lines[stmt.lineno - 1:stmt.end_lineno or stmt.lineno])))
    return total


#: A top-level def, class or decorator: where a test file's import block has surely ended.
TOP_LEVEL_DEF = re.compile(r"^(?:@|class\s|def\s|async\s+def\s)", re.M)


def _importblock_end(code: str) -> int:
    """Length of the file's leading import block (0 when there is none): only the text before
    the first top-level def/class is parsed, not the whole file."""
    head = TOP_LEVEL_DEF.search(code)
    text = code[:head.start()] if head else code
    try:
        tree = ast.parse(text)
    except SyntaxError:  # the cut fell inside a string: parse it all
        text, tree = code, ast.parse(code)
    return block_end(text, tree)


def block_end(code: str, tree: ast.Module) -> int:
    """Length of the leading import block of ``code`` given its parsed ``tree``."""
    end = 0
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            break
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            end = stmt.end_lineno or stmt.lineno
    lines = code.splitlines(keepends=True)
    return sum(len(line) for line in lines[:end])


def _usort(text: str, config: UsortConfig) -> str | None:
    """usort's output for ``text``; None when usort cannot sort it."""
    from usort import usort

    result = usort(text.encode("utf-8"), config)
    if result.error is not None:
        return None
    return result.output.decode("utf-8")


def sort_imports(original: str, code: str, config: UsortConfig, original_end: int | None = None) -> str:
    """``code`` with its import block sorted by usort, when the ``original``'s block was sorted.

    PyTorch's lint runs usort (through ufmt) with ``[tool.usort]`` from its pyproject.toml.
    Only the leading import block is handed to usort (cheap, and the rest of the file is
    never touched). A file whose imports did not pass usort before is left in its own
    order: the refactor only places its new name, it does not reorder a file that its
    owners keep unsorted.
    """
    before = original[:_importblock_end(original) if original_end is None else original_end]
    if not before or _usort(before, config) != before:
        return code
    cut = _importblock_end(code)
    block = _usort(code[:cut], config)
    return code if block is None else block + code[cut:]


def usort_config(file: Path | None = None) -> UsortConfig:
    """PyTorch's usort settings: the checkout's own ``[tool.usort]`` when ``file`` sits in one,
    else the bundled copy of PyTorch's (``reference/refactor/usort.toml``)."""
    if file is not None:
        for folder in file.resolve().parents:
            pyproject = folder / "pyproject.toml"
            if pyproject.is_file():
                if "[tool.usort" in pyproject.read_text(encoding="utf-8", errors="replace"):
                    return _loaded(pyproject)
                break
    return _loaded(BUNDLED_USORT)


def _loaded(path: Path) -> UsortConfig:
    from usort import Config

    config = Config()
    config.update_from_config(path)
    return config
