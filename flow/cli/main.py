"""What each command line means: find or start the flow, then resume, feed or answer it.

``run`` returns the object to print (or a string for the human ``status`` table) and raises
``OrchestratorError`` for anything the caller must mend.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workspace.interface import StateStore

from flow.cli import ahead
from flow.core.errors import (
    FlowNotFound, OrchestratorError, UsageError, WorkflowInputError, environment_fault,
)
from flow.core.naming import AHEAD_FILE
from flow.workflows import registry
from workspace.paths import bad_segment, check_flow_id, check_repo
from workspace.selection import open_store, store_url

LEGACY = (("ci_check", "ci"), ("ingest_feedback", "ingest"), ("apply_ingest", "ingest"),
          ("review_queue", "review-queue"))
WORKFLOW_COMMANDS = {"reproduce": "reproduce", "ci-targeted": "ci-targeted"}


def run(args: argparse.Namespace, root: Path, harness: str, script: Path) -> dict[str, Any] | str:
    """One call: no child it runs outlives the foreground budget, counted from here."""
    from flow.core import proc

    try:
        proc.foreground_s()
    except ValueError as exc:
        raise UsageError(str(exc), f"set {proc.FOREGROUND_ENV} to a number of seconds such as "
                                   "90 (under your harness's shell-tool timeout), or unset it"
                         ) from None
    from flow.core.atomic import durable

    durable()  # a bad ORCHESTRATOR_FSYNC is refused before anything is written
    proc.begin_call()
    try:
        return _run(args, root, harness, script)
    finally:
        proc.end_call()


def _run(args: argparse.Namespace, root: Path, harness: str, script: Path,
         lease: Any = None) -> dict[str, Any] | str:
    words = list(args.args)
    command = words[0] if words else None
    url = store_url(getattr(args, "store", None), os.environ)
    if command == "status":
        if args.campaign:
            from flow.cli.fleet import campaign_status

            return campaign_status(args.campaign, url, root, harness, as_json=args.json)
        if url is not None:
            from flow.cli.fleet import store_status

            return store_status(url, root, harness, as_json=args.json,
                                needs_me=args.needs_me)
        from flow.cli.status import status

        return status(root, harness, as_json=args.json, needs_me=args.needs_me)
    if command == "campaign" or args.campaign:
        return _campaign(args, words, root, harness, script, url)
    if command == "schema":
        from flow.cli.schemas import schema_command

        return schema_command(words[1] if len(words) > 1 else None, root, harness)
    if command == "graph":
        from flow.cli.graph import graph_command

        return graph_command(args, words, root, harness, url)
    if command == "serve":
        raise UsageError("serve runs only from the command line (it serves until stopped)",
                         "run 'orchestrator.py serve' in a terminal")
    if command == "mcp":
        raise UsageError("mcp runs only from the command line (it serves over stdio until "
                         "its input ends)", "let the harness start 'orchestrator.py mcp' "
                         "from its MCP configuration")
    if command == "affected-tests":
        from flow.workflows.targeted.affected import affected_tests_command

        return affected_tests_command(args, root, harness)
    if command == "demo":
        from flow.cli.demo import demo_command

        return demo_command(words[1:], args, root, harness, script)

    if args.feed_file and not args.feed:
        raise UsageError("--feed-file needs --feed ROLE", "add --feed ROLE (for example coder)")
    if args.feed and not args.feed_file:
        raise UsageError("--feed needs --feed-file PATH",
                         "write the result JSON to the task's feed_file and pass its path")

    if args.flow:
        flow_id = check_flow_id(args.flow)
        store = open_store(root, flow_id, url)
        begun = _begun_ahead(store, args) if not store.exists() else None
        if begun is None and not store.exists():  # a short id (no workflow folder, a prefix)
            from flow.cli.flowids import resolve

            where = f"workspace {str(root)!r}" if url is None else store.source
            flow_id = resolve(flow_id, root, url, where)
            store = open_store(root, flow_id, url)
        with _naming(flow_id):
            workflow_name = _peek_workflow(store) if begun is None else begun["workflow"]
            module = registry.load(workflow_name)
        if begun is not None:  # its job started ahead, the flow not yet saved: start it
            return _drive(module, store, args, root, harness, script, new=True,
                          opts=begun["opts"], lease=lease)
        return _drive(module, store, args, root, harness, script, new=False, lease=lease)

    workflow_name, opts = _which(args, words)
    if args.repo is not None:
        check_repo(args.repo)
    early = None
    if url is None and not (args.restart or args.resume or args.feed or args.answer is not None):
        early = ahead.begin(workflow_name, opts, root)  # before the workflow's imports
    try:
        module = registry.load(workflow_name)
        flow_id = _flow_id_for(workflow_name, _locate(module, opts, root, url))
        store = open_store(root, flow_id, url)
        if args.restart and (store.exists()
                             or url is None and (store.dir / AHEAD_FILE).exists()):
            with _naming(flow_id, workflow_name):
                _move_aside(store, saved=store.exists())
        if store.exists():
            spec = _drive(module, store, args, root, harness, script, new=False, lease=lease)
            if not (args.resume or args.feed or args.answer is not None):
                _mark_reused(spec, flow_id, store)
            return spec
        if (args.resume or args.feed or args.answer) and _begun_ahead(store, args) is None:
            raise FlowNotFound(f"no flow {flow_id!r} to resume in workspace {str(root)!r}",
                               "start it first (the same command without "
                               "--resume/--feed/--answer)")
        return _drive(module, store, args, root, harness, script, new=True, opts=opts,
                      lease=lease, held=early is not None and early.flow_id == flow_id)
    finally:
        if early is not None:
            early.close()


def _locate(module: Any, opts: dict[str, Any], root: Path, url: str | None) -> str:
    """The workflow's ``locate``, given the store's URL where it asks for it
    (``LOCATES_IN_STORE``: which flow is meant depends on the flows saved there)."""
    if getattr(module, "LOCATES_IN_STORE", False):
        return module.locate(opts, root, url)
    return module.locate(opts, root)


def _begun_ahead(store: StateStore, args: argparse.Namespace) -> dict[str, Any] | None:
    """How the flow is started (workflow, options) when it is not saved yet but a call
    that ended before saving it started its first job ahead (its ``ahead.json``): a
    ``--resume`` then starts it from there and adopts that job. None otherwise (a feed or
    an answer has no task to go to yet; the PostgreSQL store starts nothing ahead)."""
    if getattr(store, "url", None) is not None or not args.resume or args.feed \
            or args.answer is not None:
        return None
    from flow.core.jobs import read_ahead

    raw = read_ahead(store.dir)
    start = raw.get("start") if raw is not None else None
    if not isinstance(start, dict) or not isinstance(start.get("workflow"), str) \
            or not isinstance(start.get("opts"), dict):
        return None
    return start


def _campaign(args: argparse.Namespace, words: list[str], root: Path, harness: str,
              script: Path, url: str | None) -> dict[str, Any]:
    """One call of a fleet's harness: the item it holds, else the next free one, driven as
    the item's own flow would be (``flow.cli.campaigns``); items that end within the call
    are marked done and the next is taken."""
    from flow.cli import campaigns
    from flow.cli.argv import parse

    name = (words[1] if len(words) > 1 else None) if command_is(words, "campaign") \
        else args.campaign
    if not name:
        raise UsageError("campaign needs a NAME", "run: orchestrator.py campaign NAME "
                         "[--items FILE] --store postgresql://USER@HOST:PORT/DB")
    from flow.core.bounds import campaign_name

    name = campaign_name(name)
    person = campaigns.person_action(args)  # --requeue / --drop ID --lease TOKEN
    conn, defined = campaigns.open_campaign(name, args, words, root, url)
    assert url is not None
    if person is not None:
        return campaigns.act_for_person(conn, name, url, root, harness, *person)
    from flow.cli.leases import reap

    reap(conn, name, root, url)  # what dead holders here left running
    spec: dict[str, Any] = {}
    try:
        for _ in range(campaigns.MAX_ROUNDS):
            lease = campaigns.claim_next(conn, name, url)
            if lease is None:
                spec = campaigns.finished(conn, name, url, root, harness)
                return spec
            campaigns.refuse_if_no_flow(conn, lease, url)
            campaigns.refuse_if_lacking(conn, lease, root, url)
            item_args, _ = parse(campaigns.item_argv(lease, root, url, harness))
            try:
                result = _run(item_args, root, harness, script, lease=lease)
            except OrchestratorError as err:
                campaigns.note_failure(url, lease, err)
                raise
            assert isinstance(result, dict)
            spec = result
            campaigns.say_lease(spec, lease)
            if not (spec.get("status") == "done" and spec.get("campaign", {}).get("item_done")):
                return spec
        return spec
    except OrchestratorError as err:
        campaigns.say_added(err.details, defined, name)
        raise
    finally:
        campaigns.say_added(spec, defined, name)


def command_is(words: list[str], name: str) -> bool:
    return bool(words) and words[0] == name


@contextmanager
def _naming(flow_id: str, workflow: str | None = None) -> Iterator[None]:
    """Errors raised inside name the flow they are about (busy, corrupt state, faults)."""
    try:
        yield
    except OSError as exc:
        fault = environment_fault(exc)
        if fault is None:
            raise
        fault.flow_id, fault.workflow = flow_id, workflow  # type: ignore[attr-defined]
        raise fault from exc
    except OrchestratorError as err:
        if getattr(err, "flow_id", None) is None:
            err.flow_id, err.workflow = flow_id, workflow  # type: ignore[attr-defined]
        raise


def _flow_id_for(workflow: str, flow_id: str) -> str:
    """The flow id a workflow derived from the inputs, or an error about those inputs."""
    part = bad_segment(flow_id)
    if part is None:
        return flow_id
    what = "the test file's name" if workflow == "refactor" else "the command's inputs"
    raise WorkflowInputError(
        f"{what} would name the flow folder {part!r} (flow id {flow_id!r}), which is not a "
        f"safe folder name", "flow folders are named with letters, digits, '.', '_', '+' and '-' "
        "(starting with a letter or digit); rename the file (or pick other inputs)",
        code="bad_name")


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


def _mark_reused(spec: dict[str, Any], flow_id: str, store: StateStore) -> None:
    """A start command that found its flow already finished says so: the answer is that
    flow's, decided earlier, not a new run (``--restart`` runs anew)."""
    if spec.get("status") != "done":
        return
    from workspace.paths import STATE_FILE

    spec["reused_from"] = {"flow_id": flow_id, "decided_at": _finished_at(store, spec, STATE_FILE)}
    spec.setdefault("next_steps", []).append(
        "This is the answer of an earlier run with the same inputs (reused_from says when); "
        "add --restart to run it anew.")


def _finished_at(store: StateStore, spec: dict[str, Any], state_file: str) -> str | None:
    from workspace.jsonio import loads

    try:
        if getattr(store, "url", None) is None:
            raw = loads((Path(str(spec["workspace"])) / state_file).read_bytes())
        else:
            raw = loads(store.read_bytes())
    except (OSError, ValueError, KeyError, OrchestratorError):
        return None
    done = [h.get("at") for h in raw.get("history", []) if isinstance(h, dict)]
    return raw.get("updated_at") if not done else (done[-1] or raw.get("updated_at"))


def _drive(module: Any, store: StateStore, args: argparse.Namespace, root: Path, harness: str,
           script: Path, *, new: bool, opts: dict[str, Any] | None = None,
           lease: Any = None, held: bool = False) -> dict[str, Any]:
    """Run the flow's call under its lock (``held``: this call already holds it, taken to
    start a job ahead, ``flow.cli.ahead``)."""
    settings = dict(os.environ)
    try:
        token = getattr(args, "lease", None)
        spec = _locked(module, store, args, root, harness, script, new, opts, settings, held,
                       lease)
        if token is not None:  # a flow of a campaign item: finish the item, say so
            from flow.cli.leases import after_call

            after_call(store, spec, lease, token, script, root, harness)
        return spec
    except OSError as exc:  # outside the flow's own handling (the lock, the folder itself)
        raise _as_fault(exc) from exc
    except OrchestratorError as err:
        # Every error that knows its flow says which one (busy, corrupt state, faults...).
        if getattr(err, "flow_id", None) is None:
            err.flow_id = store.flow_id  # type: ignore[attr-defined]
            err.workflow = module.WORKFLOW.name  # type: ignore[attr-defined]
        raise
    finally:
        if new and not _exists(store):
            ahead.remove_unstarted(store.dir, store.root)


def _exists(store: StateStore) -> bool:
    try:
        return store.exists()
    except (OSError, OrchestratorError):
        return False


def _as_fault(exc: OSError) -> Exception:
    """A known fault of the machine as its own error (exit 4), anything else unchanged."""
    fault = environment_fault(exc)
    return fault if fault is not None else exc


def _locked(module: Any, store: StateStore, args: argparse.Namespace, root: Path, harness: str,
            script: Path, new: bool, opts: dict[str, Any] | None,
            settings: dict[str, str], held: bool = False, lease: Any = None) -> dict[str, Any]:
    # imported here: a call that starts a run ahead (``ahead``) gets there first
    from flow.core.commands import Commands
    from flow.core.engine import Engine
    from flow.core.workflow import check_state

    sticky_store = getattr(store, "url", None)
    token = getattr(args, "lease", None)
    with nullcontext() if held else store.lock():
        if token is not None:  # a campaign item's lease: current, or refused (lease_lost)
            from flow.cli.leases import check

            check(store, token, lease)
        state = None
        # "New or existing" is decided again under the lock: an identical start that waited
        # here while another created the flow joins it, as --resume would (never a second
        # ``created``, never revisions from 1 again).
        joined = new and store.exists()
        new = new and not joined
        try:
            if new:
                data = module.start(opts or {}, root, settings)
                cmds = Commands(script, root, harness, store.flow_id, store=sticky_store,
                                lease=token, adapter=harness_adapter(harness))
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
                # Phase and data must fit the workflow before anything is written (exit 4).
                check_state(state, module.WORKFLOW, store.source)
                store.replay_audit(state)
                sticky = args.harness or state.harness
                cmds = Commands(script, root, sticky, store.flow_id, store=sticky_store,
                                lease=token, adapter=harness_adapter(sticky))
                engine = Engine(module.WORKFLOW, store, state, cmds, settings)
            state = engine.state
            if args.feed:
                spec = engine.feed(args.feed, args.feed_file)
            elif args.answer is not None:
                spec = engine.answer(args.answer)
            else:
                spec = engine.advance()
        except OSError as exc:
            fault = environment_fault(exc)
            if fault is None:
                raise
            fault.state = state  # type: ignore[attr-defined]
            fault.workspace = store.dir  # type: ignore[attr-defined]
            raise fault from exc
        except OrchestratorError as err:
            if _exists(store):  # a flow that never started keeps no error file
                err.state = state  # type: ignore[attr-defined]
                err.workspace = store.dir  # type: ignore[attr-defined]
                _record_error(store, err)
            raise
        finally:
            _settle_ahead(store, state)
    _clear_error(store)
    if joined and not args.resume:  # a start that found the flow there: as a start says it
        _mark_reused(spec, store.flow_id, store)
    return spec


def harness_adapter(harness: str) -> Any:
    """The adapter of ``harness`` the engine renders task fields with (``agents``)."""
    if harness == "codex":
        from agents import codex
        return codex
    from agents import claude
    return claude


def _settle_ahead(store: StateStore, state: Any) -> None:
    """Under the flow's lock, once the steps are done: a job started ahead is the flow's
    (recorded), kept for the step that will ask for it, or ended (``jobs.settle_ahead``);
    a flow whose start failed ends it. The file store only (nothing starts ahead else)."""
    if getattr(store, "url", None) is not None:
        return
    from flow.core.jobs import discard_ahead, settle_ahead

    try:
        if not _exists(store):
            discard_ahead(store.dir)
        elif state is not None:
            settle_ahead(store.dir, state.jobs, state.visits, state.phase,
                         state.result is not None or bool(state.aborted))
    except OSError:
        pass  # what is left is found again through its ahead.json by the next call


def _peek_workflow(store: StateStore) -> str:
    from workspace.jsonio import loads

    try:
        raw = loads(store.read_bytes())
        return str(raw["workflow"])
    except (ValueError, KeyError, TypeError):
        return str(store.load().workflow)  # raises StateLoadError with the details


def _record_error(store: StateStore, err: OrchestratorError) -> None:
    record = {"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **err.to_json()}
    store.record_error(record)


def _clear_error(store: StateStore) -> None:
    store.record_error(None)


def _move_aside(store: StateStore, saved: bool = True) -> None:
    """Rename the flow folder to ``<name>.old-<UTC stamp>[-n]`` (never onto an earlier one),
    after ending a job started ahead that no step recorded, holding the flow's lock: a call
    working on the flow (a cron tick mid-step) finishes first, and one that holds it too
    long makes the restart answer Busy, moving nothing."""
    with store.lock():
        if getattr(store, "url", None) is None:  # a job started ahead goes with the flow
            from flow.core.jobs import discard_ahead

            discard_ahead(store.dir)
        if saved:  # else only a job started ahead was there, now ended
            store.move_aside(time.strftime("%Y%m%dT%H%M%S", time.gmtime()))


