"""PyTorch's TEST_LINTER as verify's gate (seed phase 5, "Verify": the lint hard gate).

When the checkout has ``tools/linter/adapters/test_linter.py`` (run by lintrunner as
TEST_LINTER), that very script judges the file: it runs with the test interpreter,
``python tools/linter/adapters/test_linter.py FILE``, and prints one JSON lint message a
line (path, line, code, severity, name, description). Files listed in
``test_linter_allowlist.json`` beside it are skipped by it, so the file is taken out of that
list first: that edit is part of the change a migrated file makes.

Without it (an older checkout) ``builtin`` checks the same documented rules, in our own
code: every class defining ``test_*`` declares ``hw_classification``; GENERIC classes are
not instantiated by ``instantiate_device_type_tests`` and their tests take no
``device``/``devices``; ACCELERATOR classes are instantiated, every test takes
``device``/``devices``, no ``@only*`` but ``@onlyAccelerator``, no ``only_for``;
CPU/CUDA/MPS/XPU classes are instantiated with ``only_for`` exactly that device and no
``except_for``. ``line_length`` adds the checkout's flake8 ``max-line-length`` for the lines
the change touched (check ``line_length``). Findings of both checks that are errors go to
the coder, as the L-codes' do.
"""

from __future__ import annotations

import ast
import configparser
import difflib
import json
from pathlib import Path

from flow.workflows.refactor.findings import Finding
from flow.workflows.refactor.hwclass import (
    DEVICE_SPECIFIC, declared, devices_kwarg, instantiation_call, is_test_class,
)

LINTER = Path("tools/linter/adapters/test_linter.py")
ALLOWLIST = Path("tools/linter/adapters/test_linter_allowlist.json")
CHECK = "test_linter"
#: flake8's max-line-length PyTorch sets in its .flake8, used when a checkout has none.
DEFAULT_MAX_LINE = 120


def _f(path: str, line: int, name: str, message: str, severity: str = "error") -> Finding:
    return Finding(check=CHECK, code=f"TEST_LINTER{name}", severity=severity,  # type: ignore[arg-type]
                   file=path, line=line, message=message)


def checkout_linter(repo: Path) -> Path | None:
    """The checkout's own test linter, or None (an older checkout, or not PyTorch)."""
    path = repo / LINTER
    return path if path.is_file() else None


def take_out_of_allowlist(repo: Path, rel: str, keep: Path | None = None) -> bool:
    """Remove ``rel`` from the checkout's allowlist (kept a sorted JSON list, two-space
    indent, as PyTorch keeps it); True when it was listed. A list that does not parse is
    left alone (the linter then reports it). ``keep``: where the list's bytes before the
    first removal are kept, so a flow that ends ``unchanged`` can put them back."""
    path = repo / ALLOWLIST
    if not path.is_file():
        return False
    try:
        raw = path.read_bytes()
        listed = json.loads(raw.decode("utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(listed, list) or rel not in listed:
        return False
    from workspace.atomic import write_atomic

    if keep is not None and not keep.exists():
        keep.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(keep, raw)
    kept = [p for p in listed if p != rel]
    write_atomic(path, (json.dumps(kept, indent=2) + "\n").encode("utf-8"))
    return True


def put_back_in_allowlist(repo: Path, rel: str, keep: Path) -> bool:
    """Undo ``take_out_of_allowlist``: the kept bytes when the list is now exactly the kept
    one less ``rel`` (the usual case: the checkout as it was), else ``rel`` added back to the
    list as it is now. True when the list changed."""
    path = repo / ALLOWLIST
    try:
        before = keep.read_bytes()
        now = json.loads(path.read_text(encoding="utf-8"))
        listed = json.loads(before.decode("utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(now, list) or rel in now:
        return False
    from workspace.atomic import write_atomic

    if isinstance(listed, list) and now == [p for p in listed if p != rel]:
        write_atomic(path, before)
    else:
        write_atomic(path, (json.dumps(sorted([*now, rel]), indent=2) + "\n").encode("utf-8"))
    return True


def read_messages(output: str, rel: str) -> list[Finding]:
    """The linter's JSON lines as findings (non-JSON lines, such as a log, are skipped)."""
    out: list[Finding] = []
    for raw in output.splitlines():
        raw = raw.strip()
        if not raw.startswith("{"):
            continue
        try:
            msg = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(msg, dict) or "description" not in msg:
            continue
        severity = msg.get("severity") if msg.get("severity") in ("error", "warning") else "info"
        line = msg.get("line") if isinstance(msg.get("line"), int) else 0
        out.append(_f(rel, line, str(msg.get("name") or ""), str(msg.get("description")), severity))
    return out


def _device_params(fn: ast.FunctionDef) -> bool:
    names = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
    return bool(names & {"device", "devices"})


def _decorator_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def builtin(text: str, rel: str) -> list[Finding]:
    """The documented TEST_LINTER rules on ``text`` (see the module docstring). Never raises."""
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        return [_f(rel, exc.lineno or 0, "[parse_error]", f"cannot parse {rel}: {exc.msg}")]
    out: list[Finding] = []
    for node in tree.body:
        if not isinstance(node, ast.ClassDef) or not is_test_class(node):
            continue
        label = declared(node)
        if label is None:
            out.append(_f(rel, node.lineno, "[hw_classification]",
                          f"test class {node.name!r} is missing or has an invalid hw_classification; "
                          "add hw_classification = HardwareClassification.<MEMBER>"))
            continue
        call = instantiation_call(tree, node.name)
        tests = [s for s in node.body if isinstance(s, ast.FunctionDef) and s.name.startswith("test_")]
        generic = label == "GENERIC"
        if (call is not None) == generic:
            must = "must not be" if generic else "must be"
            out.append(_f(rel, node.lineno, "[instantiation]",
                          f"{label} class {node.name!r} {must} instantiated via instantiate_device_type_tests"))
        for fn in tests:
            if _device_params(fn) == generic:
                must = "must not accept" if generic else "must accept"
                out.append(_f(rel, fn.lineno, "[device_param]",
                              f"{label} test method '{node.name}.{fn.name}' {must} a 'device' or 'devices' parameter"))
        if label == "ACCELERATOR":
            for fn in tests:
                for dec in fn.decorator_list:
                    name = _decorator_name(dec)
                    if name and name.startswith("only") and name != "onlyAccelerator":
                        out.append(_f(rel, fn.lineno, "[decorator]",
                                      f"ACCELERATOR test method '{node.name}.{fn.name}' must not use '@{name}' "
                                      "(only @onlyAccelerator); move it to a class of that device's classification"))
            if call is not None and devices_kwarg(call, "only_for") is not None:
                out.append(_f(rel, call.lineno, "[only_for]",
                              f"ACCELERATOR class {node.name!r} must not use only_for; use except_for instead"))
        elif label in DEVICE_SPECIFIC and call is not None:
            if devices_kwarg(call, "except_for") is not None:
                out.append(_f(rel, call.lineno, "[except_for]",
                              f"{label} class {node.name!r} must not use except_for"))
            only = devices_kwarg(call, "only_for")
            if only != [label.lower()]:
                out.append(_f(rel, call.lineno, "[only_for]",
                              f"{label} class {node.name!r} must use only_for='{label.lower()}' (has {only})"))
    return sorted(out, key=lambda f: (f.line, f.code))


def max_line_length(repo: Path) -> int:
    """flake8's ``max-line-length`` from the checkout's ``.flake8`` (else PyTorch's 120)."""
    path = repo / ".flake8"
    if path.is_file():
        parser = configparser.ConfigParser()
        try:
            parser.read_string(path.read_text(encoding="utf-8", errors="replace"))
            value = parser.get("flake8", "max-line-length", fallback=None)
            if value and value.strip().isdigit():
                return int(value.strip())
        except configparser.Error:
            pass
    return DEFAULT_MAX_LINE


def line_length(before: str, after: str, rel: str, limit: int) -> list[Finding]:
    """Lines the change added or rewrote that are longer than ``limit`` (flake8 E501);
    a long line the original already had is the file's, not the refactor's."""
    old = before.splitlines()
    new = after.splitlines()
    out: list[Finding] = []
    for tag, _, _, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag in ("replace", "insert"):
            for n in range(j1, j2):
                if len(new[n]) > limit:
                    out.append(Finding(check="line_length", code="E501", severity="error", file=rel,
                                       line=n + 1, message=f"line {n + 1} is {len(new[n])} characters, over "
                                       f"the checkout's max-line-length {limit}; wrap it as black would"))
    return out
