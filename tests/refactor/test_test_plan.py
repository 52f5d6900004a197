"""A test plan that did not run is never reported as passed: how the file runs its tests
decides which --hw-classification check applies (seed phases 6.5 and 7)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from flow.workflows.refactor.hwruns import entry_point
from tests import forkserver
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


def _follow(remedy: str, text: str) -> str:
    """The edits ``remedy`` prints, made as a person reads them: `unittest.main()` replaced with
    `run_tests()`; each class it names made to extend common_utils' `TestCase`, with the import
    line it gives."""
    import re

    text = text.replace("unittest.main()", "run_tests()")
    named = re.search(r"make (.*?) extend `TestCase` from torch\.testing\._internal\.common_utils", remedy)
    for cls in re.findall(r"`(\w+)`", named.group(1)) if named else []:
        text = text.replace(f"class {cls}(unittest.TestCase):", f"class {cls}(TestCase):")
    line = re.search(r"\(`(from torch\.testing\._internal\.common_utils import [\w, ]+)`\)", remedy)
    imports = line.group(1) if line else "from torch.testing._internal.common_utils import run_tests"
    return text.replace("import torch\n", f"import torch\n{imports}\n", 1)


@pytest.mark.torch
def test_the_remedy_for_a_unittest_testcase_file_works_when_followed(tmp_path: Path) -> None:
    """A unittest.main() file whose classes extend unittest.TestCase, in a checkout without the
    pytest filter: the printed remedy says to switch the base class too, and following it as
    printed makes `python FILE --hw-classification GENERIC` count every test (rc 0); it names the
    classes that extend unittest's TestCase themselves (a subclass is mended with them). Replacing
    unittest.main() alone, the remedy as it was, makes run_tests() refuse the class (rc 1)."""
    import os
    import re
    import subprocess

    from flow.workflows.refactor.hwruns import hw_env

    needs_hw_classification()
    repo = tmp_path / "repo"
    (repo / "test").mkdir(parents=True)
    target = repo / "test" / "test_abacus.py"
    shutil.copy(PLAN / "unittest_plain.py", target)
    report = {"file": "test/test_abacus.py", "classifications": [
        {"test": "TestAbacus.test_beads", "strategy": "cpu_only", "target_class": "TestAbacus"},
        {"test": "TestAbacusFrame.test_rows", "strategy": "cpu_only", "target_class": "TestAbacusFrame"}],
        "class_labels": [{"name": "TestAbacus", "hw_classification": "GENERIC"},
                         {"name": "TestAbacusFrame", "hw_classification": "GENERIC"}]}
    last = InProcess(tmp_path / "ws").run(
        Scenario("refactor", ["test/test_abacus.py", "--pytorch-dir", str(repo)], _answer(report)))[-1]
    summary = Path(last["summary_path"]).read_text()
    remedy = re.search(r"- To do before this PR is sent: (.*)\.\n", summary)
    assert remedy is not None, summary
    refactored = target.read_text()

    def count(text: str) -> tuple[int, str]:
        target.write_text(text)
        run = subprocess.run([forkserver.python("torch"), str(target), "--hw-classification", "GENERIC"],
                             capture_output=True, text=True, cwd=target.parent, timeout=300,
                             env=hw_env(os.environ))  # as a person runs it: no CI's xmlrunner
        line = re.search(r"HW classification mode active[^\n]*", run.stdout + run.stderr)
        return run.returncode, line.group(0) if line else (run.stdout + run.stderr)[-300:]

    followed, alone = count(_follow(remedy.group(1), refactored)), count(refactored.replace("unittest.main()", "run_tests()")
                                                                        .replace("import torch\n", "import torch\nfrom torch.testing._internal.common_utils import run_tests\n", 1))
    assert (False, "`AbacusCase`, `TestAbacusFrame`" in remedy.group(1), 0, True, 1) == (
        last["pr_ready"], "`AbacusCase`, `TestAbacusFrame`" in remedy.group(1) and "`TestAbacus`" not in remedy.group(1),
        followed[0], "total=2, passed=2, unclassified=0" in followed[1], alone[0]), (remedy.group(1), followed, alone)
