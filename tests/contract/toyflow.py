"""A small workflow exercising every engine feature; registered through ORCHESTRATOR_PLUGINS.

prepare (deterministic, leaves a side-effect line) -> work (a wave of two tasks, retried when
``ok`` is false) -> review (one follow-up task) -> approve (need_human) -> finish (done).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from flow.core.errors import WorkflowInputError
from flow.core.feeds import Feed
from flow.core.outcome import Ask, Done, Go, Human, Task
from flow.core.workflow import Workflow


class ToyData(BaseModel):
    name: str
    prepared: int = 0
    total: int = 0


class Part(Feed):
    ok: bool
    value: int


class Review(Feed):
    approved: bool


def locate(opts: dict[str, Any], root: Path) -> str:
    words = opts.get("words") or ["toy"]
    return f"toy/{words[0]}"


def start(opts: dict[str, Any], root: Path, settings: Any) -> ToyData:
    words = opts.get("words") or ["toy"]
    if words[0] == "bad":
        raise WorkflowInputError(f"toy name {words[0]!r} is refused", "pick another name")
    return ToyData(name=words[0])


def prepare(ctx: Any) -> Any:
    # A side effect outside the state: each completed run appends one line.
    with open(ctx.dir / "side_effects.log", "a") as fh:
        fh.write("prepare\n")
    ctx.data.prepared += 1
    return Go("prepared")


def work(ctx: Any) -> Any:
    keys = ("left", "right")
    results = {k: ctx.result(k) for k in keys}
    redo = [k for k in keys if results[k] is None or not results[k].ok]
    if redo:
        return Ask([Task(key=k, role="coder", feed="part", prompt=f"Compute part {k} of "
                         f"{ctx.data.name}.", max_attempts=2) for k in redo],
                   extra={"rule_sub_phase": "work"})
    ctx.data.total = sum(r.value for r in results.values())
    return Go("worked")


def review(ctx: Any) -> Any:
    res = ctx.result("review")
    if res is None:
        return Ask([Task(key="review", role="coder", feed="review", follow_up=True,
                         prompt=f"Review the total {ctx.data.total}.")])
    return Go("reviewed" if res.approved else "rejected")


def approve(ctx: Any) -> Any:
    answer = ctx.answer("ship")
    if answer is None:
        return Human("ship", f"Ship total {ctx.data.total}?", {"yes": "ship it", "no": "drop"})
    return Go("approved" if answer == "yes" else "dropped")


def finish(ctx: Any) -> Any:
    return Done({"outcome": "shipped" if ctx.phase == "shipped" else "dropped",
                 "total": ctx.data.total}, ["nothing more"])


WORKFLOW = Workflow(
    name="toy",
    states=("prepare", "work", "review", "approve", "shipped", "dropped"),
    transitions=(("prepared", "prepare", "work"), ("worked", "work", "review"),
                 ("reviewed", "review", "approve"), ("rejected", "review", "work"),
                 ("approved", "approve", "shipped"), ("dropped", "approve", "dropped")),
    initial="prepare",
    terminal=frozenset({"shipped", "dropped"}),
    steps={"prepare": prepare, "work": work, "review": review, "approve": approve,
           "shipped": finish, "dropped": finish},
    feeds={"part": Part, "review": Review},
    data_model=ToyData,
    asks_person=frozenset({"approve"}),
)


def answer(task: dict[str, Any]) -> dict[str, Any]:
    """A scripted agent's result for a toy task: the review approves, and each part succeeds
    but the left one's first attempt, to exercise a retry. Here, beside the workflow, so that a
    harness process (``tests.fleet.worker``) answers without building every contract scenario."""
    if task["task_id"].startswith("review"):
        return {"approved": True}
    ok = not (task["task_id"].startswith("work-v1-left") and task["attempt"] == 1)
    return {"ok": ok, "value": 2, "agent_id": f"/root/{task['task_id']}", "agent_name": "coder"}
