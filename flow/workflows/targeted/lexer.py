"""What the import graph needs from a Python file, read in one regex-driven pass.

``scan(text)`` returns the file's imports and the values of its string literals, the same
facts an ``ast`` walk yields, at a fraction of the cost: walking every node of a syntax
tree cost twice the parse itself and kept a cold trace several times slower than grimp's
Rust parser.

Why a lexer can be exact here: outside string literals and comments, the keywords
``import`` and ``from`` only begin import statements (``yield from`` and ``raise ... from``
fail the statement pattern), so once strings and comments are skipped correctly every
import is found. String values follow Python's rules: prefixes (bytes are skipped, raw
strings keep their backslashes), escapes, implicit concatenation (inside brackets or
across a line continuation, never across a statement's end), and f-strings, whose literal
parts, format specs and the literals inside their replacement fields are separate values
as in the ``ast``. A dynamic import (``importlib.import_module`` / ``__import__``) counts
when its first argument is one (concatenated) plain string literal.

Known limits: an f-string that reuses its own quote character inside a field (allowed
since Python 3.12) ends early, and a file with a syntax error still yields what it spells,
where ``ast`` yields nothing. ``tests/targeted/test_lexer.py`` holds the scan to an ``ast``
walk (kept there as the reference), per construct and over real code.
"""

from __future__ import annotations

import ast
import re
import warnings
from typing import Any

_WS = r"(?:[ \t\f]|\\\r?\n)*"  # blanks within one logical line
_WS1 = r"(?:[ \t\f]|\\\r?\n)+"
# A comment runs to the end of its line; the lookahead keeps the patterns that skip
# comments free of backtracking (``#[^\n]*`` alone could end anywhere in an ascii-art
# comment, an exponential search when the pattern fails).
_CMT = r"\#[^\n]*(?![^\n])"
_SKIP = r"(?:\s|\\\r?\n|" + _CMT + r")*"  # whitespace, continuations, comments
_NAME = r"[^\W\d]\w*"
_DOTTED = _NAME + r"(?:" + _WS + r"\." + _WS + _NAME + r")*"
_ALIAS = r"(?:" + _WS1 + r"as" + _WS1 + _NAME + r")?"
# One pattern finds, left to right, everything of interest; the rest is code. Its
# alternatives, told apart by ``lastgroup``: a comment (C), a string literal (its body's
# group names the quote: s1 ', d1 ", s3 ''', d3 """), an import statement (I), a from-import
# statement (F) and a dynamic-import call up to its first argument (D for
# ``import_module``, U for ``__import__``). Every alternative opens with a literal
# character (``#``, a quote, ``i``, ``f``, ``_``; a keyword's word boundary is checked just
# after it, ``i(?<=\bi)mport``), so the regex engine skips plain code in its own loop over
# that character set, not one match attempt per character. A literal's prefix (rb"", f'')
# is read back from the text.
_LEX = re.compile(
    r"\#(?P<C>[^\n]*)"
    r"|'''(?P<s3>[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*)'''"
    r'|"""(?P<d3>[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*)"""'
    r"|'(?P<s1>[^'\\\n]*(?:\\.[^'\\\n]*)*)'"
    r'|"(?P<d1>[^"\\\n]*(?:\\.[^"\\\n]*)*)"'
    r"|i(?<=\bi)(?P<I>mport" + _WS1 + r"(?P<mods>" + _DOTTED + _ALIAS + r"(?:" + _WS + r"," + _WS
    + _DOTTED + _ALIAS + r")*))"
    r"|f(?<=\bf)(?P<F>rom(?P<dots>(?:\.|[ \t\f]|\\\r?\n)*)(?P<mod>" + _DOTTED + r")?" + _WS
    + r"\bimport\b" + _WS + r"(?:(?P<star>\*)|\((?P<paren>(?:[^)#]|" + _CMT + r")*)\)|(?P<plain>"
    + _NAME + _ALIAS + r"(?:" + _WS + r"," + _WS + _NAME + _ALIAS + r")*)))"
    r"|i(?<=\bi)mport_module(?P<D>" + _WS + r"\(" + _SKIP + r")"
    r"|_(?<=\b_)_import__(?P<U>" + _WS + r"\(" + _SKIP + r")", re.DOTALL)
_PREFIX_CHARS = frozenset("rRbBuUfF")
_QUOTE = {"s1": "'", "d1": '"', "s3": "'''", "d3": '"""'}
_ARG_END = re.compile(_SKIP + r"[,)]")
# Between two literals that concatenate: at bracket depth 0 only blanks and continuations
# (a newline ends the statement), inside brackets any whitespace and comments.
_GAP_TOP = re.compile(_WS)
_GAP_IN = re.compile(_SKIP)
_BLANKS = re.compile(r"\s+|\\|" + _CMT)
_AS = re.compile(_WS1 + "as" + _WS1)
_COMMENT = re.compile(_CMT)
_BRACES = re.compile(r"[{}]")
_SELF_DOC = re.compile(r"(?<![=!<>])=\s*$")
# A literal passed as one of these keywords is prose for a person (argparse's help text
# names example paths and modules), never something the program loads.
_PROSE_KW = re.compile(r"[(,]\s*(?:help|description|epilog|usage)\s*=\s*\(?\s*\Z")
PROSE_KEYWORDS = ("help", "description", "epilog", "usage")
# A literal opening the arguments of an exception raised, a log record or a printed line is
# a message for a person: a path it names ("run tools/convert.py first") is never loaded.
# Each alternative opens with its first letter, the word boundary checked just after it
# (``p(?<=\bp)rint``), so the engine tries only those letters: most searches fail.
_LOG_LEVEL = r"\.(?:debug|info|warning|warn|error|exception|critical|fatal|log)"
_MESSAGE_CALL = re.compile(
    r"(?:r(?<=\br)aise\s+[\w.]+|p(?<=\bp)rint|w(?<=\bw)arn"
    r"|l(?<=\bl)og(?:ger|ging)?" + _LOG_LEVEL + r"|L(?<=\bL)OG(?:GER)?" + _LOG_LEVEL
    + r"|_(?<=\b_)(?:logger|log|LOG)" + _LOG_LEVEL + r")\s*\((?:\s|\(|\#[^\n]*)*\Z")
_PROSE_END = ("=", "(")  # the last non-blank character before help text (``help=(``)
_NONE: list[Any] = []  # no literals inside fields (a plain literal has no fields); never filled
_STMT_END = re.compile(r"[ \t\f]*(?:\#[^\n]*)?(?:\n|\r|;|\Z)")
SEP = "\0"  # between an f-string's literal parts: no token spans it


def scan(text: str) -> tuple[list[list[Any]], list[str]]:
    """``(imports, values)`` of Python source ``text``.

    ``imports``: ``[module, level, [names]]`` per imported module (``level`` -1 for a
    dynamic import's literal). ``values``: every str literal's value, concatenations
    joined, f-string parts separated by ``SEP``, except a literal that is a statement of
    its own (a docstring, or any bare string statement): it has no effect, so it names
    nothing that runs; the value of a ``help=`` / ``description=`` / ``epilog=`` /
    ``usage=`` keyword, and the first argument of a raised exception, a log call or a
    ``print``/``warn``: text for a person. Never raises.
    """
    imports: list[list[Any]] = []
    values: list[str] = []
    # Bracket depth is needed only to tell whether two literals on different lines
    # concatenate, so the code between matches is only noted, and counted when asked.
    code: list[int] = []  # start, end, start, end, ... of code between matches
    counted = 0  # how much of ``code`` ``depth`` covers
    depth = 0
    pos = 0
    chain_end = -1  # end of the last string literal while a concatenation may go on
    dyn_arg = -1  # where a dynamic import's first argument starts
    dyn_chain = False  # the open chain is that argument (its import is imports[-1])
    stmt = False  # the open chain began a statement at bracket depth 0 (maybe a docstring)
    prose = False  # the open chain is a help=/description= keyword's value

    def count_depth() -> int:
        nonlocal counted, depth
        for i in range(counted, len(code), 2):
            seg = text[code[i]:code[i + 1]]
            depth += (seg.count("(") + seg.count("[") + seg.count("{")
                      - seg.count(")") - seg.count("]") - seg.count("}"))
        counted = len(code)
        return depth

    for m in _LEX.finditer(text):
        # never None: every alternative of _LEX is a named group
        kind: str = m.lastgroup  # type: ignore[assignment]
        start, end = m.span()
        if start > pos:
            code += (pos, start)
        pos = end
        if kind == "C":  # a comment: a concatenation may go on past it
            continue
        quote = _QUOTE.get(kind)
        prefix = ""
        if quote is not None and start and text[start - 1] in _PREFIX_CHARS:
            prefix = _prefix(text, start)  # the literal starts at its prefix (rb"", f'')
            start -= len(prefix)
        joins = False
        # Only blanks, continuations and comments may lie between two literals that join:
        # a gap opening with anything else (``", "``, ``": "``) needs no regex.
        if chain_end >= 0 and quote is not None and (
                chain_end == start or text[chain_end].isspace() or text[chain_end] in "\\#") \
                and _GAP_IN.fullmatch(text, chain_end, start):
            if _GAP_TOP.fullmatch(text, chain_end, start):
                joins = True  # same logical line
            else:  # across lines: only inside brackets
                joins = count_depth() > 0
        if not joins:
            if dyn_chain and not _ARG_END.match(text, chain_end):
                imports.pop()  # "x." + name: not a literal
            if (stmt and _STMT_END.match(text, chain_end)) or prose:
                values.pop()  # a bare string statement or help text: nothing loads it
            stmt = prose = False
            dyn_chain = False
            chain_end = -1
        if quote is None:
            if kind == "I":
                for part in m.group("mods").split(","):
                    imports.append([_BLANKS.sub("", _AS.split(part, maxsplit=1)[0]), 0, []])
            elif kind == "F":
                names = ["*"] if m.group("star") else _names(m.group("paren") or m.group("plain") or "")
                imports.append([_BLANKS.sub("", m.group("mod") or ""), m.group("dots").count("."),
                                names])
            else:  # D or U: the call's "(" is part of the match, not of the code noted
                depth += 1
                dyn_arg = end
            continue
        if "b" in prefix:
            if dyn_chain:
                imports.pop()
                dyn_chain = False
            chain_end = -1
            continue
        raw = m.group(kind)
        inner_imports: list[list[Any]] = _NONE
        inner_values: list[str] = _NONE
        if "f" in prefix:
            inner_imports, inner_values = [], []
            value = _fstring(raw, quote, "r" in prefix, inner_imports, inner_values)
        else:
            value = _unescape(raw, quote) if "\\" in raw and "r" not in prefix else raw
        if joins:
            values[-1] += value
            if dyn_chain:
                if "f" in prefix:
                    imports.pop()
                    dyn_chain = False
                else:
                    imports[-1][0] += value
        else:
            values.append(value)
            prev = text[start - 1] if start else "\n"
            stmt = prev in " \t\f\n;" and _line_start(text, start) and count_depth() == 0
            # Both patterns end the text before the literal: help text after ``=`` or
            # ``=(``, a message after ``(`` (comments allowed). Most literals follow
            # ``,``, ``[`` or ``:``, so their last non-blank character spares the searches.
            lo = start - 80 if start > 80 else 0
            last = prev if not prev.isspace() else text[lo:start].rstrip()[-1:]
            prose = (last in _PROSE_END and _PROSE_KW.search(text, max(0, start - 60), start)
                     is not None and count_depth() > 0)  # a keyword argument, not an assignment
            prose = prose or ((last == "(" or text.find("#", lo, start) >= 0)
                              and _MESSAGE_CALL.search(text, lo, start) is not None)
            if start == dyn_arg and "f" not in prefix:
                imports.append([value, -1, []])
                dyn_chain = True
        if inner_values or inner_imports:  # literals inside an f-string's fields
            if dyn_chain:
                imports.pop()
                dyn_chain = False
            imports.extend(inner_imports)
            # after the chain's own value, so a following literal still joins that one
            values[-1:] = [*inner_values, values[-1]]
        chain_end = end
    if dyn_chain and not _ARG_END.match(text, chain_end):
        imports.pop()
    if chain_end >= 0 and ((stmt and _STMT_END.match(text, chain_end)) or prose):
        values.pop()
    return imports, values


def _line_start(text: str, start: int) -> bool:
    """True when only blanks precede ``start`` on its line and that line continues none."""
    i = start - 1
    while i >= 0 and text[i] in " \t\f":
        i -= 1
    if i < 0:
        return True
    if text[i] == ";":
        return True
    if text[i] != "\n":
        return False
    j = i - 1
    if j >= 0 and text[j] == "\r":
        j -= 1
    return not (j >= 0 and text[j] == "\\")


def _prefix(text: str, start: int) -> str:
    """The lower-cased prefix (``rb``, ``f``, ...) of the literal whose quote is at ``start``."""
    if not start or text[start - 1] not in _PREFIX_CHARS:
        return ""
    i = start - 1
    while i > 0 and start - i < 2 and text[i - 1] in _PREFIX_CHARS:
        i -= 1
    if i and (text[i - 1].isalnum() or text[i - 1] == "_"):
        return ""  # the end of a name (``if"x"``), not a prefix
    return text[i:start].lower()


def _names(text: str) -> list[str]:
    """The imported names of ``a as b, c`` (comments and newlines allowed)."""
    out = []
    for part in _COMMENT.sub(" ", text).split(","):
        words = part.replace("\\", " ").split()
        if words:
            out.append(words[0])
    return out


def _unescape(raw: str, quote: str) -> str:
    """The value of a literal body with escapes, as Python reads it."""
    try:
        value = ast.literal_eval(quote + raw + quote)
        if isinstance(value, str):
            return value
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        pass  # a triple-quoted body ending in its own quote character cannot be re-quoted
    try:  # the same escape rules, without quotes around
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes stay as they are, as in Python
            return raw.encode("latin-1", "backslashreplace").decode("unicode_escape")
    except UnicodeDecodeError:
        return raw


def _fstring(raw: str, quote: str, is_raw: bool, imports: list[list[Any]],
             values: list[str]) -> str:
    """The literal parts of f-string body ``raw`` joined by SEP; the literals inside its
    replacement fields and format specs go to ``values`` (and imports) on their own."""
    parts: list[str] = []
    current: list[str] = []
    i, n = 0, len(raw)
    while i < n:
        m = _BRACES.search(raw, i)
        j = m.start() if m else n
        current.append(raw[i:j])
        if j >= n:
            break
        ch = raw[j]
        if raw[j + 1:j + 2] == ch:  # {{ or }}
            current.append(ch)
            i = j + 2
            continue
        if ch == "}":  # a lone } is a syntax error; keep it as text
            current.append(ch)
            i = j + 1
            continue
        expr_end, spec, close = _field(raw, j + 1)
        expr = raw[j + 1:expr_end]
        if _SELF_DOC.search(expr):  # f"{x=}": the text "x=" is a literal part
            current.append(expr)
        parts.append("".join(current))
        current = []
        # In brackets, so a field's literal is never taken for a bare statement.
        inner_imports, inner_values = scan("(" + expr + "\n)")
        imports.extend(inner_imports)
        values.extend(inner_values)
        if spec is not None:
            spec_value = _fstring(raw[spec:close], quote, is_raw, imports, values)
            values.extend(p for p in spec_value.split(SEP) if p)
        i = close + 1
    parts.append("".join(current))
    if not is_raw:
        parts = [_unescape(p, quote) if "\\" in p else p for p in parts]
    return SEP.join(parts)


def _field(raw: str, i: int) -> tuple[int, int | None, int]:
    """For a replacement field starting at ``raw[i]`` (after its ``{``): where the
    expression ends, where the format spec starts (or None) and where the closing ``}``
    is (``len(raw)`` when missing)."""
    depth = 0
    n = len(raw)
    expr_end: int | None = None
    spec: int | None = None
    while i < n:
        ch = raw[i]
        if ch in "'\"" and spec is None:
            end = raw.find(ch, i + 1)
            i = n if end < 0 else end + 1
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0 and ch == "}":
                return (expr_end if expr_end is not None else i), spec, i
            depth -= 1
        elif depth == 0 and spec is None:
            if ch == "!" and raw[i + 1:i + 2] != "=":
                expr_end = i if expr_end is None else expr_end
            elif ch == ":":
                expr_end = i if expr_end is None else expr_end
                spec = i + 1
        i += 1
    return (expr_end if expr_end is not None else n), spec, n
