"""Phase 6.5: JUnit XML from real pytest runs parsed into the local test gate's FAIL/ERROR lists."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from flow.workflows.refactor.errors import JUnitError
from flow.workflows.refactor.junit import parse_junit, run_local_tests

from tests import forkserver
from tests.refactor.conftest import FIXTURES, SMALL, read

JUNIT = FIXTURES / "junit"
M = "test_outcomes"
EXPECTED = [
    (f"{M}.test_pass", "passed", False),
    (f"{M}.test_fail", "failed", False),
    (f"{M}.test_setup_error", "error", False),
    (f"{M}.test_skip", "skipped", False),
    (f"{M}.test_xfail", "xfailed", False),
    (f"{M}.test_xpass_lenient", "passed", False),  # pytest writes a lenient xpass exactly like a pass
    (f"{M}.test_xpass_strict", "failed", False),  # pytest: "1 failed" ([XPASS(strict)])
    (f"{M}.test_fail_then_teardown_error", "failed", True),
    (f"{M}.TestUnittestStyle.test_expected_failure", "xfailed", False),
    (f"{M}.TestUnittestStyle.test_unexpected_success", "failed", False),  # pytest: failed
]


@pytest.fixture(scope="module")
def outcomes_run(tmp_path_factory: pytest.TempPathFactory):
    """One real pytest run over the outcome fixture."""
    root = tmp_path_factory.mktemp("junit")
    shutil.copy(JUNIT / "junit_outcomes.py", root / f"{M}.py")
    return run_local_tests(Path(f"{M}.py"), root, "cpu", python=forkserver.python("torch"))


def test_every_outcome_is_told_apart(outcomes_run) -> None:
    """pass/fail/error/skip/xfail/xpass and a call failure with a teardown error parse to one entry per test."""
    assert EXPECTED == [(o.name, o.outcome, o.also_error is not None) for o in outcomes_run.outcomes]


def test_fail_and_error_lists(outcomes_run) -> None:
    """FAIL holds failures and strict xpasses; ERROR holds setup and teardown errors; the returncode is kept."""
    actual = (outcomes_run.FAIL, outcomes_run.ERROR, outcomes_run.returncode)
    assert (
        [f"{M}.test_fail", f"{M}.test_xpass_strict", f"{M}.test_fail_then_teardown_error", f"{M}.TestUnittestStyle.test_unexpected_success"],
        [f"{M}.test_setup_error", f"{M}.test_fail_then_teardown_error"],
        1,
    ) == actual


def test_rerun_duplicates_keep_the_last_outcome() -> None:
    """Rerun attempts written as separate entries resolve to the last; <rerunFailure> history is ignored."""
    outcomes = parse_junit(read(JUNIT / "rerun.xml"))
    prefix = "test_ops.TestOpsCPU."
    assert [(f"{prefix}test_flaky_cpu", "passed"), (f"{prefix}test_broken_cpu", "failed"), (f"{prefix}test_history_cpu", "passed")] == [
        (o.name, o.outcome) for o in outcomes
    ]


def test_old_pytest_strict_xpass_spelling() -> None:
    """Older pytest's <skipped message="xfail-marked test passes unexpectedly"> is a failure, not a skip."""
    xml = '<testsuite><testcase classname="m" name="t"><skipped message="xfail-marked test passes unexpectedly"/></testcase></testsuite>'
    assert ["failed"] == [o.outcome for o in parse_junit(xml)]


def test_malformed_xml_raises() -> None:
    """Unreadable XML is a JUnitError, never an empty (passing) result."""
    with pytest.raises(JUnitError):
        parse_junit("<testsuite><testcase", "broken.xml")


def test_missing_interpreter_raises(tmp_path: Path) -> None:
    """A missing interpreter is a JUnitError naming it (a reportable error, not a crash), never a result."""
    (tmp_path / "test_x.py").write_text("def test_a():\n    pass\n")
    with pytest.raises(JUnitError, match="no-python"):
        run_local_tests(Path("test_x.py"), tmp_path, "cpu", python=str(tmp_path / "no-python"))


def test_stale_report_is_not_reused(tmp_path: Path) -> None:
    """A report left by an earlier round is deleted first, so a run that writes none (usage error) raises."""
    junit = tmp_path / "old.xml"
    junit.write_text('<testsuite><testcase classname="m" name="t"/></testsuite>')
    (tmp_path / "test_x.py").write_text("def test_a():\n    pass\n")
    with pytest.raises(JUnitError):
        run_local_tests(Path("test_x.py"), tmp_path, "cpu", python=forkserver.python("torch"), junit_path=junit,
                        extra_args=["--definitely-not-an-option"])


@pytest.mark.torch
def test_refactored_small_fixture_on_cpu(tmp_path: Path) -> None:
    """The refactored small fixture runs for real on CPU with no FAIL or ERROR."""
    pytest.importorskip("torch")
    shutil.copy(SMALL / "small_ops_after.py", tmp_path / "test_small_ops.py")
    result = run_local_tests(Path("test_small_ops.py"), tmp_path, "cpu", python=forkserver.python("torch"))
    assert ([], [], {"passed": 9, "skipped": 2}) == (result.FAIL, result.ERROR, result.counts)
