"""lexer.scan against what an ``ast`` walk reads from the same source.

The import graph takes imports and string literals from a regex-driven pass instead of a
syntax tree, for speed; these tests hold it to the ``ast``'s answer: per construct (each
case states the expected facts), and over real code (this project and part of the
standard library), where any disagreement is listed file by file.
"""

from __future__ import annotations

import ast
import random
import sys
import sysconfig
import warnings
from pathlib import Path

import pytest

from flow.workflows.targeted.facts import _TOKEN, constant_paths, read_calls, scan_facts
from flow.workflows.targeted.lexer import PROSE_KEYWORDS, SEP, scan

ROOT = Path(__file__).resolve().parents[2]


def ast_facts(source: bytes) -> tuple[list[list], set[str]] | None:
    """The reference: imports and non-empty str constants from a full ``ast`` walk (None
    when it does not parse). The scan's values are compared split at SEP."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    imports: list[list] = []
    values: set[str] = set()
    # A bare string statement (a docstring) names nothing that runs: the scan drops it.
    # (an f-string statement's own literal parts too; literals in its fields still count).
    bare: set[int] = set()
    raised = {id(n.exc) for n in ast.walk(tree) if isinstance(n, ast.Raise) and n.exc}
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and n.args and (id(n) in raised or _message_call(n.func)):
            first = n.args[0]  # a message for a person: the literal opening it names nothing
            while True:  # "..." % x, "..." + x, "...".format(x): the literal opening it
                if isinstance(first, ast.BinOp):
                    first = first.left
                elif isinstance(first, ast.Call) and isinstance(first.func, ast.Attribute):
                    first = first.func.value
                elif isinstance(first, ast.IfExp):
                    first = first.body
                elif isinstance(first, ast.Subscript):  # ("..." % x)[:256]
                    first = first.value
                else:
                    break
            if isinstance(first, ast.Constant):
                bare.add(id(first))
            elif isinstance(first, ast.JoinedStr):
                bare.update(id(v) for v in first.values if isinstance(v, ast.Constant))
        if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant):
            bare.add(id(n.value))
        elif isinstance(n, ast.Expr) and isinstance(n.value, ast.JoinedStr):
            bare.update(id(v) for v in n.value.values if isinstance(v, ast.Constant))
        elif isinstance(n, ast.keyword) and n.arg in PROSE_KEYWORDS:  # help text
            if isinstance(n.value, ast.Constant):
                bare.add(id(n.value))
            elif isinstance(n.value, ast.JoinedStr):
                bare.update(id(v) for v in n.value.values if isinstance(v, ast.Constant))
            elif isinstance(n.value, ast.BinOp) and isinstance(n.value.left, ast.Constant):
                bare.add(id(n.value.left))  # help="... %s" % x
        elif isinstance(n, ast.arguments):  # def f(help="..."): a parameter's default
            pos = n.posonlyargs + n.args
            pairs = list(zip(pos[len(pos) - len(n.defaults):], n.defaults))
            pairs += [(a, d) for a, d in zip(n.kwonlyargs, n.kw_defaults) if d is not None]
            bare.update(id(d) for a, d in pairs
                        if a.arg in PROSE_KEYWORDS and isinstance(d, ast.Constant))
    for node in ast.walk(tree):
        if id(node) in bare:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            values.add(node.value)
        elif isinstance(node, ast.JoinedStr):
            # a part after a field starting with "/" also gives its repo-relative tail
            for prev, part in zip(node.values, node.values[1:]):
                if isinstance(prev, ast.FormattedValue) and isinstance(part, ast.Constant) \
                        and id(part) not in bare and part.value.startswith("/"):
                    tail = _TOKEN.match(part.value, 1)
                    if tail:
                        values.add(tail.group())
        elif isinstance(node, ast.Import):
            imports += [[a.name, 0, []] for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            imports.append([node.module or "", node.level, [a.name for a in node.names]])
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name in ("import_module", "__import__"):
                imports.append([node.args[0].value, -1, []])
    return imports, values - {""}


_LOGGERS = {"logger", "logging", "log", "LOG", "LOGGER", "_logger", "_log", "_LOG"}
_LOG_METHODS = {"debug", "info", "warning", "warn", "error", "exception", "critical", "fatal",
                "log"}


def _message_call(func: ast.expr) -> bool:
    """print(...), warn(...), x.warn(...), logger.info(...), self.log.error(...)."""
    if isinstance(func, ast.Name):
        return func.id in ("print", "warn")
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr in ("print", "warn"):
        return True
    owner = func.value
    name = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", None)
    return func.attr in _LOG_METHODS and name in _LOGGERS


def lexer_facts(source: bytes) -> tuple[list[list], set[str]]:
    imports, values = scan(source.decode("utf-8", "surrogateescape"))
    return imports, {part for v in values for part in v.split(SEP)} - {""}


def _key(imports: list[list]) -> list[str]:
    return sorted(map(repr, imports))


CASES = [
    ("plain imports", "import os, a.b as c\nimport  x . y\n",
     [["os", 0, []], ["a.b", 0, []], ["x.y", 0, []]], set()),
    ("from-import forms", ("from . import a\nfrom ..p.q import (b as c,  # note (x)\n d,)\n"
     "from .m import *\nfrom .import e\n"),
     [["", 1, ["a"]], ["p.q", 2, ["b", "d"]], ["m", 1, ["*"]], ["", 1, ["e"]]], set()),
    ("continuation lines", "from a \\\n  import b\nimport c, \\\n d\n",
     [["a", 0, ["b"]], ["c", 0, []], ["d", 0, []]], set()),
    ("imports in blocks and one-liners", ("try: import a\nexcept ImportError: a = None\n"
     "def f():\n    import b; from c import d\n"),
     [["a", 0, []], ["b", 0, []], ["c", 0, ["d"]]], set()),
    ("keywords that are no import", ("def g():\n    yield from range(3)\n"
     "try:\n    pass\nexcept E as e:\n    raise X from e\n"), [], set()),
    ("import words inside strings and comments", ("s = 'import os'\n# from x import y\n"
     "t = '''\nfrom z import w\n'''\n"), [], {"import os", "\nfrom z import w\n"}),
    ("escapes and raw strings", "a = 'tools\\\\x.py'\nb = r'c:\\\\dir'\nc = b'bytes.py'\n",
     [], {"tools\\x.py", "c:\\\\dir"}),
    ("escapes in an f-string part ending in its quote", 'x = f"""a \\\nb "{y}"""\n',
     [], {'a b "'}),
    ("implicit concatenation in brackets", "f(\n  'pkg.'  # why\n  'mod.fn'\n)\n",
     [], {"pkg.mod.fn"}),
    ("no concatenation across statements", "x = 'a/b'\n'''doc of x'''\n",
     [], {"a/b"}),
    ("docstrings and bare string statements name nothing", (
     '"""Runs tests/conftest.py."""\nimport os\ndef f():\n    """See train.py."""  # c\n'
     '    return "kept/a.py"\nx = (\n    "in/brackets.py"\n)\n'),
     [["os", 0, []]], {"kept/a.py", "in/brackets.py"}),
    ("help text names nothing", ('p.add_argument("--fn", help="e.g. pkg/mis.py:f",\n'
     '                 default="pkg.loss.fn")\n'), [], {"--fn", "pkg.loss.fn"}),
    ("concatenation across a continuation", "x = 'tools/' \\\n    'run.py'\n",
     [], {"tools/run.py"}),
    ("f-string parts, fields and specs", "s = f'pre {x:>10} mid {\"inner\"!r} {y=} post'\n",
     [], {"pre ", ">10", " mid ", "inner", " y=", " post"}),
    ("nested format spec", "s = f'{v:.{digits}f}end'\n", [], {".", "f", "end"}),
    ("dynamic imports", ("import importlib\nm = importlib.import_module('pkg.' 'mod')\n"
     "n = __import__(\n  '.rel', package=p)\n"),
     [["importlib", 0, []], ["pkg.mod", -1, []], [".rel", -1, []]], {"pkg.mod", ".rel"}),
    ("prefixed literals concatenate and import", ("m = import_module(u'pkg.' r'mod')\n"
     "t = 'tools/' \\\n    F'run.py'\n"), [["pkg.mod", -1, []]], {"pkg.mod", "tools/run.py"}),
    ("dynamic imports that are no literal", ("m = import_module('pkg.' + name)\n"
     "n = import_module(f'pkg.{x}')\n"), [], {"pkg."}),
]


@pytest.mark.parametrize("name,src,imports,values", CASES, ids=[c[0] for c in CASES])
def test_construct(name, src, imports, values):
    """Each construct gives the stated facts, and the ``ast`` walk agrees."""
    got_imports, got_values = lexer_facts(src.encode())
    reference = ast_facts(src.encode())
    assert reference is not None
    assert (_key(got_imports), got_values) == (_key(imports), values) \
        == (_key(reference[0]), reference[1])


def test_unterminated_literal_does_not_raise():
    """Not Python, so any reading will do, as long as what came before stands."""
    imports, _ = scan("import a\ns = '''never closed\nimport b\n")
    assert imports[0] == ["a", 0, []]


def test_syntax_error_keeps_what_the_file_spells():
    """ast reports the error (registrations need it); the scan still reads the imports, so
    a file mid-edit still reaches what it imports."""
    source = b"import pkg.util\ndef broken(:\n"
    assert (scan_facts(source)["i"], read_calls(source)["e"] is not None) == (
        [["pkg.util", 0, []]], True)


def test_calls_of_a_registration():
    calls = read_calls(b"register_cuda_ci(est_time=60, suite=S)\n")
    assert (calls["e"], calls["c"][0]["k"], calls["c"][0]["bad"]) == (None, {"est_time": 60},
                                                                      ["suite"])


def _sample() -> list[Path]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(stdlib.glob("*.py"))
    for pkg in ("email", "json", "importlib", "asyncio", "logging", "concurrent", "unittest"):
        files += sorted((stdlib / pkg).rglob("*.py"))
    for part in ("flow", "agents", "workspace", "tests", "bench"):
        files += sorted((ROOT / part).rglob("*.py"))
    return files


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="the 3.12+ standard library has f-strings "
                    "that reuse their own quote (turtle.py), a known limit of the lexer (see "
                    "flow/workflows/targeted/lexer.py); the generated programs still run there")
@pytest.mark.slow
def test_agrees_with_ast_on_real_code():
    """Over hundreds of real files: the same imports and the same string tokens (the
    facts the graph resolves)."""
    files = _sample()
    assert len(files) > 300
    disagree = []
    for path in files:
        source = path.read_bytes()
        reference = ast_facts(source)
        if reference is None:
            continue
        facts = scan_facts(source)
        if _key(facts["i"]) != _key(reference[0]):
            disagree.append(f"{path}: imports {sorted(map(repr, facts['i']))[:3]}...")
        tokens = {t for v in reference[1] if len(v) >= 3 for t in _TOKEN.findall(v)}
        # paths folded from constants and joins are ast work in both (constant_paths)
        tokens |= {t for v in constant_paths(source.decode("utf-8", "surrogateescape"))
                   for t in _TOKEN.findall(v) if "/" in t}
        missing, extra = tokens - set(facts["s"]), set(facts["s"]) - tokens
        if missing or extra:
            disagree.append(f"{path}: strings only in ast {sorted(missing)[:3]}, "
                            f"only in the scan {sorted(extra)[:3]}")
    assert disagree == []


# Fragments the generated programs are made of: every kind of literal (prefixes, quotes,
# escapes, f-string fields, specs, debug "="), comments, brackets, continuations, imports.
_PIECES = ["a", "pkg.mod", "tools/x.py", " ", "\\n", "\\\\", "#", "(", ")", "-", "_",
           "import os", "from a import b"]
_FIELDS = ["{x}", "{{", "}}", "{y!r}", "{z:>3}", "{w=}", "{'in' + q}", "{v:.{d}f}"]


def _literal(rng: random.Random) -> str:
    quote = rng.choice(["'", '"', "'''", '"""'])
    prefix = rng.choice(["", "", "r", "f", "rf", "b", "u", "F", "Rb"])
    fstring = "f" in prefix.lower()
    body = "".join(rng.choice(_PIECES + (_FIELDS if fstring else [])) for _ in range(rng.randint(0, 6)))
    if fstring and "'" in body and quote == "'":
        body = body.replace("'", '"')  # a field may not reuse the quote (before 3.12)
    if fstring and '"' in body and quote == '"':
        body = body.replace('"', "'")
    return prefix + quote + body + quote


def _statement(rng: random.Random) -> str:
    lit = _literal
    return rng.choice([
        lambda: "import " + rng.choice(["os", "a.b as c", "x, y.z"]),
        lambda: "from " + rng.choice([".", "..", "pkg", ".m", "a.b"]) + " import "
        + rng.choice(["x", "(a,\n b as c,  # c (d)\n)", "*", "p as q, r"]),
        lambda: "s = " + lit(rng),
        lambda: "f(" + ",\n  ".join(f"{lit(rng)} {lit(rng)}" for _ in range(rng.randint(1, 3))) + ")",
        lambda: "# a comment with 'quote' and import x",
        lambda: "m = importlib.import_module(" + lit(rng) + ")",
        lambda: "x = [" + lit(rng) + ",  # note\n " + lit(rng) + "]",
        lambda: "def g():\n    yield from range(3)\n    return " + lit(rng),
        lambda: "t = " + lit(rng) + " \\\n    " + lit(rng),
        lambda: "u = __import__(" + lit(rng) + " + name)",
        lambda: lit(rng),
        lambda: "if x:\n    import q.r\nelse:\n    raise E from None",
    ])()


@pytest.mark.parametrize("seed", range(3))
def test_agrees_with_ast_on_generated_programs(seed):
    """Thousands of small programs mixing every construct: the same imports and values as
    the ast walk (the ones ast refuses, such as bytes joined to str, are skipped)."""
    rng = random.Random(seed)
    compared, disagree = 0, []
    for _ in range(3000):
        source = ("\n".join(_statement(rng) for _ in range(rng.randint(1, 6))) + "\n").encode()
        reference = ast_facts(source)
        if reference is None:
            continue
        compared += 1
        imports, values = lexer_facts(source)
        if (_key(imports), values) != (_key(reference[0]), reference[1]):
            disagree.append(source.decode())
    assert (compared > 2000, disagree[:2]) == (True, [])
