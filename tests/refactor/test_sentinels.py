"""TR010: dynamo sentinel files are renamed by file name, never by content."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from flow.workflows.refactor.analysis import AnalystReport, TestMove, moves
from flow.workflows.refactor.assess import Assessment
from flow.workflows.refactor.sentinels import (
    SENTINEL_DIRS, apply_renames, list_sentinels, plan_renames,
)

from tests.refactor.conftest import SMALL

RENAME = TestMove(test="test_a", old_class="TestFoo", new_class="TestFooDevice", old_device=True, new_device=True)
TO_CPU = TestMove(test="test_b", old_class="TestFoo", new_class="TestFoo", old_device=True, new_device=False)
TO_DEVICE = TestMove(test="test_c", old_class="TestBar", new_class="TestBarDevice", old_device=False, new_device=True)
PLAIN = TestMove(test="test_d", old_class="TestBaz", new_class="TestQux", old_device=False, new_device=False)

CASES = [
    ("TestFooCPU.test_a_cpu", RENAME, ("rename", "TestFooDeviceCPU.test_a_cpu")),
    ("TestFooCUDA.test_a_cuda_float32", RENAME, ("rename", "TestFooDeviceCUDA.test_a_cuda_float32")),
    ("TestFooCPU.test_a_extra_cpu", RENAME, None),  # a different test that shares the prefix
    ("TestFooCUDA.test_a_cpu", RENAME, None),  # device token must match the class suffix
    ("TestFooCPU.test_b_cpu", TO_CPU, ("rename", "TestFoo.test_b")),
    ("TestFooCPU.test_b_cpu_float64", TO_CPU, ("unresolved", "TestFooCPU.test_b_cpu_float64")),
    ("TestBar.test_c", TO_DEVICE, ("unresolved", "TestBar.test_c")),
    ("TestBaz.test_d", PLAIN, ("rename", "TestQux.test_d")),
    ("TestOther.test_a", RENAME, None),
]


@pytest.mark.parametrize(("name", "move", "expected"), CASES, ids=[c[0] for c in CASES])
def test_plan_case(name: str, move: TestMove, expected: tuple[str, str] | None) -> None:
    """Each sentinel name maps to the planned rename, an unresolved note, or nothing."""
    plan = plan_renames([name], [move])
    actual = ([("rename", r.new) for r in plan.renames] + [("unresolved", u.name) for u in plan.unresolved]) or [None]
    assert [expected] == actual


def test_two_variants_onto_one_name_is_unresolved() -> None:
    """Renames that would collide (or overwrite an existing file) are never planned."""
    plan = plan_renames(["TestBaz.test_d", "TestQux.test_d"], [PLAIN])
    assert ([], ["TestBaz.test_d"]) == ([r.old for r in plan.renames], [u.name for u in plan.unresolved])


def test_apply_on_zero_byte_fixture_folders(tmp_path: Path, small_before: Assessment, small_report: AnalystReport) -> None:
    """The small fixture's 0-byte sentinels are renamed on disk to the new class variants."""
    test_moves = moves(small_report, small_before)
    done: dict[str, list[str]] = {}
    for folder in SENTINEL_DIRS:
        shutil.copytree(SMALL / folder, tmp_path / folder)
        apply_renames(tmp_path / folder, plan_renames(list_sentinels(tmp_path / folder), test_moves))
        done[folder] = list_sentinels(tmp_path / folder)
    assert {
        "dynamo_skips": ["TestSmallOpsDeviceCPU.test_add_cpu", "TestSmallOpsDeviceCPU.test_mul_dtypes_cpu_float32",
                         "TestSmallOpsDeviceCUDA.test_to_accelerator_cuda"],
        "dynamo_expected_failures": ["TestSmallOps.test_clamp_logic", "TestSmallUtils.test_pad_lengths_n_1"],
    } == done
    assert 0 == (tmp_path / "dynamo_skips" / "TestSmallOpsDeviceCPU.test_add_cpu").stat().st_size


def test_missing_folder_lists_nothing(tmp_path: Path) -> None:
    """A checkout without a sentinel folder has no sentinels."""
    assert [] == list_sentinels(tmp_path / "dynamo_skips")
