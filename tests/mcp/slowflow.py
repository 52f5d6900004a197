"""A workflow whose second step works for ``SLOWFLOW_SECONDS`` in Python (no child process,
so no foreground budget applies to it) before asking for a task: a library call that
reliably outlives an MCP server's budget. Registered through ORCHESTRATOR_PLUGINS."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from flow.core.feeds import Feed
from flow.core.outcome import Ask, Done, Go, Task
from flow.core.workflow import Workflow


class SlowData(BaseModel):
    name: str


class Part(Feed):
    value: int


def locate(opts: dict[str, Any], root: Path) -> str:
    return f"slow/{(opts.get('words') or ['x'])[0]}"


def start(opts: dict[str, Any], root: Path, settings: Any) -> SlowData:
    return SlowData(name=(opts.get("words") or ["x"])[0])


def first(ctx: Any) -> Any:
    if ctx.result("a") is None:
        return Ask([Task(key="a", role="coder", feed="part", prompt="Give a value.")])
    return Go("next")


def second(ctx: Any) -> Any:
    if ctx.result("b") is None:
        time.sleep(float(os.environ.get("SLOWFLOW_SECONDS", "3")))
        return Ask([Task(key="b", role="coder", feed="part", prompt="Give another value.")])
    return Done({"outcome": "finished"})


WORKFLOW = Workflow(
    name="slow", states=("first", "second"), transitions=(("next", "first", "second"),),
    initial="first", terminal=frozenset({"second"}), steps={"first": first, "second": second},
    feeds={"part": Part}, data_model=SlowData,
)
