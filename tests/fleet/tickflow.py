"""The fleet tests' item: a flow of one agent task, so a campaign's cost is its claims,
leases, kills and restarts rather than the flow's own steps (the contract suite drives the
engine's retries, waves and questions). Registered through ORCHESTRATOR_PLUGINS.

tick (asks one ``coder`` task, then keeps its value) -> ticked (done, outcome ``ticked``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from flow.core.feeds import Feed
from flow.core.outcome import Ask, Done, Go, Task
from flow.core.workflow import Workflow


class TickData(BaseModel):
    name: str
    value: int | None = None


class Part(Feed):
    """The toy scenario's answer shape (``tests.contract.toyflow.answer``)."""

    ok: bool
    value: int


def locate(opts: dict[str, Any], root: Path) -> str:
    return f"tick/{(opts.get('words') or ['x'])[0]}"


def start(opts: dict[str, Any], root: Path, settings: Any) -> TickData:
    return TickData(name=(opts.get("words") or ["x"])[0])


def tick(ctx: Any) -> Any:
    fed = ctx.result("tick")
    if fed is None:
        return Ask([Task(key="tick", role="coder", feed="part",
                         prompt=f"Give the value of {ctx.data.name}.")])
    ctx.data.value = fed.value
    return Go("ticked")


def ticked(ctx: Any) -> Any:
    return Done({"outcome": "ticked", "value": ctx.data.value}, ["nothing more"])


WORKFLOW = Workflow(
    name="tick", states=("tick", "ticked"), transitions=(("ticked", "tick", "ticked"),),
    initial="tick", terminal=frozenset({"ticked"}), steps={"tick": tick, "ticked": ticked},
    feeds={"part": Part}, data_model=TickData,
)
