"""Per-file facts, and a cache of them keyed by file content.

A file's facts depend only on its bytes, so the cache maps ``sha1(bytes)`` to them and a
warm trace scans nothing. Facts are plain JSON (lists and dicts), one ``orjson.loads``:

- ``i``: imports, each ``[module, level, [names]]``; ``level`` -1 marks a dynamic import
  (``importlib.import_module("x")`` / ``__import__("x")``) whose literal may be relative.
- ``s``: the distinct tokens of every string literal (paths, dotted names, model names),
  plus the repo-relative tail of an f-string part that follows a field and starts with
  ``/`` (``f"{repo_base_dir}/tools/x.py"`` names ``tools/x.py``: a script launched by path),
  and the value of a module-level constant built from literals (``_SCRIPT = Path("tools") /
  "x.py"``, ``"tools" + "/x.py"``, ``os.path.join(...)``, an f-string of such constants,
  ``os.path.join(TOOLS_DIR, TOOL_NAME)`` of earlier constants) and of the same joins
  written inline (a computed root first, ``os.path.join(REPO, TOOLS_DIR, NAME)``, leaves
  the known tail): a launch path held in a name is resolved as a literal one is.
- ``n``: every word (``\\w+``) of the imports and string tokens, plus ``"\\0rel"`` when the
  file has a relative or dynamic import: the names through which it can reach a file, for
  the import graph's importer index.

They come from ``lexer.scan``, one regex-driven pass, not from an ``ast``: for these facts
it agrees with an ``ast`` walk and costs a fraction of one. Test files also need their
*calls* (``read_calls``: the top-level calls registrations are read from, and the syntax
error if any), which take a full ``ast``; they are cached apart, by content too.
"""

from __future__ import annotations

import ast
import hashlib
import os
import pickle
import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from flow.workflows.targeted.lexer import SEP, scan

FACTS_VERSION = 10  # bump when facts, calls or the graph file change shape
Facts = dict[str, Any]
Calls = dict[str, Any]  # read_calls: {"c": [top-level calls], "e": syntax error or None}

# Separators are anything outside names, dots, dashes and slashes: "--x=a.b c/d.py" splits
# into "--x", "a.b", "c/d.py".
_TOKEN = re.compile(r"[\w.\-/]{3,}")
_WORD = re.compile(r"\w+")
_FIELD_PATH = re.compile(r"/([\w.\-/]{3,})")
REL = "\0rel"  # index key of files with a relative or dynamic import


def _call_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _top_call(node: ast.Call) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    bad: list[str] = []
    args: list[Any] = []
    for i, arg in enumerate(node.args):
        try:
            args.append(ast.literal_eval(arg))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            args.append(None)
            bad.append(f"#{i}")
    for kw in node.keywords:
        name = kw.arg if kw.arg is not None else "**"
        try:
            kwargs[name] = ast.literal_eval(kw.value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            bad.append(name)
    return {"f": _call_name(node.func), "l": node.lineno, "z": node.end_lineno or node.lineno,
            "p": len(node.args), "a": args,
            "k": kwargs, "bad": bad}


def scan_facts(source: bytes) -> Facts:
    """The facts of ``source`` (see the module docstring). Never raises."""
    text = source.decode("utf-8", "surrogateescape")
    imports, values = scan(text)
    # No token spans a NUL, so one findall over the joined values finds each value's own.
    tokens = set(_TOKEN.findall("\0".join(values)))
    # An f-string part that follows a field and starts with "/" continues a path the
    # field holds (``f"{repo_base_dir}/tools/convert.py"``): its tail is repo-relative.
    for value in values:
        if SEP in value:
            for part in value.split(SEP)[1:]:
                m = _FIELD_PATH.match(part)
                if m:
                    tokens.add(m.group(1))
    tokens.update(t for v in constant_paths(text) for t in _TOKEN.findall(v) if "/" in t)
    names = set(_WORD.findall(" ".join(tokens)))
    for mod, level, imported in imports:
        names.update(_WORD.findall(mod))
        names.update(imported)
        if level != 0:
            names.add(REL)
    return {"i": imports, "s": sorted(tokens), "n": sorted(names)}


# A module-level assignment (at column 0, on one line): its value may spell a string, or
# join constants that do (``TOOL = os.path.join(TOOLS_DIR, TOOL_NAME)``). Searched in the
# text after a "\n" put in front, so the pattern opens with a literal character, which the
# regex engine finds in its own loop (a ``^`` tried at every position costs more).
_CONSTANT = re.compile(r"\n([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=[ \t]*([^=\n][^\n]*)")
# A path built inline from constants: ``os.path.join(TOOLS_DIR, TOOL_NAME)``, ``Path(A, B)``
# (each name opens with its letter, the word boundary checked just after it, for the same
# reason).
_INLINE_JOIN = re.compile(r"(?:j(?<=\bj)oin|P(?<=\bP)(?:ath|urePath|osixPath|urePosixPath))"
                          r"\([^()\n]*\)")
_PATH_CALLS = {"Path", "PurePath", "PosixPath", "PurePosixPath", "join"}
_JOINS = re.compile(r"[\"'/+]|\bjoin\(|Path\(|\{")


def constant_paths(text: str) -> list[str]:
    """Values of module-level constants built from literals and earlier such constants:
    ``Path("a") / "b.py"``, ``"a" + "/b.py"``, ``os.path.join("a", "b.py")``,
    ``os.path.join(A, B)`` of such constants, ``f"{A}/b.py"``; and the same joins written
    inline anywhere in the file (``run([sys.executable, os.path.join(TOOLS_DIR, NAME)])``).
    Anything else (a call, ``__file__``, an unknown name) is no constant. Never raises."""
    known: dict[str, str] = {}
    for m in _CONSTANT.finditer("\n" + text):
        value_text = m.group(2).strip()
        if not _JOINS.search(value_text):
            continue  # no literal and no join: cannot spell a path
        value = _parse_fold(value_text, known)
        if value is not None:
            known[m.group(1)] = value
    out = [v for v in known.values() if "/" in v]
    if known and ("join(" in text or "Path(" in text):
        for m in _INLINE_JOIN.finditer(text):
            value = _parse_fold(m.group(0), known)
            if value is not None and "/" in value:
                out.append(value)
    return out


def _parse_fold(expr: str, known: dict[str, str]) -> str | None:
    try:
        node = ast.parse(expr, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    return _fold(node, known)


def _fold(node: ast.expr, known: dict[str, str]) -> str | None:
    """The string ``node`` evaluates to from literals and ``known`` constants, or None."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.Name):
        return known.get(node.id)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Div, ast.Add)):
        left, right = _fold(node.left, known), _fold(node.right, known)
        if left is None or right is None:
            return None
        return f"{left}/{right}" if isinstance(node.op, ast.Div) else left + right
    if isinstance(node, ast.Call) and not node.keywords:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name in _PATH_CALLS and node.args:
            parts = [_fold(a, known) for a in node.args]
            # A root the file computes (``os.path.join(REPO_ROOT, TOOLS_DIR, NAME)``) leaves
            # the known tail, read as repo-relative like an f-string's ``{root}/tools/x.py``.
            while parts and parts[0] is None and len(parts) > 1:
                parts = parts[1:]
            return None if None in parts else "/".join(p for p in parts if p is not None)
        return None
    if isinstance(node, ast.JoinedStr):
        out = []
        for v in node.values:
            part = (_fold(v.value, known) if isinstance(v, ast.FormattedValue)
                    else _fold(v, known))
            if part is None:
                return None
            out.append(part)
        return "".join(out)
    return None


def text_facts(source: bytes) -> Facts:
    """Facts of a file that is not Python (a model definition's shell fragment): no
    imports, every token of its text a string token. Never raises."""
    tokens = set(_TOKEN.findall(source.decode("utf-8", "replace")))
    names = set(_WORD.findall(" ".join(tokens)))
    return {"i": [], "s": sorted(tokens), "n": sorted(names)}


PARALLEL_MIN = 400  # jobs below which a second process costs more than it saves


def scan_many(sources: list[bytes]) -> list[Facts]:
    """``scan_facts`` of each source, in order, split with a second process as ``in_two``
    says."""
    return in_two([(scan_facts, s, len(s)) for s in sources])


def in_two(jobs: list[tuple[Callable[[bytes], Any], bytes, int]]) -> list[Any]:
    """``fn(data)`` for each ``(fn, data, weight)`` job, in order. A large batch (a cold
    cache) is split by weight with one forked child when the machine has a second core and
    this process one thread; if the child fails, the parent runs its share too, so the
    answer never depends on it. The child's results come back pickled: the same values
    the parent would have computed (a tuple stays a tuple)."""
    if len(jobs) < PARALLEL_MIN or not _can_fork():
        return [fn(data) for fn, data, _ in jobs]
    total, done, half = sum(w for _, _, w in jobs), 0, len(jobs) // 2
    for i, (_, _, weight) in enumerate(jobs):
        if 2 * done >= total:
            half = i
            break
        done += weight
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run the second share, send it pickled, leave at once
        code = 1
        try:
            os.close(read_end)
            payload = pickle.dumps([fn(data) for fn, data, _ in jobs[half:]], protocol=5)
            with os.fdopen(write_end, "wb") as out:
                out.write(payload)
            code = 0
        finally:
            os._exit(code)  # no atexit handlers, no flushing of the parent's buffers
    os.close(write_end)
    mine = [fn(data) for fn, data, _ in jobs[:half]]
    with os.fdopen(read_end, "rb") as inp:
        payload = inp.read()
    _, status = os.waitpid(pid, 0)
    theirs: list[Any] | None = None
    if status == 0:
        try:
            theirs = pickle.loads(payload)
        except Exception:  # noqa: BLE001 - a truncated payload: the parent runs the share
            theirs = None
    if not isinstance(theirs, list) or len(theirs) != len(jobs) - half:
        theirs = [fn(data) for fn, data, _ in jobs[half:]]
    return mine + theirs


def _can_fork() -> bool:
    import threading

    return hasattr(os, "fork") and (os.cpu_count() or 1) > 1 and threading.active_count() == 1


def read_calls(source: bytes) -> Calls:
    """``{"c": top-level calls, "e": None}`` from an ``ast`` of ``source``, each call
    ``{"f": name, "l": line, "z": last line, "p": n_positional, "a": [positional values],
    "k": {kw: value},
    "bad": [kw whose value is not a literal; "#i" for positional argument i]}``; on a syntax error ``{"c": [], "e": "line N: ..."}``. Never raises."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences in old code
            tree = ast.parse(source)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None)
        return {"c": [], "e": f"line {line}: {exc.__class__.__name__}: {getattr(exc, 'msg', exc)}"}
    return {"c": [_top_call(stmt.value) for stmt in tree.body
                  if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)], "e": None}


class FactsCache:
    """Facts and calls by content hash, and the last tree's resolved graph (see
    ``ImportGraph``), persisted under ``cache_dir`` (memory only when it is None).

    Two files: ``graph-v*.json`` (edges, importers, calls: small, read at once) and
    ``facts-v*.json`` (every file's facts: read only when a facts lookup needs it, which
    a re-run on an unchanged checkout does not). Not safe for concurrent writers: the
    last ``save`` wins, which only costs a re-scan. A corrupt file is a cold start.
    """

    def __init__(self, cache_dir: Path | None) -> None:
        self.dir = None if cache_dir is None else Path(cache_dir)
        raw = self._read("graph")
        self.graph: dict[str, Any] = raw if isinstance(raw, dict) else {}
        self.calls: dict[str, Calls] = self.graph.pop("calls", None) or {}
        # flags.read_gates of the files a trace asked about, by content
        self.gates: dict[str, Any] = self.graph.pop("gates", None) or {}
        self._entries: dict[str, Facts] | None = None
        self.dirty = False  # graph or calls changed
        self.facts_dirty = False

    @property
    def entries(self) -> dict[str, Facts]:
        """Facts by content hash (the facts file is read on first use)."""
        if self._entries is None:
            raw = self._read("facts")
            self._entries = raw if isinstance(raw, dict) else {}
        return self._entries

    def put(self, key: str, facts: Facts) -> None:
        self.entries[key] = facts
        self.facts_dirty = True

    def put_calls(self, key: str, calls: Calls) -> None:
        self.calls[key] = calls
        self.dirty = True

    def put_gates(self, key: str, gates: Any) -> None:
        self.gates[key] = gates
        self.dirty = True

    def set_graph(self, graph: dict[str, Any]) -> None:
        """The resolved graph of the last tree (edges, importers; see ``ImportGraph``)."""
        self.graph = graph
        self.dirty = True

    def prune(self, current: set[str], spare: int) -> None:
        """Keep the facts and calls of the content hashes in ``current`` and of at most
        ``spare`` others, the most recently added (earlier versions of files, another
        branch's): without this the cache would grow with every edit ever traced. The
        facts file is not read just for this."""
        for store, which in ((self._entries, "facts"), (self.calls, "calls"),
                             (self.gates, "gates")):
            if store is None or len(store) <= len(current) + spare:
                continue
            others = [key for key in store if key not in current]
            for key in others[: max(len(others) - spare, 0)]:
                del store[key]
            if which == "facts":
                self.facts_dirty = True
            else:
                self.dirty = True

    def _file(self, kind: str) -> Path | None:
        return None if self.dir is None else self.dir / f"{kind}-v{FACTS_VERSION}.json"

    def _read(self, kind: str) -> Any:
        path = self._file(kind)
        if path is None or not path.is_file():
            return None
        try:
            return orjson.loads(path.read_bytes())
        except (orjson.JSONDecodeError, OSError):
            return None

    def save(self) -> None:
        """Write what changed, atomically; a no-op for a memory-only cache. Never raises:
        a cache that cannot be written (a full disk, or a value JSON has no form for, such
        as a set or bytes literal a registration call passes) only costs the next run a
        re-scan."""
        from workspace.atomic import write_atomic

        if self.dir is None:
            return
        try:
            if self.facts_dirty or self.dirty:  # files of other versions are only dead weight
                for old in self.dir.glob("*-v*.json"):
                    if not old.name.endswith(f"-v{FACTS_VERSION}.json"):
                        old.unlink(missing_ok=True)
            if self.facts_dirty:
                write_atomic(self._file("facts"), orjson.dumps(self.entries))  # type: ignore[arg-type]
                self.facts_dirty = False
            if self.dirty:
                write_atomic(self._file("graph"),  # type: ignore[arg-type]
                             orjson.dumps({**self.graph, "calls": self.calls,
                                           "gates": self.gates}))
                self.dirty = False
        except (OSError, TypeError):  # orjson.JSONEncodeError is a TypeError
            return


def sha1(data: bytes) -> str:
    """The cache key of a file's bytes."""
    return hashlib.sha1(data).hexdigest()
