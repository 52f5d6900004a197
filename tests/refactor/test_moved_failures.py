"""Tests that move between a device class and a plain one, through the local test gate and into
the PR text (seed phases 6.5 and 7): a failure the original has is known as the original's
whatever the move, spent fix rounds go to a person with both runs' results, and the PR lists
the moved tests with their new ids under a title that says what the change does.

Real runs: torch 2.14.1's ``instantiate_device_type_tests`` and ``run_tests`` run the fixture
``plan/kettle.py`` and the refactored file the scripted analyst writes.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.contract.driver import InProcess, Scenario
from tests.refactor.conftest import FIXTURES, needs_hw_classification

PLAN = FIXTURES / "plan"
REPORT = {"file": "test/test_kettle.py", "classifications": [
    {"test": f"TestKettle.{t}", "strategy": "cpu_only", "target_class": "TestKettle",
     "reason": "an @onlyCPU test of host arithmetic"} for t in ("test_boil", "test_spout_known_bad")],
    "class_labels": [{"name": "TestKettle", "hw_classification": "GENERIC", "reason": "CPU-only host tests"}]}
SLIP = ("sum().item(), 200.0)", "sum().item(), 201.0)")  # an agent's slip: test_boil now fails


class Kettle:
    """A checkout (its path has a space, as a person's may) holding plan/kettle.py as
    test/test_kettle.py, and scripted agents: the analyst writes the plan and the refactored
    file (``slip``: with test_boil broken); the coder defers test_spout_known_bad as
    pre-existing and says it fixed test_boil, and fixes it for real from ``fix_from`` asks on."""

    def __init__(self, tmp_path: Path, slip: bool, fix_from: int = 99) -> None:
        self.repo = tmp_path / "pytorch checkout"
        (self.repo / "test").mkdir(parents=True)
        self.target = self.repo / "test" / "test_kettle.py"
        shutil.copy(PLAN / "kettle.py", self.target)
        self.slip, self.fix_from = slip, fix_from
        self.prompts: list[str] = []
        self.questions: list[dict[str, Any]] = []
        self.ws = tmp_path / "ws"

    def answer(self, task: dict[str, Any]) -> dict[str, Any]:
        name = task.get("agent_name") or task.get("role")
        ident = {"agent_id": f"/root/{name}", "agent_name": name}
        if name == "analyst":
            Path(task["report_path"]).write_text(json.dumps(REPORT))
            text = (PLAN / "kettle_generic.py").read_text()
            self.target.write_text(text.replace(*SLIP) if self.slip else text)
            return ident
        if name == "checker":
            return ({**ident, "all_clear": True, "findings": [], "summary": "clean"}
                    if task["task_id"].startswith("review-") else {**ident, "passed": True})
        if task["task_id"].startswith("test-"):
            self.prompts.append(task["prompt"])
            if len(self.prompts) >= self.fix_from:
                self.target.write_text(self.target.read_text().replace(SLIP[1], SLIP[0]))
            return {**ident, "verdicts": [
                {"test_name": n, "verdict": "deferred", "defer_reason": "pre-existing: round(2.5) is 2.0"}
                if "spout" in n else {"test_name": n, "verdict": "fixed", "fix_applied": "corrected the sum"}
                for n in task["failures"]]}
        return {**ident, "success": True}

    def run(self, *choices: str) -> list[dict[str, Any]]:
        picks = list(choices)

        def choose(spec: dict[str, Any]) -> str:
            self.questions.append(spec)
            return picks.pop(0)

        return InProcess(self.ws).run(Scenario("refactor", ["test/test_kettle.py", "--pytorch-dir", str(self.repo)],
                                               self.answer, choose=choose))

    @staticmethod
    def finish(drv: InProcess, sc: Scenario, question: dict[str, Any], value: str) -> dict[str, Any]:
        """Answer ``question`` with ``value`` by its printed command and drive the flow to done."""
        spec = drv.shell(next(o["command"] for o in question["options"] if o["value"] == value)).spec
        while spec["status"] != "done":
            nxt = drv.step(spec, sc)
            assert nxt is not None and nxt.spec is not None
            spec = nxt.spec
        return spec


def _pr(last: dict[str, Any]) -> str:
    return Path(last["summary_path"]).read_text().split("## Pull request description")[1].split("\nJudged by")[0]


@pytest.mark.torch
def test_a_failure_the_original_has_is_its_own_after_the_test_moves_to_a_generic_class(tmp_path: Path) -> None:
    """TestKettleCPU.test_spout_known_bad_cpu fails before the refactor; after it, the same def
    runs as TestKettle.test_spout_known_bad of a GENERIC class. The deferral is accepted at once
    (the coder is never told the original passes it), the PR names it as failing before this
    change too and lists both moved tests with their old and new ids, under a title that says
    what the change does (no CUDA-specific test was there), with no path of this machine."""
    needs_hw_classification()
    k = Kettle(tmp_path, slip=False)
    last = k.run()[-1]
    pr = _pr(last)
    summary = Path(last["summary_path"]).read_text()
    assert ("refactored", True, 1, [], False) == (
        last["outcome"], last["pr_ready"], len(k.prompts), k.questions,
        any("does not fail it" in p for p in k.prompts))
    assert ("### [Testcase Refactoring] Make TestKettle GENERIC in test/test_kettle.py" in pr,
            "CUDA-specific" in pr,
            "| `test_boil` | `TestKettleCPU.test_boil_cpu` | `TestKettle.test_boil` (GENERIC) |" in pr,
            "| `test_spout_known_bad` | `TestKettleCPU.test_spout_known_bad_cpu` | "
            "`TestKettle.test_spout_known_bad` (GENERIC) |" in pr,
            "- Failing before this change too (the original file, run the same way, fails it): "
            "`TestKettle.test_spout_known_bad` (before: `TestKettleCPU.test_spout_known_bad_cpu`)." in pr,
            re.search(r"test_spout_known_bad`: pre-existing: round\(2\.5\) is 2\.0 \(checked: the original "
                      r"fails it too, as \S*TestKettleCPU\.test_spout_known_bad_cpu\)", summary) is not None
            ) == (True, False, True, True, True, True), summary
    assert (str(k.repo) in pr, "pytorch checkout" in pr, str(tmp_path) in pr, "run by" in pr,
            "/bin/python" in pr) == (False, False, False, False, False)


@pytest.mark.torch
def test_spent_fix_rounds_ask_a_person_then_defer_or_retry(tmp_path: Path) -> None:
    """test_boil fails only after the refactor and the coder's "fixed" fixes nothing. After the
    3 rounds a person is asked, with the failure here and the original's result of the same
    test (passed as TestKettleCPU.test_boil_cpu).

    "defer" finishes with the PR naming it as failing, deferred by a person, with the original's
    result, and the next steps say a person decided; nothing says it "fails only in the
    refactored file" without the person. "retry", given to the same question (the flow folder
    and the checkout put back as they were when it was asked, at the same paths), gives the
    coder 3 more rounds; its real fix in the first of them passes the gate: nothing is deferred
    by a person and the PR is ready."""
    needs_hw_classification()
    k = Kettle(tmp_path, slip=True, fix_from=4)
    drv = InProcess(k.ws)
    sc = Scenario("refactor", ["test/test_kettle.py", "--pytorch-dir", str(k.repo)], k.answer)
    spec = drv.call(sc.start).spec
    while spec["status"] != "need_human":
        spec = drv.step(spec, sc).spec
    q, asked_prompts = spec, len(k.prompts)
    for path in (k.ws, k.repo):
        shutil.copytree(path, tmp_path / "asked" / path.name, symlinks=True)

    evidence = {r["test"].rpartition(".")[2]: r for r in q["evidence"]}
    assert (["retry", "defer", "abort"], 3, ["test_boil"]) == (
        [o["value"] for o in q["options"]], asked_prompts, list(evidence))
    assert ("After 3 fix rounds 1 test still fails in the refactored test/test_kettle.py" in q["question"],
            "the original, run the same way: passed as TestKettleCPU.test_boil_cpu" in q["question"],
            evidence["test_boil"]["here"].startswith("failed ("),
            Path(q["refactored_results"]).is_file(), Path(q["original_results"]).is_file()) == (True,) * 5

    k.questions.append(q)
    last = Kettle.finish(drv, sc, q, "defer")
    pr = _pr(last)
    summary = Path(last["summary_path"]).read_text()
    assert (1, 3) == (len(k.questions), len(k.prompts))
    assert ("refactored", True, False) == (last["outcome"], last["pr_ready"],
                                           "fails only in the refactored file" in summary)
    assert ("- Failing here and not fixed by this PR (deferred by a person after the fix rounds were spent): "
            "`TestKettle.test_boil` (the original: passed as TestKettleCPU.test_boil_cpu)." in pr,
            "`TestKettle.test_spout_known_bad` (before: `TestKettleCPU.test_spout_known_bad_cpu`)." in pr,
            "which gate was passed by a person's decision (`local-test-rounds-3`)" in summary) == (True,) * 3

    for path in (k.ws, k.repo):
        shutil.rmtree(path)
        shutil.copytree(tmp_path / "asked" / path.name, path, symlinks=True)
    del k.prompts[asked_prompts:]
    last = Kettle.finish(drv, sc, q, "retry")
    pr = _pr(last)
    assert (1, 4, "refactored", True, False, True) == (
        len(k.questions), len(k.prompts), last["outcome"], last["pr_ready"], "deferred by a person" in pr,
        any("a person gave the coder 3 more rounds after 3" in n for n in last["notes"]))
