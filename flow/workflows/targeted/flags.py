"""Code a launch flag starts, and the tests that pass the flag (seed step 1, "Add misses":
code loaded some other way than an import).

miles' e2e tests start the trainer through a launcher hub with command-line flags, and some
flags make the trainer start or import a module that nothing else runs: ``--use-session-server``
makes the rollout's router manager spawn the session server; ``--megatron-to-hf-mode bridge``
with a LoRA rank makes the model setup call the bridge LoRA helpers. The import graph sees
those modules loaded by the trainer (behind the launcher hub, past the depth bound), never by
the tests that actually run them. This module learns such edges from the repository itself:

- A **gate** is code whose running depends on a flag's value: the body of an ``if`` whose
  test reads the parsed arguments (``args.x``, ``args.x == "v"``, ``args.x in ("a", "b")``,
  ``getattr(args, "x", ...)``, ``self.args.x``; conjuncts that read no argument, such as
  ``role == "actor"``, do not narrow it), or the rest of a block after an early exit
  (``if not getattr(args, "x", False): return``). A predicate called on the arguments
  (``is_lora_enabled(args)``) is read through its definition when that is one ``return``
  of such a test, in the file or in the module it is imported from (re-exports followed).
- What a gate **starts**: the modules whose imported names its code uses
  (``from m import run_server`` ... ``Process(target=run_server)``), and modules it imports
  itself.
- A test **passes** a flag when a file it reaches within the depth bound (the test itself,
  its helper, the runner the helper calls) spells the flag in a string that is not its
  definition, help or error text (``"--use-session-server"``, ``"--x bridge "``,
  ``["--x", "bridge"]``, an f-string value ``"--x {v}"`` counts as any value) or as a key
  of a dict of arguments (``"use_session_server": True``).

The trace asks ``FlagEdges.tests_starting(m)`` for each file it visits: the tests that pass
every condition of a gate starting ``m``, each with a ``why`` naming the gate (file, line,
condition), the module and the file that passes the flag. A flag passed by more enabled
CUDA tests than fit the files (``--colocate``) names no specific path: its edge is not
followed, and the trace reports it as a hub with those tests behind it. A profile may add edges by hand
(``[[flag_edges]]``: ``flag``, optional ``value``, ``starts``, ``why``), checked the same way.

Only importers of visited files are parsed for gates, and only those whose bytes read an
argument in an ``if``; results are cached by content like the other facts.
"""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

Atom = list  # [dest, value or None] or ["()", predicate name]
Conds = list  # DNF: alternatives, each a list of atoms that must all hold

ARGS_NAMES = frozenset({"args", "ns", "namespace", "_args", "cli_args", "train_args"})
_MAY_GATE = re.compile(rb"\bif\b[^\n]*\b(?:args|ns|namespace|_args|cli_args|train_args)\b")


def may_gate(source: bytes) -> bool:
    """True when ``source`` has an ``if`` line reading the arguments (only those are parsed)."""
    return _MAY_GATE.search(source) is not None


def _argslike(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id in ARGS_NAMES
    return isinstance(node, ast.Attribute) and node.attr in ARGS_NAMES


def _flag(node: ast.expr) -> str | None:
    """The argument ``node`` reads (``args.x``, ``getattr(args, "x", d)``), or None."""
    if isinstance(node, ast.Attribute) and _argslike(node.value):
        return node.attr
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "getattr" and len(node.args) >= 2 and _argslike(node.args[0])
            and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
        return node.args[1].value
    return None


def _strings(node: ast.expr) -> list[str] | None:
    elts = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [node]
    out = [e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return out if out and len(out) == len(elts) else None


_MAX_TERMS = 16  # a condition wider than this in DNF is read as unreadable (no narrowing)


def _compare(test: ast.Compare, positive: bool) -> Conds | None:
    if len(test.ops) != 1:
        return None
    op, left, right = test.ops[0], test.left, test.comparators[0]
    dest = _flag(left)
    if dest is None:
        dest, right = _flag(right), left
    if dest is None:
        return None
    values = _strings(right)
    equal = isinstance(op, ast.Eq | ast.In)
    unequal = isinstance(op, ast.NotEq | ast.NotIn)
    if values is not None and (equal if positive else unequal):
        return [[[dest, v]] for v in values]
    if isinstance(right, ast.Constant) and right.value is None:
        # ``args.x is not None`` holds when set; ``args.x is None`` holds when not
        holds_when_set = isinstance(op, ast.IsNot | ast.NotEq)
        return [[[dest, None]]] if holds_when_set == positive else None
    if values is not None:
        return None  # ``args.x != "v"`` in a positive test: some other value, unreadable
    return [[[dest, None]]] if positive else None  # ``args.x > 0``: set


def conjoin(parts: list[Conds]) -> Conds | None:
    """The AND of conditions in DNF (each a list of alternatives, each a list of atoms)."""
    out: Conds = [[]]
    for part in parts:
        out = [a + b for a in out for b in part]
        if len(out) > _MAX_TERMS:
            return None
    return out


def conditions(test: ast.expr, positive: bool = True) -> Conds | None:
    """What ``test`` requires of the arguments when it is true (``positive``) or false, in
    DNF: alternatives, each a list of atoms that must all hold, ``[dest, value]`` (value
    None: the flag is set at all) or ``["()", name]`` (a predicate on the arguments); None
    when it requires nothing readable."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return conditions(test.operand, not positive)
    if isinstance(test, ast.BoolOp):
        conj = isinstance(test.op, ast.And) == positive
        parts = [conditions(v, positive) for v in test.values]
        if conj:  # every part must hold: the readable parts narrow it
            readable = [p for p in parts if p]
            return conjoin(readable) if readable else None
        if any(p is None for p in parts):  # one unreadable alternative: anything goes
            return None
        out = [alt for p in parts for alt in p if p]
        return out if len(out) <= _MAX_TERMS else None
    dest = _flag(test)
    if dest is not None:
        return [[[dest, None]]] if positive else None
    if isinstance(test, ast.Compare):
        return _compare(test, positive)
    if (positive and isinstance(test, ast.Call) and isinstance(test.func, ast.Name)
            and any(_argslike(a) for a in test.args)):
        return [[["()", test.func.id]]]
    return None


def _exits(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], ast.Return | ast.Raise | ast.Continue | ast.Break)


class _Reader:
    """One file's gates: conditions and the line span of the code they guard."""

    def __init__(self) -> None:
        self.gates: list[dict[str, Any]] = []

    def record(self, stmts: list[ast.stmt], conds: Conds, line: int) -> None:
        last = max(getattr(st, "end_lineno", None) or st.lineno for st in stmts)
        self.gates.append({"c": conds, "a": stmts[0].lineno, "b": last, "l": line})

    def block(self, stmts: list[ast.stmt], outer: Conds | None) -> None:
        for i, st in enumerate(stmts):
            if isinstance(st, ast.If):
                cond = conditions(st.test)
                inner = (conjoin([outer, cond]) if outer else cond) if cond else outer
                if cond and inner:
                    self.record(st.body, inner, st.lineno)
                self.block(st.body, inner)
                self.block(st.orelse, outer)
                guard = conditions(st.test, positive=False)
                if guard and _exits(st.body) and not st.orelse and stmts[i + 1:]:
                    rest = stmts[i + 1:]  # ``if not args.x: return`` gates what follows
                    after = (conjoin([outer, guard]) if outer else guard) or outer
                    if after:
                        self.record(rest, after, st.lineno)
                    self.block(rest, after)
                    return
            elif isinstance(st, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self.block(st.body, outer)
            else:
                for field in ("body", "orelse", "finalbody"):
                    sub = getattr(st, field, None)
                    if isinstance(sub, list) and sub and isinstance(sub[0], ast.stmt):
                        self.block(sub, outer)
                for handler in getattr(st, "handlers", ()) or ():
                    self.block(handler.body, outer)


def _imports_of(node: ast.stmt) -> list[tuple[str, list]]:
    """``(bound name, [module, level, [name]])`` per name an import statement binds."""
    if isinstance(node, ast.Import):
        return [((a.asname or a.name.split(".")[0]),
                 [a.name if a.asname else a.name.split(".")[0], 0, []]) for a in node.names]
    if isinstance(node, ast.ImportFrom):
        return [(a.asname or a.name, [node.module or "", node.level, [a.name]])
                for a in node.names if a.name != "*"]
    return []


def read_gates(source: bytes) -> dict[str, Any]:
    """``{"g": gates, "p": predicates, "m": imported names}`` of ``source``: each gate
    ``{"c": conditions, "t": import entries its code uses, "l": line}``; predicates
    ``{name: conditions}`` of module-level functions returning a test of the arguments;
    ``m``: ``{name: [module, level, [name]]}`` of the module's imports; ``u``: the import
    entries of names used outside every gate. Never raises."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return {"g": [], "p": {}, "m": {}, "u": []}
    imported: dict[str, list] = {}
    at: list[tuple[int, list]] = []  # (line, entry) of every import statement
    loads: list[tuple[int, str]] = []  # (line, name) of every name read
    for node in ast.walk(tree):  # one walk; gates are matched to it by line span
        if isinstance(node, ast.Import | ast.ImportFrom):
            for name, entry in _imports_of(node):
                imported.setdefault(name, entry)
                at.append((node.lineno, entry))
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            loads.append((node.lineno, node.id))
    reader = _Reader()
    reader.block(tree.body, None)
    preds: dict[str, Conds] = {}
    for st in tree.body:
        if isinstance(st, ast.FunctionDef):
            body = [s for s in st.body if not (isinstance(s, ast.Expr)
                                                and isinstance(s.value, ast.Constant))]
            if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
                cond = conditions(body[0].value)
                if cond:
                    preds[st.name] = cond
    loads = [(line, n) for line, n in loads if n in imported]
    spans = [(g["a"], g["b"]) for g in reader.gates]
    # A module a gate starts is one whose names the file uses only inside gates: a name
    # also used outside them runs whatever the flags say.
    loose = {n for line, n in loads if not any(a <= line <= b for a, b in spans)}
    gates = []
    for g in reader.gates:
        a, b = g["a"], g["b"]
        used = sorted({n for line, n in loads if a <= line <= b and n not in loose})
        entries = [e for line, e in at if a <= line <= b] + [imported[n] for n in used]
        if entries:
            gates.append({"c": g["c"], "t": entries, "l": g["l"]})
    free = [imported[n] for n in sorted(loose)]
    return {"g": gates, "p": preds, "m": imported, "u": free}


def flag_token(dest: str) -> str:
    """The command-line spelling of argument ``dest``: ``use_session_server`` ->
    ``--use-session-server``."""
    return "--" + dest.replace("_", "-")


_PROSE_KW = frozenset({"help", "description", "epilog", "msg", "message", "usage"})
_MESSAGE_CALLS = frozenset({"print", "warn", "debug", "info", "warning", "error", "exception",
                            "critical", "fatal", "log"})


def _argument_strings(tree: ast.AST) -> list[str]:
    """String literals of ``tree`` in source order, leaving out text meant for a person
    (docstrings, ``help=``, assert and raise messages, log and print calls) and the
    option names of ``add_argument`` (a definition passes nothing); an f-string's fields
    read as NUL. One walk that does not enter the left-out parts."""
    out: list[tuple[int, int, str]] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                out.append((node.lineno, node.col_offset, node.value))
            continue
        if isinstance(node, ast.JoinedStr):
            out.append((node.lineno, node.col_offset, "".join(
                v.value if isinstance(v, ast.Constant) else "\0" for v in node.values)))
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant | ast.JoinedStr):
            continue  # a docstring or bare string
        if isinstance(node, ast.Assert):
            stack.append(node.test)
            continue
        if isinstance(node, ast.Raise):
            continue
        if isinstance(node, ast.keyword) and node.arg in _PROSE_KW:
            continue
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in _MESSAGE_CALLS or name == "add_argument":
                stack.append(func)
                stack.extend(node.keywords)
                continue
        stack.extend(ast.iter_child_nodes(node))
    return [v for _, _, v in sorted(out)]


def _may_pass(data: bytes, dest: str, value: str | None) -> bool:
    """A byte-level necessary condition of ``passes`` (no parse): the flag spelled before a
    value, or a dict key. Two searches, each opening with a literal or a character set the
    regex engine skips to in its own loop (one alternation of both would try every byte)."""
    flag = re.escape(flag_token(dest).encode())
    key = rb"[\"']" + re.escape(dest.encode()) + rb"[\"']\s*:\s*"
    if value is None:
        return (re.search(flag + rb"(?![\w-])", data) is not None
                or re.search(key + rb"True", data) is not None)
    v = re.escape(value.encode())
    return (re.search(flag + rb"(?:(?:=|[\"',\s]+)(?:" + v + rb"(?![\w-])|\{)|[\"'])", data)
            is not None or re.search(key + rb"[\"']" + v, data) is not None)


_DEFINES = re.compile(rb"add_argument\(")


def _near_assert(data: bytes, flag: bytes) -> bool:
    """True when a line spelling ``flag`` or one of the three before it says ``assert``
    (its message may be the only place the flag is spelled: parse to tell)."""
    if b"assert" not in data:
        return False  # most files: no need to split them into lines
    lines = data.split(b"\n")
    return any(b"assert" in w for i, line in enumerate(lines) if flag in line
               for w in lines[max(0, i - 3):i + 1])


class Spelled(NamedTuple):
    """What one parse of a file says about the flags it spells (``read_spelled``)."""

    defined: frozenset[str]  # option strings its ``add_argument`` calls name
    values: list[str]  # ``_argument_strings``: literals in source order, prose left out
    pairs: list[tuple[Any, Any]]  # (key, value) of each dict entry of two constants


def read_spelled(data: bytes) -> Spelled | None:
    """``Spelled`` of ``data``, or None when it does not parse. Never raises."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(data)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    defined: set[str] = set()
    pairs: list[tuple[Any, Any]] = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"):
            defined.update(a.value for a in node.args
                           if isinstance(a, ast.Constant) and isinstance(a.value, str))
        elif isinstance(node, ast.Dict):
            pairs += [(k.value, v.value) for k, v in zip(node.keys, node.values)
                      if isinstance(k, ast.Constant) and isinstance(v, ast.Constant)]
    return Spelled(frozenset(defined), _argument_strings(tree), pairs)


def passes(data: bytes, dest: str, value: str | None,
           tokens: Iterable[str] | None = None,
           spelled: Callable[[], Spelled | None] | None = None) -> bool:
    """True when ``data`` spells flag ``dest`` (with ``value``, when given) in a string
    that is not text for a person, and does not define it (the parser passes nothing).
    ``tokens`` (the file's string tokens from its facts) spare most files the parse: ``"--x v"``, ``"--x=v"``,
    ``["--x", "v"]``, ``f"--x {v}"`` (any value), or a dict key ``"x": True`` /
    ``"x": "v"``. ``spelled`` returns ``read_spelled(data)``, so a caller asking about
    several flags of one file can parse it once."""
    if not _may_pass(data, dest, value):
        return False  # most candidates: no parse
    flag = flag_token(dest)
    if tokens is not None:
        # The file's string tokens (the lexer's facts, prose left out): no token, no pass;
        # with neither an assert nor a parser in the file, the bytes say it all.
        if flag not in tokens and dest not in tokens:
            return False
        if not _DEFINES.search(data) and not _near_assert(data, flag.encode()):
            return True
    read = spelled() if spelled is not None else read_spelled(data)
    if read is None or flag in read.defined:  # the parser that defines the flag passes nothing
        return False
    values = read.values
    after = (r"(?![\w-])" if value is None
             else r"(?:=|\s+)(?:" + re.escape(value) + r"(?![\w-])|\0|$)")
    inline = re.compile(re.escape(flag) + after)
    for i, v in enumerate(values):
        if v.strip() == flag:
            nxt = values[i + 1].strip() if i + 1 < len(values) else ""
            if value is None or nxt == value or nxt.startswith("\0"):
                return True
        elif inline.search(v):
            return True
    # a dict of arguments: {"use_session_server": True}
    return any(k == dest and ((v is True) if value is None else v == value)
               for k, v in read.pairs)


def describe(conds: Conds) -> str:
    """``--x bridge and --lora-rank, or --multi-lora``."""
    return ", or ".join(" and ".join(flag_token(d) + (f" {v}" if v is not None else "")
                                     for d, v in alt) for alt in conds)


class FlagEdges:
    """The flag edges of one trace, resolved on demand.

    ``importers(path)``, ``data(path)`` and ``resolve(src, entry)`` come from the import
    graph; ``reach(path)`` is its depth-bounded reverse reach; ``tests`` the registered
    test files; ``gates_of(path)`` the cached ``read_gates`` of a file; ``manual`` the
    profile's hand-written edges."""

    def __init__(self, *, importers: Callable[[str], Iterable[str]],
                 data: Callable[[str], bytes | None], resolve: Callable[[str, list], list[str]],
                 reach: Callable[[str], Iterable[str]], tests: set[str],
                 gates_of: Callable[[str], dict[str, Any]], files: Callable[[], Iterable[str]],
                 manual: Iterable[Any] = (), test_side: Callable[[str], bool] = lambda _: False,
                 plain_imports: Callable[[str], Iterable[str]] = lambda _: (),
                 broad: Callable[[list[str]], bool] = lambda _: False,
                 passes: Callable[[str, str, str | None], bool] | None = None) -> None:
        # plain_imports(path): the files ``path`` loads or names (the graph's edges)
        self.importers, self.data, self.resolve = importers, data, resolve
        self.reach, self.tests, self.gates_of, self.files = reach, tests, gates_of, files
        self.manual = list(manual)
        self.test_side, self.plain_imports, self.broad = test_side, plain_imports, broad
        # passes(path, dest, value): cached by the graph; the bytes read directly without it
        self.passes = passes if passes is not None else self._passes
        self._passers: dict[tuple[str, str | None], list[str]] = {}
        self.edges: list[dict[str, Any]] = []  # every edge found (for the report)

    def _passes(self, path: str, dest: str, value: str | None) -> bool:
        return passes(self.data(path) or b"", dest, value)

    def _predicate(self, src: str, name: str, depth: int = 0) -> Conds | None:
        """The conditions of predicate ``name`` as ``src`` sees it (defined there, or
        imported: re-exports followed a few times)."""
        info = self.gates_of(src)
        if name in info["p"]:
            return info["p"][name]
        entry = info["m"].get(name)
        if entry is None or depth > 3:
            return None
        for target in self.resolve(src, [entry[0], entry[1], []]):
            got = self._predicate(target, name, depth + 1)
            if got:
                return got
        return None

    def _expand(self, src: str, conds: Conds) -> Conds:
        """``conds`` with each predicate replaced by its own conditions (an unreadable one
        does not narrow its alternative)."""
        out: Conds = []
        for alt in conds:
            parts: list[Conds] = []
            for atom in alt:
                if atom[0] == "()":
                    sub = self._predicate(src, atom[1])
                    sub = [[a for a in s if a[0] != "()"] for s in sub] if sub else None
                    if sub and all(sub):
                        parts.append(sub)
                else:
                    parts.append([[atom]])
            got = conjoin(parts) if parts else None
            out += got or []
        return [alt for alt in out if alt]

    def passers(self, dest: str, value: str | None) -> list[str]:
        """Files that pass flag ``dest`` (with ``value``)."""
        key = (dest, value)
        hit = self._passers.get(key)
        if hit is None:
            flag, name = flag_token(dest).encode(), dest.encode()
            hit = []
            for path in self.files():
                data = self.data(path)
                if data and (flag in data or name in data) and self.passes(path, dest, value):
                    hit.append(path)
            self._passers[key] = hit
        return hit

    def _tests_passing(self, conds: Conds) -> dict[str, str]:
        """``{test: the file passing its first flag}`` for tests passing every flag of some
        alternative of ``conds``."""
        out: dict[str, str] = {}
        for alt in conds:
            chosen: dict[str, str] | None = None
            for dest, value in alt:
                got: dict[str, str] = {}
                for p in self.passers(dest, value):
                    for t in sorted(set(self.reach(p)) & self.tests):
                        got.setdefault(t, p)
                chosen = got if chosen is None else {t: chosen[t] for t in chosen if t in got}
                if not chosen:
                    break
            for t, p in (chosen or {}).items():
                out.setdefault(t, p)
        return out

    def tests_starting(self, module: str) -> dict[str, str]:
        """``{test: why}`` for tests that pass a flag gating ``module``: only when no file
        outside the tests starts ``module`` whatever the flags say (an importer using one of
        its names outside every gate), since then every run that reaches it runs it and the
        import trace already says which tests do."""
        out: dict[str, str] = {}
        for rule in self.manual:
            if module in rule.starts:
                conds = [[[rule.flag.lstrip("-").replace("-", "_"), rule.value]]]
                self._add(out, conds, module, f"the profile says {rule.flag}"
                          + (f" {rule.value}" if rule.value else "")
                          + f" starts {module}" + (f" ({rule.why})" if rule.why else ""))
        found: list[tuple[str, dict[str, Any]]] = []
        runtime = [g for g in sorted(self.importers(module)) if g.endswith(".py")
                   and g not in self.tests and not self.test_side(g) and self.data(g)]
        gating = [g for g in runtime if may_gate(self.data(g) or b"")]
        # The importers with no ``if`` on the arguments first: one that loads the module
        # starts it whatever the flags say, and then no file needs a parse.
        if any(self._uses(g, module) for g in runtime if g not in gating):
            return out
        for gate_file in gating:
            info = self.gates_of(gate_file)
            if any(module in self.resolve(gate_file, e) for e in info["u"]):
                return out  # started whatever the flags say
            found += [(gate_file, g) for g in info["g"]
                      if any(module in self.resolve(gate_file, e) for e in g["t"])]
        for gate_file, gate in found:
            conds = self._expand(gate_file, gate["c"])
            if conds:
                self._add(out, conds, module, f"{gate_file}:{gate['l']} starts {module} "
                          f"when {describe(conds)}")
        return out

    def _uses(self, path: str, module: str) -> bool:
        """True when ``path`` (with no ``if`` on the arguments) loads or names ``module``
        (its resolved edges say so without a parse): it starts it whatever the flags say."""
        return module in self.plain_imports(path)

    def _add(self, out: dict[str, str], conds: Conds, module: str, gate: str) -> None:
        found = self._tests_passing(conds)
        if not found:
            return
        broad = self.broad(sorted(found))
        self.edges.append({"module": module, "gate": gate, "tests": sorted(found),
                           "followed": not broad})
        if broad:  # like a hub: a flag this many tests pass names no specific path
            return
        for test, passer in sorted(found.items()):
            where = "" if passer == test else f" (in {passer})"
            out.setdefault(test, f"flag: {gate}; the test passes it{where}")
