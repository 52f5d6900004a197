"""Each MCP tool as the command line it stands for, answered by the CLI's own entry point.

``Caller`` turns a validated tool input into ``orchestrator.py`` arguments and calls
``respond(argv)`` (``orchestrator.respond``: parse, ``flow.cli.main.run``, the error mapping), so a
tool answers exactly the JSON object and exit code the same command line would: same locks,
same validation, same flow ids; a flow started here can be resumed from the CLI and the reverse.

``feed`` writes the result to a file of the call's own (``feeds/.mcp-feed-*.json``, naming
the ``task_id``, removed afterwards) and feeds that file; the engine reads and applies it
under the flow's lock and copies the applied result to the task's ``feed_file`` where that
file does not exist yet, so the trail is a file feed's (a harness's own result already
written there is never replaced: its feed is then refused, ``already_applied``). Two
clients feeding different results at once never overwrite each other's file: the first
applies, the second gets the CLI's refusal (``already_applied``); a re-feed answers as for
any (same content: the current spec).

``resume``, ``feed`` and ``answer`` take a campaign flow's ``lease`` token as its printed
commands carry ``--lease TOKEN``: a stale holder is refused through MCP as on the command line.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flow.core.errors import FeedRejected, FlowNotFound, OrchestratorError
from flow.mcp.inputs import AnswerInput, FeedInput, ResumeInput, SchemaInput, StartInput
from workspace.jsonio import dumps, loads
from workspace.paths import check_flow_id
from workspace.interface import StateStore
from workspace.selection import open_store

Reply = tuple[dict[str, Any], int]  # the printed object and the exit code it comes with
Respond = Callable[[list[str]], tuple[dict[str, Any] | str, int]]


class Caller:
    """The six tools over one workspace (and the PostgreSQL ``store``, when the server was
    given one); ``harness`` is the server's default for new flows."""

    def __init__(self, root: Path, harness: str | None, respond: Respond,
                 store: str | None = None) -> None:
        self.root = root
        self.harness = harness
        self.store = store  # the PostgreSQL store URL every call names, or None (files)
        self._respond = respond

    def _call(self, argv: list[str], harness: str | None = None) -> Reply:
        sticky = ["--harness", harness] if harness else []
        where = ["--store", self.store] if self.store else []
        spec, code = self._respond(["--workspace", str(self.root), *where, *sticky, *argv])
        if isinstance(spec, str):  # only the human status table is text; tools never ask it
            raise TypeError("the command printed text, not a JSON object")
        return spec, code

    def error(self, err: OrchestratorError, harness: str | None) -> Reply:
        from flow.core.render import error_spec

        return error_spec(err, self.root, harness or self.harness or "claude"), err.exit_code

    def start_argv(self, inp: StartInput) -> list[str]:
        # --restart goes first, with the other flags every command takes (as the demo does)
        return [*(["--restart"] if inp.restart else []), *inp.args.argv()]

    def start(self, inp: StartInput) -> Reply:
        return self._call(self.start_argv(inp), inp.harness or self.harness)

    def resume(self, inp: ResumeInput) -> Reply:
        return self._call(["--flow", inp.flow_id, "--resume", *_lease(inp.lease)], inp.harness)

    def answer(self, inp: AnswerInput) -> Reply:
        return self._call(["--flow", inp.flow_id, f"--answer={inp.value}", *_lease(inp.lease)],
                          inp.harness)

    def status(self) -> Reply:
        return self._call(["status", "--json"])

    def schema(self, inp: SchemaInput) -> Reply:
        return self._call(["schema", *([inp.name] if inp.name else [])])

    def feed(self, inp: FeedInput) -> Reply:
        try:
            store = open_store(self.root, check_flow_id(inp.flow_id), self.store)
            if not store.exists():
                where = f"workspace {str(self.root)!r}" if self.store is None else store.source
                raise FlowNotFound(f"no flow {inp.flow_id!r} in {where}",
                                   "call the status tool to list the flows")
            tasks = _tasks(store)
        except OrchestratorError as err:
            return self.error(err, inp.harness)
        task = tasks.get(inp.task_id)
        if task is None:
            pending = [t for t, rec in tasks.items() if rec.get("status") == "pending"]
            return self.error(FeedRejected(
                f"task {inp.task_id!r} is not a task of flow {inp.flow_id!r}",
                "feed a pending task: " + (", ".join(pending) if pending
                                           else "none is pending; call resume"),
                code="stale_feed", pending_task_ids=pending), inp.harness)
        named = inp.result.get("task_id", inp.task_id)
        if isinstance(named, str) and named != inp.task_id:
            return self.error(FeedRejected(
                f"the result names task_id {named!r} but is fed to task {inp.task_id!r}",
                "remove task_id from the result or feed it to the task it names",
                code="foreign_feed"), inp.harness)
        # The result goes to a file of this call's own (never the task's shared feed_file,
        # which a second client could overwrite before this one's feed takes the lock); the
        # CLI reads and applies it under the flow's lock, so of two clients feeding different
        # results the second gets the CLI's refusal (already_applied). task_id names the
        # task; one that is not a string is left for the CLI to refuse (bad_task_id).
        content = inp.result if "task_id" in inp.result else {**inp.result, "task_id": inp.task_id}
        scratch = store.feeds_dir / f".mcp-feed-{uuid.uuid4().hex}.json"
        _write(scratch, content)
        try:
            return self._call(["--flow", inp.flow_id, "--feed", str(task["role"]),
                               f"--feed-file={scratch}", *_lease(inp.lease)], inp.harness)
        finally:
            scratch.unlink(missing_ok=True)


def _lease(token: int | None) -> list[str]:
    """``--lease TOKEN`` when the tool was given the campaign lease it acts under."""
    return [] if token is None else ["--lease", str(token)]


def _tasks(store: StateStore) -> dict[str, dict[str, Any]]:
    """The flow's task records by id, read without the lock (the feed itself takes it)."""
    try:
        raw = loads(store.read_bytes())
        return {str(t["task_id"]): t for t in raw["tasks"]}
    except (ValueError, KeyError, TypeError):
        store.load()  # raises StateLoadError with which file and why
        raise


def _write(path: Path, result: dict[str, Any]) -> None:
    from workspace.atomic import write_atomic

    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, dumps(result))
