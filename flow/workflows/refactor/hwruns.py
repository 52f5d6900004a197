"""The ``--hw-classification`` runs of the local test gate (seed phase 6.5, "Local test gate").

PyTorch 2.14.1's ``run_tests`` takes ``--hw-classification NAME...`` and runs only the tests
of classes with those labels, printing one line first::

    HW classification mode active (['GENERIC']): total=3, passed=2, unclassified=0, mismatched=1

``hw_argv`` is one run per label; ``read_run`` reads that line (``HwRunError`` when a run
printed none: never read as zero tests); ``account`` checks that every test is accounted
for: no test unclassified, the same total in every run, and the runs' counts adding up to
it. Pure but for nothing: the jobs are started by ``flow.workflows.refactor.gates``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from flow.workflows.refactor.errors import RefactorError

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


def hw_argv(python: str, file: Path, label: str) -> list[str]:
    """``python FILE --hw-classification LABEL`` (PyTorch's own runner, as its PRs' test plans)."""
    return [python, str(file), "--hw-classification", label]


def read_run(label: str, code: int, output: str) -> HwRun:
    """The count line of one run's output."""
    m = LINE.search(output)
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
