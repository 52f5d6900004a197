"""A two-state plugin workflow whose one feed is free text, registered through
ORCHESTRATOR_PLUGINS: ``start notes NAME`` asks an agent for a note and a link, the fed note
becomes the flow's result. It stands for any agent or GitHub text that reaches the dashboard
(a debugger's report, a review comment): whatever it holds must be shown as text. A note
whose name starts with ``sleepy`` sleeps until the next cron firing instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from flow.core.feeds import Feed
from flow.core.outcome import Ask, Done, Go, Sleep, Task
from flow.core.workflow import Workflow


class NotesData(BaseModel):
    name: str
    note: str = ""
    link: str = ""


class Note(Feed):
    note: str
    link: str


def locate(opts: dict[str, Any], root: Path) -> str:
    return f"notes/{(opts.get('words') or ['note'])[0]}"


def start(opts: dict[str, Any], root: Path, settings: Any) -> NotesData:
    return NotesData(name=(opts.get("words") or ["note"])[0])


def ask(ctx: Any) -> Any:
    if ctx.data.name.startswith("sleepy"):  # a flow that waits on the clock (cron)
        return Sleep("the nightly wheel is not published yet")
    res = ctx.result("note")
    if res is None:
        return Ask([Task(key="note", role="writer", feed="note",
                         prompt=f"Write a note about {ctx.data.name} and a link to it.")])
    ctx.data.note, ctx.data.link = res.note, res.link
    return Go("noted")


def finish(ctx: Any) -> Any:
    return Done({"outcome": "noted", "note": ctx.data.note, "link": ctx.data.link},
                ["read the note"])


WORKFLOW = Workflow(
    name="notes",
    states=("ask", "noted"),
    transitions=(("noted", "ask", "noted"),),
    initial="ask",
    terminal=frozenset({"noted"}),
    steps={"ask": ask, "noted": finish},
    feeds={"note": Note},
    data_model=NotesData,
    sleeps=frozenset({"ask"}),
)
