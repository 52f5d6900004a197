"""``orchestrator.py mcp``: the MCP server over stdio (the only module importing the mcp SDK).

Tools ``start``, ``resume``, ``feed``, ``answer``, ``status``, ``schema`` answer the JSON
object the matching command line prints, as structured content (and as text); an exit code
other than 0 makes it a tool error (``isError``) whose object carries ``error.code``,
``message`` and ``hint`` as on the CLI. Resources: see ``flow.mcp.resources``.

Time: no tool call waits longer than the foreground budget (``ORCHESTRATOR_FOREGROUND_S``,
default 90 s); how a call that runs longer is answered is ``flow.mcp.budget``'s docstring.
Keys: ``start:<its arguments>`` for start, ``flow:<flow_id>`` for resume, feed and answer.
What the SDK logs on stderr, tracebacks included, leaves with secrets masked
(``flow.core.redact.mask_stderr``).
While a call waits, MCP progress notifications go out when the client sent a
``progressToken``. ``resume`` with ``wait: true`` also polls a flow that answers ``waiting``
on a background ``job`` (``poll_after_s`` apart) until it moves or the budget ends.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from flow.core.errors import OrchestratorError, UsageError
from flow.mcp import resources
from flow.mcp.budget import BUDGET_ENV, POLL_AFTER_S, InFlight, Progress, budget_s
from flow.mcp.calls import Caller, Reply, Respond
from flow.mcp.wire import Answering, Masking
from flow.mcp.inputs import (
    TOOLS, AnswerInput, FeedInput, ResumeInput, SchemaInput, StartInput, input_schema,
)
from workspace.jsonio import dumps

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


class App:
    """The server's state: the workspace, the caller, and the calls still in flight."""

    def __init__(self, root: Path, harness: str | None, respond: Respond,
                 budget: float, store: str | None = None) -> None:
        self.root = root
        self.store = store  # the PostgreSQL store URL, or None for the file store
        self.caller = Caller(root, harness, respond, store)
        self.budget = budget
        shape = {"schema_version": 1, "workflow": None, "flow_id": None, "phase": None,
                 "harness": harness or "claude", "workspace": str(root)}
        self.calls = InFlight(budget, shape, self._crash)

    def _crash(self, exc: Exception) -> Reply:
        """A failure outside respond() (a feed file that cannot be written): one object."""
        spec, _ = self.caller.error(OrchestratorError(
            f"{type(exc).__name__}: {exc}", "the traceback is on the server's stderr",
            code="bug"), None)
        return spec, 1

    # -- the tools ----------------------------------------------------------------------------

    async def call(self, name: str, arguments: dict[str, Any],
                   ctx: ServerRequestContext[Any]) -> Reply:
        started = time.monotonic()
        deadline = started + self.budget

        async def progress(done: float, total: float, message: str) -> None:
            await ctx.session.report_progress(done, total, message)  # no-op without a token

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
        c, guarded = self.caller, self.calls.guarded
        if isinstance(inp, StartInput):
            key = "start:" + json.dumps([c.start_argv(inp), inp.harness])
            return await guarded(key, "start", lambda: c.start(inp), progress, deadline,
                                 reuse=True)
        if isinstance(inp, ResumeInput):
            return await self._resume(inp, progress, started, deadline)
        if isinstance(inp, FeedInput):
            return await guarded(f"flow:{inp.flow_id}", f"feed on {inp.flow_id}",
                                 lambda: c.feed(inp), progress, deadline, reuse=False)
        if isinstance(inp, AnswerInput):
            return await guarded(f"flow:{inp.flow_id}", f"answer on {inp.flow_id}",
                                 lambda: c.answer(inp), progress, deadline, reuse=False)
        if isinstance(inp, SchemaInput):
            return await guarded(None, name, lambda: c.schema(inp), progress, deadline,
                                 reuse=False)
        return await guarded(None, name, c.status, progress, deadline, reuse=False)

    async def _resume(self, inp: ResumeInput, progress: Progress, started: float,
                      deadline: float) -> Reply:
        key, label = f"flow:{inp.flow_id}", f"resume of {inp.flow_id}"
        reply = await self.calls.guarded(key, label, lambda: self.caller.resume(inp), progress,
                                         deadline, reuse=True)
        while inp.wait:
            spec, code = reply
            job = spec.get("job")
            if code != 0 or spec.get("status") != "waiting" or not job \
                    or spec.get("flow_id") is None:
                break
            delay = float(spec.get("poll_after_s") or POLL_AFTER_S)
            if time.monotonic() + delay >= deadline:
                break  # the harness sleeps poll_after_s itself and calls resume again
            await self.calls.sleep(delay, progress, started,
                                   f"job {job.get('id')} of {inp.flow_id} still running")
            reply = await self.calls.guarded(key, label, lambda: self.caller.resume(inp),
                                             progress, deadline, reuse=True)
        return reply


def _result(reply: Reply) -> types.CallToolResult:
    spec, code = reply
    return types.CallToolResult(content=[types.TextContent(type="text", text=dumps(spec).decode())],
                                structured_content=spec, is_error=code != 0)


def build(app: App) -> Server[Any]:
    """The low-level server: tool schemas straight from the input models, the Spec as output."""
    from flow.cli.schemas import Spec

    output = Spec.model_json_schema()
    read_only = {"status", "schema"}
    tools = [types.Tool(name=name, description=DESCRIPTIONS[name], input_schema=input_schema(name),
                        output_schema=output,
                        annotations=types.ToolAnnotations(read_only_hint=name in read_only))
             for name in TOOLS]

    @asynccontextmanager
    async def lifespan(_: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        async with anyio.create_task_group() as tg:  # calls that outlive their tool call
            app.calls.tg = tg
            yield {}

    async def list_tools(ctx: ServerRequestContext[Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: ServerRequestContext[Any],
                        params: types.CallToolRequestParams) -> types.CallToolResult:
        return _result(await app.call(params.name, dict(params.arguments or {}), ctx))

    async def list_resources(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams
                             | None) -> types.ListResourcesResult:
        entries = await anyio.to_thread.run_sync(resources.listed, app.root, app.store)
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
            text, mime = await anyio.to_thread.run_sync(resources.read, app.root,
                                                        str(params.uri), app.store)
        except resources.ResourceMissing as err:
            raise MCPError(RESOURCE_NOT_FOUND, err.message,
                           {"uri": str(params.uri), "hint": err.hint}) from None
        except UsageError as err:  # a malformed flow id
            raise MCPError(types.INVALID_PARAMS, err.message, {"uri": str(params.uri),
                                                                "hint": err.hint}) from None
        except OrchestratorError as err:  # the PostgreSQL store did not answer
            raise MCPError(types.INTERNAL_ERROR, err.message, {"uri": str(params.uri),
                                                                "hint": err.hint,
                                                                "code": err.code}) from None
        return types.ReadResourceResult(contents=[
            types.TextResourceContents(uri=params.uri, text=text, mime_type=mime)])

    return Server("skill-orchestrator", version="0.1.0", instructions=INSTRUCTIONS,
                  lifespan=lifespan, get_tool_input_schema=lambda n: next(
                      (t.input_schema for t in tools if t.name == n), None),
                  on_list_tools=list_tools, on_call_tool=call_tool,
                  on_list_resources=list_resources, on_list_resource_templates=list_templates,
                  on_read_resource=read_resource)


INNER_SHARE = 0.8  # of the tool call's budget, for the library call inside it


def serve(argv: list[str], respond: Respond) -> int:
    """Parse ``mcp [--workspace DIR] [--harness H] [--store S]`` with the command line's own
    parser (``flow.cli.argv``: its --help, and an unknown flag answered with the one it likely
    meant) and serve over stdio until EOF."""
    from flow.cli.argv import parser_for
    from flow.core.redact import mask_stderr
    from workspace.jsonio import dumps
    from workspace.selection import store_url, workspace_for

    mask_stderr()  # what the MCP SDK logs, and any traceback, leaves with secrets masked
    try:
        args = parser_for("mcp").parse_args(argv)
        root = workspace_for(args.store, args.workspace, os.environ)
        store = store_url(args.store, os.environ)
    except OrchestratorError as err:  # before serving: one JSON error on stderr, no traceback
        sys.stderr.write(dumps({"status": "error", "error": err.to_json()},
                                indent=False).decode() + "\n")
        return err.exit_code
    budget = budget_s()
    # The library calls get a smaller budget than the tool call, so a flow waiting on its
    # own background job answers `waiting` (with that job) before the server's safety net
    # (an `mcp-` job for a call still running) has to.
    os.environ[BUDGET_ENV] = f"{max(0.5, budget * INNER_SHARE):g}"
    app = App(root, args.harness, respond, budget, store)
    server = build(app)

    async def main() -> None:
        async with stdio_server() as (read_stream, raw_write):
            # a line that is no JSON-RPC message gets its error answer, and every message
            # leaves with its secrets masked (flow.mcp.wire)
            write_stream = Masking(raw_write)
            await server.run(Answering(read_stream, write_stream), write_stream,
                             server.create_initialization_options())

    anyio.run(main)
    return 0
