"""``orchestrator.py mcp``: the MCP server over stdio (the only module importing the mcp SDK).

Tools ``start``, ``resume``, ``feed``, ``answer``, ``status``, ``schema`` answer the JSON
object the matching command line prints, as structured content (and as text); an exit code
other than 0 makes it a tool error (``isError``) whose object carries ``error.code``,
``message`` and ``hint`` as on the CLI. Resources: see ``flow.mcp.resources``.

Time: every library call runs in a worker thread; a tool call never waits longer than the
foreground budget (``ORCHESTRATOR_FOREGROUND_S``, default 90 s). A call still running then is
answered ``waiting`` with a ``job`` naming it and ``poll_after_s``; the work goes on in the
server (holding the flow's lock, as a CLI call would), and the next call with the same
arguments (``start``) or on the same flow (``resume``, ``feed``, ``answer``) first waits for
it; a ``start`` or ``resume`` then returns its answer, so a fresh wave of tasks is never
lost. While a call waits, progress notifications go out every few seconds when the client
sent a ``progressToken``. ``resume`` with ``wait: true`` also polls a flow that answers
``waiting`` on a background ``job`` (poll_after_s apart) until it moves or the budget ends.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
from anyio.abc import TaskGroup
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from flow.errors import OrchestratorError, UsageError
from flow.mcp import resources
from flow.mcp.calls import Caller, Reply, Respond
from flow.mcp.inputs import TOOLS, FeedInput, ResumeInput, StartInput, input_schema
from workspace.jsonio import dumps
from workspace.paths import workspace_root

BUDGET_ENV = "ORCHESTRATOR_FOREGROUND_S"
DEFAULT_BUDGET_S = 90.0
HEARTBEAT_S = 5.0  # progress notifications this far apart while a call waits (at most)
POLL_AFTER_S = 5  # what an overrun answer tells the client to wait before calling again
RESOURCE_NOT_FOUND = -32002  # the MCP specification's code for an unknown resource

DESCRIPTIONS = {
    "start": "Start a workflow with its arguments (args.workflow picks reproduce, refactor, "
             "ci, ci-targeted, ingest or review-queue), or carry on the flow those arguments "
             "name. Returns the orchestrator's JSON object: status need_agent (do each entry "
             "of tasks[] and call feed with its result), waiting, need_human (ask a person, "
             "then call answer), schedule_cron (call resume later), done or error.",
    "resume": "Carry on a flow where it stopped and return what it needs now (what a cron "
              "firing runs). wait=true polls a background job inside the foreground budget.",
    "feed": "Feed one task's result (a JSON object shaped like the task's feed_schema); the "
            "server writes it to the task's feed_file and feeds it. Refused results (wrong "
            "shape, stale or foreign task, different content for an applied task) come back "
            "as errors with the state untouched. Returns the flow's next JSON object.",
    "answer": "Record a person's answer to the flow's open need_human question (one of its "
              "option values) and return the flow's next JSON object.",
    "status": "List every flow in the workspace: workflow, phase, pending tasks, age, last "
              "error.",
    "schema": "JSON Schemas of the printed object (spec), a task, the state and every feed "
              "model (WORKFLOW.FEED, e.g. refactor.coder); no name lists the names.",
}
INSTRUCTIONS = (
    "skill-orchestrator runs resumable workflows (reproduce a failing test, refactor a PyTorch "
    "test file, babysit a PR's CI). Loop: call start; for each task in tasks[] do the work "
    "(spawn the agent the task describes, or run its command), then call feed with flow_id, "
    "task_id and the result object; repeat with what feed returns until status is done. "
    "need_human: ask a person, then call answer. schedule_cron: come back with resume as "
    "on_complete says. waiting: do not restart in_flight tasks; feed them as they finish. "
    "Errors carry error.code, error.message and error.hint."
)


def budget_s(env: dict[str, str] | os._Environ[str] = os.environ) -> float:
    """The foreground budget in seconds (a malformed value falls back to the default)."""
    try:
        value = float(env.get(BUDGET_ENV) or DEFAULT_BUDGET_S)
    except ValueError:
        return DEFAULT_BUDGET_S
    return value if value > 0 else DEFAULT_BUDGET_S


def _now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass
class _Call:
    """One library call running in a worker thread, possibly outliving the tool call."""

    label: str
    id: str = field(default_factory=lambda: f"mcp-{uuid.uuid4().hex[:12]}")
    started: float = field(default_factory=time.monotonic)
    started_at: str = field(default_factory=_now_iso)
    done: anyio.Event = field(default_factory=anyio.Event)
    reply: Reply | None = None
    keys: list[str] = field(default_factory=list)  # where later calls find it (while unseen)


class App:
    """The server's state: the workspace, the caller, and the calls still in flight."""

    def __init__(self, root: Path, harness: str | None, respond: Respond,
                 budget: float) -> None:
        self.root = root
        self.harness = harness
        self.caller = Caller(root, harness, respond)
        self.budget = budget
        self.inflight: dict[str, _Call] = {}
        self.tg: TaskGroup | None = None
        self.heartbeat = min(HEARTBEAT_S, max(budget / 4, 0.25))  # several within a budget

    # -- running a call within the budget ---------------------------------------------------

    async def guarded(self, key: str | None, label: str, fn: Callable[[], Reply],
                      ctx: ServerRequestContext[Any], deadline: float, *,
                      reuse: bool) -> Reply:
        """``fn()`` in a worker thread, answered by ``deadline``; see the module docstring."""
        prev = self.inflight.get(key) if key else None
        if prev is not None:
            if not await self._wait(prev, ctx, deadline):
                return self._overrun(prev)
            self._forget(prev)  # its answer is seen now, or superseded by this call
            if reuse and prev.reply is not None:
                return prev.reply  # the answer nobody has seen yet (a fresh wave, say)
        call = _Call(label)
        self._remember(call, key)
        assert self.tg is not None
        self.tg.start_soon(self._work, call, fn)
        if not await self._wait(call, ctx, deadline):
            return self._overrun(call)
        self._forget(call)
        assert call.reply is not None
        return call.reply

    def _remember(self, call: _Call, key: str | None) -> None:
        if key:
            call.keys.append(key)
            self.inflight[key] = call

    def _forget(self, call: _Call) -> None:
        for key in call.keys:
            if self.inflight.get(key) is call:
                del self.inflight[key]
        call.keys.clear()

    async def _work(self, call: _Call, fn: Callable[[], Reply]) -> None:
        try:
            call.reply = await anyio.to_thread.run_sync(fn)
        except Exception as exc:  # outside respond() (a feed file that cannot be written)
            traceback.print_exc(file=sys.stderr)
            call.reply = self.caller.error(OrchestratorError(
                f"{type(exc).__name__}: {exc}", "the traceback is on the server's stderr",
                code="bug"), None)
            call.reply = (call.reply[0], 1)
        finally:
            call.done.set()
        flow_id = call.reply[0].get("flow_id") if call.reply else None
        if call.keys and flow_id:  # unseen yet: a resume of its flow finds it too
            self._remember(call, f"flow:{flow_id}")

    async def _wait(self, call: _Call, ctx: ServerRequestContext[Any], deadline: float) -> bool:
        """Wait for ``call`` until ``deadline``, reporting progress; True once it is done."""
        while not call.done.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            with anyio.move_on_after(min(self.heartbeat, remaining)):
                await call.done.wait()
            if not call.done.is_set():
                elapsed = time.monotonic() - call.started
                await ctx.session.report_progress(
                    round(elapsed, 1), self.budget, f"{call.label}: still running after "
                                                    f"{elapsed:.0f} s")
        return True

    def _overrun(self, call: _Call) -> Reply:
        elapsed = time.monotonic() - call.started
        spec = {"schema_version": 1, "status": "waiting", "workflow": None, "flow_id": None,
                "phase": None, "harness": self.harness or "claude", "workspace": str(self.root),
                "job": {"id": call.id, "started_at": call.started_at,
                        "elapsed_s": round(elapsed, 1), "deadline_at": None,
                        "log_file": None, "log_tail": None},
                "poll_after_s": POLL_AFTER_S, "in_flight": [],
                "note": f"the MCP server is still running {call.label} past the foreground "
                        f"budget ({self.budget:g} s); nothing is lost. Call the same tool "
                        f"again with the same arguments after poll_after_s: it waits for "
                        f"this call and returns its answer."}
        return spec, 0

    async def _sleep(self, seconds: float, ctx: ServerRequestContext[Any], spec: dict[str, Any],
                     started: float) -> None:
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            await anyio.sleep(min(self.heartbeat, left))
            job = spec.get("job") or {}
            await ctx.session.report_progress(
                round(time.monotonic() - started, 1), self.budget,
                f"job {job.get('id')} of flow {spec.get('flow_id')} still running")

    # -- the tools ----------------------------------------------------------------------------

    async def call(self, name: str, arguments: dict[str, Any],
                   ctx: ServerRequestContext[Any]) -> Reply:
        started = time.monotonic()
        deadline = started + self.budget
        model = TOOLS.get(name)
        if model is None:
            return self.caller.error(UsageError(f"no tool named {name!r}",
                                                 f"the tools: {', '.join(TOOLS)}"), None)
        try:
            inp = model.model_validate(arguments)
        except ValidationError as exc:
            errors = [{"field": ".".join(str(p) for p in e["loc"]) or "<root>",
                       "problem": e["msg"]} for e in exc.errors()]
            return self.caller.error(UsageError(
                f"bad arguments for tool {name!r}: "
                + "; ".join(f"{e['field']}: {e['problem']}" for e in errors[:5]),
                "fix them to match the tool's input schema", field_errors=errors), None)
        c = self.caller
        if isinstance(inp, StartInput):
            key = "start:" + json.dumps([c.start_argv(inp), inp.harness])
            return await self.guarded(key, "start", lambda: c.start(inp), ctx, deadline,
                                      reuse=True)
        if isinstance(inp, ResumeInput):
            return await self._resume(inp, ctx, started, deadline)
        if name in ("feed", "answer"):
            flow_id = inp.flow_id  # type: ignore[attr-defined]
            fn = (lambda: c.feed(inp)) if isinstance(inp, FeedInput) else (lambda: c.answer(inp))  # type: ignore[arg-type]
            return await self.guarded(f"flow:{flow_id}", f"{name} on {flow_id}", fn, ctx,
                                      deadline, reuse=False)
        fn = c.status if name == "status" else (lambda: c.schema(inp))  # type: ignore[arg-type]
        return await self.guarded(None, name, fn, ctx, deadline, reuse=False)

    async def _resume(self, inp: ResumeInput, ctx: ServerRequestContext[Any], started: float,
                      deadline: float) -> Reply:
        key, label = f"flow:{inp.flow_id}", f"resume of {inp.flow_id}"
        reply = await self.guarded(key, label, lambda: self.caller.resume(inp), ctx, deadline,
                                   reuse=True)
        while inp.wait:
            spec, code = reply
            if code != 0 or spec.get("status") != "waiting" or not spec.get("job") \
                    or spec.get("flow_id") is None:
                break
            delay = float(spec.get("poll_after_s") or POLL_AFTER_S)
            if time.monotonic() + delay >= deadline:
                break  # the harness sleeps poll_after_s itself and calls resume again
            await self._sleep(delay, ctx, spec, started)
            reply = await self.guarded(key, label, lambda: self.caller.resume(inp), ctx,
                                       deadline, reuse=True)
        return reply


def _result(reply: Reply) -> types.CallToolResult:
    spec, code = reply
    return types.CallToolResult(content=[types.TextContent(type="text", text=dumps(spec).decode())],
                                structured_content=spec, is_error=code != 0)


def build(app: App) -> Server[Any]:
    """The low-level server: tool schemas straight from the input models, the Spec as output."""
    from flow.schemas import Spec

    output = Spec.model_json_schema()
    read_only = {"status", "schema"}
    tools = [types.Tool(name=name, description=DESCRIPTIONS[name], input_schema=input_schema(name),
                        output_schema=output,
                        annotations=types.ToolAnnotations(read_only_hint=name in read_only))
             for name in TOOLS]

    @asynccontextmanager
    async def lifespan(_: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        async with anyio.create_task_group() as tg:  # calls that outlive their tool call
            app.tg = tg
            yield {}

    async def list_tools(ctx: ServerRequestContext[Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: ServerRequestContext[Any],
                        params: types.CallToolRequestParams) -> types.CallToolResult:
        return _result(await app.call(params.name, dict(params.arguments or {}), ctx))

    async def list_resources(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams
                             | None) -> types.ListResourcesResult:
        entries = await anyio.to_thread.run_sync(resources.listed, app.root)
        return types.ListResourcesResult(resources=[
            types.Resource(uri=e.uri, name=e.name, mime_type=e.mime_type,
                           description=e.description) for e in entries])

    async def list_templates(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams
                             | None) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(uri_template=e.uri, name=e.name, mime_type=e.mime_type,
                                   description=e.description) for e in resources.templates()])

    async def read_resource(ctx: ServerRequestContext[Any],
                            params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        try:
            text, mime = await anyio.to_thread.run_sync(resources.read, app.root, str(params.uri))
        except resources.ResourceMissing as err:
            raise MCPError(RESOURCE_NOT_FOUND, err.message,
                           {"uri": str(params.uri), "hint": err.hint}) from None
        except UsageError as err:  # a malformed flow id
            raise MCPError(types.INVALID_PARAMS, err.message, {"uri": str(params.uri),
                                                                "hint": err.hint}) from None
        return types.ReadResourceResult(contents=[
            types.TextResourceContents(uri=params.uri, text=text, mime_type=mime)])

    return Server("skill-orchestrator", version="0.1.0", instructions=INSTRUCTIONS,
                  lifespan=lifespan, get_tool_input_schema=lambda n: next(
                      (t.input_schema for t in tools if t.name == n), None),
                  on_list_tools=list_tools, on_call_tool=call_tool,
                  on_list_resources=list_resources, on_list_resource_templates=list_templates,
                  on_read_resource=read_resource)


def serve(argv: list[str], respond: Respond) -> int:
    """Parse ``mcp [--workspace DIR] [--harness H]`` and serve over stdio until EOF."""
    parser = argparse.ArgumentParser(prog="orchestrator.py mcp", description=__doc__)
    parser.add_argument("--workspace", help="workspace root (env ORCHESTRATOR_WORKSPACE, "
                                            "else ./agent_space, resolved at start)")
    parser.add_argument("--harness", choices=["claude", "codex"],
                        help="harness of flows started here (default as on the CLI)")
    args = parser.parse_args(argv)
    app = App(workspace_root(args.workspace), args.harness, respond, budget_s())
    server = build(app)

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)
    return 0
