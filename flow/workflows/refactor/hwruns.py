"""The ``--hw-classification`` runs of the local test gate (seed phase 6.5, "Local test gate").

PyTorch 2.14.1's ``run_tests`` takes ``--hw-classification NAME...`` and runs only the tests
of classes with those labels, printing one line first::

    HW classification mode active (['GENERIC']): total=3, passed=2, unclassified=0, mismatched=1

``count_argv`` is one start of the test interpreter for every label: ``reference/refactor/
hw_count.py`` runs the file with ``run_tests()`` replaced by upstream's own test loader, once
per label, so each label's line is the one ``python FILE --hw-classification LABEL`` prints,
and no test is run a second time (the gate's JUnit run has just run them). ``read_run`` reads
a label's line (``HwRunError`` when the run printed none: never read as zero tests);
``account`` checks that every test is accounted for: no test unclassified, the same total
in every run, and the runs' counts adding up to it. ``entry_point`` says how the file runs
its tests (only ``common_utils.run_tests()`` takes the flag; ``unittest.main()`` refuses
it), ``entry_fix`` the edit that makes it count them (the base class too: ``run_tests()``
refuses a ``unittest.TestCase`` class), ``conftest_filter`` whether the checkout's pytest
conftest has PyTorch's ``--hw-classification`` filter (the check that applies to such a
file). Pure but for reading conftest files: the jobs are started by
``flow.workflows.refactor.gates``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from flow.workflows.refactor.errors import RefactorError
from reference import DIR as REFERENCE

LINE = re.compile(r"HW classification mode active \((?P<labels>[^)]*)\): total=(?P<total>\d+), "
                  r"passed=(?P<passed>\d+),\s*unclassified=(?P<unclassified>\d+),"
                  r"(?:\s*no_class=(?P<no_class>\d+),)?\s*mismatched=(?P<mismatched>\d+)")


class HwRunError(RefactorError):
    """A ``--hw-classification`` run that did not print its count line."""

    code = "hw_run_failed"

    def __init__(self, label: str, detail: str) -> None:
        self.label = label
        self.detail = detail
        super().__init__(f"the --hw-classification {label} run printed no count line: {detail}",
                         "run the printed command by hand to see why; torch 2.14.1 or later is needed")


class HwRun(BaseModel):
    """One label's counts."""

    model_config = ConfigDict(extra="forbid")

    label: str
    total: int
    passed: int
    unclassified: int
    mismatched: int
    code: int  # the run's exit status


def hw_env(settings: Mapping[str, str]) -> dict[str, str]:
    """The environment of a count run: ``settings`` without ``CI``. With CI set, PyTorch's
    runner writes XML reports through xmlrunner (unittest-xml-reporting), which a test
    environment need not have; these runs are read from the console only."""
    return {k: v for k, v in settings.items() if k != "CI"}


#: the counting script, standard library and torch only (it runs in the test interpreter)
HW_COUNT = REFERENCE / "refactor" / "hw_count.py"


def count_argv(python: str, file: Path, labels: list[str]) -> list[str]:
    """``python hw_count.py FILE LABEL...``: each label's count line as ``python FILE
    --hw-classification LABEL`` (PyTorch's own runner, as its PRs' test plans) prints it, from
    one interpreter start, running no test."""
    return [python, str(HW_COUNT), str(file), *labels]


EntryPoint = Literal["run_tests", "unittest_main", "other", "none"]


def _is_main_guard(node: ast.stmt) -> bool:
    """``if __name__ == "__main__":``."""
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    parts = [node.test.left, *node.test.comparators]
    return (any(isinstance(p, ast.Name) and p.id == "__name__" for p in parts)
            and any(isinstance(p, ast.Constant) and p.value == "__main__" for p in parts))


def entry_point(text: str) -> EntryPoint:
    """How ``python FILE`` runs the tests: ``run_tests`` (PyTorch's ``common_utils.run_tests()``,
    the one runner that takes ``--hw-classification``), ``unittest_main`` (``unittest.main()``,
    which exits 2 on the flag), ``other`` (a ``__main__`` block calling neither) or ``none``
    (no ``__main__`` block: the file is only collected by pytest or run_test.py)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return "none"
    found: EntryPoint = "none"
    for block in (n for n in tree.body if _is_main_guard(n)):
        found = "other"
        for node in ast.walk(block):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            if (isinstance(f, ast.Name) and f.id == "run_tests") or (
                    isinstance(f, ast.Attribute) and f.attr == "run_tests"):
                return "run_tests"
            if isinstance(f, ast.Attribute) and f.attr == "main" and getattr(f.value, "id", "") == "unittest":
                found = "unittest_main"
    return found


ENTRY_WORDS = {"unittest_main": "runs its tests with unittest.main()",
               "other": "has a __main__ block that calls no run_tests()",
               "none": "has no __main__ block (pytest or run_test.py collects it)"}
#: the edit that lets ``python FILE --hw-classification`` count the file's tests
ENTRY_FIX = {"unittest_main": "replace `unittest.main()` with `run_tests()` (imported from "
                              "torch.testing._internal.common_utils)",
             "other": "call `run_tests()` (from torch.testing._internal.common_utils) in its "
                      "`__main__` block",
             "none": "add `if __name__ == \"__main__\": run_tests()` (run_tests from "
                     "torch.testing._internal.common_utils) at its end"}


def unittest_classes(text: str) -> list[str]:
    """Classes that extend unittest's ``TestCase`` (``unittest.TestCase``, or ``TestCase``
    imported from ``unittest``) directly: ``run_tests()`` refuses them and their subclasses
    ("This test class should extend from torch.testing._internal.common_utils.TestCase") and
    exits 1. A subclass is mended with its base, so only these are named."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    plain = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "unittest"
             for a in n.names if a.name == "TestCase"}
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}

    def of_unittest(cls: ast.ClassDef) -> bool:
        return any((isinstance(b, ast.Attribute) and b.attr == "TestCase" and getattr(b.value, "id", "") == "unittest")
                   or (isinstance(b, ast.Name) and b.id in plain) for b in cls.bases)

    return [n for n, c in classes.items() if of_unittest(c)]


def entry_fix(entry: EntryPoint, text: str) -> str:
    """The edit that lets ``python FILE --hw-classification`` count the file's tests, complete
    as printed: ``run_tests()`` in the ``__main__`` block, and every class that extends
    unittest's ``TestCase`` switched to ``torch.testing._internal.common_utils.TestCase``
    (``run_tests()`` refuses it otherwise)."""
    fix = ENTRY_FIX[entry]
    bases = unittest_classes(text)
    if not bases:
        return fix
    names = ", ".join(f"`{b}`" for b in bases)
    return (f"{fix}; and make {names} extend `TestCase` from torch.testing._internal.common_utils "
            f"instead of unittest's `TestCase` (`from torch.testing._internal.common_utils import "
            f"run_tests, TestCase`): run_tests() refuses a test class that does not, and exits 1")


def conftest_filter(repo: Path, file: Path) -> Path | None:
    """The checkout's ``conftest.py`` (from the file's folder up to the checkout root) that
    declares pytest's ``--hw-classification`` option (PyTorch's ``test/conftest.py`` does),
    else None."""
    folder = file.parent
    while True:
        conftest = folder / "conftest.py"
        try:
            if "--hw-classification" in conftest.read_text(encoding="utf-8", errors="replace"):
                return conftest
        except OSError:
            pass
        if folder == repo or folder.parent == folder or repo not in folder.parents:
            return None
        folder = folder.parent


def pytest_hw_argv(python: str, file: Path, label: str) -> list[str]:
    """``python -m pytest FILE --collect-only -q -s --hw-classification LABEL``: the conftest's
    filter prints the same count line as ``run_tests()`` and runs nothing."""
    return [python, "-m", "pytest", str(file), "--collect-only", "-q", "-s", "-p", "no:cacheprovider",
            "--hw-classification", label]


def read_run(label: str, code: int, output: str) -> HwRun:
    """``label``'s count line in a run's output (a counting run prints one per label)."""
    m = next((m for m in LINE.finditer(output)
              if [x.strip().strip("'\"") for x in m["labels"].strip("[]").split(",")] == [label]), None)
    if m is None:
        tail = " | ".join(output.strip().splitlines()[-3:])
        raise HwRunError(label, f"exit {code}: {tail[-400:]!r}")
    return HwRun(label=label, total=int(m["total"]), passed=int(m["passed"]),
                 unclassified=int(m["unclassified"]), mismatched=int(m["mismatched"]), code=code)


def account(runs: list[HwRun]) -> list[str]:
    """Problems with the runs as a whole ([] when every test is accounted for)."""
    problems: list[str] = []
    totals = {r.total for r in runs}
    if len(totals) > 1:
        problems.append(f"the runs saw different totals {sorted(totals)}")
    for r in runs:
        if r.unclassified:
            problems.append(f"{r.unclassified} tests are unclassified (a class without hw_classification)")
            break
    if runs and len(totals) == 1:
        total = totals.pop()
        counted = sum(r.passed for r in runs)
        if counted != total:
            problems.append(f"the labels' runs selected {counted} of {total} tests")
    return problems
