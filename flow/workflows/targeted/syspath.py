"""Folders a file puts on ``sys.path``, read from the path expressions it spells.

Test packages for code outside any package do this in a ``conftest.py``: the folder is
built from ``__file__`` and put on ``sys.path`` so the tests import its modules by bare
name (``import nemogym_agent_function``). Often the folder is a constant of the package's
``__init__.py`` that the conftest imports (``from . import EXAMPLE_DIR``). We read, with an
``ast`` of the files that mention ``sys.path`` (few), every expression that builds a path
from ``__file__``:

- ``Path(__file__)`` with ``.resolve()`` / ``.absolute()``, ``.parent`` and
  ``.parents[N]``, then ``/ "a" / "b"`` with literal parts;
- ``os.path.dirname(...)`` around ``os.path.abspath(__file__)`` / ``__file__``, and
  ``os.path.join(<one of these>, "a", "b")``.

Each yields a repo-relative folder; the import graph keeps the ones that hold files.
Which files see them: a conftest's folders apply to every file under its directory
(pytest imports it first), any other file's to itself.
"""

from __future__ import annotations

import ast
import posixpath
import warnings

from flow.workflows.targeted.paths import norm

_OUT = "\0out"  # a path climbing above the repository


def _path_of(node: ast.expr, here: str) -> str | None:
    """The repo-relative path ``node`` builds from ``__file__`` (a file in folder
    ``here``), or None when it does not build one we can read."""
    if isinstance(node, ast.Name) and node.id == "__file__":
        return "\0file"
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name in ("Path", "PurePath", "abspath", "realpath", "normpath") and len(node.args) == 1:
            return _path_of(node.args[0], here)
        if name in ("resolve", "absolute") and isinstance(func, ast.Attribute):
            return _path_of(func.value, here)
        if name == "dirname" and len(node.args) == 1:
            inner = _path_of(node.args[0], here)
            return None if inner is None else _up(inner, 1, here)
        if name == "join" and node.args:
            base = _path_of(node.args[0], here)
            parts = [a.value for a in node.args[1:]
                     if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if base is None or len(parts) != len(node.args) - 1:
                return None
            return _join(base, parts, here)
    if isinstance(node, ast.Attribute) and node.attr == "parent":
        inner = _path_of(node.value, here)
        return None if inner is None else _up(inner, 1, here)
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) \
            and node.value.attr == "parents" and isinstance(node.slice, ast.Constant) \
            and isinstance(node.slice.value, int):
        inner = _path_of(node.value.value, here)
        return None if inner is None else _up(inner, node.slice.value + 1, here)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) \
            and isinstance(node.right, ast.Constant) and isinstance(node.right.value, str):
        base = _path_of(node.left, here)
        return None if base is None else _join(base, [node.right.value], here)
    return None


def _up(path: str, n: int, here: str) -> str:
    cur = here if path == "\0file" else path
    if path == "\0file":
        n -= 1  # the file's own parent is its folder
    for _ in range(n):
        if cur in ("", _OUT):
            return _OUT
        cur = posixpath.dirname(cur)
    return cur


def _join(base: str, parts: list[str], here: str) -> str | None:
    if base in ("\0file", _OUT):
        return None
    joined = norm(posixpath.join(base, *parts)) if base or parts else ""
    return joined


def folders(rel: str, sources: list[bytes]) -> list[str]:
    """Repo-relative folders that the path expressions in ``sources`` (the file ``rel``
    and, for a conftest, its package's ``__init__.py``) build from ``__file__``, in order,
    without duplicates. Never raises: a source that does not parse gives nothing."""
    here = posixpath.dirname(rel)
    out: list[str] = []
    for source in sources:
        if b"__file__" not in source:
            continue  # every path read here is built from __file__: nothing to parse for
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tree = ast.parse(source)
        except (SyntaxError, ValueError):
            continue
        inner: set[int] = set()  # parts of an expression already read whole
        for node in ast.walk(tree):  # breadth first: a whole expression before its parts
            if id(node) in inner or not isinstance(
                    node, (ast.BinOp, ast.Call, ast.Attribute, ast.Subscript)):
                continue
            got = _path_of(node, here)  # type: ignore[arg-type]
            if got is None:
                continue
            inner.update(id(n) for n in ast.walk(node))
            if got not in ("\0file", _OUT) and got not in out:
                out.append(got)
    return out
