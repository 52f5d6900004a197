"""Phase 3's codemod IO: a distribute re-run after a crash edits and reports exactly what the first run did."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from flow.workflows.refactor import steps
from flow.workflows.refactor.analysis import AnalystReport
from flow.workflows.refactor.feedmodels import RefactorData
from flow.workflows.refactor.mechanical import external_files, removed_classes
from tests.refactor.conftest import SMALL, small_checkout
from workspace.atomic import write_atomic
from workspace.jsonio import dumps, loads


class FlowDir:
    """The slice of the engine's step context that assess and distribute use, over a real folder."""

    def __init__(self, folder: Path, data: RefactorData) -> None:
        self.dir, self.data = folder, data

    def path(self, name: str) -> Path:
        return self.dir / name

    def write_text(self, name: str, text: str, *, copy: bool = False) -> Path:
        from flow.core.redact import redact  # as the engine's: masked unless a kept copy

        write_atomic(self.path(name), (text if copy else redact(text)).encode("utf-8"))
        return self.path(name)

    def write_json(self, name: str, obj: Any) -> Path:
        write_atomic(self.path(name), dumps(obj))
        return self.path(name)

    def read_json(self, name: str) -> Any:
        return loads(self.path(name).read_bytes())


def _checkout_state(repo: Path) -> dict[str, Any]:
    test = repo / "test"
    return {"file": (test / "test_small_ops.py").read_text(),
            "cmi": (test / "common_methods_invocations.py").read_text(),
            "sentinels": sorted(p.name for d in ("dynamo_skips", "dynamo_expected_failures")
                                for p in (test / d).iterdir())}


def test_distribute_rerun_after_crash_reports_the_same(tmp_path: Path) -> None:
    """A second distribute over the edited checkout (state not saved) records the same counts and files."""
    repo = small_checkout(tmp_path)
    data = RefactorData(file=str(repo / "test" / "test_small_ops.py"), rel="test/test_small_ops.py",
                        repo=str(repo), field="core")
    flow = tmp_path / "flow"
    steps.assess(FlowDir(flow, data.model_copy(deep=True)))
    report = json.loads((SMALL / "analyst_report.json").read_text())
    (flow / "analyst_report.json").write_text(json.dumps({**report, "file": data.rel}))
    first = FlowDir(flow, data.model_copy(deep=True))
    steps.distribute(first)
    after_first = _checkout_state(repo)
    again = FlowDir(flow, data.model_copy(deep=True))  # the engine saved nothing: fresh data
    steps.distribute(again)
    counts = {a.rule_id: a.changes for a in first.data.applied}
    assert ({"TR001", "TR002", "TR009", "TR010"}, True, first.data.applied, first.data.notes, after_first) == (
        set(counts), all(counts.values()), again.data.applied, again.data.notes, _checkout_state(repo)), counts


def test_external_files_are_those_naming_a_removed_class(tmp_path: Path) -> None:
    """Only other files naming a class the plan empties are handed to verify; the file itself never."""
    repo = small_checkout(tmp_path)
    (repo / "test" / "nested").mkdir()
    (repo / "test" / "nested" / "test_user.py").write_text("from test_small_ops import TestSmallUtilsCPU\n")
    (repo / "test" / "test_unrelated.py").write_text("class TestSmallOpsHelper: pass\n")
    report = AnalystReport.model_validate_json((SMALL / "analyst_report.json").read_text())
    for c in report.classifications:
        if c.source_class == "TestSmallUtils":
            c.target_class = "TestSmallOpsDevice"
    data = RefactorData(file=str(repo / "test" / "test_small_ops.py"), rel="test/test_small_ops.py",
                        repo=str(repo), field="core")
    ctx = FlowDir(tmp_path / "flow", data)
    assert ({"TestSmallUtils"}, ["test/nested/test_user.py"], {}) == (
        removed_classes(report), sorted(external_files(ctx, report)),
        external_files(ctx, AnalystReport.model_validate_json((SMALL / "analyst_report.json").read_text())))
