"""The MCP tools driven by the SDK's client over stdio: the reproduce example, errors, locks."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from flow.cli.schemas import Spec, all_models
from tests.mcp.client import (
    FAILING, PASSING, Mcp, cli, drive, reproduce_args, run_task, shell, state_bytes,
)
from workspace.lock import FlowLock

WORKFLOWS = {"reproduce", "refactor", "ci", "ci-targeted", "ingest", "review-queue"}


def test_tools_take_their_schemas_from_the_models(tmp_path: Path) -> None:
    """Six tools; start typed per workflow, feed lists every feed model, output is Spec."""
    async def body(mcp: Mcp) -> None:
        tools = {t.name: t for t in (await mcp.client.list_tools()).tools}
        assert {"start", "resume", "feed", "answer", "status", "schema"} == set(tools)
        args = tools["start"].input_schema["$defs"]
        kinds = {d["properties"]["workflow"]["const"] for d in args.values()
                 if "workflow" in d.get("properties", {})}
        assert WORKFLOWS == kinds
        feed = tools["feed"].input_schema
        listed = {v["description"].split()[-1] for v in feed["properties"]["result"]["anyOf"]}
        assert {n for n in all_models() if "." in n} == listed
        assert all(t.output_schema == Spec.model_json_schema() for t in tools.values())
        assert tools["status"].annotations.read_only_hint is True

    drive(tmp_path, body)


def test_the_readme_example_reaches_done_and_cli_and_mcp_agree(tmp_path: Path) -> None:
    """The README example over MCP: done, verdict and audit as resources, CLI agrees."""
    found: dict[str, object] = {}

    async def body(mcp: Mcp) -> None:
        spec = await mcp.ok("start", {"args": reproduce_args(FAILING)})
        assert ("done", "REPRODUCED") == (spec["status"], spec["outcome"])
        flow = spec["flow_id"]
        verdict = await mcp.read(f"orchestrator://flow/{flow}/verdict.json")
        assert json.loads(verdict) == spec["verdict"]
        audit = [json.loads(line) for line in
                 (await mcp.read(f"orchestrator://flow/{flow}/audit.jsonl")).splitlines()]
        assert "done" == audit[-1]["event"]
        uris = {r.uri for r in (await mcp.client.list_resources()).resources}
        assert f"orchestrator://flow/{flow}/verdict.json" in uris
        assert "stateDiagram" in await mcp.read("orchestrator://graph/reproduce")
        found.update(spec)

    drive(tmp_path, body)
    code, again = cli(tmp_path, "--flow", str(found["flow_id"]), "--resume")
    assert (0, found) == (code, again)


def test_bad_arguments_are_usage_errors_and_start_nothing(tmp_path: Path) -> None:
    """Unknown workflow, a mistyped or unknown field: a tool error with error.code usage."""
    cases = [{"args": {"workflow": "nope"}},
             {"args": {"workflow": "ci", "pr_number": "3"}},
             {"args": reproduce_args(FAILING, colour="red")},
             {}]

    async def body(mcp: Mcp) -> None:
        for args in cases:
            spec, failed = await mcp.call("start", args)
            assert (True, "error", "usage") == (failed, spec["status"], spec["error"]["code"])
            assert spec["error"]["hint"] and spec["error"]["field_errors"]
        spec, failed = await mcp.call("resume", {"flow_id": "../etc"})
        assert (True, "usage") == (failed, spec["error"]["code"])

    drive(tmp_path, body)
    assert not tmp_path.exists() or not any(tmp_path.iterdir())


@pytest.mark.slow
def test_refused_feeds_leave_the_state_untouched_and_a_real_run_task_goes_on(
        tmp_path: Path) -> None:
    """Refused feeds change no state byte; the real build result goes on; re-feeds hold."""
    async def body(mcp: Mcp) -> None:
        spec = await mcp.ok("start", {"args": reproduce_args(PASSING)})
        assert ("need_agent", "run") == (spec["status"], spec["tasks"][0]["method"])
        flow, task = spec["flow_id"], spec["tasks"][0]
        before = state_bytes(tmp_path, flow)
        refused = [
            (task["task_id"], {"log_path": task["log_file"]}, "invalid_feed"),
            (task["task_id"], {"exit_code": 0, "log_path": "/etc/hostname"}, "invalid_feed"),
            ("stage9-v1-nothing-a1", {"exit_code": 0, "log_path": task["log_file"]},
             "stale_feed"),
            (task["task_id"], {"task_id": "other", "exit_code": 0,
                               "log_path": task["log_file"]}, "foreign_feed"),
        ]
        for task_id, result, code in refused:
            got, failed = await mcp.call("feed", {"flow_id": flow, "task_id": task_id,
                                                  "result": result})
            assert (True, code) == (failed, got["error"]["code"]), got
            assert before == state_bytes(tmp_path, flow)
        result = run_task(task)
        done = await mcp.ok("feed", {"flow_id": flow, "task_id": task["task_id"],
                                     "result": result})
        assert json.loads(Path(task["feed_file"]).read_text()) == result  # a file feed's trail
        assert "done" == done["status"]
        after = state_bytes(tmp_path, flow)
        again = await mcp.ok("feed", {"flow_id": flow, "task_id": task["task_id"],
                                      "result": result})
        assert (done, after) == (again, state_bytes(tmp_path, flow))
        other, failed = await mcp.call("feed", {"flow_id": flow, "task_id": task["task_id"],
                                                "result": {**result, "exit_code": 1}})
        assert (True, "already_applied") == (failed, other["error"]["code"])
        assert after == state_bytes(tmp_path, flow)
        assert json.loads(Path(task["feed_file"]).read_text()) == result  # not overwritten
        assert [] == list(Path(task["feed_file"]).parent.glob(".mcp-*"))

    drive(tmp_path, body)


@pytest.mark.slow
def test_a_busy_flow_is_a_tool_error_and_cli_and_mcp_share_the_flow(tmp_path: Path) -> None:
    """An MCP flow's printed commands work in a shell; a held lock makes resume busy."""
    env = {"ORCHESTRATOR_LOCK_TIMEOUT": "0.5"}

    async def body(mcp: Mcp) -> None:
        spec = await mcp.ok("start", {"args": reproduce_args(PASSING)})
        flow, task = spec["flow_id"], spec["tasks"][0]
        code, printed = shell(spec["resume_command"])  # as printed by the MCP start
        assert (0, "waiting", spec["tasks"]) == (code, printed["status"], printed["tasks"])
        before = state_bytes(tmp_path, flow)
        with FlowLock(tmp_path / flow):
            got, failed = await mcp.call("resume", {"flow_id": flow})
            assert (True, "busy") == (failed, got["error"]["code"])
            assert got["error"]["holder"]["pid"] is not None
        assert before == state_bytes(tmp_path, flow)
        Path(task["feed_file"]).write_text(json.dumps(run_task(task)))
        code, fed = shell(task["feed_command"])
        assert (0, "done") == (code, fed["status"])
        assert fed == await mcp.ok("resume", {"flow_id": flow})

    drive(tmp_path, body, env)


def test_a_call_past_the_foreground_budget_answers_waiting_then_its_result(
        tmp_path: Path) -> None:
    """A call past a 1 s budget answers waiting (job, progress); the next call gets its answer."""
    env = {"ORCHESTRATOR_PLUGINS": "tests.mcp.slowflow", "ORCHESTRATOR_FOREGROUND_S": "1",
           "SLOWFLOW_SECONDS": "3"}
    task = cli(tmp_path, "start", "slow", "p", env=env)[1]["tasks"][0]

    async def body(mcp: Mcp) -> None:
        spec, failed = await mcp.call("feed", {"flow_id": "slow/p", "task_id": task["task_id"],
                                               "result": {"value": 1}}, track=True)
        assert (False, "waiting") == (failed, spec["status"])
        assert spec["job"]["id"].startswith("mcp-") and spec["poll_after_s"] > 0
        assert mcp.progress and all(total == 1.0 for _, total, _ in mcp.progress)
        for _ in range(60):
            spec = await mcp.ok("resume", {"flow_id": "slow/p"})
            if spec["status"] != "waiting":
                break
            await anyio.sleep(0.5)
        assert ("need_agent", "coder") == (spec["status"], spec["tasks"][0]["agent_name"])

    drive(tmp_path, body, env)


@pytest.mark.parametrize("name", [None, "reproduce.run"])
def test_schema_and_status_answer_what_the_cli_prints(tmp_path: Path, name: str | None) -> None:
    """The schema and status tools return the CLI's objects."""
    async def body(mcp: Mcp) -> None:
        got = await mcp.ok("schema", {"name": name} if name else {})
        assert got == cli(tmp_path, "schema", *([name] if name else []))[1]
        assert cli(tmp_path, "status", "--json")[1] == await mcp.ok("status")

    drive(tmp_path, body)


def test_an_overrun_call_hands_its_fresh_wave_to_the_next_resume(tmp_path: Path) -> None:
    """A call that outlives the budget answers `waiting`; the fresh need_agent it produced
    goes to the flow's next resume (not a re-print), and only once."""
    env = {"ORCHESTRATOR_PLUGINS": "tests.mcp.slowflow", "ORCHESTRATOR_FOREGROUND_S": "1",
           "SLOWFLOW_SECONDS": "3"}
    code, started = cli(tmp_path, "start", "slow", "x", env=env)
    assert (0, "need_agent") == (code, started["status"])
    task = started["tasks"][0]

    async def body(mcp: Mcp) -> None:
        spec, _ = await mcp.call("feed", {"flow_id": "slow/x", "task_id": task["task_id"],
                                          "result": {"value": 1}})
        assert ("waiting", True) == (spec["status"], spec["job"]["id"].startswith("mcp-"))
        await anyio.sleep(3)  # the feed's library call finishes in the server meanwhile
        got = await mcp.ok("resume", {"flow_id": "slow/x"})
        assert ("need_agent", "coder") == (got["status"], got["tasks"][0]["agent_name"])
        again = await mcp.ok("resume", {"flow_id": "slow/x"})
        assert ("waiting", got["tasks"]) == (again["status"], again["tasks"])

    drive(tmp_path, body, env)


def test_start_again_carries_on_and_restart_moves_the_old_flow_aside(tmp_path: Path) -> None:
    """A second start of the same arguments answers the flow's spec; restart keeps the old one."""
    async def body(mcp: Mcp) -> None:
        args = {"args": reproduce_args(FAILING), "harness": "codex"}
        first = await mcp.ok("start", args)
        assert ("done", "codex") == (first["status"], first["harness"])
        second = await mcp.ok("start", args)
        assert {"flow_id": first["flow_id"], "decided_at": second["reused_from"]["decided_at"]} \
            == second.pop("reused_from")
        assert "--restart" in second["next_steps"].pop()
        assert first == second
        again = await mcp.ok("start", {**args, "restart": True})
        assert (first["flow_id"], "done") == (again["flow_id"], again["status"])
        kept = [p.name for p in (tmp_path / "reproduce").iterdir() if ".old-" in p.name]
        assert 1 == len(kept)

    drive(tmp_path, body)


def test_resume_with_wait_follows_the_flows_own_job_to_its_end(tmp_path: Path) -> None:
    """A flow waiting on its background job: resume {wait: true} answers within the budget,
    with the flow's own job (not a server overrun), and a later resume reads its result."""
    env = {"ORCHESTRATOR_PLUGINS": "tests.proc.jobflow", "ORCHESTRATOR_FOREGROUND_S": "2",
           "JOBFLOW_SCRIPT": "import time\nprint('working', flush=True)\ntime.sleep(4)"}
    started = cli(tmp_path, "start", "jobs", "w", env=env)[1]
    assert ("waiting", "job") == (started["status"], started["waiting_on"])

    async def body(mcp: Mcp) -> None:
        spec = await mcp.ok("resume", {"flow_id": "jobs/w", "wait": True})
        if spec["status"] == "waiting":  # the flow's own job, reported as the CLI reports it
            assert ("jobs/w", "work-v1-main") == (spec["flow_id"], spec["job"]["id"])
            await anyio.sleep(3)
            spec = await mcp.ok("resume", {"flow_id": "jobs/w", "wait": True})
        assert ("done", 0, "working") == (spec["status"], spec["code"], spec["tail"])

    drive(tmp_path, body, env)
