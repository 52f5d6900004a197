"""The refactor workflow driven through the CLI on the small fixture, answers scripted."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.contract.driver import CRASH_HOOK, Driver, Scenario
from tests.refactor.conftest import SMALL, small_checkout


def _report_for(task: dict[str, Any]) -> None:
    report = json.loads((SMALL / "analyst_report.json").read_text())
    report["file"] = "test/test_small_ops.py"
    Path(task["report_path"]).write_text(json.dumps(report))


def _kind(task: dict[str, Any]) -> str:
    """The feed a task asks for, read from its id (phase-vN-key-aN) and agent name."""
    tid, name = task["task_id"], task["agent_name"]
    if name == "checker":
        return "checker_review" if tid.startswith("review-") else "checker_rule"
    return "coder_test" if tid.startswith("test-") else name


def _answer(repo: Path, review: dict[str, Any] | None = None) -> Any:
    def answer(task: dict[str, Any]) -> dict[str, Any]:
        name = task["agent_name"] if "agent_name" in task else task.get("role")
        ident = {"agent_id": f"/root/{name}", "agent_name": name}
        if name == "analyst":
            _report_for(task)
            return ident
        kind = _kind(task)
        if kind == "checker_rule":
            return {**ident, "passed": True}
        if kind == "checker_review":
            return review or {**ident, "all_clear": True, "findings": [], "summary": "clean"}
        if kind == "coder_test":
            return {**ident, "verdicts": []}
        shutil.copy(SMALL / "small_ops_after.py", repo / "test" / "test_small_ops.py")
        return {**ident, "success": True, "tests_moved": [], "errors": [], "warnings": []}
    return answer


def _start(repo: Path) -> list[str]:
    return ["test/test_small_ops.py", "--pytorch-dir", str(repo)]


@pytest.mark.torch
def test_small_fixture_runs_to_finalize(tmp_path: Path) -> None:
    """The small fixture goes from assess to done/finalize with a summary and codemod edits."""
    pytest.importorskip("torch")
    repo = small_checkout(tmp_path)
    specs = Driver(tmp_path / "ws").run(Scenario("refactor", _start(repo), _answer(repo)))
    last = specs[-1]
    summary = Path(last["summary_path"]).read_text()
    assert ("done", "finalize", "refactored", True, True) == (
        last["status"], last["phase"], last["outcome"], "TR009" in summary,
        (repo / "test" / "dynamo_skips" / "TestSmallOpsDeviceCPU.test_add_cpu").exists())


def test_empty_review_is_refused(tmp_path: Path) -> None:
    """A `{}` full review is refused as an invalid feed, never read as all_clear."""
    repo = small_checkout(tmp_path)
    drv = Driver(tmp_path / "ws")
    spec = drv.call(_start(repo)).spec
    answer = _answer(repo)
    while spec["status"] == "need_agent" and _kind(spec["tasks"][0]) != "checker_review":
        task = spec["tasks"][0]
        Path(task["feed_file"]).write_text(json.dumps(answer(task)))
        spec = drv.shell(task["feed_command"]).spec
    task = spec["tasks"][0]
    Path(task["feed_file"]).write_text("{}")
    refused = drv.shell(task["feed_command"])
    assert ("error", "invalid_feed") == (refused.spec["status"], refused.spec["error"]["code"])


def test_analyst_retry_then_fresh_analyst(tmp_path: Path) -> None:
    """A report missing tests is sent back with the problems; `{}` without a report gets a fresh analyst."""
    repo = small_checkout(tmp_path)
    drv = Driver(tmp_path / "ws")
    task = drv.call(_start(repo)).spec["tasks"][0]
    report = json.loads((SMALL / "analyst_report.json").read_text())
    report["classifications"] = report["classifications"][1:]
    Path(task["report_path"]).write_text(json.dumps(report))
    Path(task["feed_file"]).write_text(json.dumps({"agent_id": "/root/analyst", "agent_name": "analyst"}))
    second = drv.shell(task["feed_command"]).spec["tasks"][0]
    Path(second["feed_file"]).write_text("{}")
    third = drv.shell(second["feed_command"]).spec["tasks"][0]
    assert (2, "send_message", True, 3, "spawn", True) == (
        second["attempt"], second["method"], "TestSmallOps.test_add" in second["prompt"],
        third["attempt"], third["method"], "no analyst_report.json" in third["prompt"])


def test_field_conflict_is_bad_input(tmp_path: Path) -> None:
    """A path listed in both field lists is refused with the hint to mend the lists."""
    for field in ("distributed", "graph"):
        (tmp_path / "ref" / field).mkdir(parents=True)
        (tmp_path / "ref" / field / "test_list.txt").write_text("test/test_both.py\n")
    drv = Driver(tmp_path / "ws", {"REFACTOR_REFERENCE_DIR": str(tmp_path / "ref")})
    spec = drv.call(["test/test_both.py", "--pytorch-dir", str(tmp_path)]).spec
    assert ("error", "bad_input", True) == (spec["status"], spec["error"]["code"],
                                            "test_list.txt" in spec["error"]["hint"])


def _checker_never_passes(repo: Path) -> Any:
    """Answers as _answer does, except that every rule checker reports the same issue."""
    base = _answer(repo)

    def answer(task: dict[str, Any]) -> dict[str, Any]:
        if _kind(task) == "checker_rule":
            return {"agent_id": "/root/checker", "agent_name": "checker", "passed": False,
                    "issues": ["line 7: TestSmallOps.test_add still has @onlyCUDA"]}
        return base(task)

    return answer


NOT_CLEAR_REVIEW = {"agent_id": "/root/checker", "agent_name": "checker", "all_clear": False,
                    "findings": [{"severity": "minor", "description": "naming", "line_number": 3}],
                    "summary": "1 issue"}


def test_failing_rule_checker_feeds_issues_back_then_escalates_to_abort(tmp_path: Path) -> None:
    """Checker issues reach the coder's next prompt; after 3 fixes a person is asked and 'abort' ends the flow."""
    repo = small_checkout(tmp_path)
    answer = _checker_never_passes(repo)

    questions: list[dict[str, Any]] = []

    def choose(spec: dict[str, Any]) -> str:
        questions.append(spec)
        return "abort"

    specs = Driver(tmp_path / "ws").run(Scenario("refactor", _start(repo), answer, choose=choose))
    coder_prompts = [t["prompt"] for s in specs if s["status"] == "need_agent" for t in s["tasks"]
                     if t["agent_name"] == "coder"]
    assert (4, 3, 1, {"retry", "skip", "abort"}, "done", "aborted") == (
        len(coder_prompts), sum("still has @onlyCUDA" in p for p in coder_prompts), len(questions),
        {o["value"] for o in questions[0]["options"]}, specs[-1]["status"], specs[-1]["outcome"])


@pytest.mark.torch
@pytest.mark.slow
def test_review_gate_escalates_after_three_rounds_then_aborts(tmp_path: Path) -> None:
    """A review never all-clear asks a person after 3 fix rounds (4 reviews); 'abort' ends the flow."""
    pytest.importorskip("torch")
    repo = small_checkout(tmp_path)
    specs = Driver(tmp_path / "ws").run(Scenario("refactor", _start(repo), _answer(repo, NOT_CLEAR_REVIEW),
                                                 choose=lambda spec: "abort"))
    asked = [s for s in specs if s["status"] == "need_human"]
    reviews = {t["task_id"] for s in specs if s["status"] == "need_agent" for t in s["tasks"]
               if t["agent_name"] == "checker" and t["task_id"].startswith("review-")}
    assert (1, 4, "aborted") == (len(asked), len(reviews), specs[-1]["outcome"])


@pytest.mark.torch
def test_local_gate_runs_every_device_and_reports_each(tmp_path: Path) -> None:
    """With CUDA present (forced here), the gate runs CPU and CUDA and reports both runs."""
    pytest.importorskip("torch")
    repo = small_checkout(tmp_path)
    drv = Driver(tmp_path / "ws", {"ORCHESTRATOR_REFACTOR_DEVICES": "cpu,cuda"})
    last = drv.run(Scenario("refactor", _start(repo), _answer(repo)))[-1]
    summary = Path(last["summary_path"]).read_text()
    flow = Path(last["workspace"])
    assert ("done", True, True) == (last["status"], any(flow.glob("local_test_r*_cpu.xml")),
                                    any(flow.glob("local_test_r*_cuda.xml")))
    assert "cpu: " in summary and "; cuda: " in summary


def test_a_bad_device_list_is_refused_with_a_hint(tmp_path: Path) -> None:
    """A malformed ORCHESTRATOR_REFACTOR_DEVICES is refused at start with bad_input and a hint,
    before any agent work, leaving no flow behind."""
    repo = small_checkout(tmp_path)
    drv = Driver(tmp_path / "ws", {"ORCHESTRATOR_REFACTOR_DEVICES": "cpu;rm -rf"})
    spec = drv.call(_start(repo)).spec
    assert ("error", "bad_input", True, []) == (
        spec["status"], spec["error"]["code"], "ORCHESTRATOR_REFACTOR_DEVICES" in spec["error"]["hint"],
        list((tmp_path / "ws").rglob("flow_state.json")))


def test_a_test_file_gone_before_assessment_is_bad_input(tmp_path: Path) -> None:
    """The file vanishing between start and assess gives an error with a hint, not a crash."""
    repo = small_checkout(tmp_path)
    drv = Driver(tmp_path / "ws", {"PYTHONPATH": str(CRASH_HOOK),
                                   "ORCHESTRATOR_TEST_CRASH_AT": "1",
                                   "ORCHESTRATOR_TEST_CRASH_COUNTER": str(tmp_path / "n"),
                                   "ORCHESTRATOR_TEST_CRASH_WHEN": "after"})
    assert drv.call(_start(repo)).code in (-9, 137)  # killed right after the flow was created
    (repo / "test" / "test_small_ops.py").unlink()
    flow = next((tmp_path / "ws").rglob("flow_state.json")).parent
    call = Driver(tmp_path / "ws").call(["--flow", str(flow.relative_to(tmp_path / "ws")),
                                         "--resume"])
    assert (2, "bad_input") == (call.code, call.spec["error"]["code"])
    assert "--resume" in call.spec["error"]["hint"]


@pytest.mark.torch
@pytest.mark.slow
def test_skipping_a_failing_rule_carries_on_and_the_summary_says_who_decided(tmp_path: Path) -> None:
    """'skip' at the rule checker's escalation carries on to the end; the decision is in the
    done spec's notes and in final_summary.md, with a next step to explain it in the PR."""
    pytest.importorskip("torch")
    repo = small_checkout(tmp_path)
    answer = _checker_never_passes(repo)

    specs = Driver(tmp_path / "ws").run(Scenario("refactor", _start(repo), answer,
                                                 choose=lambda spec: "skip"))
    last, asked = specs[-1], sum(s["status"] == "need_human" for s in specs)
    summary = Path(last["summary_path"]).read_text()
    decided = [n for n in last["notes"] if "left failing the checker by a person's decision" in n]
    assert ("done", "refactored", True, asked) == (last["status"], last["outcome"], asked > 0,
                                                   len(decided))
    assert all(n in summary for n in decided)
    assert "which gate was passed by a person's decision" in summary


@pytest.mark.torch
@pytest.mark.slow
def test_review_gate_continue_carries_on_to_the_end_and_is_noted(tmp_path: Path) -> None:
    """'continue' at the review gate finishes the flow (local tests, summary) and records
    that a person let the findings stand."""
    pytest.importorskip("torch")
    repo = small_checkout(tmp_path)
    specs = Driver(tmp_path / "ws").run(Scenario("refactor", _start(repo), _answer(repo, NOT_CLEAR_REVIEW),
                                                 choose=lambda spec: "continue"))
    last = specs[-1]
    summary = Path(last["summary_path"]).read_text()
    assert ("done", "refactored", ["review-gate-3: carried on by a person's decision"]) == (
        last["status"], last["outcome"], [n for n in last["notes"] if "gate" in n])
    assert "review-gate-3: carried on by a person's decision" in summary
    assert any(Path(last["workspace"]).glob("local_test_r*_cpu.xml"))


def test_the_collect_check_asks_the_test_interpreter_for_torch(tmp_path: Path) -> None:
    """Whether collect-only runs depends on ORCHESTRATOR_PYTHON finding torch, asked once per
    flow; an interpreter that cannot be started still runs the check, which reports the failure."""
    from flow.refactor.gates import _has_torch

    def ctx(python: Path) -> SimpleNamespace:
        return SimpleNamespace(settings={"ORCHESTRATOR_PYTHON": str(python)}, data=SimpleNamespace(test_torch=None))

    for name, code in (("without", 1), ("with", 0)):  # stand-ins answering the find_spec probe
        (tmp_path / name).write_text(f"#!/bin/sh\nexit {code}\n")
        (tmp_path / name).chmod(0o755)
    cached = ctx(tmp_path / "without")
    first = _has_torch(cached)
    cached.settings["ORCHESTRATOR_PYTHON"] = str(tmp_path / "with")
    assert (False, False, True, True) == (first, _has_torch(cached), _has_torch(ctx(tmp_path / "with")),
                                          _has_torch(ctx(tmp_path / "missing")))
