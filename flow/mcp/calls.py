"""Each MCP tool as the command line it stands for, answered by the CLI's own entry point.

``Caller`` turns a validated tool input into ``orchestrator.py`` arguments and calls
``respond(argv)`` (``orchestrator.respond``: parse, ``flow.cli.main.run``, the error mapping), so a
tool answers exactly the JSON object and exit code the same command line would: same locks,
same validation, same flow ids; a flow started here can be resumed from the CLI and the reverse.

``feed`` writes the result to the task's ``feed_file`` itself and feeds that file, so the
flow's audit trail and feeds folder are those of a file feed. A result for a task that was
already applied never overwrites the applied task's file: it goes through a scratch file
naming the ``task_id`` (removed afterwards), and the engine answers as for any re-feed
(same content: the current spec; other content: ``already_applied``).
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
from workspace.store import FlowStore

Reply = tuple[dict[str, Any], int]  # the printed object and the exit code it comes with
Respond = Callable[[list[str]], tuple[dict[str, Any] | str, int]]


class Caller:
    """The six tools over one workspace; ``harness`` is the server's default for new flows."""

    def __init__(self, root: Path, harness: str | None, respond: Respond) -> None:
        self.root = root
        self.harness = harness
        self._respond = respond

    def _call(self, argv: list[str], harness: str | None = None) -> Reply:
        sticky = ["--harness", harness] if harness else []
        spec, code = self._respond(["--workspace", str(self.root), *sticky, *argv])
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
        return self._call(["--flow", inp.flow_id, "--resume"], inp.harness)

    def answer(self, inp: AnswerInput) -> Reply:
        return self._call(["--flow", inp.flow_id, f"--answer={inp.value}"], inp.harness)

    def status(self) -> Reply:
        return self._call(["status", "--json"])

    def schema(self, inp: SchemaInput) -> Reply:
        return self._call(["schema", *([inp.name] if inp.name else [])])

    def feed(self, inp: FeedInput) -> Reply:
        try:
            store = FlowStore(self.root, check_flow_id(inp.flow_id))
            if not store.exists():
                raise FlowNotFound(f"no flow {inp.flow_id!r} in workspace {str(self.root)!r}",
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
        if named != inp.task_id:
            return self.error(FeedRejected(
                f"the result names task_id {named!r} but is fed to task {inp.task_id!r}",
                "remove task_id from the result or feed it to the task it names",
                code="foreign_feed"), inp.harness)
        argv = ["--flow", inp.flow_id, "--feed", str(task["role"])]
        if task.get("status") == "pending":
            path = Path(str(task["feed_file"]))
            _write(path, inp.result)
            return self._call([*argv, f"--feed-file={path}"], inp.harness)
        scratch = store.feeds_dir / f".mcp-refeed-{uuid.uuid4().hex}.json"
        _write(scratch, {**inp.result, "task_id": inp.task_id})
        try:
            return self._call([*argv, f"--feed-file={scratch}"], inp.harness)
        finally:
            scratch.unlink(missing_ok=True)


def _tasks(store: FlowStore) -> dict[str, dict[str, Any]]:
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
