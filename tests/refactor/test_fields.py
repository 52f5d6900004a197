"""Field detection by exact membership and the per-field workflow profile."""

from __future__ import annotations

from pathlib import Path

import pytest

from flow.workflows.refactor.errors import FieldConflictError
from flow.workflows.refactor.fields import (
    detect_field, field_profile, load_field_lists, read_test_list,
)

REFERENCE = Path(__file__).resolve().parents[2] / "reference"
LISTS = {
    "distributed": read_test_list("# comment\ntest/distributed/test_c10d_nccl.py\n\ntest/shared.py\n"),
    "graph": read_test_list("test/inductor/test_torchinductor.py\ntest/shared.py\n"),
}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("test/distributed/test_c10d_nccl.py", "distributed"),
        ("./test/distributed/test_c10d_nccl.py", "distributed"),
        ("test/inductor/test_torchinductor.py", "graph"),
        ("test/test_ops.py", "core"),
        ("distributed/test_c10d_nccl.py", "core"),  # exact, never a suffix match
        ("test/inductor/test_torchinductor.py.bak", "core"),
        ("# comment", "core"),
    ],
)
def test_detect_field_by_exact_membership(path: str, expected: str) -> None:
    """A path is a non-core field only when listed exactly; everything else is core."""
    assert expected == detect_field(path, LISTS)


def test_path_in_two_lists_is_an_error_with_a_hint() -> None:
    """A path in both non-core lists raises FieldConflictError naming both fields and the fix."""
    with pytest.raises(FieldConflictError) as info:
        detect_field("test/shared.py", LISTS)
    assert ["distributed", "graph"] == info.value.fields
    assert ("field_conflict", True) == (info.value.code, "remove it from all but one" in info.value.hint)


@pytest.mark.parametrize(
    ("field", "baseline", "gate", "has_lint"),
    [("core", False, True, True), ("distributed", True, False, False), ("graph", True, False, False)],
)
def test_profile_flags(field: str, baseline: bool, gate: bool, has_lint: bool) -> None:
    """Core runs everything; non-core fields run the safe baseline without a local test gate."""
    profile = field_profile(field)  # type: ignore[arg-type]
    assert (baseline, gate, has_lint) == (profile.safe_baseline, profile.local_test_gate, "lint" in profile.checks)


def test_bundled_lists_load_and_do_not_overlap() -> None:
    """The shipped reference lists parse and no path is in both."""
    lists = load_field_lists(REFERENCE)
    assert lists["distributed"] and lists["graph"]
    assert set() == set(lists["distributed"]) & set(lists["graph"])


def test_missing_list_reads_as_empty(tmp_path: Path) -> None:
    """A reference root without field lists makes every path core."""
    assert "core" == detect_field("test/distributed/test_c10d_nccl.py", load_field_lists(tmp_path))
