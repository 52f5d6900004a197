"""Findings go to whoever can act on them (seed phases 2-5): L012 to the analyst's plan, every
``@only*`` variant decided before verify, pre-existing unused imports said to be so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flow.workflows.refactor.analysis import AnalystReport
from flow.workflows.refactor.assess import assess_source
from flow.workflows.refactor.codemods import decorator_rules, only_accelerator
from flow.workflows.refactor.distribute import distribute
from flow.workflows.refactor.lint import lint, plan_problems
from flow.workflows.refactor.rules import load_catalogue
from tests.contract.driver import InProcess, Scenario

PLAIN_CUDA = '''import torch
from torch.testing._internal.common_utils import TestCase, run_tests


class TestCopy(TestCase):
    def test_copy_to_gpu(self):
        x = torch.ones(2, device="cuda")
        self.assertEqual(x.sum().item(), 2.0)

    def test_copy_plain(self):
        self.assertEqual(torch.ones(2).sum().item(), 2.0)


if __name__ == "__main__":
    run_tests()
'''


def _plan(keeps: str = "") -> AnalystReport:
    return AnalystReport.model_validate({"file": "test/test_copy.py", "classifications": [
        {"test": "TestCopy.test_copy_to_gpu", "strategy": "cpu_only", "target_class": "TestCopy", "keeps_device": keeps},
        {"test": "TestCopy.test_copy_plain", "strategy": "cpu_only", "target_class": "TestCopy"}],
        "class_labels": [{"name": "TestCopy", "hw_classification": "GENERIC"}]})


def _after_the_first_plan(tmp_path: Path, name: str, source: str, plan: AnalystReport) -> Any:
    """Refactor ``test/<name>`` (``source``) of a checkout at ``tmp_path/repo`` through the
    printed JSON until the analyst is asked, answer with ``plan``: the call that follows."""
    pytest.importorskip("torch")
    repo = tmp_path / "repo"
    (repo / "test").mkdir(parents=True)
    (repo / "test" / name).write_text(source)

    def answer(task: dict[str, Any]) -> dict[str, Any]:
        Path(task["report_path"]).write_text(plan.model_dump_json())
        return {"agent_id": "/root/analyst", "agent_name": "analyst"}

    drv = InProcess(tmp_path / "ws")
    sc = Scenario("refactor", [f"test/{name}", "--pytorch-dir", str(repo)], answer)
    spec = drv.call(sc.start).spec
    while spec is not None and spec["status"] == "waiting":
        nxt = drv.step(spec, sc)
        spec = nxt.spec if nxt else None
    assert spec is not None and spec["tasks"][0]["agent_name"] == "analyst"
    return drv.step(spec, sc)


def test_l012_is_the_plans_and_a_reason_to_keep_it_plain_makes_it_a_warning() -> None:
    """A hard-coded "cuda" the plan keeps cpu_only is a problem of the plan; with a keeps_device
    reason the plan stands and verify's L012 is a warning naming the reason, not a coder error."""
    before = assess_source(PLAIN_CUDA, "test/test_copy.py")
    problems = plan_problems(_plan(), before)
    kept = [(f.code, f.severity) for f in lint(before, _plan("copies to the GPU on purpose")) if f.code == "L012"]
    assert (1, True, [], [("L012", "warning")]) == (
        len(problems), problems[0].startswith("L012: TestCopy.test_copy_to_gpu has a hard-coded device 'cuda'"),
        plan_problems(_plan("copies to the GPU on purpose"), before), kept)


@pytest.mark.torch
def test_l012_sends_the_report_back_to_the_analyst_not_to_the_coder(tmp_path: Path) -> None:
    """The first report keeps the CUDA test plain without a reason: the analyst is asked again
    with the L012 problem before any coder task."""
    nxt = _after_the_first_plan(tmp_path, "test_copy.py", PLAIN_CUDA, _plan())
    assert nxt is not None and nxt.spec is not None
    task = nxt.spec["tasks"][0]
    assert ("analyst", True) == (task["agent_name"], "L012: TestCopy.test_copy_to_gpu" in task["prompt"])


WIDE_AND_ONE = '''import torch
from torch.testing._internal.common_device_type import (
    instantiate_device_type_tests,
    onlyCUDAAndPRIVATEUSE1,
    onlyPRIVATEUSE1,
)
from torch.testing._internal.common_utils import TestCase, run_tests


class TestFill(TestCase):
    @onlyCUDAAndPRIVATEUSE1
    def test_fill_big(self, device):
        torch.empty(4, device=device).fill_(1)

    @onlyPRIVATEUSE1
    def test_fill_backend(self, device):
        torch.empty(4, device=device).fill_(2)

    def test_fill_small(self, device):
        torch.empty(1, device=device).fill_(3)


instantiate_device_type_tests(TestFill, globals())
'''


def test_every_only_variant_is_decided_before_verify() -> None:
    """@onlyCUDAAndPRIVATEUSE1 is widened by TR001's codemod (its import fixed); @onlyPRIVATEUSE1
    in a class planned ACCELERATOR is a TR011 task naming the test, not first a linter finding."""
    widened = only_accelerator(WIDE_AND_ONE).code
    report = AnalystReport.model_validate({"file": "t.py", "classifications": [
        {"test": f"TestFill.{n}", "strategy": "device_agnostic", "target_class": "TestFill"}
        for n in ("test_fill_big", "test_fill_backend", "test_fill_small")],
        "class_labels": [{"name": "TestFill", "hw_classification": "ACCELERATOR"}]})
    tasks = distribute(report, assess_source(WIDE_AND_ONE, "t.py"), load_catalogue())
    tr011 = next(t for t in tasks if t.rule_id == "TR011")
    assert (True, False, ["TestFill.test_fill_backend"], True, True) == (
        "@onlyAccelerator\n    def test_fill_big" in widened, "onlyCUDAAndPRIVATEUSE1" in widened,
        tr011.tests, tr011.notes[0].startswith("TestFill.test_fill_backend: @onlyPRIVATEUSE1 in an ACCELERATOR class"),
        any(t.rule_id == "TR001" and t.mechanical for t in tasks))


def test_the_prompts_name_every_only_variant() -> None:
    """The analyst's and coder's prompts say what happens to each @only* variant."""
    from reference import DIR

    analyst = (Path(DIR) / "prompts" / "refactor_analyst.md").read_text()
    coder = (Path(DIR) / "prompts" / "refactor_coder.md").read_text()
    names = ["onlyCUDAAndPRIVATEUSE1", "onlyHPU", "onlyNativeDeviceTypesAnd", "onlyPRIVATEUSE1", "onlyMPS", "keeps_device"]
    assert (names, names[:2] + names[3:5]) == (
        [n for n in names if n in analyst], [n for n in names if n in coder])


COUNTERS = '''import torch
from torch.testing._internal.common_device_type import (
    instantiate_device_type_tests,
    onlyCUDA,
)
from torch.testing._internal.common_utils import TestCase, run_tests


class TestCounterOps(TestCase):
    @onlyCUDA
    def test_wraparound(self, device):
        host = torch.arange(4, dtype=torch.int32)
        self.assertEqual(host, torch.arange(4, dtype=torch.int32, device=device).cpu())


class TestCounterGraphs(TestCase):
    @onlyCUDA
    def test_wraparound(self, device):
        counter = torch.zeros(1, device=device)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            counter.add_(1)
        graph.replay()
        self.assertEqual(counter.item(), 1.0)


instantiate_device_type_tests(TestCounterOps, globals(), only_for=("cpu", "cuda"))
instantiate_device_type_tests(TestCounterGraphs, globals(), only_for=("cpu", "cuda"))

if __name__ == "__main__":
    run_tests()
'''


def _counters_plan() -> AnalystReport:
    return AnalystReport.model_validate({"file": "test/test_counters.py", "classifications": [
        {"test": "TestCounterOps.test_wraparound", "strategy": "device_agnostic", "target_class": "TestCounterOps"},
        {"test": "TestCounterGraphs.test_wraparound", "strategy": "device_specific",
         "target_class": "TestCounterGraphsCUDAOnly"}],
        "class_labels": [{"name": "TestCounterOps", "hw_classification": "ACCELERATOR"},
                         {"name": "TestCounterGraphsCUDAOnly", "hw_classification": "CUDA"}]})


def test_a_test_planned_for_one_device_keeps_its_only_cuda() -> None:
    """TR001 widens @onlyCUDA where the test may run on every accelerator; the same method name
    in a class whose test the plan keeps on CUDA (a CUDA graph) keeps @onlyCUDA and its import."""
    result = decorator_rules(COUNTERS, keep_device=frozenset({("TestCounterGraphs", "test_wraparound")}))
    out, changes = result.code, result.changes
    ops, graphs = out.split("class TestCounterGraphs")
    assert (True, True, True, ["@onlyCUDA -> @onlyAccelerator on test_wraparound"]) == (
        "@onlyAccelerator\n    def test_wraparound" in ops, "@onlyCUDA\n    def test_wraparound" in graphs,
        "    onlyCUDA,\n" in out and "    onlyAccelerator,\n" in out, [c.description for c in changes])


@pytest.mark.torch
def test_the_mechanical_phase_keeps_only_cuda_on_the_plans_device_specific_test(tmp_path: Path) -> None:
    """Driven through the printed JSON: after the analyst's plan, the checkout's file has
    @onlyAccelerator on the device-agnostic test and @onlyCUDA still on the CUDA-graph test."""
    repo = tmp_path / "repo"
    nxt = _after_the_first_plan(tmp_path, "test_counters.py", COUNTERS, _counters_plan())
    assert nxt is not None and nxt.spec is not None and nxt.spec["tasks"][0]["agent_name"] == "coder"
    ops, graphs = (repo / "test" / "test_counters.py").read_text().split("class TestCounterGraphs")
    assert (True, True) == ("@onlyAccelerator\n    def test_wraparound" in ops,
                            "@onlyCUDA\n    def test_wraparound" in graphs)
