"""Shared fixtures for the refactor workflow's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from flow.workflows.refactor.analysis import AnalystReport
from flow.workflows.refactor.assess import Assessment, assess_source

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "refactor"
# The small fixture is the demo's bundled example too: one copy, in examples/.
SMALL = Path(__file__).resolve().parents[2] / "examples" / "refactor"
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
    from flow.cli.demo import make_checkout

    return make_checkout(SMALL, tmp_path / "repo")


def needs_hw_classification(why: str = "") -> None:
    """Skip the test, saying so, where the installed torch lacks HardwareClassification
    (torch 2.14.1 and later have it); ``why``: what cannot run without it."""
    torch = pytest.importorskip("torch")
    from torch.testing._internal import common_utils

    if not hasattr(common_utils, "HardwareClassification"):
        pytest.skip(f"torch {torch.__version__} has no HardwareClassification{why}")
