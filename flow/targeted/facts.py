"""Per-file facts parsed with ``ast``, and a cache of them keyed by file content.

A file's facts depend only on its bytes, so the cache maps ``sha1(bytes)`` to facts and a
warm trace parses nothing. Facts are plain JSON (lists and dicts) to keep a warm load to
one ``orjson.loads``:

- ``i``: imports, each ``[module, level, [names]]``; ``level`` -1 marks a dynamic import
  (``importlib.import_module("x")`` / ``__import__("x")``) whose literal may be relative.
- ``s``: the distinct tokens of every string literal (paths, dotted names, model names).
- ``c``: top-level calls, each ``{"f": name, "l": line, "p": n_positional, "k": {kw: value},
  "bad": [kw whose value is not a literal]}``; registrations are read from these.
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

FACTS_VERSION = 1
Facts = dict[str, Any]

# Separators are anything outside names, dots, dashes and slashes: "--x=a.b c/d.py" splits
# into "--x", "a.b", "c/d.py".
_TOKEN = re.compile(r"[\w.\-/]{3,}")
_DYNAMIC = {"import_module", "__import__"}


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


def extract(source: bytes) -> Facts:
    """Parse ``source`` and return its facts; never raises (a syntax error lands in ``e``)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences in old code
            tree = ast.parse(source)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None)
        return {"i": [], "s": [], "c": [], "e": f"line {line}: {exc.__class__.__name__}: "
                f"{getattr(exc, 'msg', exc)}"}
    imports: list[list[Any]] = []
    tokens: set[str] = set()
    for node in ast.walk(tree):
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
    return {"i": imports, "s": sorted(tokens), "c": calls, "e": None}


def _extract_many(sources: list[bytes]) -> list[Facts]:
    return [extract(s) for s in sources]


class FactsCache:
    """Facts by content hash, persisted as one JSON file under ``cache_dir`` (or memory only
    when ``cache_dir`` is None). Not safe for concurrent writers: last ``save`` wins, which
    only costs a re-parse."""

    def __init__(self, cache_dir: Path | None) -> None:
        self.path = None if cache_dir is None else Path(cache_dir) / f"facts-v{FACTS_VERSION}.json"
        self.entries: dict[str, Facts] = {}
        self.dirty = False
        if self.path is not None and self.path.is_file():
            try:
                self.entries = orjson.loads(self.path.read_bytes())
            except (orjson.JSONDecodeError, OSError):
                self.entries = {}  # a corrupt cache is only a cold start

    def save(self) -> None:
        """Write the cache atomically when it changed; a no-op for a memory-only cache."""
        if self.path is None or not self.dirty:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(orjson.dumps(self.entries))
        os.replace(tmp, self.path)
        self.dirty = False


def facts_for(repo_dir: Path, paths: list[str], cache: FactsCache,
              workers: int = 0) -> dict[str, Facts]:
    """Facts of each readable file in ``paths`` (repo-relative), parsing only cache misses.

    ``workers`` > 1 parses misses in that many processes (worth it past a few hundred
    files); 0 picks ``min(4, cpu count)`` when there are more than 400 misses. Unreadable
    files are skipped. Never raises on file content.
    """
    out: dict[str, Facts] = {}
    misses: list[tuple[str, str, bytes]] = []
    entries = cache.entries
    for rel in paths:
        try:
            data = (repo_dir / rel).read_bytes()
        except OSError:
            continue
        key = hashlib.sha1(data).hexdigest()
        hit = entries.get(key)
        if hit is None:
            misses.append((rel, key, data))
        else:
            out[rel] = hit
    if not misses:
        return out
    if workers == 0:
        workers = min(4, os.cpu_count() or 1) if len(misses) > 400 else 1
    sources = [m[2] for m in misses]
    if workers > 1:
        from concurrent.futures import ProcessPoolExecutor
        size = -(-len(sources) // (workers * 4))
        chunks = [sources[i:i + size] for i in range(0, len(sources), size)]
        with ProcessPoolExecutor(max_workers=workers) as pool:
            parsed = [f for part in pool.map(_extract_many, chunks) for f in part]
    else:
        parsed = _extract_many(sources)
    for (rel, key, _), facts in zip(misses, parsed):
        entries[key] = facts
        out[rel] = facts
    cache.dirty = True
    return out
