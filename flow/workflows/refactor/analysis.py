"""Phase 2, Analyze: the analyst's report (``analyst_report.json``) and its check.

The analyst classifies every test into one of three strategies with a target class, and
labels every class of the planned file with a PyTorch ``HardwareClassification``
(``class_labels``; the strategies map onto the labels: cpu_only -> GENERIC,
device_agnostic -> ACCELERATOR, device_specific -> CPU/CUDA/MPS/XPU).
``check_report(report, assessment)`` returns the problems that make a report unusable
(empty list: usable); the engine sends them back to the analyst within its retry bound.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from flow.workflows.refactor.assess import Assessment
from flow.workflows.refactor.rules import Strategy

STRATEGIES: tuple[Strategy, ...] = ("cpu_only", "device_agnostic", "device_specific")


class Classification(BaseModel):
    """One test's strategy. ``test`` is ``SourceClass.test_name`` as in the assessment."""

    model_config = ConfigDict(extra="forbid")

    test: str
    strategy: Strategy
    target_class: str
    reason: str = ""
    #: for a test with a hard-coded device or a CUDA gate the plan keeps in a plain (GENERIC)
    #: class: why it must stay there (else the plan is sent back: TEST_LINTER's L012)
    keeps_device: str = ""

    @property
    def source_class(self) -> str:
        """The class the test lives in before the refactor."""
        return self.test.split(".", 1)[0]

    @property
    def test_name(self) -> str:
        """The bare method name."""
        return self.test.split(".", 1)[-1]


class StaleImport(BaseModel):
    """An import or module symbol the refactor leaves unused."""

    model_config = ConfigDict(extra="forbid")

    name: str
    line: int | None = None
    reason: str = ""


class SkipNote(BaseModel):
    """The analyst's decision about one skip / restriction decorator on one test."""

    model_config = ConfigDict(extra="forbid")

    test: str
    decorator: str
    action: Literal["keep", "remove", "replace"]
    note: str = ""


class ClassLabel(BaseModel):
    """One class of the planned file and the hardware classification it declares."""

    model_config = ConfigDict(extra="forbid")

    name: str
    hw_classification: Literal["GENERIC", "ACCELERATOR", "CPU", "CUDA", "MPS", "XPU"]
    reason: str = ""


class AnalystReport(BaseModel):
    """The analyst's ``analyst_report.json``."""

    model_config = ConfigDict(extra="forbid")

    file: str
    classifications: list[Classification]
    class_labels: list[ClassLabel] = Field(default_factory=list)
    stale_imports: list[StaleImport] = Field(default_factory=list)
    skip_decorator_notes: list[SkipNote] = Field(default_factory=list)
    summary: str = ""

    def by_test(self) -> dict[str, Classification]:
        """Classifications keyed by ``Class.test`` (the last wins if duplicated)."""
        return {c.test: c for c in self.classifications}

    def labels(self) -> dict[str, str]:
        """Each class's hardware classification: the analyst's label, else the one its strategy
        implies when that is a single label (cpu_only -> GENERIC, device_agnostic ->
        ACCELERATOR); a device_specific class without a label is left to its ``only_for``."""
        from flow.workflows.refactor.hwclass import labels_for

        out = {c.name: c.hw_classification for c in self.class_labels}
        for target, strategy in self.target_strategies().items():
            allowed = labels_for(strategy)
            if target not in out and len(allowed) == 1:
                out[target] = next(iter(allowed))
        return out

    def target_strategies(self) -> dict[str, Strategy]:
        """Each target class's strategy (the first classification naming it decides)."""
        out: dict[str, Strategy] = {}
        for c in self.classifications:
            out.setdefault(c.target_class, c.strategy)
        return out


class TestMove(BaseModel):
    """A test whose class or device parametrization changes; drives the rename codemods."""

    __test__: ClassVar[bool] = False  # a model, not a test class for pytest to collect

    model_config = ConfigDict(extra="forbid", frozen=True)

    test: str  # bare method name
    old_class: str
    new_class: str
    old_device: bool  # instantiated by instantiate_device_type_tests before
    new_device: bool  # ... and after


def moves(report: AnalystReport, before: Assessment) -> list[TestMove]:
    """The tests whose class name or device parametrization changes under ``report``."""
    device_before = {i.target for i in before.instantiations if i.kind == "device_type"}
    out: list[TestMove] = []
    for c in report.classifications:
        old_device = c.source_class in device_before
        new_device = c.strategy != "cpu_only"
        if c.source_class != c.target_class or old_device != new_device:
            out.append(
                TestMove(
                    test=c.test_name,
                    old_class=c.source_class,
                    new_class=c.target_class,
                    old_device=old_device,
                    new_device=new_device,
                )
            )
    return out


#: the suffixes instantiate_device_type_tests appends to a class per device type
GENERATED_SUFFIXES = ("CPU", "CUDA", "MPS", "XPU", "META", "HPU", "LAZY", "MTIA", "PRIVATEUSE1")


def check_report(report: AnalystReport, assessment: Assessment) -> list[str]:
    """Return every problem that makes ``report`` unusable for ``assessment``; [] if none.

    Checks: every assessed test classified exactly once, no unknown test, every target
    class named (a valid identifier), one strategy per target class, and the report is
    about the assessed file. Never raises.
    """
    problems: list[str] = []
    known = assessment.test_ids()
    known_set = set(known)
    counts: dict[str, int] = {}
    for c in report.classifications:
        counts[c.test] = counts.get(c.test, 0) + 1
    for test in known:
        if test not in counts:
            problems.append(f"test {test!r} is not classified; add one classification for it")
    for test, n in counts.items():
        if test not in known_set:
            problems.append(f"unknown test {test!r}: not in the assessment; use Class.test_name from assessment.json")
        elif n > 1:
            problems.append(f"test {test!r} is classified {n} times; keep exactly one classification")
    strategies: dict[str, set[str]] = {}
    for c in report.classifications:
        if not c.target_class.strip():
            problems.append(f"test {c.test!r} has no target_class; name the class it belongs to after the refactor")
        elif not c.target_class.isidentifier():
            problems.append(f"test {c.test!r}: target_class {c.target_class!r} is not a Python class name")
        else:
            strategies.setdefault(c.target_class, set()).add(c.strategy)
    for target, kinds in sorted(strategies.items()):
        if len(kinds) > 1:
            problems.append(
                f"target class {target!r} mixes strategies {sorted(kinds)}; one class holds one strategy"
            )
    from flow.workflows.refactor.hwclass import labels_for

    targets = {c.target_class: c.strategy for c in report.classifications}
    known_classes = {c.name for c in assessment.classes} | set(targets)
    seen_labels: set[str] = set()
    for label in report.class_labels:
        if label.name in seen_labels:
            problems.append(f"class {label.name!r} is labelled twice in class_labels; keep one label")
        seen_labels.add(label.name)
        if label.name not in known_classes:
            problems.append(f"class_labels names {label.name!r}, which is neither a class of the file "
                            "nor a target_class; label the classes of the planned file")
        elif label.name in targets and label.hw_classification not in labels_for(targets[label.name]):
            allowed = "/".join(sorted(labels_for(targets[label.name])))
            problems.append(f"class {label.name!r} is labelled {label.hw_classification} but its tests are "
                            f"{targets[label.name]}; label it {allowed} or change the strategy")
    instantiated = {c for c, k in strategies.items() if k & {"device_agnostic", "device_specific"}}
    instantiated |= {i.target for i in assessment.instantiations if i.kind == "device_type"}
    for target in sorted(strategies):
        clash = next((c for c in sorted(instantiated) for dev in GENERATED_SUFFIXES
                      if c != target and target == c + dev), None)
        if clash is not None:
            problems.append(f"target class {target!r} is the name instantiate_device_type_tests gives "
                            f"{clash!r}'s {target[len(clash):]} class; two classes of one name break the "
                            f"module's collection: name it otherwise (e.g. {target + 'Only'!r})")
    if report.file and not (assessment.path.endswith(report.file) or report.file.endswith(assessment.path)):
        problems.append(f"report is about {report.file!r} but the assessment is of {assessment.path!r}")
    return problems
