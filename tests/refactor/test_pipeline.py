"""Phases 1-5 chained on the large fixture, the way the workflow runs them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from flow.workflows.refactor.analysis import AnalystReport, check_report, moves
from flow.workflows.refactor.assess import assess_source
from flow.workflows.refactor.codemods import (
    class_map, decorate_info, only_accelerator, remove_only_native,
)
from flow.workflows.refactor.distribute import distribute
from flow.workflows.refactor.junit import run_local_tests
from flow.workflows.refactor.rules import load_catalogue
from flow.workflows.refactor.verify import VerifyInput, verify

from tests import forkserver
from tests.refactor.conftest import LARGE, SMALL, read

BEFORE = read(LARGE / "large_ops_before.py")


def test_large_plan_checks_and_distributes(large_report: AnalystReport) -> None:
    """The large plan is usable and yields every strategy rule plus the mechanical ones; its CUDA
    gates are all on tests that move, so TR007's work is done in the move tasks (no task of its own)."""
    assessment = assess_source(BEFORE, "large_ops.py")
    tasks = distribute(large_report, assessment, load_catalogue())
    assert ([], ["TR001", "TR002", "TR003", "TR004", "TR005", "TR006", "TR008", "TR009", "TR010"], True) == (
        check_report(large_report, assessment), [t.rule_id for t in tasks],
        any("TR007" in t.folded for t in tasks if t.rule_id in ("TR004", "TR005")),
    )


def test_mechanical_rules_clear_their_lint_findings(large_report: AnalystReport) -> None:
    """After the two decorator codemods, no L004/L005 (restriction) finding is left; judgment findings remain."""
    after = remove_only_native(only_accelerator(BEFORE).code).code
    inp = VerifyInput(path="large_ops.py", before=BEFORE, after=after, plan=large_report, checks=("lint",))
    codes = {f.code for f in verify(inp).findings}
    assert (set(), {"L001", "L006"}) == (codes & {"L004", "L005"}, codes & {"L001", "L006"})


def test_decorate_info_map_from_the_small_plan(small_report: AnalystReport) -> None:
    """The plan's moves drive the DecorateInfo codemod: moved tests follow, tests that stay are untouched."""
    assessment = assess_source(read(SMALL / "small_ops_before.py"), "small_ops.py")
    result = decorate_info(read(SMALL / "common_methods_invocations.py"), class_map(moves(small_report, assessment)))
    assert ["DecorateInfo TestSmallOps.test_add -> TestSmallOpsDevice"] == [c.description for c in result.changes]


@pytest.mark.torch
def test_large_fixture_runs_for_real_on_cpu(tmp_path: Path) -> None:
    """The large fixture (before the refactor) runs on CPU with no FAIL or ERROR."""
    pytest.importorskip("torch")
    shutil.copy(LARGE / "large_ops_before.py", tmp_path / "test_large_ops.py")
    result = run_local_tests(Path("test_large_ops.py"), tmp_path, "cpu", python=forkserver.python("torch"))
    assert ([], [], {"passed": 24, "skipped": 7}) == (result.FAIL, result.ERROR, result.counts)
