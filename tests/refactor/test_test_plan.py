"""A test plan that did not run is never reported as passed: how the file runs its tests
decides which --hw-classification check applies (seed phases 6.5 and 7)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from flow.workflows.refactor.hwruns import entry_point
from tests.contract.driver import InProcess, Scenario
from tests.refactor.conftest import FIXTURES, needs_hw_classification
from tests.refactor.test_hw_workflow import _answer

PLAN = FIXTURES / "plan"


@pytest.mark.parametrize(("tail", "expected"), [
    ("if __name__ == '__main__':\n    run_tests()\n", "run_tests"),
    ("if __name__ == \"__main__\":\n    common_utils.run_tests()\n", "run_tests"),
    ("if __name__ == '__main__':\n    unittest.main(verbosity=2)\n", "unittest_main"),
    ("if '__main__' == __name__:\n    print('hi')\n", "other"),
    ("x = 1\n", "none"),
])
def test_the_entry_point_is_read_from_the_main_block(tail: str, expected: str) -> None:
    """run_tests() (bare or through its module), unittest.main(), another block, or none."""
    assert expected == entry_point("import unittest\n" + tail)


def _flow(tmp_path: Path, conftest: bool) -> tuple[dict[str, Any], str, str]:
    needs_hw_classification()
    repo = tmp_path / "repo"
    (repo / "test").mkdir(parents=True)
    shutil.copy(PLAN / "unittest_main.py", repo / "test" / "test_shapes.py")
    if conftest:
        shutil.copy(PLAN / "hw_conftest.py", repo / "test" / "conftest.py")
    report = json.loads((PLAN / "shapes_report.json").read_text())
    specs = InProcess(tmp_path / "ws").run(
        Scenario("refactor", ["test/test_shapes.py", "--pytorch-dir", str(repo)], _answer(report)))
    last = specs[-1]
    return last, Path(last["summary_path"]).read_text(), (repo / "test" / "test_shapes.py").read_text()


@pytest.mark.torch
def test_a_unittest_main_file_without_the_pytest_filter_is_not_passed_off_as_tested(tmp_path: Path) -> None:
    """unittest.main() refuses --hw-classification and no conftest has the filter: the check is
    skipped saying so, the PR text says NOT RUN with the step that applies, and neither the
    summary nor next_steps advise opening the PR."""
    last, summary, text = _flow(tmp_path, conftest=False)
    steps = " ".join(last["next_steps"])
    assert ("refactored", False, True, True, True, False, False, True) == (
        last["outcome"], last["pr_ready"], "hw_classification = HardwareClassification.GENERIC" in text,
        "runs its tests with unittest.main(), so `python test/test_shapes.py --hw-classification` cannot count its tests" in summary,
        "run_tests()" in summary.split("## Checks")[0],
        "no torch with the flag" in summary, "Create the PR" in steps or "open a PR titled" in summary,
        "Not ready for a PR yet" in steps)


@pytest.mark.torch
def test_a_unittest_main_file_is_counted_through_the_checkouts_pytest_filter(tmp_path: Path) -> None:
    """With a conftest that has pytest's --hw-classification filter, the counts come from
    pytest --collect-only and the test plan names pytest, not `python FILE --hw-classification`."""
    last, summary, _ = _flow(tmp_path, conftest=True)
    assert ("refactored", True, True, False, True) == (
        last["outcome"], last["pr_ready"],
        "pytest test/test_shapes.py --hw-classification ACCELERATOR   # 1 test" in summary,
        "python test/test_shapes.py --hw-classification" in summary,
        "| hw_classification | pass |" in summary)


@pytest.mark.torch
def test_counts_of_zero_are_no_test_plan(tmp_path: Path) -> None:
    """A class only_for CUDA on a machine without it: the runs count 0 tests. That is said as
    not run here, with the command to run where CUDA is, never 'each in exactly one label's run'."""
    needs_hw_classification()
    repo = tmp_path / "repo"
    (repo / "test").mkdir(parents=True)
    shutil.copy(PLAN / "cuda_only.py", repo / "test" / "test_kernel_cache.py")
    report = {"file": "test/test_kernel_cache.py", "classifications": [
        {"test": "TestKernelCache.test_cache_hit", "strategy": "device_specific", "target_class": "TestKernelCache"}],
        "class_labels": [{"name": "TestKernelCache", "hw_classification": "CUDA"}]}
    specs = InProcess(tmp_path / "ws", env={"ORCHESTRATOR_REFACTOR_DEVICES": "cpu"}).run(
        Scenario("refactor", ["test/test_kernel_cache.py", "--pytorch-dir", str(repo)], _answer(report)))
    last = specs[-1]
    summary = Path(last["summary_path"]).read_text()
    assert (False, True, False, True) == (
        last["pr_ready"], "NOT RUN: no test of the file was instantiated here (cpu)" in summary,
        "each in exactly one label's run" in summary,
        "`python test/test_kernel_cache.py --hw-classification CUDA` on a machine with that device" in summary)
