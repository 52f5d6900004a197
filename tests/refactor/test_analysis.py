"""Phase 2: the analyst report's check against the assessment, and derived moves."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from flow.workflows.refactor.analysis import AnalystReport, Classification, check_report, moves
from flow.workflows.refactor.assess import Assessment


def _drop_first(r: AnalystReport) -> None:
    r.classifications.pop(0)


def _duplicate_first(r: AnalystReport) -> None:
    r.classifications.append(r.classifications[0])


def _unknown(r: AnalystReport) -> None:
    r.classifications.append(Classification(test="TestSmallOps.test_ghost", strategy="cpu_only", target_class="TestSmallOps"))


def _blank_target(r: AnalystReport) -> None:
    r.classifications[0].target_class = " "


def _mixed(r: AnalystReport) -> None:
    r.classifications[0].target_class = "TestSmallOps"  # TestSmallOps is the cpu_only target


def _bad_name(r: AnalystReport) -> None:
    r.classifications[0].target_class = "Test Small"


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (_drop_first, ["test 'TestSmallOps.test_add' is not classified; add one classification for it"]),
        (_duplicate_first, ["test 'TestSmallOps.test_add' is classified 2 times; keep exactly one classification"]),
        (_unknown, ["unknown test 'TestSmallOps.test_ghost': not in the assessment; use Class.test_name from assessment.json"]),
        (_blank_target, ["test 'TestSmallOps.test_add' has no target_class; name the class it belongs to after the refactor"]),
        (_mixed, ["target class 'TestSmallOps' mixes strategies ['cpu_only', 'device_agnostic']; one class holds one strategy"]),
        (_bad_name, ["test 'TestSmallOps.test_add': target_class 'Test Small' is not a Python class name"]),
    ],
)
def test_report_problems(small_before: Assessment, small_report: AnalystReport,
                         mutate: Callable[[AnalystReport], None], expected: list[str]) -> None:
    """Each defect in a report yields exactly the problem that names it."""
    mutate(small_report)
    assert expected == check_report(small_report, small_before)


def test_bundled_report_is_usable(small_before: Assessment, small_report: AnalystReport) -> None:
    """The small fixture's report classifies every test exactly once."""
    assert [] == check_report(small_report, small_before)


def test_empty_report_lists_every_test(small_before: Assessment) -> None:
    """A report with no classifications names each missing test (never a silent default)."""
    problems = check_report(AnalystReport(file="small_ops.py", classifications=[]), small_before)
    assert 9 == len(problems)


def test_unknown_field_in_report_is_refused() -> None:
    """A typo in the analyst's JSON fails validation instead of passing silently."""
    with pytest.raises(ValueError):
        AnalystReport.model_validate({"file": "x.py", "classifications": [], "stale_import": []})


def test_moves_cover_renames_and_mechanism_changes(small_before: Assessment, small_report: AnalystReport) -> None:
    """A move is any change of class or of device parametrization."""
    actual = [(m.test, m.old_class, m.new_class, m.old_device, m.new_device) for m in moves(small_report, small_before)]
    assert ("test_clamp_logic", "TestSmallOps", "TestSmallOps", True, False) in actual
    assert ("test_cudnn_flag", "TestSmallUtils", "TestSmallCudnn", False, True) in actual
    assert 8 == len(actual)  # test_pad_lengths stays where it was
