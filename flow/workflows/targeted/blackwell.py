"""Changed lines that run only on Blackwell GPUs, read from the changed file's ``ast``.

The seed's step 2: "Blackwell-specific code changed -> ``/rerun-test`` runs only on a
test's home suite, which is Hopper for most tests", so a file run reports green without
executing the changed path. Besides Blackwell-named files (``cfg.blackwell_paths``), the
common idiom is a branch on the compute capability::

    major, _ = torch.cuda.get_device_capability()
    if major >= 10:        # SM100+: B200, GB200, B300
        ...

A line counts as Blackwell-only when it lies in the body of an ``if`` whose test says
so: a comparison of a name or attribute spelling ``major``/``capability``/``cap``/``sm``
(or a ``get_device_capability()[0]``) with ``>= 10``, ``> 9``, ``== 10`` or ``== 12``, with a tuple
``>= (10, ...)``, or membership in a literal of majors all 10 or more (``cap[0] in (10,
12)``, ``major in {10, 12}``); or a call or name spelling the architecture (``blackwell``,
``sm100``, ``sm120``, ``b200``, ``gb200``), or a comparison with architecture
strings (``arch == "sm_100"``, ``"sm_120" in arch``, ``arch in ("sm_100", "sm_120")``). The ``else`` of the negation (``if major < 10:
... else:``, ``major not in (10, 12)``, ``if not is_blackwell():``) counts too, and so do
the branches of a conditional expression spread over lines of their own::

    scale = (
        mx_scale(x)          # Blackwell-only line
        if major >= 10
        else per_tensor(x)
    )

A branch sharing its line with the test or the other branch (``a if major >= 10 else b``
on one line) is not Blackwell-only: a line diff cannot tell which part changed. Only the
changed files are parsed (a handful per trace), never the tree.
"""

from __future__ import annotations

import ast
import re

_CAPABILITY = re.compile(r"major|capab|\bcap\b|\bcc\b|\bsm(?:_version)?\b", re.IGNORECASE)
# Helpers and flags named for the architecture: is_blackwell(), is_sm100(), SM120, b200, gb200.
_NAMED = re.compile(r"blackwell|sm_?1[02]\d|sm_?1[02]x|(?<![a-z0-9])g?b[23]00(?![0-9])",
                    re.IGNORECASE)


def _spelled(node: ast.AST) -> str:
    """The names and attributes ``node`` spells, joined (``torch.cuda.major`` ...)."""
    out: list[str] = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            out.append(sub.id)
        elif isinstance(sub, ast.Attribute):
            out.append(sub.attr)
    return " ".join(out)


def _at_least_ten(op: ast.cmpop, right: ast.expr) -> bool:
    value: object = None
    if isinstance(right, ast.Constant):
        value = right.value
    elif isinstance(right, ast.Tuple) and right.elts and isinstance(right.elts[0], ast.Constant):
        value = right.elts[0].value
    if not isinstance(value, int) or isinstance(value, bool):
        return False
    if isinstance(op, ast.GtE | ast.Eq):  # == 10 or == 12: B200 / RTX Blackwell
        return value >= 10 if isinstance(op, ast.GtE) else value in (10, 11, 12)
    if isinstance(op, ast.Gt):
        return value >= 9
    return False


def _majors(right: ast.expr) -> list[int] | None:
    """The integers of a literal tuple, list or set (``(10, 12)``, ``{10, 12}``); the
    first element of each tuple in it (``{(10, 0), (12, 0)}``); None for anything else."""
    if not isinstance(right, ast.Tuple | ast.List | ast.Set) or not right.elts:
        return None
    out: list[int] = []
    for elt in right.elts:
        if isinstance(elt, ast.Tuple) and elt.elts:
            elt = elt.elts[0]
        if not (isinstance(elt, ast.Constant) and isinstance(elt.value, int)
                and not isinstance(elt.value, bool)):
            return None
        out.append(elt.value)
    return out


def _capability(test: ast.Compare) -> bool:
    return _CAPABILITY.search(_spelled(test.left)) is not None


def _arch_strings(node: ast.expr) -> list[str] | None:
    """The string constants of ``node`` (one, or a literal tuple, list or set of them);
    None for anything else."""
    elts = (node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [node])
    out = [e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return out if out and len(out) == len(elts) else None


def _names_blackwell(test: ast.Compare) -> bool | None:
    """For a comparison with architecture strings (``arch == "sm_100"``, ``"sm_120" in
    arch``, ``arch in ("sm_100", "sm_120")``): True when it holds only on Blackwell, False
    when it holds exactly off it (``!=``, ``not in``), None when it is no such test."""
    op = test.ops[0]
    left, right = test.left, test.comparators[0]
    for strings, other in ((_arch_strings(right), left), (_arch_strings(left), right)):
        if strings is None or _arch_strings(other) is not None:
            continue
        if not all(_NAMED.search(s) for s in strings):
            return None
        if isinstance(op, ast.Eq | ast.In):
            return True
        if isinstance(op, ast.NotEq | ast.NotIn):
            return False
    return None


def is_blackwell_test(test: ast.expr) -> bool:
    """True when an ``if`` test holds only on Blackwell (see the module docstring)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(is_blackwell_test(v) for v in test.values)
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        if _names_blackwell(test) is True:  # arch == "sm_100", "sm_120" in arch
            return True
        if isinstance(test.ops[0], ast.In):  # cap[0] in (10, 12), major in {10, 12}
            majors = _majors(test.comparators[0])
            return _capability(test) and bool(majors) and min(majors or [0]) >= 10
        return _capability(test) and _at_least_ten(test.ops[0], test.comparators[0])
    if isinstance(test, ast.Call | ast.Name | ast.Attribute):
        return _NAMED.search(_spelled(test)) is not None
    return False


def _below_ten(op: ast.cmpop, right: ast.expr) -> bool:
    value = right.value if isinstance(right, ast.Constant) else None
    if isinstance(right, ast.Tuple) and right.elts and isinstance(right.elts[0], ast.Constant):
        value = right.elts[0].value
    if not isinstance(value, int) or isinstance(value, bool):
        return False
    return (isinstance(op, ast.Lt) and value == 10) or (isinstance(op, ast.LtE) and value == 9)


def is_not_blackwell_test(test: ast.expr) -> bool:
    """True when an ``if`` test holds exactly off Blackwell (``major < 10``, ``<= 9``,
    ``not <a Blackwell test>``), so its ``else`` runs only on Blackwell."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return is_blackwell_test(test.operand)
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        if _names_blackwell(test) is False:  # arch != "sm_100"
            return True
        if isinstance(test.ops[0], ast.NotIn):  # major not in (10, 12): else is Blackwell
            majors = _majors(test.comparators[0])
            return _capability(test) and bool(majors) and min(majors or [0]) >= 10
        return _capability(test) and _below_ten(test.ops[0], test.comparators[0])
    return False


_MAY_GATE = re.compile(rb"(?:>=|==|<)\s*\(?\s*1[0-2]\b|[<>]=?\s*\(?\s*9\b|blackwell|sm_?1[02]"
                       rb"|\bin\s*[\[({]\s*\(?\s*1[02]\b|g?b[23]00", re.IGNORECASE)


def may_gate(source: bytes) -> bool:
    """True when ``source`` spells something a Blackwell test needs (``>= 10``, ``> 9``,
    ``== 10``, ``blackwell``, ``sm100``): only such files are parsed."""
    return _MAY_GATE.search(source) is not None


def gated_lines(source: bytes) -> set[int]:
    """Line numbers inside the body of a Blackwell-only ``if``; empty on a syntax error."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return set()
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            branch = (node.body if is_blackwell_test(node.test)
                      else node.orelse if is_not_blackwell_test(node.test) else [])
            if branch:
                out.update(range(branch[0].lineno, max(_end(n) for n in branch) + 1))
        elif isinstance(node, ast.IfExp):
            branch, other = ((node.body, node.orelse) if is_blackwell_test(node.test)
                             else (node.orelse, node.body)
                             if is_not_blackwell_test(node.test) else (None, None))
            if branch is not None and other is not None:
                # Only the lines the Blackwell branch has to itself.
                out.update(set(_lines(branch)) - set(_lines(node.test)) - set(_lines(other)))
    return out


def _end(node: ast.AST) -> int:
    return getattr(node, "end_lineno", None) or getattr(node, "lineno", 0)


def _lines(node: ast.AST) -> range:
    return range(getattr(node, "lineno", 0), _end(node) + 1)


def only_blackwell(source: bytes, lines: set[int]) -> bool:
    """True when every one of ``lines`` (non-empty) runs only on Blackwell."""
    return bool(lines) and lines <= gated_lines(source)
