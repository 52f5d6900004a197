"""A two-step workflow: one agent task, then a background job; registered through
ORCHESTRATOR_PLUGINS by the re-feed test. ``start feedjob NAME`` runs ``FEEDJOB_SCRIPT``
(Python source) as the job once the task ``part`` is fed."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from flow.core.feeds import Feed
from flow.core.outcome import Ask, Done, Task
from flow.core.workflow import Workflow


class FeedJobData(BaseModel):
    name: str
    script: str


class Part(Feed):
    value: int


def locate(opts: dict[str, Any], root: Path) -> str:
    return f"feedjob/{(opts.get('words') or ['job'])[0]}"


def start(opts: dict[str, Any], root: Path, settings: Any) -> FeedJobData:
    return FeedJobData(name=(opts.get("words") or ["job"])[0], script=settings["FEEDJOB_SCRIPT"])


def work(ctx: Any) -> Any:
    part = ctx.result("part")
    if part is None:
        return Ask([Task(key="part", role="coder", feed="part", prompt="Give a value.")])
    res = ctx.job("main", [sys.executable, "-c", ctx.data.script], log_name="logs/main.log",
                  timeout=30, cwd=str(ctx.dir))
    return Done({"value": part.value, "code": res.code})


WORKFLOW = Workflow(
    name="feedjob", states=("work", "done"), transitions=(("never", "work", "done"),),
    initial="work", terminal=frozenset({"done"}), steps={"work": work, "done": work},
    feeds={"part": Part}, data_model=FeedJobData,
)
