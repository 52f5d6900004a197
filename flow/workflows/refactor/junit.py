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
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from flow.workflows.refactor.errors import JUnitError
from reference import DIR as REFERENCE

if TYPE_CHECKING:
    from flow.core.proc import Result

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


SHARD_PLUGIN_DIR = REFERENCE / "refactor" / "pytest_plugins"


def local_test_run(file: Path, device: str, junit: Path, *, python: str = sys.executable,
                   shard: tuple[int, int] | None = None,
                   extra_args: list[str] | None = None) -> tuple[list[str], dict[str, str]]:
    """The argument list and the extra environment of one local-test run of ``file``.

    ``device`` goes to torch's ``PYTORCH_TESTING_DEVICE_ONLY_FOR`` so device-type classes
    instantiate for that device only; ``shard=(i, n)`` runs every n-th test from the i-th
    (the ``orchestrator_shard`` plugin, put on ``PYTHONPATH``); ``extra_args`` are appended
    to pytest's arguments (never through a shell)."""
    argv = [python, "-m", "pytest", str(file), f"--junitxml={junit}", "-q", "-p",
            "no:cacheprovider", *(extra_args or [])]
    env = {"PYTORCH_TESTING_DEVICE_ONLY_FOR": device}
    if shard is not None and shard[1] > 1:
        argv += ["-p", "orchestrator_shard"]
        env["ORCHESTRATOR_SHARD"] = f"{shard[0]}/{shard[1]}"
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SHARD_PLUGIN_DIR),
                                                          os.environ.get("PYTHONPATH")]))
    return argv, env


def read_local_tests(file: Path, device: str, runs: list[tuple[Result, Path]]) -> LocalTestResult:
    """The gate's result from one or more (sharded) runs: each run's ``Result`` and the JUnit
    report it was told to write. Raises ``JUnitError`` when a run timed out, was lost, or
    wrote no report: a missing report is never read as success."""
    outcomes: list[TestOutcome] = []
    codes = []
    for res, junit in runs:
        if res.timed_out or res.lost:
            why = "timed out" if res.timed_out else "was lost"
            raise JUnitError(str(junit), f"pytest {why} after {res.duration_s:.0f} s; the log "
                                         f"{res.log} ends: {res.tail(5)!r}")
        if not junit.exists():
            raise JUnitError(str(junit), f"pytest exited {res.code} without writing it: "
                                         f"{res.tail(8)!r}")
        outcomes += parse_junit(junit.read_text(encoding="utf-8", errors="replace"), str(junit))
        codes.append(res.code)
    code = next((c for c in codes if c not in (0, 5)), max(codes, default=0))
    return summarise(str(file), device, code, outcomes)


def run_local_tests(file: Path, cwd: Path, device: str, *, python: str = sys.executable,
                    junit_path: Path | None = None, timeout: float | None = None,
                    extra_args: list[str] | None = None) -> LocalTestResult:
    """Run the gate for ``device`` in the foreground (within the call's foreground budget);
    the workflow runs the same command as a background job instead (``gates.test``).
    Raises ``JUnitError`` as ``read_local_tests`` does, or when pytest could not start."""
    from flow.core import proc

    junit = junit_path or cwd / f".local_test_{device}.xml"
    junit.unlink(missing_ok=True)  # never read a previous round's report
    argv, env = local_test_run(file, device, junit, python=python, extra_args=extra_args)
    res = proc.run(argv, cwd=cwd, env={**os.environ, **env}, timeout=timeout,
                   log=junit.with_suffix(".log"))
    if res.code == proc.NOT_FOUND and not junit.exists():
        raise JUnitError(str(junit), f"pytest could not run with {python!r}: {res.tail(2)}")
    return read_local_tests(file, device, [(res, junit)])
