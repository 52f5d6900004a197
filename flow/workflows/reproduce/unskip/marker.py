"""Remove an XPU skip decorator from exactly one test, keeping the file's formatting.

Seed, Stage 1: "all skipped by @skipIfXpu -> temporarily remove it in place, re-run once,
then revert the file so no change escapes this skill". The pure part,
``remove_skip_marker(source, node_id)``, returns both the original and the modified bytes;
the caller records a ``PendingRestore`` in its state *before* writing the modified file,
so a crash in between is undone on resume by ``restore``. Restoring writes the original
bytes back (not ``git checkout``, which would also drop a local edit made before us).

libcst is imported inside the functions: importing this module costs nothing.
"""
from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path
from typing import TYPE_CHECKING, cast

from pydantic import BaseModel, ConfigDict

from flow.workflows.reproduce.errors import SkipMarkerNotFound
from workspace.atomic import write_atomic

if TYPE_CHECKING:  # annotations only: libcst stays imported lazily
    from collections.abc import Sequence

    import libcst as cst


DEFAULT_XPU_SKIP_MARKERS = ("skipIfXpu", "skipXPU", "skipXPUIf", "skipIfXPU")

class Removal(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    original: bytes
    modified: bytes
    removed: list[str]      # decorator names taken off
    function: str           # the source-level name matched (``TestFoo.test_bar``)


class PendingRestore(BaseModel):
    """What the workflow saves in state before modifying a test file: the original bytes
    and the SHA-256 of the bytes our edit writes (``edited_sha256``), so a restore after a
    crash only undoes our own edit, never a change the user made in between."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    path: str
    original_b64: str
    original_sha256: str
    edited_sha256: str | None = None   # None only in states saved before it was recorded

    @classmethod
    def of(cls, path: str | Path, original: bytes, edited: bytes | None = None) -> "PendingRestore":
        return cls(path=str(path), original_b64=base64.b64encode(original).decode(),
                   original_sha256=hashlib.sha256(original).hexdigest(),
                   edited_sha256=hashlib.sha256(edited).hexdigest() if edited is not None else None)

    def original(self) -> bytes:
        return base64.b64decode(self.original_b64)


def split_node_id(node_id: str) -> tuple[str | None, str]:
    """(class or None, test) from ``file.py::Class::test[param]`` or ``Class::test``."""
    parts = [p for p in node_id.split("::") if p]
    if parts and parts[0].endswith(".py"):
        parts = parts[1:]
    if not parts:
        raise SkipMarkerNotFound(
            f"node id {node_id!r} names no test; pass file.py::Class::test or file.py::test",
            target=node_id)
    test = re.sub(r"\[.*\]$", "", parts[-1])
    return (parts[-2] if len(parts) >= 2 else None), test


def _candidates(cls: str | None, test: str) -> list[tuple[str | None, str]]:
    """Source names a collected id may come from: exact, then torch's device-generic
    instantiation (``TestFooXPU``/``test_bar_xpu_float32`` from ``TestFoo``/``test_bar``)."""
    out = [(cls, test)]
    base_cls = re.sub(r"XPU$", "", cls) if cls else cls
    m = re.match(r"^(.*?)_xpu(_.*)?$", test)
    base_test = m.group(1) if m else test
    for pair in ((base_cls, test), (cls, base_test), (base_cls, base_test)):
        if pair not in out:
            out.append(pair)
    return out


def _decorator_name(dec: cst.Decorator) -> str:
    """The dotted name a decorator is spelled with (``pytest.mark.skip``, ``skipIfXpu``)."""
    import libcst as cst

    node = dec.decorator
    if isinstance(node, cst.Call):
        node = node.func
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
    return ".".join(reversed(parts))


def marker_matches(decorator: str, marker: str) -> bool:
    """A profile's marker names the decorator: the same dotted name, or one is the other's
    tail (``skipIfXpu`` matches ``common_utils.skipIfXpu``; ``mark.skip`` matches
    ``pytest.mark.skip``). ``pytest.mark.skipif`` never matches ``pytest.mark.skip``."""
    return (decorator == marker or decorator.endswith("." + marker)
            or marker.endswith("." + decorator))


def is_pytest_mark(decorator: str) -> bool:
    """A pytest marker (``pytest.mark.skip``, ``mark.skip``): ``-p no:skipping`` bypasses it."""
    return decorator.startswith(("pytest.mark.", "mark."))


class Decorator(BaseModel):
    """A decorator on the target test, read with ``ast`` (no libcst needed to look)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    line: int


def _find(module: cst.Module, cls: str | None, test: str) -> cst.FunctionDef | None:
    import libcst as cst

    body: Sequence[cst.BaseStatement | cst.BaseSmallStatement] = module.body
    if cls is not None:
        for stmt in body:
            if isinstance(stmt, cst.ClassDef) and stmt.name.value == cls:
                body = stmt.body.body
                break
        else:
            return None
    for stmt in body:
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == test:
            return stmt
    return None


def _parse(source: bytes, node_id: str) -> cst.Module:
    """The libcst module of ``source``; SkipMarkerNotFound when libcst cannot parse it (a
    syntax newer than libcst knows, or a broken file): no marker can be located then."""
    import libcst as cst

    try:
        return cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        raise SkipMarkerNotFound(
            f"the file defining {node_id!r} does not parse with libcst ({exc.message}, line "
            f"{exc.raw_line}); take the marker off by hand and run with --stage nightly",
            target=node_id) from exc


def decorators(source: bytes, node_id: str) -> list[Decorator]:
    """The decorators (dotted name, line) on the test ``node_id`` names, read with the
    standard ``ast`` ([] when the test is not found or the file does not parse).
    Raises SkipMarkerNotFound when the id names no test."""
    import ast

    from flow.workflows.astnames import dotted

    cls, test = split_node_id(node_id)
    try:
        module = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    for c, t in _candidates(cls, test):
        body: list[ast.stmt] = module.body
        if c is not None:
            found = [s for s in body if isinstance(s, ast.ClassDef) and s.name == c]
            if not found:
                continue
            body = found[0].body
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == t:
                return [Decorator(name=dotted(d), line=d.lineno) for d in stmt.decorator_list]
    return []


def decorator_names(source: bytes, node_id: str) -> list[str]:
    """Decorator names on the test ``node_id`` names ([] when it is not found)."""
    return [d.name for d in decorators(source, node_id)]


def remove_skip_marker(source: bytes, node_id: str,
                       markers: tuple[str, ...] = DEFAULT_XPU_SKIP_MARKERS) -> Removal:
    """Take the XPU skip decorators off the one test ``node_id`` names.

    Raises SkipMarkerNotFound when the source does not parse, or the test is not in it or
    carries no marker. Everything else in the file (other tests' decorators, comments,
    blank lines) is kept.
    """
    module = _parse(source, node_id)
    cls, test = split_node_id(node_id)
    for c, t in _candidates(cls, test):
        func = _find(module, c, t)
        if func is not None:
            break
    else:
        raise SkipMarkerNotFound(
            f"test {node_id!r} is not defined in this file; check the node id against the "
            "file the reproducer runs", target=node_id)
    kept: list[cst.Decorator] = []
    removed: list[str] = []
    carry: Sequence[cst.EmptyLine] | None = None
    for dec in func.decorators:
        name = _decorator_name(dec)
        if any(marker_matches(name, m) for m in markers):
            removed.append(name)
            # The first decorator's leading lines (blank lines, comments) belong above the
            # function; hand them to whatever now comes first.
            if not kept and carry is None:
                carry = dec.leading_lines
            continue
        if carry is not None and not kept:
            dec = dec.with_changes(leading_lines=carry)
            carry = None
        kept.append(dec)
    if not removed:
        raise SkipMarkerNotFound(
            f"test {node_id!r} has no XPU skip marker among {list(markers)}; the skip is "
            "environmental or set on the class", target=node_id)
    new_func = func.with_changes(decorators=kept)
    if carry is not None:
        new_func = new_func.with_changes(leading_lines=[*carry, *new_func.leading_lines])
    # func lies inside module, so the replaced root is still the Module
    new_module = cast("cst.Module", module.deep_replace(func, new_func))
    name = f"{c}.{t}" if c else t
    return Removal(original=source, modified=new_module.code.encode(module.encoding),
                   removed=removed, function=name)


RestoreResult = str  # "unchanged" | "restored" | "kept" | "missing"


def restore(pending: PendingRestore) -> RestoreResult:
    """Put the original bytes back, only over our own edit. Idempotent.

    - ``unchanged``: the file already holds the original bytes;
    - ``restored``: it held exactly our edit (``edited_sha256``), now the original again;
    - ``kept``: it holds something else, the user's own change made after our edit: left
      as it is (the caller says so in the verdict's notes);
    - ``missing``: the file is gone; nothing is written.
    A pending restore saved before ``edited_sha256`` was recorded restores as before."""
    original = pending.original()
    path = Path(pending.path)
    if not path.exists():
        return "missing"
    now = path.read_bytes()
    if now == original:
        return "unchanged"
    if pending.edited_sha256 is not None and hashlib.sha256(now).hexdigest() != pending.edited_sha256:
        return "kept"
    write_atomic(path, original)
    return "restored"
