"""The refactor workflow with PyTorch's TEST_LINTER as the gate, driven through the printed commands."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.contract.driver import InProcess, Scenario
from tests.refactor.conftest import FIXTURES, needs_hw_classification

HW = FIXTURES / "hw"


def _answer(report: dict[str, Any]) -> Any:
    """Scripted agents: the analyst writes ``report``; coders change nothing; checkers pass."""
    def answer(task: dict[str, Any]) -> dict[str, Any]:
        name = task.get("agent_name") or task.get("role")
        ident = {"agent_id": f"/root/{name}", "agent_name": name}
        tid = task["task_id"]
        if name == "analyst":
            Path(task["report_path"]).write_text(json.dumps(report))
            return ident
        if name == "checker":
            if tid.startswith("review-"):
                return {**ident, "all_clear": True, "findings": [], "summary": "clean"}
            return {**ident, "passed": True}
        if tid.startswith("test-"):
            return {**ident, "verdicts": []}
        return {**ident, "success": True}
    return answer


def test_the_checkouts_linter_judges_and_its_messages_reach_the_coder(tmp_path: Path) -> None:
    """With tools/linter/adapters/test_linter.py in the checkout, the file leaves the allowlist, gets its
    labels, and the script's own message comes back to the coder as a lint finding."""
    repo = tmp_path / "repo"
    shutil.copytree(HW / "checkout", repo)
    report = json.loads((HW / "pool_report.json").read_text())
    drv = InProcess(tmp_path / "ws")
    sc = Scenario("refactor", ["test/test_pool_ops.py", "--pytorch-dir", str(repo)], _answer(report))
    spec = drv.call(sc.start).spec
    prompts: list[str] = []
    for _ in range(40):
        if spec["status"] == "need_agent" and "lint-fix" in spec["tasks"][0]["task_id"]:
            prompts.append(spec["tasks"][0]["prompt"])
            break
        nxt = drv.step(spec, sc)
        assert nxt is not None and nxt.spec is not None
        spec = nxt.spec
    allow = json.loads((repo / "tools/linter/adapters/test_linter_allowlist.json").read_text())
    text = (repo / "test/test_pool_ops.py").read_text()
    assert (1, True, False, True, True) == (
        len(prompts), "fixture linter: TestPoolOpsDeviceType.test_pool_cpu_layout uses @onlyCPU" in prompts[0],
        "test/test_pool_ops.py" in allow, "hw_classification = HardwareClassification.GENERIC" in text,
        "hw_classification = HardwareClassification.ACCELERATOR" in text)


# The agent's classification of the already migrated fixture ``hw/compliant.py`` (copied
# in as test/test_done.py): what the flows over a compliant file are fed.
DONE_REPORT = {"file": "test/test_done.py", "classifications": [
    {"test": "TestDoneGeneric.test_add", "strategy": "cpu_only", "target_class": "TestDoneGeneric"},
    {"test": "TestDoneDevice.test_mul", "strategy": "device_agnostic", "target_class": "TestDoneDevice"},
    {"test": "TestDoneDevice.test_sum", "strategy": "device_agnostic", "target_class": "TestDoneDevice"}],
    "class_labels": [{"name": "TestDoneGeneric", "hw_classification": "GENERIC"},
                     {"name": "TestDoneDevice", "hw_classification": "ACCELERATOR"}]}


@pytest.mark.torch
def test_an_already_compliant_file_ends_unchanged_without_pr_advice(tmp_path: Path) -> None:
    """A migrated file: the built-in rules pass, nothing changes, the outcome is `unchanged` and no PR is proposed."""
    needs_hw_classification(': the compliant file cannot import')
    repo = tmp_path / "repo"
    (repo / "test").mkdir(parents=True)
    shutil.copy(HW / "compliant.py", repo / "test" / "test_done.py")
    specs = InProcess(tmp_path / "ws").run(
        Scenario("refactor", ["test/test_done.py", "--pytorch-dir", str(repo)], _answer(DONE_REPORT)))
    last = specs[-1]
    summary = Path(last["summary_path"]).read_text()
    assert ("done", "unchanged", False, True, True) == (
        last["status"], last["outcome"], any("PR" in s and "no PR" not in s for s in last["next_steps"]),
        "**Unchanged**" in summary, "Judged by: built-in TEST_LINTER rules" in summary)


BROKEN = '''"""A core-field test file whose own import is broken before any change (our words)."""
import torch
from torch.testing._internal.common_utils import TestCase, a_helper_this_torch_never_had


class TestBroken(TestCase):
    def test_add(self):
        self.assertEqual(torch.ones(1) + 1, torch.full((1,), 2.0))
'''


@pytest.mark.torch
def test_an_original_that_does_not_import_stops_before_the_plan_and_never_ends_refactored(tmp_path: Path) -> None:
    """pytest --collect-only of the original fails: the person is asked before any analyst task
    (the collect output quoted), retry collects again, abort ends `aborted`, not `refactored`."""
    pytest.importorskip("torch")
    repo = tmp_path / "repo"
    (repo / "test").mkdir(parents=True)
    (repo / "test" / "test_broken.py").write_text(BROKEN)
    chosen: list[str] = []

    def choose(spec: dict[str, Any]) -> str:
        chosen.append(spec["question"])
        return "retry" if len(chosen) == 1 else "abort"

    sc = Scenario("refactor", ["test/test_broken.py", "--pytorch-dir", str(repo)],
                  _answer({"file": "test/test_broken.py", "classifications": []}), choose=choose)
    specs = InProcess(tmp_path / "ws").run(sc)
    asked = [s["tasks"][0]["agent_name"] for s in specs if s["status"] == "need_agent"]
    assert ([], 2, True, True, "aborted") == (
        asked, len(chosen), "does not import" in chosen[0], "a_helper_this_torch_never_had" in chosen[1],
        specs[-1]["outcome"])
