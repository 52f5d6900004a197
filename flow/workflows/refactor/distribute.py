"""Phase 3, Distribute: analyst report + rule catalogue -> ordered per-rule coder tasks.

One task per rule that has work, in catalogue order (the single coder iterates per
rule). Mechanical tasks name their codemod; the orchestrator applies those itself and
agents get only the judgment rules. Under a field's safe baseline only rules flagged
``baseline`` are distributed.

A test that moves class (TR003-TR005) has its device strings (TR006) and CUDA gates (TR007)
fixed in that same task: one coder/checker round per moved test, not one per rule. Each
test's note names its target class with the class's HardwareClassification, and an
``@onlyCPU``/``@onlyMPS``/``@onlyXPU`` test the plan leaves in an ACCELERATOR class is a task
of its own (TR011) naming the class it must move to (PyTorch's TEST_LINTER forbids every
``@only*`` but ``@onlyAccelerator`` there).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from agents.prompts import fence

from flow.workflows.refactor.analysis import AnalystReport, Classification, moves
from flow.workflows.refactor.assess import Assessment, ClassInfo, TestInfo
from flow.workflows.refactor.lint import other_only
from flow.workflows.refactor.rules import Catalogue, Rule


class CoderTask(BaseModel):
    """One rule's work for the coder (or the orchestrator, when mechanical)."""

    model_config = ConfigDict(extra="forbid")

    rule_id: str
    title: str
    mechanical: bool
    codemod: str | None
    instructions: str
    tests: list[str]  # Class.test_name, before the refactor
    classes: list[str]  # classes touched (sources and targets)
    line_ranges: list[tuple[int, int]]  # per class in ``classes`` that exists in the original file
    notes: list[str] = []  # e.g. the stale import names for TR008, or each test's planned strategy
    folded: list[str] = []  # rules done in this task for its moved tests (TR006, TR007)


def _mechanism_matches(c: Classification, before: Assessment) -> bool:
    """True when the test already sits in a class built the way its strategy needs."""
    insts = [i for i in before.instantiations_of(c.source_class) if i.kind == "device_type"]
    if c.strategy == "cpu_only":
        return not insts
    if c.strategy == "device_agnostic":
        return bool(insts) and all(i.only_for is None for i in insts)
    return bool(insts) and all(i.only_for for i in insts)


def _needs_work(rule: Rule, c: Classification, test: TestInfo, report: AnalystReport, before: Assessment) -> bool:
    trig = rule.trigger
    if trig.decorators and test.decorator_names() & set(trig.decorators):
        return True
    if trig.strategy is not None and c.strategy == trig.strategy:
        return c.source_class != c.target_class or not _mechanism_matches(c, before)
    # TR006 / TR007 act on the analyst's plan: a test the analyst keeps cpu_only keeps its
    # CUDA gate or device string (it is the analyst's call, not the coder's), so only tests
    # planned device-agnostic or device-specific get these tasks.
    if trig.device_strings and test.device_literals and c.strategy != "cpu_only":
        return True
    return trig.cuda_gates and bool(test.gates) and c.strategy != "cpu_only"


def class_ranges(before: Assessment, classes: list[str]) -> list[tuple[int, int]]:
    """Line ranges (original file) of the ``classes`` that exist there, in ``classes`` order."""
    infos: dict[str, ClassInfo] = {c.name: c for c in before.classes}
    return [(infos[n].start, infos[n].end) for n in classes if n in infos]


#: ``@only<device>`` decorators TEST_LINTER forbids in an ACCELERATOR class, and their device
#: (``@onlyCUDA`` is TR001's: it becomes ``@onlyAccelerator``).
ONE_DEVICE = {"onlyCPU": "cpu", "onlyMPS": "mps", "onlyXPU": "xpu"}
def one_device_class(cls: str, device: str) -> str:
    """The class an ``@only<device>`` test of ``cls`` moves to: ``TestPoolDeviceCPUOnly``, never
    ``TestPoolDeviceCPU``, the name ``instantiate_device_type_tests(TestPoolDevice, ...)`` gives
    its own CPU class (a second class of that name breaks the module's collection)."""
    return f"{cls}{device.upper()}Only"


#: The rules whose tasks move tests between classes; TR006/TR007 work on those tests joins them.
MOVE_RULES = ("TR003", "TR004", "TR005")
FOLDED_RULES = ("TR006", "TR007")


def _plan_notes(report: AnalystReport, tests: list[str]) -> list[str]:
    """One line per test: the analyst's strategy and target class (with the class's
    HardwareClassification when the plan gives one), which the task must follow."""
    by_test, labels = report.by_test(), report.labels()
    out = []
    for t in tests:
        if t in by_test:
            target = by_test[t].target_class
            label = f" ({labels[target]})" if target in labels else ""
            out.append(f"{t}: {by_test[t].strategy} -> {target}{label}")
    return out


def only_in_accelerator(report: AnalystReport, before: Assessment) -> list[tuple[str, str]]:
    """(Class.test, device) for each ``@onlyCPU``/``@onlyMPS``/``@onlyXPU`` test the plan keeps in a
    class labelled ACCELERATOR (or a device class without ``only_for`` when it has no label)."""
    tests = {f"{c.name}.{t.name}": t for c in before.classes for t in c.tests}
    labels = report.labels()
    out = []
    for c in report.classifications:
        test = tests.get(c.test)
        if test is None or c.strategy != "device_agnostic":
            continue
        label = labels.get(c.target_class, "ACCELERATOR")
        for name in sorted(test.decorator_names()):
            short = name.rsplit(".", 1)[-1]
            if short in ONE_DEVICE and label == "ACCELERATOR":
                out.append((c.test, ONE_DEVICE[short]))
            elif other_only(short) and label == "ACCELERATOR":
                out.append((c.test, f"@{short}"))  # no classification names its device: the coder moves it
    return out


def _fold(tasks: list[CoderTask], catalogue: Catalogue) -> list[CoderTask]:
    """Give TR006/TR007's work on a test that a move task (TR003-TR005) already carries to that
    move task, so the coder fixes a moved test's devices and gates in the one round that moves
    it; a TR006/TR007 task left with no test is dropped."""
    movers = [t for t in tasks if t.rule_id in MOVE_RULES]
    if not movers:
        return tasks
    rules = {r.id: r for r in catalogue.rules}
    out = []
    for task in tasks:
        if task.rule_id not in FOLDED_RULES:
            out.append(task)
            continue
        left = list(task.tests)
        for mover in movers:
            joined = [t for t in left if t in mover.tests]
            if not joined:
                continue
            left = [t for t in left if t not in joined]
            if task.rule_id not in mover.folded:
                mover.folded.append(task.rule_id)
                mover.instructions += (f"\n\nIn the same edit ({task.rule_id}, for the tests of this task that "
                                       f"it concerns: {', '.join(joined)}): {rules[task.rule_id].instructions}")
                mover.title += f" (with {task.rule_id} for its moved tests)"
        if left:
            task.tests = left
            by_note = {n.split(":", 1)[0]: n for n in task.notes}
            task.notes = [by_note[t] for t in left if t in by_note]
            out.append(task)
    return out


def _task(rule: Rule, tests: list[str], before: Assessment, extra_classes: set[str]) -> CoderTask:
    sources = sorted({t.split(".", 1)[0] for t in tests} | extra_classes)
    infos: list[ClassInfo] = [c for c in before.classes if c.name in sources]
    return CoderTask(
        rule_id=rule.id,
        title=rule.title,
        mechanical=rule.mechanical,
        codemod=rule.codemod,
        instructions=rule.instructions,
        tests=tests,
        classes=sources,
        line_ranges=[(c.start, c.end) for c in infos],
    )


def distribute(report: AnalystReport, before: Assessment, catalogue: Catalogue, *, safe_baseline: bool = False) -> list[CoderTask]:
    """Return the ordered coder tasks for ``report`` on the file ``before`` describes.

    Assumes ``check_report(report, before)`` returned no problems; a classification of
    an unknown test is skipped rather than guessed at. Never raises.
    """
    tests_by_id = {f"{c.name}.{t.name}": t for c in before.classes for t in c.tests}
    test_moves = moves(report, before)
    tasks: list[CoderTask] = []
    for rule in catalogue.rules:
        if safe_baseline and not rule.baseline:
            continue
        trig = rule.trigger
        if trig.stale_imports:
            if report.stale_imports:
                task = _task(rule, [], before, set())
                # The analyst's words are data: fenced before they reach the coder's prompt.
                task.notes = [f"{s.name}" + (f" (line {s.line})" if s.line is not None else "")
                              + f": {fence(s.reason, inline=True)}" for s in report.stale_imports]
                tasks.append(task)
            continue
        if trig.moves:
            if test_moves:
                touched = [f"{m.old_class}.{m.test}" for m in test_moves]
                targets = {m.new_class for m in test_moves}
                task = _task(rule, touched, before, set())
                task.classes = sorted(set(task.classes) | targets)
                task.line_ranges = class_ranges(before, task.classes)
                tasks.append(task)
            continue
        if trig.only_in_accelerator:
            found = only_in_accelerator(report, before)
            if found:
                task = _task(rule, [t for t, _ in found], before, set())
                targets = {one_device_class(t.split('.', 1)[0], dev) for t, dev in found if not dev.startswith("@")}
                task.classes = sorted(set(task.classes) | targets)
                task.line_ranges = class_ranges(before, task.classes)
                task.notes = [f"{t}: {dev} in an ACCELERATOR class -> a class instantiated for that one "
                              "device (no hw_classification names it: ask in the PR), or @onlyAccelerator "
                              "when every accelerator can run it" if dev.startswith("@") else
                              f"{t}: @only{dev.upper()} in an ACCELERATOR class -> "
                              f"{one_device_class(t.split('.', 1)[0], dev)} ({dev.upper()}, "
                              f"instantiate_device_type_tests(..., only_for=\"{dev}\")), or a GENERIC class "
                              "when the device does not matter" for t, dev in found]
                tasks.append(task)
            continue
        hits = [
            c.test
            for c in report.classifications
            if c.test in tests_by_id and _needs_work(rule, c, tests_by_id[c.test], report, before)
        ]
        if hits:
            task = _task(rule, hits, before, set())
            by_test = report.by_test()
            task.classes = sorted(set(task.classes) | {by_test[t].target_class for t in hits})
            task.line_ranges = class_ranges(before, task.classes)
            task.notes = _plan_notes(report, hits)
            tasks.append(task)
    return _fold(tasks, catalogue)
