"""The feed tool writes a result only to a file of its own and applies it under the flow's
lock: two clients feeding different results never both hear ``done``; an integer task_id gets
the CLI's answer (bad_task_id)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import orchestrator
from flow.mcp.calls import Caller
from flow.mcp.inputs import FeedInput
from tests.contract.inproc import start_toy

TOY = "tests.contract.toyflow"


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv("ORCHESTRATOR_PLUGINS", TOY)
    return start_toy(tmp_path, "race")


def test_a_second_client_feeding_between_the_first_ones_write_and_lock_is_refused(
        tmp_path: Path, toy: dict[str, Any]) -> None:
    """Client B feeds the same task while client A's feed is written but not yet applied:
    B's result is applied; A gets already_applied (never 'done' with its result dropped)."""
    task = toy["tasks"][0]
    answers: list[tuple[dict[str, Any], int]] = []

    def respond(argv: list[str]) -> tuple[dict[str, Any] | str, int]:
        if not answers and "--feed" in argv:  # A's feed is written: B comes first
            answers.append(other.feed(FeedInput(flow_id=toy["flow_id"], task_id=task["task_id"],
                                                result={"ok": True, "value": 2})))
        return orchestrator.respond(argv)

    first = Caller(tmp_path, None, respond)
    other = Caller(tmp_path, None, orchestrator.respond)
    mine, code = first.feed(FeedInput(flow_id=toy["flow_id"], task_id=task["task_id"],
                                      result={"ok": True, "value": 1}))
    (b_spec, b_code), = answers
    assert (0, 2, "already_applied") == (b_code, code, mine["error"]["code"])
    state = json.loads((tmp_path / toy["flow_id"] / "flow_state.json").read_text())
    fed = next(t for t in state["tasks"] if t["task_id"] == task["task_id"])
    assert ({"ok": True, "value": 2}, {"ok": True, "value": 2}) == (
        {k: fed["result"][k] for k in ("ok", "value")},
        json.loads(Path(task["feed_file"]).read_text()))
    assert [] == list(Path(task["feed_file"]).parent.glob(".mcp-*"))


def test_an_integer_task_id_in_the_result_is_bad_task_id_as_on_the_cli(
        tmp_path: Path, toy: dict[str, Any]) -> None:
    """A result naming task_id 7 (an integer) is refused bad_task_id, the CLI's code."""
    task = toy["tasks"][0]
    caller = Caller(tmp_path, None, orchestrator.respond)
    spec, code = caller.feed(FeedInput(flow_id=toy["flow_id"], task_id=task["task_id"],
                                       result={"task_id": 7, "ok": True, "value": 1}))
    assert (2, "bad_task_id") == (code, spec["error"]["code"])
