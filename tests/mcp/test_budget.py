"""The foreground budget of the MCP server: calls that outlive a tool call are never lost."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from flow.mcp.budget import InFlight, budget_s
from flow.mcp.calls import Reply

SHAPE = {"schema_version": 1, "workflow": None, "flow_id": None, "phase": None,
         "harness": "claude", "workspace": "/ws"}


def _slow(seconds: float, spec: dict[str, Any], ran: list[str]) -> Callable[[], Reply]:
    def fn() -> Reply:
        ran.append(spec["status"])
        time.sleep(seconds)  # a blocking library call, in a worker thread
        return spec, 0
    return fn


def _run(budget: float, body: Callable[[InFlight, list[str]], Awaitable[None]]) -> list[str]:
    notes: list[str] = []

    async def main() -> None:
        calls = InFlight(budget, SHAPE, lambda exc: ({**SHAPE, "status": "error",
                                                      "error": {"code": "bug"}}, 1))
        async with anyio.create_task_group() as tg:
            calls.tg = tg
            await body(calls, notes)

    anyio.run(main)
    return notes


def test_an_overrun_answers_waiting_then_the_same_key_gets_the_answer() -> None:
    """Work past the budget answers waiting (one job, progress) until its key gets the answer."""
    ran: list[str] = []

    async def body(calls: InFlight, notes: list[str]) -> None:
        async def progress(done: float, total: float, message: str) -> None:
            notes.append(message)

        fn = _slow(0.9, {"flow_id": "f", "status": "need_agent"}, ran)
        answers = []
        for _ in range(10):
            t = time.monotonic()
            spec, code = await calls.guarded("start:x", "start", fn, progress, t + 0.3,
                                             reuse=True)
            assert time.monotonic() - t < 0.6  # never much past the deadline
            answers.append(spec)
            if spec["status"] != "waiting":
                break
        assert "need_agent" == answers[-1]["status"]
        assert 1 == len({a["job"]["id"] for a in answers[:-1]}) and len(answers) > 2

    notes = _run(0.3, body)
    assert ["need_agent"] == ran and notes


def test_a_finished_unseen_answer_goes_to_the_next_resume_of_its_flow() -> None:
    """An overrun start's answer goes to its flow's next resume; a later feed runs normally."""
    ran: list[str] = []

    async def body(calls: InFlight, notes: list[str]) -> None:
        async def progress(done: float, total: float, message: str) -> None:
            notes.append(message)

        start = _slow(0.5, {"flow_id": "f", "status": "need_agent"}, ran)
        spec, _ = await calls.guarded("start:x", "start", start, progress,
                                      time.monotonic() + 0.2, reuse=True)
        assert "waiting" == spec["status"]
        await anyio.sleep(0.6)
        resume = _slow(0, {"flow_id": "f", "status": "waiting"}, ran)
        spec, _ = await calls.guarded("flow:f", "resume", resume, progress,
                                      time.monotonic() + 1, reuse=True)
        assert "need_agent" == spec["status"]
        feed = _slow(0, {"flow_id": "f", "status": "done"}, ran)
        spec, _ = await calls.guarded("flow:f", "feed", feed, progress,
                                      time.monotonic() + 1, reuse=False)
        assert "done" == spec["status"] and {} == calls.calls

    _run(0.2, body)
    assert ["need_agent", "done"] == ran


def test_a_crash_outside_the_cli_is_one_error_object() -> None:
    """A call that raises still answers one object (exit code 1) and the server goes on."""
    async def body(calls: InFlight, notes: list[str]) -> None:
        async def progress(done: float, total: float, message: str) -> None:
            pass

        def boom() -> Reply:
            raise OSError(28, "No space left on device")

        spec, code = await calls.guarded(None, "feed", boom, progress, time.monotonic() + 1,
                                         reuse=False)
        assert (1, "bug") == (code, spec["error"]["code"])

    _run(1, body)


@pytest.mark.parametrize(("raw", "seconds"), [(None, 90.0), ("30", 30.0), ("0.5", 0.5),
                                              ("soon", 90.0), ("0", 90.0), ("-3", 90.0)])
def test_the_budget_comes_from_orchestrator_foreground_s(raw: str | None,
                                                         seconds: float) -> None:
    """ORCHESTRATOR_FOREGROUND_S in seconds; unset or malformed: the 90 s default."""
    env = {} if raw is None else {"ORCHESTRATOR_FOREGROUND_S": raw}
    assert seconds == budget_s(env)
