"""No tool call outlives the foreground budget: library calls in worker threads, answered in time.

``InFlight.guarded(key, fn, ...)`` runs ``fn`` (one blocking library call) in a worker thread
of the server's task group and waits for it until the call's deadline, reporting progress
every few seconds. A call still running then is answered ``waiting`` with a ``job`` naming it
(``mcp-<hex>``) and ``poll_after_s``; it goes on running (holding the flow's lock, as a CLI
call would). The next call under the same key first waits for it; a "what now?" call
(``reuse``: start, resume) then returns its unseen answer instead of running again, so a
fresh wave of tasks is never lost. Once it finishes, an unseen call is also filed under its
flow (``flow:<id>``), where a resume of that flow finds it.

This module knows nothing of MCP: progress goes to a callback (the server's sends MCP
progress notifications, which are no-ops when the client sent no ``progressToken``).
"""

from __future__ import annotations

import os
import sys
import time
import traceback
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import TaskGroup

from flow.mcp.calls import Reply

BUDGET_ENV = "ORCHESTRATOR_FOREGROUND_S"
DEFAULT_BUDGET_S = 90.0
HEARTBEAT_S = 5.0  # progress at most this far apart while a call waits
POLL_AFTER_S = 5  # what an overrun answer tells the client to wait before calling again

Progress = Callable[[float, float, str], Awaitable[None]]  # (seconds so far, budget, message)


def budget_s(env: Mapping[str, str] = os.environ) -> float:
    """The foreground budget in seconds (a malformed or non-positive value: the default)."""
    try:
        value = float(env.get(BUDGET_ENV) or DEFAULT_BUDGET_S)
    except ValueError:
        return DEFAULT_BUDGET_S
    return value if value > 0 else DEFAULT_BUDGET_S


def _now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass
class Call:
    """One library call running in a worker thread, possibly outliving the tool call."""

    label: str
    id: str = field(default_factory=lambda: f"mcp-{uuid.uuid4().hex[:12]}")
    started: float = field(default_factory=time.monotonic)
    started_at: str = field(default_factory=_now_iso)
    done: anyio.Event = field(default_factory=anyio.Event)
    reply: Reply | None = None
    keys: list[str] = field(default_factory=list)  # where later calls find it (while unseen)


class InFlight:
    """The calls of one server; ``tg`` is the server-lifetime task group they run in."""

    def __init__(self, budget: float, shape: dict[str, Any],
                 crash: Callable[[Exception], Reply]) -> None:
        self.budget = budget
        self.heartbeat = min(HEARTBEAT_S, max(budget / 4, 0.25))  # several within a budget
        self._shape = shape  # the envelope fields of an overrun answer
        self._crash = crash
        self.calls: dict[str, Call] = {}
        self.tg: TaskGroup | None = None

    async def guarded(self, key: str | None, label: str, fn: Callable[[], Reply],
                      progress: Progress, deadline: float, *, reuse: bool) -> Reply:
        """``fn()``'s answer, or an overrun ``waiting`` answer at ``deadline``."""
        prev = self.calls.get(key) if key else None
        if prev is not None:
            if not await self._wait(prev, progress, deadline):
                return self._overrun(prev)
            self._forget(prev)  # its answer is seen now, or superseded by this call
            if reuse and prev.reply is not None:
                return prev.reply
        call = Call(label)
        self._remember(call, key)
        assert self.tg is not None, "InFlight.tg is set by the server's lifespan"
        self.tg.start_soon(self._work, call, fn)
        if not await self._wait(call, progress, deadline):
            return self._overrun(call)
        self._forget(call)
        assert call.reply is not None
        return call.reply

    async def sleep(self, seconds: float, progress: Progress, started: float,
                    message: str) -> None:
        """Sleep ``seconds`` (inside a tool call), reporting progress as while waiting."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            await anyio.sleep(min(self.heartbeat, left))
            await progress(round(time.monotonic() - started, 1), self.budget, message)

    def _remember(self, call: Call, key: str | None) -> None:
        if key:
            call.keys.append(key)
            self.calls[key] = call

    def _forget(self, call: Call) -> None:
        for key in call.keys:
            if self.calls.get(key) is call:
                del self.calls[key]
        call.keys.clear()

    async def _work(self, call: Call, fn: Callable[[], Reply]) -> None:
        try:
            call.reply = await anyio.to_thread.run_sync(fn)
        except Exception as exc:
            from flow.core.redact import redact

            sys.stderr.write(redact(traceback.format_exc()))  # secrets masked, as in the CLI
            call.reply = self._crash(exc)
        finally:
            call.done.set()
        flow_id = call.reply[0].get("flow_id")
        if call.keys and flow_id:  # nobody has seen it yet
            self._remember(call, f"flow:{flow_id}")

    async def _wait(self, call: Call, progress: Progress, deadline: float) -> bool:
        """Wait for ``call`` until ``deadline``, reporting progress; True once it is done."""
        while not call.done.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            with anyio.move_on_after(min(self.heartbeat, remaining)):
                await call.done.wait()
            if not call.done.is_set():
                elapsed = time.monotonic() - call.started
                await progress(round(elapsed, 1), self.budget,
                               f"{call.label}: still running after {elapsed:.0f} s")
        return True

    def _overrun(self, call: Call) -> Reply:
        elapsed = time.monotonic() - call.started
        return {**self._shape, "status": "waiting",
                "job": {"id": call.id, "started_at": call.started_at,
                        "elapsed_s": round(elapsed, 1), "deadline_at": None,
                        "log_file": None, "log_tail": None},
                "poll_after_s": POLL_AFTER_S, "in_flight": [],
                "note": f"the MCP server is still running {call.label} past the foreground "
                        f"budget ({self.budget:g} s); nothing is lost. Call the same tool "
                        f"again with the same arguments after poll_after_s: it waits for "
                        f"this call and returns its answer."}, 0
