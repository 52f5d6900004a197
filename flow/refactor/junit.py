"""Phase 6.5, local test gate: parse pytest's JUnit XML and run the file under pytest.

``parse_junit(xml_text)`` -> ``list[TestOutcome]``, one per test (pytest writes a
second ``<testcase>`` for a teardown error after a call failure; rerun plugins write one
per attempt). Rules, from pytest's own writer (``_pytest/junitxml.py``):

- ``<failure>``: failed, including a strict xpass (message ``[XPASS(strict)]``) and a
  unittest "Unexpected success": pytest's own summary counts both as failed, so the gate
  and the counts do too; ``<error>``: error (setup/teardown); ``<skipped
  type="pytest.xfail">``: xfailed; other ``<skipped>``: skipped; no child: passed. Older
  pytest wrote a strict xpass as ``<skipped message="xfail-marked test passes
  unexpectedly">``, read as failed too.
- A non-strict xpass is written exactly like a pass, so it is reported as passed; the
  XML carries nothing that tells them apart.
- Several entries for one test: a teardown/setup error after a call failure is merged
  (the test is both FAIL and ERROR); otherwise the last entry wins (reruns written as
  separate entries). pytest-rerunfailures' ``<rerunFailure>`` children are history, not
  the outcome, and are ignored.
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from flow.refactor.errors import JUnitError

Outcome = Literal["passed", "failed", "error", "skipped", "xfailed", "xpassed"]
#: "xpassed" stays in ``Outcome`` for reading older local_test.json files; the parser never
#: produces it (a lenient xpass is written like a pass, a strict one is a failure).
FAILING: frozenset[str] = frozenset({"failed", "xpassed"})


class TestOutcome(BaseModel):
    """One test's result. ``name`` is ``classname.name`` (``test_foo.TestBarCPU.test_x_cpu``)."""

    __test__: ClassVar[bool] = False  # a model, not a test class for pytest to collect

    model_config = ConfigDict(extra="forbid")

    name: str
    outcome: Outcome
    message: str = ""
    also_error: str | None = None  # teardown/setup error recorded after a call outcome


class LocalTestResult(BaseModel):
    """The local test gate's result for one file on one device; ``local_test.json`` holds
    ``{device: LocalTestResult}``, one entry per device the gate ran."""

    model_config = ConfigDict(extra="forbid")

    file: str
    device: str
    returncode: int
    outcomes: list[TestOutcome]
    FAIL: list[str]
    ERROR: list[str]
    counts: dict[str, int]


def _classify(case: ET.Element) -> tuple[Outcome, str]:
    failure, error, skipped = case.find("failure"), case.find("error"), case.find("skipped")
    if failure is not None:
        return "failed", failure.get("message", "")
    if error is not None:
        return "error", error.get("message", "")
    if skipped is not None:
        msg = skipped.get("message", "")
        if skipped.get("type") == "pytest.xfail":
            return "xfailed", msg
        if msg == "xfail-marked test passes unexpectedly":
            return "failed", msg
        return "skipped", msg
    return "passed", ""


def parse_junit(xml_text: str, source: str = "<junit>") -> list[TestOutcome]:
    """Parse pytest JUnit XML into one outcome per test, in first-seen order.

    Raises ``JUnitError`` on malformed XML; an empty ``<testsuite>`` gives [].
    """
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as exc:
        raise JUnitError(source, f"malformed XML ({exc})") from exc
    results: dict[str, TestOutcome] = {}
    for case in root.iter("testcase"):
        cls, name = case.get("classname", ""), case.get("name", "")
        key = f"{cls}.{name}" if cls else name
        outcome, message = _classify(case)
        prior = results.get(key)
        teardown = outcome == "error" and message.startswith("failed on teardown")
        if prior is not None and teardown and prior.outcome != "error" and prior.also_error is None:
            # pytest's extra entry for a teardown error after the call's own outcome.
            results[key] = prior.model_copy(update={"also_error": message})
            continue
        results.pop(key, None)  # a rerun: the last attempt decides, and moves to the end
        results[key] = TestOutcome(name=key, outcome=outcome, message=message)
    return list(results.values())


def summarise(file: str, device: str, returncode: int, outcomes: list[TestOutcome]) -> LocalTestResult:
    """Build the gate result: FAIL = failed (strict xpass and unexpected success included),
    ERROR = errored (including teardown)."""
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[o.outcome] = counts.get(o.outcome, 0) + 1
    return LocalTestResult(
        file=file,
        device=device,
        returncode=returncode,
        outcomes=outcomes,
        FAIL=[o.name for o in outcomes if o.outcome in FAILING],
        ERROR=[o.name for o in outcomes if o.outcome == "error" or o.also_error is not None],
        counts=counts,
    )


def run_local_tests(file: Path, cwd: Path, device: str, *, python: str = sys.executable,
                    junit_path: Path | None = None, timeout: float = 1800.0,
                    extra_args: list[str] | None = None) -> LocalTestResult:
    """Run ``python -m pytest FILE --junitxml=...`` for ``device`` and return FAIL/ERROR lists.

    ``extra_args`` are appended to pytest's argument list (never through a shell).
    ``device`` goes to torch's ``PYTORCH_TESTING_DEVICE_ONLY_FOR`` so device-type classes
    instantiate for that device only. Raises ``JUnitError`` when pytest wrote no report
    (a missing report is never read as success), could not be started or timed out.
    """
    junit = junit_path or cwd / f".local_test_{device}.xml"
    if junit.exists():
        junit.unlink()  # never read a previous round's report
    cmd = [python, "-m", "pytest", str(file), f"--junitxml={junit}", "-q", "-p", "no:cacheprovider", *(extra_args or [])]
    env = {**os.environ, "PYTORCH_TESTING_DEVICE_ONLY_FOR": device}
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise JUnitError(str(junit), f"pytest could not run with {python!r}: {exc}") from exc
    if not junit.exists():
        raise JUnitError(str(junit), f"pytest exited {proc.returncode} without writing it: {proc.stderr[-400:]!r}")
    outcomes = parse_junit(junit.read_text(encoding="utf-8"), str(junit))
    return summarise(str(file), device, proc.returncode, outcomes)
