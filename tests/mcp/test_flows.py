"""Whole workflows over MCP: the refactor demo from its recorded results, and a --ci-check
flow against the fake GitHub, each to done."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from flow.cli.demo import TEST_FILE, _answer, make_checkout
from tests import forkserver
from tests.fakegithub import FakeGitHub
from tests.mcp.client import ROOT, Mcp, drive

EXAMPLE = ROOT / "examples" / "refactor"
HEAD, BASE, FIX = "a" * 40, "b" * 40, "c" * 40
FAIL_LOG = ("FAILED test_x.py::test_y - AssertionError: boom\n"
            "##[error]Process completed with exit code 1.\n")


async def _feed_all(mcp: Mcp, spec: dict[str, Any], answer: Any) -> dict[str, Any]:
    """Feed every task of the wave (in order) with ``answer(task)``; the last reply."""
    flow = spec["flow_id"]
    for task in spec["tasks"]:
        spec = await mcp.ok("feed", {"flow_id": flow, "task_id": task["task_id"],
                                     "result": answer(task)})
    return spec


def _demo_result() -> str:
    """The replayed coder's file, with the hw_classification labels the workflow writes at
    verify when this torch has HardwareClassification (2.14.1, the [torch] extra), from the
    replay's plan; as it is on an older torch."""
    from flow.workflows.refactor.analysis import AnalystReport
    from flow.workflows.refactor.hwcodemod import label_classes

    text = (EXAMPLE / "small_ops_after.py").read_text()
    try:
        from torch.testing._internal import common_utils
    except ImportError:
        return text
    if not hasattr(common_utils, "HardwareClassification"):
        return text
    plan = AnalystReport.model_validate_json((EXAMPLE / "analyst_report.json").read_text())
    return label_classes(text, plan.labels()).code


def test_the_refactor_demo_reaches_done_over_mcp(tmp_path: Path) -> None:
    """The refactor demo fed from its replay over MCP ends done; the summary is a resource."""
    checkout = make_checkout(EXAMPLE, tmp_path / "checkout")
    ws = tmp_path / "ws"

    async def body(mcp: Mcp) -> None:
        spec = await mcp.ok("start", {"args": {"workflow": "refactor", "file": TEST_FILE,
                                               "pytorch_dir": str(checkout)}})
        feeds = 0
        while spec["status"] in {"need_agent", "waiting"} and feeds < 60:
            if spec["status"] == "waiting" and not spec.get("tasks"):
                # a job the flow owns runs on (the local tests; on a torch with
                # HardwareClassification also the --hw-classification runs): poll, as a harness does
                await anyio.sleep(min(float(spec.get("poll_after_s") or 1), 1.0))
                spec = await mcp.ok("resume", {"flow_id": spec["flow_id"]})
            else:
                spec = await _feed_all(mcp, spec, lambda t: _answer(t, EXAMPLE, checkout))
            feeds += 1
        assert ("done", "refactored") == (spec["status"], spec["outcome"]), spec
        summary = await mcp.read(f"orchestrator://flow/{spec['flow_id']}/final_summary.md")
        assert summary == Path(spec["summary_path"]).read_text()
        assert (checkout / TEST_FILE).read_text() == _demo_result()

    # An MCP client starts the server with an environment of its own: the test interpreter
    # is named, as a person configuring the server would name theirs.
    drive(ws, body, {"ORCHESTRATOR_PYTHON": forkserver.python("torch")})


@pytest.mark.parametrize("harness", ["claude", "codex"])
def test_a_ci_check_flow_reaches_all_green_over_mcp(fake_github: FakeGitHub, tmp_path: Path,
                                                   harness: str) -> None:
    """A red PR over MCP: debugger fed, push awaited, green head: done all_green, ready."""
    repo = fake_github.repo("o/r")
    repo.add_pull(1, "feature", HEAD, merge_base_sha=BASE)
    wf = repo.add_workflow("pull", ".github/workflows/pull.yml")
    repo.add_run(wf, BASE, jobs=[("test", "success"), ("lint", "success")])
    run = repo.add_run(wf, HEAD, jobs=[("lint", "success"), ("test", "failure")])
    repo.jobs_of(run)[1].log = FAIL_LOG
    env = {"ORCHESTRATOR_GITHUB_API": fake_github.base_url, "GITHUB_TOKEN": fake_github.token,
           "ORCHESTRATOR_GITHUB_BACKOFF": "0.01"}
    fix = {"agent_id": "/root/debugger", "agent_name": "debugger", "pushed_commit": FIX,
           "fixes_applied": [{"check_name": "test", "failure": "test_y fails",
                              "verdict": "fixed", "rationale": "off by one", "change": "x.py"}],
           "unrelated": []}

    async def body(mcp: Mcp) -> None:
        spec = await mcp.ok("start", {"args": {"workflow": "ci", "repo": "o/r", "pr_number": 1,
                                               "mark_ready": True}})
        assert ("need_agent", "ci_debug", harness) == (spec["status"], spec["phase"],
                                                        spec["harness"])
        shape = {"claude": ("agent_type", "general-purpose"), "codex": ("tool", "spawn_agent")}
        key, value = shape[harness]
        assert value == spec["tasks"][0][key]  # the server's --harness renders the tasks
        spec = await mcp.ok("feed", {"flow_id": spec["flow_id"],
                                     "task_id": spec["tasks"][0]["task_id"], "result": fix})
        assert ("schedule_cron", "waiting_for_push") == (spec["status"], spec["ci_phase"])
        repo.push(1, FIX)
        repo.add_run(wf, FIX, jobs=[("lint", "success"), ("test", "success")])
        spec = await mcp.ok("resume", {"flow_id": spec["flow_id"]})
        assert ("done", "ci_done", "all_green") == (spec["status"], spec["phase"],
                                                     spec["outcome"])
        assert repo.pulls[1].draft is False

    drive(tmp_path, body, env, "--harness", harness)
