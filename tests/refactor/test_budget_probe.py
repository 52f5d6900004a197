"""A probe the foreground budget cut short is never recorded: the refactor workflow's torch
probe raises ``proc.BudgetSpent`` instead of writing "could not ask the interpreter: timed
out", and the engine answers such a step ``waiting`` (``waiting_on: "budget"``) with the
state untouched, then runs it again in the next call."""
from __future__ import annotations

import json
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from flow.core import proc
from tests.contract.inproc import call

# A stand-in test interpreter: answers the torch probe as a python with torch would, after
# sleeping the seconds written in the file beside it (a cold disk, a loaded machine).
SLOW_PYTHON = """#!/bin/sh
sleep "$(cat "{delay}")"
echo 2.13.0 at /site/torch
"""

# A workflow of one step whose answer depends on a query (the engine's side of the rule).
PLUGIN = '''
"""One step asking a slow query: the engine's rule for a query the budget cut short."""
import sys
from pathlib import Path
from pydantic import BaseModel
from flow.core import proc
from flow.core.outcome import Done
from flow.core.workflow import Workflow


class AskData(BaseModel):
    name: str
    asked: int = 0


def locate(opts, root):
    return "budgetask/" + (opts.get("words") or ["one"])[0]


def start(opts, root, settings):
    return AskData(name=(opts.get("words") or ["one"])[0])


def ask(ctx):
    ctx.data.asked += 1
    delay = Path(DELAY).read_text().strip()
    got = proc.capture(["sleep", delay], timeout=30).or_wait()
    return Done({"outcome": "asked", "code": got.code, "asked": ctx.data.asked}, [])


WORKFLOW = Workflow(name="budgetask", states=("ask", "end"), transitions=(("x", "ask", "end"),),
                    initial="ask", terminal=frozenset({"end"}), steps={"ask": ask, "end": ask},
                    feeds={}, data_model=AskData)
'''


def _ctx(python: Path, repo: Path) -> SimpleNamespace:
    return SimpleNamespace(settings={"ORCHESTRATOR_PYTHON": str(python)},
                           data=SimpleNamespace(test_torch=None, test_python=None,
                                                test_torch_info=None, notes=[], repo=str(repo)))


def test_torch_probe_cut_by_the_budget_is_not_recorded(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Under a 1 s budget a probe taking 3 s raises BudgetSpent and records nothing; the
    next call (a fresh budget, a quick answer) records the torch found."""
    from flow.workflows.refactor.testenv import _has_torch

    delay = tmp_path / "delay"
    delay.write_text("3")
    python = tmp_path / "python"
    python.write_text(SLOW_PYTHON.format(delay=delay))
    python.chmod(0o755)
    ctx = _ctx(python, tmp_path)
    monkeypatch.setenv(proc.FOREGROUND_ENV, "1")
    monkeypatch.setattr(proc, "_call_started", time.monotonic())  # as begin_call, undone after
    with pytest.raises(proc.BudgetSpent, match="foreground budget"):
        _has_torch(ctx)
    assert (None, None) == (ctx.data.test_torch, ctx.data.test_torch_info)
    assert not any("could not ask" in n for n in ctx.data.notes)
    delay.write_text("0")
    monkeypatch.setenv(proc.FOREGROUND_ENV, "30")
    monkeypatch.setattr(proc, "_call_started", time.monotonic())  # the next call
    assert _has_torch(ctx) is True
    assert "torch 2.13.0 at /site/torch" == ctx.data.test_torch_info


def test_a_probe_timing_out_by_its_own_timeout_is_still_an_answer(tmp_path: Path) -> None:
    """A budget larger than the query's own timeout: its timeout is the query's, so it is
    an answer (budget_cut false) and or_wait returns it."""
    got = proc.capture(["sleep", "5"], timeout=0.5, budget=True)
    assert (True, False) == (got.timed_out, got.budget_cut)
    assert got.or_wait() is got


def test_engine_answers_waiting_and_asks_again(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A step whose query the budget cut short: the call answers waiting (budget), the
    state's data is as before, and the next call, with a quick answer, ends the flow with
    the step run once to its end."""
    delay = tmp_path / "delay"
    delay.write_text("3")
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "budgetask_flow.py").write_text(
        textwrap.dedent(PLUGIN).replace("DELAY", repr(str(delay))))
    monkeypatch.syspath_prepend(str(plugins))
    monkeypatch.setenv("ORCHESTRATOR_PLUGINS", "budgetask_flow")
    monkeypatch.setenv(proc.FOREGROUND_ENV, "1")
    ws = tmp_path / "ws"
    code, spec = call(["--workspace", str(ws), "start", "budgetask", "one"])
    assert (0, "waiting", "budget", [], 1) == (
        code, spec["status"], spec.get("waiting_on"), spec["tasks"], spec["poll_after_s"]), spec
    assert "sleep 3" in spec["cut_short"] and "--resume" in spec["resume_command"]
    state = json.loads((Path(spec["workspace"]) / "flow_state.json").read_text())
    assert (0, None) == (state["data"]["asked"], state["result"])
    delay.write_text("0")
    code, done = call(["--workspace", str(ws), "--flow", spec["flow_id"], "--resume"])
    # asked == 1: the cut run's data change (asked += 1) was dropped, not kept
    assert (0, "done", "asked", 0, 1) == (code, done["status"], done["outcome"], done["code"],
                                          done["asked"]), done
