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
    ] == actual
    # TR006 / TR007 concern only tests that TR004 / TR005 move: their work joins those tasks.
    assert ([], ["TR006", "TR007"], ["TR007"]) == (
        [t.rule_id for t in tasks if t.rule_id in ("TR006", "TR007")],
        next(t for t in tasks if t.rule_id == "TR004").folded, next(t for t in tasks if t.rule_id == "TR005").folded)


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

# strategy -> (the judgment rules the one gated test gets, the rules done in that one task,
# the target's label in the note). TR003-TR007 follow the plan; a moved test's device
# strings and gates are fixed in the task that moves it (one coder/checker round).
PER_STRATEGY = [
    ("cpu_only", "TestGated", [], [], ""),
    ("device_agnostic", "TestGatedDevice", ["TR004"], ["TR006", "TR007"], " (ACCELERATOR)"),
    ("device_specific", "TestGated", ["TR005"], ["TR006", "TR007"], ""),
]


@pytest.mark.parametrize(("strategy", "target", "rules", "folded", "label"), PER_STRATEGY, ids=[p[0] for p in PER_STRATEGY])
def test_rule_tasks_follow_the_plan(strategy: str, target: str, rules: list[str], folded: list[str], label: str) -> None:
    """A CUDA-gated test kept cpu_only gets no TR006/TR007; otherwise its strategy's rule, which
    carries TR006 and TR007 for it (their instructions included)."""
    before = assess_source(GATED, "t.py")
    report = AnalystReport.model_validate({"file": "t.py", "classifications": [
        {"test": "TestGated.test_copy", "strategy": strategy, "target_class": target}]})
    tasks = [t for t in distribute(report, before, load_catalogue()) if not t.mechanical]
    assert (rules, [folded] * len(rules)) == ([t.rule_id for t in tasks], [t.folded for t in tasks])
    for t in tasks:
        assert ([f"TestGated.test_copy: {strategy} -> {target}{label}"], [True, True]) == (
            t.notes, [f"In the same edit ({rid}, for the tests of this task that it concerns: TestGated.test_copy)"
                      in t.instructions for rid in ("TR006", "TR007")])


ONLY_CPU = '''
class TestPoolDevice(TestCase):
    @onlyCPU
    def test_layout(self, device):
        pass

    def test_sum(self, device):
        pass


instantiate_device_type_tests(TestPoolDevice, globals())
'''


def test_an_only_cpu_test_left_in_an_accelerator_class_is_a_task_naming_its_class() -> None:
    """The plan keeps an @onlyCPU test in the ACCELERATOR class: TR011 names the test and the CPU
    class it moves to (with its label and only_for), instead of leaving it to a lint finding."""
    before = assess_source(ONLY_CPU, "t.py")
    report = AnalystReport.model_validate({"file": "t.py", "classifications": [
        {"test": f"TestPoolDevice.{n}", "strategy": "device_agnostic", "target_class": "TestPoolDevice"}
        for n in ("test_layout", "test_sum")],
        "class_labels": [{"name": "TestPoolDevice", "hw_classification": "ACCELERATOR"}]})
    task = next(t for t in distribute(report, before, load_catalogue()) if t.rule_id == "TR011")
    assert (["TestPoolDevice.test_layout"], ["TestPoolDevice", "TestPoolDeviceCPUOnly"], True) == (
        task.tests, task.classes,
        task.notes[0].startswith("TestPoolDevice.test_layout: @onlyCPU in an ACCELERATOR class -> TestPoolDeviceCPUOnly "
                                 "(CPU, instantiate_device_type_tests(..., only_for=\"cpu\"))"))


def test_an_only_cpu_test_planned_into_a_cpu_class_needs_no_tr011() -> None:
    """Planned device_specific into a CPU class, the @onlyCPU test is TR005's, its note names the label."""
    before = assess_source(ONLY_CPU, "t.py")
    report = AnalystReport.model_validate({"file": "t.py", "classifications": [
        {"test": "TestPoolDevice.test_layout", "strategy": "device_specific", "target_class": "TestPoolDeviceCPUOnly"},
        {"test": "TestPoolDevice.test_sum", "strategy": "device_agnostic", "target_class": "TestPoolDevice"}],
        "class_labels": [{"name": "TestPoolDevice", "hw_classification": "ACCELERATOR"},
                         {"name": "TestPoolDeviceCPUOnly", "hw_classification": "CPU"}]})
    tasks = distribute(report, before, load_catalogue())
    assert (["TR005"], ["TestPoolDevice.test_layout: device_specific -> TestPoolDeviceCPUOnly (CPU)"]) == (
        [t.rule_id for t in tasks if not t.mechanical], next(t for t in tasks if t.rule_id == "TR005").notes)


def test_every_touched_class_has_a_range_or_is_new(small_before: Assessment, small_report: AnalystReport) -> None:
    """Each task's line ranges cover every class it touches that exists in the original."""
    existing = {c.name: (c.start, c.end) for c in small_before.classes}
    for task in distribute(small_report, small_before, load_catalogue()):
        assert [existing[c] for c in task.classes if c in existing] == task.line_ranges


def test_a_tr011_move_is_found_in_the_device_class_not_lost() -> None:
    """Verify follows TR011: the @onlyCPU test, moved to TestPoolDeviceCPUOnly as that task says, is not
    'missing from TestPoolDevice' (V201) nor 'new' (V202)."""
    from flow.workflows.refactor.verify import VerifyInput, verify

    after = ONLY_CPU.replace("    @onlyCPU\n    def test_layout(self, device):\n        pass\n\n", "") + (
        "\n\nclass TestPoolDeviceCPUOnly(TestCase):\n    def test_layout(self, device):\n        pass\n\n\n"
        'instantiate_device_type_tests(TestPoolDeviceCPUOnly, globals(), only_for="cpu")\n')
    report = AnalystReport.model_validate({"file": "t.py", "classifications": [
        {"test": f"TestPoolDevice.{n}", "strategy": "device_agnostic", "target_class": "TestPoolDevice"}
        for n in ("test_layout", "test_sum")],
        "class_labels": [{"name": "TestPoolDevice", "hw_classification": "ACCELERATOR"}]})
    found = verify(VerifyInput(path="t.py", before=ONLY_CPU, after=after, plan=report, checks=("test_count",))).findings
    assert [] == [(f.code, f.message) for f in found]


def test_a_planned_class_named_as_a_generated_one_is_sent_back() -> None:
    """TestPoolDeviceCPU is what instantiate_device_type_tests(TestPoolDevice, ...) names its CPU
    class: a plan creating a class of that name (which breaks the module's collection with an MRO
    error) goes back to the analyst; TR011 itself suggests TestPoolDeviceCPUOnly."""
    from flow.workflows.refactor.analysis import check_report

    before = assess_source(ONLY_CPU, "t.py")
    report = AnalystReport.model_validate({"file": "t.py", "classifications": [
        {"test": "TestPoolDevice.test_layout", "strategy": "device_specific", "target_class": "TestPoolDeviceCPU"},
        {"test": "TestPoolDevice.test_sum", "strategy": "device_agnostic", "target_class": "TestPoolDevice"}]})
    assert ["target class 'TestPoolDeviceCPU' is the name instantiate_device_type_tests gives 'TestPoolDevice''s "
            "CPU class; two classes of one name break the module's collection: name it otherwise "
            "(e.g. 'TestPoolDeviceCPUOnly')"] == check_report(report, before)
