"""'Pre-existing' is checked against the original's own run (seed phase 6.5, fix-or-defer)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from flow.workflows.refactor.preexisting import shared_with
from tests.contract.driver import InProcess, Scenario
from tests.refactor.conftest import FIXTURES, needs_hw_classification

PLAN = FIXTURES / "plan"


def test_a_failure_is_shared_by_class_and_method_by_a_moved_method_or_by_the_device_suffix() -> None:
    original = {"cpu": {"test_x.TestA.test_same": "failed", "test_x.TestOld.test_moved": "error",
                        "test_x.TestPlain.test_plain": "failed", "test_x.TestA.test_new": "passed"}}
    got = shared_with(["test_x.TestA.test_same", "test_x.TestNewCPU.test_moved_cpu",
                       "test_x.TestPlainDeviceCPU.test_plain_cpu", "test_x.TestA.test_new",
                       "test_x.TestA.test_absent"], original, "cpu")
    assert ({"test_x.TestA.test_same": "test_x.TestA.test_same",
             "test_x.TestNewCPU.test_moved_cpu": "test_x.TestOld.test_moved",
             "test_x.TestPlainDeviceCPU.test_plain_cpu": "test_x.TestPlain.test_plain"},
            {"test_x.TestA.test_new": "passed as TestA.test_new in the original",
             "test_x.TestA.test_absent": "not run by the original"}) == (got.shared, got.only_refactored)


# A file before and after a refactor that moves tests every way it can (our own words):
# @onlyCPU tests of a device class go to a GENERIC class, a plain test goes to a device class,
# the device class is renamed, and a @dtypes test keeps its dtypes.
BEFORE = '''
class TestKettle(TestCase):
    @onlyCPU
    def test_boil(self, device):
        pass

    @onlyCPU
    def test_pour(self, device):
        pass

    @dtypes(torch.float32, torch.float64)
    def test_heat(self, device, dtype):
        pass


class TestKettlePlain(TestCase):
    def test_lid(self):
        pass


instantiate_device_type_tests(TestKettle, globals())
'''

AFTER = '''
class TestKettle(TestCase):
    hw_classification = HardwareClassification.GENERIC

    def test_boil(self):
        pass

    def test_pour(self):
        pass


class TestKettleDevice(TestCase):
    hw_classification = HardwareClassification.ACCELERATOR

    @dtypes(torch.float32, torch.float64)
    def test_heat(self, device, dtype):
        pass

    def test_lid(self, device):
        pass


instantiate_device_type_tests(TestKettleDevice, globals())
'''

MOVED = {("TestKettleDevice", "test_heat"): "TestKettle", ("TestKettleDevice", "test_lid"): "TestKettlePlain"}


def test_a_test_is_matched_by_its_own_function_across_every_move() -> None:
    """device -> plain (TestKettleCPU.test_boil_cpu is TestKettle.test_boil), plain -> device
    (TestKettlePlain.test_lid is TestKettleDeviceCPU.test_lid_cpu), a renamed device class with
    dtype variants (test_heat_cpu_float64 is only itself), and a test the original passes."""
    original = {"cpu": {"test.test_kettle_flow_original.TestKettleCPU.test_boil_cpu": "failed",
                        "test.test_kettle_flow_original.TestKettleCPU.test_pour_cpu": "passed",
                        "test.test_kettle_flow_original.TestKettleCPU.test_heat_cpu_float32": "passed",
                        "test.test_kettle_flow_original.TestKettleCPU.test_heat_cpu_float64": "failed",
                        "test.test_kettle_flow_original.TestKettlePlain.test_lid": "error"}}
    deferred = ["test.test_kettle.TestKettle.test_boil", "test.test_kettle.TestKettle.test_pour",
                "test.test_kettle.TestKettleDeviceCPU.test_heat_cpu_float64",
                "test.test_kettle.TestKettleDeviceCPU.test_heat_cpu_float32",
                "test.test_kettle.TestKettleDeviceCPU.test_lid_cpu"]
    got = shared_with(deferred, original, "cpu", before=BEFORE, after=AFTER, moved=MOVED)
    assert ({"test.test_kettle.TestKettle.test_boil": "test.test_kettle_flow_original.TestKettleCPU.test_boil_cpu",
             "test.test_kettle.TestKettleDeviceCPU.test_heat_cpu_float64":
                 "test.test_kettle_flow_original.TestKettleCPU.test_heat_cpu_float64",
             "test.test_kettle.TestKettleDeviceCPU.test_lid_cpu": "test.test_kettle_flow_original.TestKettlePlain.test_lid"},
            {"test.test_kettle.TestKettle.test_pour": "passed as TestKettleCPU.test_pour_cpu in the original",
             "test.test_kettle.TestKettleDeviceCPU.test_heat_cpu_float32":
                 "passed as TestKettleCPU.test_heat_cpu_float32 in the original"},
            "failed as TestKettleCPU.test_boil_cpu") == (
        got.shared, got.only_refactored, got.original["test.test_kettle.TestKettle.test_boil"])


def test_a_test_whose_variants_changed_is_shared_only_when_every_variant_failed() -> None:
    """A @dtypes test moved to a plain class runs once: the original's failure of one dtype
    while the other passed is no evidence that the plain test's failure is pre-existing."""
    after = AFTER.replace("    def test_pour(self):", "    def test_heat(self):\n        pass\n\n    def test_pour(self):")
    after = after.replace("    @dtypes(torch.float32, torch.float64)\n    def test_heat(self, device, dtype):\n        pass\n\n", "")
    half = {"cpu": {"o.TestKettleCPU.test_heat_cpu_float32": "passed", "o.TestKettleCPU.test_heat_cpu_float64": "failed"}}
    both = {"cpu": {"o.TestKettleCPU.test_heat_cpu_float32": "failed", "o.TestKettleCPU.test_heat_cpu_float64": "failed"}}
    name = ["r.TestKettle.test_heat"]
    assert ({}, "passed as TestKettleCPU.test_heat_cpu_float32, failed as TestKettleCPU.test_heat_cpu_float64 in the original",
            {"r.TestKettle.test_heat": "o.TestKettleCPU.test_heat_cpu_float32"}) == (
        shared_with(name, half, "cpu", before=BEFORE, after=after).shared,
        shared_with(name, half, "cpu", before=BEFORE, after=after).only_refactored["r.TestKettle.test_heat"],
        shared_with(name, both, "cpu", before=BEFORE, after=after).shared)


@pytest.mark.torch
def test_deferrals_are_checked_against_the_original_and_the_gate_is_not_run_again(tmp_path: Path) -> None:
    """test_rounding_known_bad fails before the refactor; an agent breaks test_balance. The coder
    defers both as pre-existing every time: the first is deferred with the original's word for
    it, the second is refused (the original passes it) and never reported as pre-existing; when
    the rounds are spent a person is asked, with both results, and defers it; the file never
    changes, so the whole gate runs once."""
    needs_hw_classification()
    repo = tmp_path / "repo"
    (repo / "test").mkdir(parents=True)
    target = repo / "test" / "test_ledger.py"
    shutil.copy(PLAN / "ledger.py", target)
    report = {"file": "test/test_ledger.py", "classifications": [
        {"test": "TestLedger.test_balance", "strategy": "cpu_only", "target_class": "TestLedger"},
        {"test": "TestLedger.test_rounding_known_bad", "strategy": "cpu_only", "target_class": "TestLedger"}],
        "class_labels": [{"name": "TestLedger", "hw_classification": "GENERIC"}]}
    prompts: list[str] = []

    def answer(task: dict[str, Any]) -> dict[str, Any]:
        import json

        name = task.get("agent_name") or task.get("role")
        ident = {"agent_id": f"/root/{name}", "agent_name": name}
        if name == "analyst":
            Path(task["report_path"]).write_text(json.dumps(report))
            # an agent's slip the local gate must catch: the expected sum is now wrong
            target.write_text(target.read_text().replace("sum().item(), 3.0", "sum().item(), 4.0"))
            return ident
        if name == "checker":
            return ({**ident, "all_clear": True, "findings": [], "summary": "clean"}
                    if task["task_id"].startswith("review-") else {**ident, "passed": True})
        if task["task_id"].startswith("test-"):
            prompts.append(task["prompt"])
            return {**ident, "verdicts": [{"test_name": n, "verdict": "deferred", "defer_reason": "pre-existing"}
                                          for n in task["failures"]]}
        return {**ident, "success": True}

    questions: list[str] = []

    def choose(spec: dict[str, Any]) -> str:
        questions.append(spec["question"])
        return "defer"

    drv = InProcess(tmp_path / "ws")
    specs = drv.run(Scenario("refactor", ["test/test_ledger.py", "--pytorch-dir", str(repo)], answer, choose=choose))
    last = specs[-1]
    summary = Path(last["summary_path"]).read_text()
    deferred = summary.split("## Deferred failures")[1].split("##")[0]
    pr = summary.split("## Tests moved")[0]
    flow_dir = Path(last["summary_path"]).parent
    gate_logs = sorted(p.name for p in (flow_dir / "logs").glob("local_test_r*"))
    assert (1, True) == (len(questions), "the original, run the same way: passed as TestLedger.test_balance"
                                            in questions[0])
    assert (True, 1, True, False, True, True, True, True) == (
        last["pr_ready"], len(gate_logs),
        "- Failing before this change too (the original file, run the same way, fails it): "
        "`TestLedger.test_rounding_known_bad`." in pr,
        "fails it): `TestLedger.test_balance`" in pr,
        "test_rounding_known_bad`: pre-existing (checked: the original fails it too" in deferred,
        "test_balance`: deferred by a person after 3 fix rounds; here: failed" in deferred,
        "shares 1 of the 2 failures deferred as pre-existing" in summary,
        any("test_balance: deferred as pre-existing, but the original does not fail it (passed as "
            "TestLedger.test_balance in the original)" in p
            for p in prompts)), gate_logs
