"""The refactor workflow driven through the CLI on the small fixture, answers scripted."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.contract.driver import CRASH_HOOK, Call, Driver, InProcess, Scenario
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
def test_small_fixture_runs_to_finalize_and_the_gate_runs_every_device_asked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The small fixture goes from assess to done/finalize with a summary and codemod edits; on
    a machine without a GPU node the gate runs on CPU without a torch probe, and says so; the
    three labels are counted by one run, and the test plan has each label's command.

    The same flow from its final review (the flow folder and the checkout put back at the same
    paths), with CUDA forced by ORCHESTRATOR_REFACTOR_DEVICES, runs the gate on CPU and CUDA
    and reports both runs."""
    from flow.workflows.refactor import gatedevices

    pytest.importorskip("torch")
    monkeypatch.setattr(gatedevices, "GPU_NODES", (str(tmp_path / "no-such-node"),))
    repo = small_checkout(tmp_path)
    ws = tmp_path / "ws"
    sc = Scenario("refactor", _start(repo), _answer(repo))
    drv = InProcess(ws)
    spec = drv.call(sc.start).spec
    while not (spec["status"] == "need_agent" and _kind(spec["tasks"][0]) == "checker_review"):
        spec = drv.step(spec, sc).spec
    review = spec
    for path in (ws, repo):
        shutil.copytree(path, tmp_path / "reviewing" / path.name, symlinks=True)

    def finish(drv: InProcess) -> dict[str, Any]:
        spec = review
        while spec["status"] != "done":
            spec = drv.step(spec, sc).spec
        return spec

    last = finish(drv)
    summary = Path(last["summary_path"]).read_text()
    assert ("done", "finalize", "refactored", True, True) == (
        last["status"], last["phase"], last["outcome"], "TR009" in summary,
        (repo / "test" / "dynamo_skips" / "TestSmallOpsDeviceCPU.test_add_cpu").exists())
    flow = Path(last["summary_path"]).parent
    assert (False, True, True, False) == ((flow / "logs" / "probe_devices.log").exists(),
                                          "no GPU device node" in summary, any(flow.glob("local_test_r*_cpu.xml")),
                                          any(flow.glob("local_test_r*_cuda.xml")))
    # every label counted by one start of the test interpreter, each with its own command
    plan = [line for line in summary.splitlines() if " --hw-classification " in line and "# " in line]
    assert (["hw_classification_r0.log"], 3) == (
        sorted(p.name for p in (flow / "logs").glob("hw_classification_r*")), len(plan)), plan

    for path in (ws, repo):
        shutil.rmtree(path)
        shutil.copytree(tmp_path / "reviewing" / path.name, path, symlinks=True)
    last = finish(InProcess(ws, {"ORCHESTRATOR_REFACTOR_DEVICES": "cpu,cuda"}))
    summary = Path(last["summary_path"]).read_text()
    assert ("done", True, True) == (last["status"], any(flow.glob("local_test_r*_cpu.xml")),
                                    any(flow.glob("local_test_r*_cuda.xml")))
    assert "cpu: " in summary and "; cuda: " in summary


def test_empty_review_is_refused(tmp_path: Path) -> None:
    """A `{}` full review is refused as an invalid feed, never read as all_clear."""
    repo = small_checkout(tmp_path)
    drv = InProcess(tmp_path / "ws")
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
    drv = InProcess(tmp_path / "ws")
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
    drv = InProcess(tmp_path / "ws", {"REFACTOR_REFERENCE_DIR": str(tmp_path / "ref")})
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

    specs = InProcess(tmp_path / "ws").run(Scenario("refactor", _start(repo), answer, choose=choose))
    coder_prompts = [t["prompt"] for s in specs if s["status"] == "need_agent" for t in s["tasks"]
                     if t["agent_name"] == "coder"]
    assert (4, 3, 1, {"retry", "skip", "abort"}, "done", "aborted") == (
        len(coder_prompts), sum("still has @onlyCUDA" in p for p in coder_prompts), len(questions),
        {o["value"] for o in questions[0]["options"]}, specs[-1]["status"], specs[-1]["outcome"])


def test_a_bad_device_list_is_refused_with_a_hint(tmp_path: Path) -> None:
    """A malformed ORCHESTRATOR_REFACTOR_DEVICES is refused at start with bad_input and a hint,
    before any agent work, leaving no flow behind."""
    repo = small_checkout(tmp_path)
    drv = InProcess(tmp_path / "ws", {"ORCHESTRATOR_REFACTOR_DEVICES": "cpu;rm -rf"})
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
    call = InProcess(tmp_path / "ws").call(["--flow", str(flow.relative_to(tmp_path / "ws")),
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

    specs = InProcess(tmp_path / "ws").run(Scenario("refactor", _start(repo), answer,
                                                 choose=lambda spec: "skip"))
    last, asked = specs[-1], sum(s["status"] == "need_human" for s in specs)
    summary = Path(last["summary_path"]).read_text()
    decided = [n for n in last["notes"] if "left failing the checker by a person's decision" in n]
    assert ("done", "refactored", True, asked) == (last["status"], last["outcome"], asked > 0,
                                                   len(decided))
    assert all(n in summary for n in decided)
    assert "which gate was passed by a person's decision" in summary


def _chose(drv: InProcess, question: dict[str, Any], value: str) -> Call:
    return drv.shell(next(o["command"] for o in question["options"] if o["value"] == value))


@pytest.mark.torch
@pytest.mark.slow
def test_review_gate_after_three_rounds_aborts_or_carries_on_and_is_noted(tmp_path: Path) -> None:
    """A review never all-clear asks a person after 3 fix rounds (4 reviews). 'abort' ends the
    flow; 'continue', given to the same question (the flow folder and the checkout put back as
    they were when it was asked, at the same paths), finishes the flow (local tests, summary)
    and records that a person let the findings stand."""
    pytest.importorskip("torch")
    repo = small_checkout(tmp_path)
    ws = tmp_path / "ws"
    drv = InProcess(ws)
    sc = Scenario("refactor", _start(repo), _answer(repo, NOT_CLEAR_REVIEW))
    specs = [drv.call(sc.start).spec]
    while specs[-1]["status"] == "need_agent":
        specs.append(drv.step(specs[-1], sc).spec)
    asked = specs[-1]
    reviews = {t["task_id"] for s in specs if s["status"] == "need_agent" for t in s["tasks"]
               if t["agent_name"] == "checker" and t["task_id"].startswith("review-")}
    assert ("need_human", 4) == (asked["status"], len(reviews))
    for path in (ws, repo):
        shutil.copytree(path, tmp_path / "asked" / path.name, symlinks=True)

    aborted = _chose(drv, asked, "abort").spec
    assert ("done", "aborted") == (aborted["status"], aborted["outcome"])

    for path in (ws, repo):
        shutil.rmtree(path)
        shutil.copytree(tmp_path / "asked" / path.name, path, symlinks=True)
    last = _chose(drv, asked, "continue").spec
    while last["status"] != "done":
        nxt = drv.step(last, sc)
        assert nxt is not None and nxt.spec is not None
        last = nxt.spec
    summary = Path(last["summary_path"]).read_text()
    assert ("done", "refactored", ["review-gate-3: carried on by a person's decision"]) == (
        last["status"], last["outcome"], [n for n in last["notes"] if "gate" in n])
    assert "review-gate-3: carried on by a person's decision" in summary
    assert any(Path(last["workspace"]).glob("local_test_r*_cpu.xml"))


def test_the_collect_check_asks_the_test_interpreter_for_torch(tmp_path: Path) -> None:
    """Whether collect-only runs depends on the test interpreter finding torch, asked once per
    flow and recorded with which torch; an interpreter that cannot be started still runs the
    check, which reports the failure."""
    from flow.workflows.refactor.gates import _has_torch

    def ctx(python: Path) -> SimpleNamespace:
        return SimpleNamespace(settings={"ORCHESTRATOR_PYTHON": str(python)},
                               data=SimpleNamespace(test_torch=None, test_python=None, test_torch_info=None,
                                                    notes=[], repo=str(tmp_path)))

    (tmp_path / "without").write_text("#!/bin/sh\nexit 1\n")
    (tmp_path / "with").write_text("#!/bin/sh\necho 2.13.0 at /site/torch\nexit 0\n")
    for name in ("without", "with"):  # stand-ins answering the torch probe
        (tmp_path / name).chmod(0o755)
    cached = ctx(tmp_path / "without")
    first = _has_torch(cached)
    cached.settings["ORCHESTRATOR_PYTHON"] = str(tmp_path / "with")
    found = ctx(tmp_path / "with")
    assert (False, False, True, True) == (first, _has_torch(cached), _has_torch(found),
                                          _has_torch(ctx(tmp_path / "missing")))
    assert ("torch 2.13.0 at /site/torch", "no torch") == (found.data.test_torch_info, cached.data.test_torch_info)
    assert any("2.13.0 at /site/torch" in n for n in found.data.notes)


def _drive_until(drv: Driver, repo: Path, answer: Any, stop: Any) -> list[dict[str, Any]]:
    """Feed answers until ``stop(spec)`` holds; return every spec seen."""
    specs = [drv.call(_start(repo)).spec]
    while specs[-1]["status"] == "need_agent" and not stop(specs[-1]):
        task = specs[-1]["tasks"][0]
        Path(task["feed_file"]).write_text(json.dumps(answer(task)))
        specs.append(drv.shell(task["feed_command"]).spec)
    return specs


def test_a_disputed_lint_false_positive_is_decided_by_the_checker_and_burns_no_round(tmp_path: Path) -> None:
    """The coder disputes a lint error instead of editing; the checker upholds it; the finding is
    waived, the fix round given back, and the flow moves on to the review."""
    repo = small_checkout(tmp_path)
    base = _answer(repo)
    placed = 'y = torch.ones(2).to("cuda")'

    def answer(task: dict[str, Any]) -> dict[str, Any]:
        ident = {"agent_id": f"/root/{task['agent_name']}", "agent_name": task["agent_name"]}
        if "lint-fix" in task["task_id"]:
            return {**ident, "success": False, "disputed": [{"finding": "L1", "reason": "wanted on CUDA"}]}
        if "dispute" in task["task_id"]:
            return {**ident, "decisions": [{"finding": "L1", "upheld": True, "reason": "agreed"}]}
        out = base(task)
        if task["agent_name"] == "coder":  # the coder's edit leaves one hard-coded device
            target = repo / "test" / "test_small_ops.py"
            target.write_text(target.read_text().replace("y = torch.ones(2).to(device)", placed, 1))
        return out

    drv = InProcess(tmp_path / "ws", {"ORCHESTRATOR_PYTHON": str(tmp_path / "no-python")})
    specs = _drive_until(drv, repo, answer, lambda s: _kind(s["tasks"][0]) == "checker_review")
    prompts = {t["task_id"]: t["prompt"] for s in specs if s["status"] == "need_agent" for t in s["tasks"]}
    fix = next(p for k, p in prompts.items() if "lint-fix" in k)
    dispute = next(p for k, p in prompts.items() if "dispute" in k)
    flow = next((tmp_path / "ws").rglob("flow_state.json")).parent
    data = json.loads((flow / "flow_state.json").read_text())["data"]
    verification = json.loads((flow / "verification.json").read_text())
    assert ("[L1]" in fix and placed in fix and "disputed" in fix, "wanted on CUDA" in dispute) == (True, True)
    assert (0, ["L006"], []) == (data["lint_rounds"], [f["code"] for f in verification["waived"]],
                                 [f["code"] for f in verification["findings"] if f["check"] == "lint"])
    assert any("waived as a false positive by the checker" in n for n in data["notes"])


def test_lint_gate_question_names_every_finding(tmp_path: Path) -> None:
    """After 3 rounds the person's question lists each remaining lint error's file, line and source text."""
    repo = small_checkout(tmp_path)
    base = _answer(repo)
    placed = 'y = torch.ones(2).to("cuda")'

    def answer(task: dict[str, Any]) -> dict[str, Any]:
        out = base(task)
        if task["agent_name"] == "coder":
            target = repo / "test" / "test_small_ops.py"
            target.write_text(target.read_text().replace("y = torch.ones(2).to(device)", placed, 1))
        return out

    drv = InProcess(tmp_path / "ws", {"ORCHESTRATOR_PYTHON": str(tmp_path / "no-python")})
    specs = _drive_until(drv, repo, answer, lambda s: False)
    question = specs[-1]
    text = json.dumps(question)
    assert ("need_human", True, True) == (question["status"], "test/test_small_ops.py:39 L006" in text, json.dumps(placed)[1:-1] in text)


def test_sentinel_notes_are_rechecked_when_the_summary_is_written(tmp_path: Path) -> None:
    """An unresolved sentinel renamed since (e.g. by the coder) is no longer reported; one still there is."""
    from flow.workflows.refactor.finalize import _sentinel_notes

    folder = tmp_path / "dynamo_skips"
    folder.mkdir()
    (folder / "TestKeptCPU.test_a_cpu").write_text("")
    data = SimpleNamespace(sentinel_notes=[(str(folder), "TestKeptCPU.test_a_cpu", "ambiguous"),
                                           (str(folder), "TestGoneCPU.test_b_cpu", "ambiguous")])
    assert ["dynamo_skips/TestKeptCPU.test_a_cpu: ambiguous"] == _sentinel_notes(SimpleNamespace(data=data))


def test_a_disputed_review_finding_upheld_by_the_next_review_burns_no_round(tmp_path: Path) -> None:
    """The coder disputes a review finding; the next review sees the reason, upholds it and is all
    clear; the review round is given back and the waiver is noted."""
    repo = small_checkout(tmp_path)
    base = _answer(repo)
    reviews: list[str] = []

    def answer(task: dict[str, Any]) -> dict[str, Any]:
        ident = {"agent_id": f"/root/{task['agent_name']}", "agent_name": task["agent_name"]}
        if "review-fix" in task["task_id"]:
            return {**ident, "success": False, "disputed": [{"finding": "R1", "reason": "the name is PyTorch's"}]}
        if _kind(task) == "checker_review":
            reviews.append(task["prompt"])
            if len(reviews) == 1:
                return NOT_CLEAR_REVIEW
            return {**ident, "all_clear": True, "summary": "ok",
                    "dispute_decisions": [{"finding": "R1", "upheld": True, "reason": "agreed"}]}
        return base(task)

    drv = InProcess(tmp_path / "ws", {"ORCHESTRATOR_PYTHON": str(tmp_path / "no-python")})
    _drive_until(drv, repo, answer, lambda s: _kind(s["tasks"][0]) == "coder_test")
    flow = next((tmp_path / "ws").rglob("flow_state.json")).parent
    data = json.loads((flow / "flow_state.json").read_text())["data"]
    assert (2, True, 0) == (len(reviews), "the name is PyTorch's" in reviews[1], data["review_rounds"])
    assert any("waived as a false positive by the checker: the name is PyTorch's" in n for n in data["notes"])
