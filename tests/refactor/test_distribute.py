"""Phase 3: analyst report + catalogue -> ordered per-rule coder tasks."""

from __future__ import annotations

import pytest

from flow.workflows.refactor.analysis import AnalystReport
from flow.workflows.refactor.assess import Assessment, assess_source
from flow.workflows.refactor.distribute import distribute
from flow.workflows.refactor.rules import load_catalogue


def test_small_fixture_tasks(small_before: Assessment, small_report: AnalystReport) -> None:
    """Each rule with work yields one task, in catalogue order, naming the tests it touches."""
    tasks = distribute(small_report, small_before, load_catalogue())
    actual = [(t.rule_id, t.mechanical, t.tests) for t in tasks if t.rule_id not in ("TR008", "TR009", "TR010")]
    assert [
        ("TR001", True, ["TestSmallOps.test_to_accelerator", "TestSmallOps.test_pinned_copy"]),
        ("TR002", True, ["TestSmallOps.test_native_only"]),
        ("TR003", False, ["TestSmallOps.test_clamp_logic"]),
        ("TR004", False, ["TestSmallOps.test_add", "TestSmallOps.test_mul_dtypes", "TestSmallOps.test_to_accelerator",
                          "TestSmallOps.test_pinned_copy", "TestSmallOps.test_native_only", "TestSmallUtils.test_cuda_roundtrip"]),
        ("TR005", False, ["TestSmallUtils.test_cudnn_flag"]),
        ("TR006", False, ["TestSmallOps.test_to_accelerator", "TestSmallUtils.test_cuda_roundtrip"]),
        ("TR007", False, ["TestSmallUtils.test_cuda_roundtrip", "TestSmallUtils.test_cudnn_flag"]),
    ] == actual


def test_strategy_tasks_name_target_classes_and_ranges(small_before: Assessment, small_report: AnalystReport) -> None:
    """A strategy task lists source and target classes and the ranges of those in the original."""
    task = next(t for t in distribute(small_report, small_before, load_catalogue()) if t.rule_id == "TR005")
    assert (["TestSmallCudnn", "TestSmallUtils"], [(60, 73)]) == (task.classes, task.line_ranges)


def test_stale_import_task_carries_the_names(small_before: Assessment, small_report: AnalystReport) -> None:
    """TR008 carries the analyst's stale imports as notes."""
    task = next(t for t in distribute(small_report, small_before, load_catalogue()) if t.rule_id == "TR008")
    assert ["onlyNativeDeviceTypes", "TEST_CUDNN", "unittest"] == [n.split(" ", 1)[0] for n in task.notes]


def test_safe_baseline_distributes_only_baseline_rules(small_before: Assessment, small_report: AnalystReport) -> None:
    """Under a non-core field only import/symbol cleanup is distributed."""
    assert ["TR008"] == [t.rule_id for t in distribute(small_report, small_before, load_catalogue(), safe_baseline=True)]


def test_no_work_no_tasks(small_before: Assessment) -> None:
    """A plan that keeps every test where it is, built the way it already is, yields only the decorator and device-string tasks (its gated tests stay cpu_only)."""
    rows = []
    for cls in small_before.classes:
        device = any(i.kind == "device_type" for i in small_before.instantiations_of(cls.name))
        for t in cls.tests:
            strategy = "device_agnostic" if device else "cpu_only"
            rows.append({"test": f"{cls.name}.{t.name}", "strategy": strategy, "target_class": cls.name})
    report = AnalystReport.model_validate({"file": "small_ops.py", "classifications": rows})
    assert ["TR001", "TR002", "TR006"] == [t.rule_id for t in distribute(report, small_before, load_catalogue())]


GATED = '''
class TestGated(TestCase):
    @unittest.skipIf(not TEST_CUDA, "no CUDA")
    def test_copy(self):
        if torch.cuda.is_available():
            x = torch.ones(2, device="cuda")
'''

# strategy -> the judgment rules the one gated test gets (TR003-TR007 follow the plan).
PER_STRATEGY = [
    ("cpu_only", "TestGated", []),
    ("device_agnostic", "TestGatedDevice", ["TR004", "TR006", "TR007"]),
    ("device_specific", "TestGated", ["TR005", "TR006", "TR007"]),
]


@pytest.mark.parametrize(("strategy", "target", "rules"), PER_STRATEGY, ids=[p[0] for p in PER_STRATEGY])
def test_rule_tasks_follow_the_plan(strategy: str, target: str, rules: list[str]) -> None:
    """A CUDA-gated test kept cpu_only gets no TR006/TR007; otherwise its strategy's rule plus both."""
    before = assess_source(GATED, "t.py")
    report = AnalystReport.model_validate({"file": "t.py", "classifications": [
        {"test": "TestGated.test_copy", "strategy": strategy, "target_class": target}]})
    tasks = [t for t in distribute(report, before, load_catalogue()) if not t.mechanical]
    assert rules == [t.rule_id for t in tasks]
    for t in tasks:
        assert [f"TestGated.test_copy: {strategy} -> {target}"] == t.notes


def test_every_touched_class_has_a_range_or_is_new(small_before: Assessment, small_report: AnalystReport) -> None:
    """Each task's line ranges cover every class it touches that exists in the original."""
    existing = {c.name: (c.start, c.end) for c in small_before.classes}
    for task in distribute(small_report, small_before, load_catalogue()):
        assert [existing[c] for c in task.classes if c in existing] == task.line_ranges
