"""A one-step workflow that runs a background job (``ctx.job``) and reports how it ended;
registered through ORCHESTRATOR_PLUGINS by the runner tests.

``start jobs NAME`` with ``JOBFLOW_SCRIPT`` (Python source the job runs),
``JOBFLOW_TIMEOUT`` (seconds) and ``JOBFLOW_FOREGROUND=1`` (run it in the foreground
instead) in the environment; ``JOBFLOW_SIDE_BY_SIDE=N`` starts N jobs (``ctx.start_job``,
the script gets its index as ``sys.argv[1]``) before waiting on each.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from flow.core.outcome import Done
from flow.core.workflow import Workflow


class JobData(BaseModel):
    name: str
    script: str
    timeout: float
    foreground: bool = False
    side_by_side: int = 0


def locate(opts: dict[str, Any], root: Path) -> str:
    return f"jobs/{(opts.get('words') or ['job'])[0]}"


def start(opts: dict[str, Any], root: Path, settings: Any) -> JobData:
    return JobData(name=(opts.get("words") or ["job"])[0], script=settings["JOBFLOW_SCRIPT"],
                   timeout=float(settings.get("JOBFLOW_TIMEOUT", "30")),
                   foreground=settings.get("JOBFLOW_FOREGROUND") == "1",
                   side_by_side=int(settings.get("JOBFLOW_SIDE_BY_SIDE", "0")))


def work(ctx: Any) -> Any:
    if ctx.data.foreground:  # the same command as a foreground run of the step itself
        from flow.core import proc

        res = proc.run([sys.executable, "-c", ctx.data.script], log=ctx.path("logs/main.log"),
                       timeout=ctx.data.timeout, cwd=str(ctx.dir))
        return Done({"outcome": "finished", "code": res.code, "timed_out": res.timed_out,
                     "lost": res.lost, "tail": res.tail(5), "log": str(res.log)})
    if ctx.data.side_by_side:
        jobs = [dict(key=f"part-{i}", argv=[sys.executable, "-c", ctx.data.script, str(i)],
                     log_name=f"logs/part-{i}.log", timeout=ctx.data.timeout, cwd=str(ctx.dir))
                for i in range(ctx.data.side_by_side)]
        for job in jobs:
            ctx.start_job(**job)
        ends = [ctx.job(**job) for job in jobs]
        return Done({"outcome": "finished", "codes": [r.code for r in ends],
                     "tails": [r.tail(1) for r in ends]})
    res = ctx.job("main", [sys.executable, "-c", ctx.data.script], log_name="logs/main.log",
                  timeout=ctx.data.timeout, cwd=str(ctx.dir))
    return Done({"outcome": "finished", "code": res.code, "timed_out": res.timed_out,
                 "lost": res.lost, "tail": res.tail(5), "log": str(res.log)})


WORKFLOW = Workflow(
    name="jobs", states=("work", "done"), transitions=(("never", "work", "done"),),
    initial="work", terminal=frozenset({"done"}), steps={"work": work, "done": work},
    feeds={}, data_model=JobData,
)
