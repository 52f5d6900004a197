"""What each command line means: find or start the flow, then resume, feed or answer it.

``run`` returns the object to print (or a string for the human ``status`` table) and raises
``OrchestratorError`` for anything the caller must mend.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

from flow import registry
from flow.commands import Commands
from flow.errors import FlowNotFound, OrchestratorError, UsageError
from workspace.jsonio import dumps
from workspace.paths import check_flow_id
from workspace.store import FlowStore

LEGACY = (("ci_check", "ci"), ("ingest_feedback", "ingest"), ("apply_ingest", "ingest"),
          ("review_queue", "review-queue"))
WORKFLOW_COMMANDS = {"reproduce": "reproduce", "ci-targeted": "ci-targeted"}


def run(args: argparse.Namespace, root: Path, harness: str, script: Path) -> dict[str, Any] | str:
    from flow import proc

    proc.begin_call()  # no child of this call runs past the foreground budget
    try:
        proc.foreground_s()
    except ValueError as exc:
        raise UsageError(str(exc), f"set {proc.FOREGROUND_ENV} to a number of seconds such as "
                                   "90 (under your harness's shell-tool timeout), or unset it"
                         ) from None
    words = list(args.args)
    command = words[0] if words else None
    if command == "status":
        from flow.status import status

        return status(root, harness, as_json=args.json)
    if command == "schema":
        from flow.schemas import schema_command

        return schema_command(words[1] if len(words) > 1 else None, root, harness)
    if command == "graph":
        return _graph(words, root, harness)
    if command == "affected-tests":
        from flow.targeted.cli import affected_tests_command

        return affected_tests_command(args, root, harness)
    if command == "demo":
        from flow.demo import demo_command

        return demo_command(words[1:], args, root, harness, script)

    if args.feed_file and not args.feed:
        raise UsageError("--feed-file needs --feed ROLE", "add --feed ROLE (for example coder)")
    if args.feed and not args.feed_file:
        raise UsageError("--feed needs --feed-file PATH",
                         "write the result JSON to the task's feed_file and pass its path")

    if args.flow:
        flow_id = check_flow_id(args.flow)
        store = FlowStore(root, flow_id)
        if not store.exists():
            raise FlowNotFound(f"no flow {flow_id!r} in workspace {str(root)!r}",
                               "run 'orchestrator.py status' to list the flows, or check "
                               "--workspace")
        workflow_name = _peek_workflow(store)
        module = registry.load(workflow_name)
        return _drive(module, store, args, root, harness, script, new=False)

    workflow_name, opts = _which(args, words)
    module = registry.load(workflow_name)
    flow_id = check_flow_id(module.locate(opts, root))
    store = FlowStore(root, flow_id)
    if args.restart and store.exists():
        _move_aside(store)
    if store.exists():
        return _drive(module, store, args, root, harness, script, new=False)
    if args.resume or args.feed or args.answer:
        raise FlowNotFound(f"no flow {flow_id!r} to resume in workspace {str(root)!r}",
                           "start it first (the same command without --resume/--feed/--answer)")
    return _drive(module, store, args, root, harness, script, new=True, opts=opts)


def _which(args: argparse.Namespace, words: list[str]) -> tuple[str, dict[str, Any]]:
    opts = {k: v for k, v in vars(args).items() if k != "args"}
    for flag, name in LEGACY:
        if getattr(args, flag):
            opts["words"] = words
            return name, opts
    if words and words[0] in WORKFLOW_COMMANDS:
        opts["words"] = words[1:]
        return WORKFLOW_COMMANDS[words[0]], opts
    if words and words[0] == "start":
        if len(words) < 2:
            raise UsageError("start needs a workflow name", f"one of: {', '.join(registry.names())}")
        opts["words"] = words[2:]
        return words[1], opts
    if words:
        opts["words"] = words
        opts["file"] = words[0]
        return "refactor", opts
    raise UsageError("nothing to do: no command, file or flow given",
                     "try 'orchestrator.py status', 'orchestrator.py reproduce --command CMD', "
                     "'orchestrator.py test/test_ops.py', or --flow ID --resume")


def _drive(module: Any, store: FlowStore, args: argparse.Namespace, root: Path, harness: str,
           script: Path, *, new: bool, opts: dict[str, Any] | None = None) -> dict[str, Any]:
    settings = dict(os.environ)
    try:
        return _locked(module, store, args, root, harness, script, new, opts, settings)
    finally:
        if new and not store.exists():
            _remove_unstarted(store)


def _locked(module: Any, store: FlowStore, args: argparse.Namespace, root: Path, harness: str,
            script: Path, new: bool, opts: dict[str, Any] | None,
            settings: dict[str, str]) -> dict[str, Any]:
    from flow.engine import Engine
    from workspace.lock import FlowLock

    with FlowLock(store.dir):
        state = None
        try:
            if new:
                data = module.start(opts or {}, root, settings)
                cmds = Commands(script, root, harness, store.flow_id)
                engine = Engine.create(module.WORKFLOW, store, data, cmds, settings)
            else:
                if not store.exists():  # moved aside (--restart) while this call waited
                    raise FlowNotFound(
                        f"flow {store.flow_id!r} was restarted while this call waited for it",
                        "run the command again: it then acts on the flow that lives there now")
                state = store.load()
                if state.workflow != module.WORKFLOW.name:
                    raise UsageError(f"flow {store.flow_id!r} belongs to workflow "
                                     f"{state.workflow!r}", "use --flow with its own commands")
                sticky = args.harness or state.harness
                cmds = Commands(script, root, sticky, store.flow_id)
                engine = Engine(module.WORKFLOW, store, state, cmds, settings)
            state = engine.state
            if args.feed:
                spec = engine.feed(args.feed, args.feed_file)
            elif args.answer is not None:
                spec = engine.answer(args.answer)
            else:
                spec = engine.advance()
        except OrchestratorError as err:
            if store.exists():  # a flow that never started keeps no error file
                err.state = state  # type: ignore[attr-defined]
                err.workspace = store.dir  # type: ignore[attr-defined]
                _record_error(store, err)
            raise
    _clear_error(store)
    return spec


def _remove_unstarted(store: FlowStore) -> None:
    """A start that failed leaves no folder behind: only its lock files could be there."""
    for name in (".lock", ".lock.holder"):
        (store.dir / name).unlink(missing_ok=True)
    folder = store.dir
    while folder != store.root and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent


def _peek_workflow(store: FlowStore) -> str:
    from workspace.jsonio import loads

    try:
        raw = loads(store.read_bytes())
        return str(raw["workflow"])
    except (ValueError, KeyError, TypeError):
        return str(store.load().workflow)  # raises StateLoadError with the details


def _record_error(store: FlowStore, err: OrchestratorError) -> None:
    if not store.dir.exists():
        return
    from workspace.atomic import write_atomic

    record = {"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **err.to_json()}
    try:
        write_atomic(store.dir / ".last_error.json", dumps(record))
    except OSError:
        pass


def _clear_error(store: FlowStore) -> None:
    try:
        (store.dir / ".last_error.json").unlink()
    except FileNotFoundError:
        pass


def _move_aside(store: FlowStore) -> None:
    """Rename the flow folder to ``<name>.old-<UTC stamp>[-n]`` (never onto an earlier one),
    holding the flow's lock: a call working on the flow (a cron tick mid-step) finishes
    first, and one that holds it too long makes the restart answer Busy, moving nothing."""
    from workspace.lock import FlowLock

    with FlowLock(store.dir) as lock:
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        target = store.dir.with_name(f"{store.dir.name}.old-{stamp}")
        n = 1
        while target.exists():  # two restarts within one second
            n += 1
            target = store.dir.with_name(f"{store.dir.name}.old-{stamp}-{n}")
        lock.holder_path.unlink(missing_ok=True)  # the old flow is not held once moved
        store.dir.rename(target)


def _graph(words: list[str], root: Path, harness: str) -> dict[str, Any]:
    from flow.render import envelope

    if len(words) < 2:
        raise UsageError("graph needs a workflow name", f"one of: {', '.join(registry.names())}")
    wf = registry.load(words[1]).WORKFLOW
    return {**envelope(None, root, "done", harness), "workflow": wf.name,
            "mermaid": wf.mermaid(), "states": list(wf.states),
            "terminal": sorted(wf.terminal)}
