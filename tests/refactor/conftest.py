"""Shared fixtures for the refactor workflow's tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from flow.refactor.analysis import AnalystReport
from flow.refactor.assess import Assessment, assess_source

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "refactor"
SMALL = FIXTURES / "small"
LARGE = FIXTURES / "large"


def read(path: Path) -> str:
    """Read a fixture as text."""
    return path.read_text(encoding="utf-8")


@pytest.fixture
def small_before() -> Assessment:
    """The assessment of the small fixture before the refactor."""
    return assess_source(read(SMALL / "small_ops_before.py"), "small_ops.py")


@pytest.fixture
def small_report() -> AnalystReport:
    """The analyst report bundled with the small fixture."""
    return AnalystReport.model_validate_json(read(SMALL / "analyst_report.json"))


@pytest.fixture
def large_report() -> AnalystReport:
    """The analyst report bundled with the large fixture."""
    return AnalystReport.model_validate_json(read(LARGE / "analyst_report.json"))


def small_checkout(tmp_path: Path) -> Path:
    """A checkout holding the small fixture as test/test_small_ops.py with its CMI and sentinels."""
    test = tmp_path / "repo" / "test"
    test.mkdir(parents=True)
    shutil.copy(SMALL / "small_ops_before.py", test / "test_small_ops.py")
    shutil.copy(SMALL / "common_methods_invocations.py", test / "common_methods_invocations.py")
    for name in ("dynamo_skips", "dynamo_expected_failures"):
        shutil.copytree(SMALL / name, test / name)
    return tmp_path / "repo"
