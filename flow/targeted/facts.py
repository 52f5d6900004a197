"""Per-file facts parsed with ``ast``, and a cache of them keyed by file content.

A file's facts depend only on its bytes, so the cache maps ``sha1(bytes)`` to facts and a
warm trace parses nothing. Facts are plain JSON (lists and dicts) to keep a warm load to
one ``orjson.loads``:

- ``i``: imports, each ``[module, level, [names]]``; ``level`` -1 marks a dynamic import
  (``importlib.import_module("x")`` / ``__import__("x")``) whose literal may be relative.
- ``s``: the distinct tokens of every string literal (paths, dotted names, model names).
- ``c``: top-level calls, each ``{"f": name, "l": line, "p": n_positional, "k": {kw: value},
  "bad": [kw whose value is not a literal]}``; registrations are read from these.
- ``n``: every word (``\\w+``) of the imports and string tokens, plus ``"\\0rel"`` when the
  file has a relative or dynamic import: the names through which it can reach a file, for
  the import graph's importer index.
- ``e``: the syntax error, or None.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import warnings
from pathlib import Path
from typing import Any

import orjson

FACTS_VERSION = 2
Facts = dict[str, Any]

# Separators are anything outside names, dots, dashes and slashes: "--x=a.b c/d.py" splits
# into "--x", "a.b", "c/d.py".
_TOKEN = re.compile(r"[\w.\-/]{3,}")
_DYNAMIC = {"import_module", "__import__"}
_WORD = re.compile(r"\w+")
_WORD_B = re.compile(rb"\w+")
REL = "\0rel"  # index key of files with a relative or dynamic import


def words(data: bytes) -> set[str]:
    """Index keys of an unparsed file, a superset of its facts' ``n``: every ``\\w+`` word,
    plus ``REL`` when it may hold a relative or dynamic import."""
    out = {w.decode("latin-1") for w in _WORD_B.findall(data)}
    if b"from ." in data or b"import_module" in data or b"__import__" in data:
        out.add(REL)
    return out


def _call_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _top_call(node: ast.Call) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    bad: list[str] = []
    for kw in node.keywords:
        name = kw.arg if kw.arg is not None else "**"
        try:
            kwargs[name] = ast.literal_eval(kw.value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            bad.append(name)
    return {"f": _call_name(node.func), "l": node.lineno, "p": len(node.args),
            "k": kwargs, "bad": bad}


_AST = ast.AST
# Leaves that never hold a string or an import; skipping them (every Name carries a Load())
# makes the walk about three times faster than ast.walk.
_LEAVES = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)


def _walk(tree: ast.AST) -> list[ast.AST]:
    out: list[ast.AST] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        out.append(node)
        for name in node._fields:
            value = getattr(node, name, None)
            if value.__class__ is list:
                stack.extend([v for v in value if isinstance(v, _AST)])
            elif isinstance(value, _AST) and not isinstance(value, _LEAVES):
                stack.append(value)
    return out


def extract(source: bytes) -> Facts:
    """Parse ``source`` and return its facts; never raises (a syntax error lands in ``e``)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences in old code
            tree = ast.parse(source)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None)
        return {"i": [], "s": [], "c": [], "n": [], "e": f"line {line}: "
                f"{exc.__class__.__name__}: {getattr(exc, 'msg', exc)}"}
    imports: list[list[Any]] = []
    tokens: set[str] = set()
    for node in _walk(tree):
        cls = node.__class__
        if cls is ast.Constant:
            value = node.value  # type: ignore[attr-defined]
            if isinstance(value, str) and len(value) >= 3:
                tokens.update(_TOKEN.findall(value))
        elif cls is ast.Import:
            for alias in node.names:  # type: ignore[attr-defined]
                imports.append([alias.name, 0, []])
        elif cls is ast.ImportFrom:
            imports.append([node.module or "", node.level,  # type: ignore[attr-defined]
                            [a.name for a in node.names]])  # type: ignore[attr-defined]
        elif cls is ast.Call:
            name = _call_name(node.func)  # type: ignore[attr-defined]
            args = node.args  # type: ignore[attr-defined]
            if name in _DYNAMIC and args and isinstance(args[0], ast.Constant) \
                    and isinstance(args[0].value, str):
                imports.append([args[0].value, -1, []])
    calls = [_top_call(stmt.value) for stmt in tree.body
             if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)]
    names: set[str] = set()
    for mod, level, imported in imports:
        names.update(_WORD.findall(mod))
        names.update(imported)
        if level != 0:
            names.add(REL)
    for tok in tokens:
        names.update(_WORD.findall(tok))
    return {"i": imports, "s": sorted(tokens), "c": calls, "n": sorted(names), "e": None}


def _extract_many(sources: list[bytes]) -> list[Facts]:
    return [extract(s) for s in sources]


class FactsCache:
    """Facts by content hash, and the last tree's resolved edges (see ``ImportGraph``),
    persisted as one JSON file under ``cache_dir`` (or memory only when it is None). Not safe
    for concurrent writers: last ``save`` wins, which only costs a re-parse."""

    def __init__(self, cache_dir: Path | None) -> None:
        self.path = None if cache_dir is None else Path(cache_dir) / f"facts-v{FACTS_VERSION}.json"
        self.entries: dict[str, Facts] = {}
        self.edges: dict[str, Any] = {}  # {"tree": key, "files": {path: [sha1, [deps]]}}
        self.dirty = False
        if self.path is not None and self.path.is_file():
            try:
                raw = orjson.loads(self.path.read_bytes())
                self.entries, self.edges = raw["facts"], raw["edges"]
            except (orjson.JSONDecodeError, OSError, KeyError, TypeError):
                self.entries, self.edges = {}, {}  # a corrupt cache is only a cold start

    def save(self) -> None:
        """Write the cache atomically when it changed; a no-op for a memory-only cache.
        Never raises: a cache that cannot be written only costs the next run a re-parse."""
        from workspace.atomic import write_atomic

        if self.path is None or not self.dirty:
            return
        try:
            write_atomic(self.path, orjson.dumps({"facts": self.entries, "edges": self.edges}))
        except OSError:
            return
        self.dirty = False


def parse_many(sources: list[bytes], workers: int = 0) -> list[Facts]:
    """Facts of each source, in order. ``workers`` > 1 parses in that many processes;
    0 picks ``min(4, cpu count)`` past 400 sources, where it pays for the pool."""
    if workers == 0:
        workers = min(4, os.cpu_count() or 1) if len(sources) > 400 else 1
    if workers <= 1:
        return _extract_many(sources)
    from concurrent.futures import ProcessPoolExecutor
    size = -(-len(sources) // (workers * 4))
    chunks = [sources[i:i + size] for i in range(0, len(sources), size)]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return [f for part in pool.map(_extract_many, chunks) for f in part]


def sha1(data: bytes) -> str:
    """The cache key of a file's bytes."""
    return hashlib.sha1(data).hexdigest()
