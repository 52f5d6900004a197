"""``orchestrator.py graph WORKFLOW``: a workflow's state machine as a diagram.

Drawn by transitions' own diagram support from the same declaration the engine runs
(``Workflow.diagram``): Mermaid text by default, or an svg/png picture through transitions'
graphviz engine and the Graphviz ``dot`` program. With ``--flow ID`` the flow's current state
is drawn active and the steps its history took are drawn as taken. Final states, states that
may ask a person and states that may sleep on cron are drawn apart, with a legend
(``flow.core.diagramkinds``); ``kinds`` lists them. A picture goes to a new file or replaces
an earlier picture of its format only (``--output`` a folder: a named file in it), written
beside it and renamed over it; any other file, a symlink, FIFO, device or socket there is
refused, never replaced or written through.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from flow.core.errors import OrchestratorError, UsageError
from flow.workflows import registry

PICTURES = ("svg", "png")


def graph_command(args: argparse.Namespace, words: list[str], root: Path,
                  harness: str, url: str | None = None) -> dict[str, Any]:
    """``graph WORKFLOW [--format F] [--flow ID] [--output PATH]``: the diagram, and for a
    picture the file it was written to (``picture``). ``--flow`` takes what it takes
    everywhere (a full id, a tail of one, the beginning of one: ``flow.cli.flowids``), of the
    file store or of the PostgreSQL store at ``url``."""
    from flow.core.render import envelope

    if len(words) < 2:
        raise UsageError("graph needs a workflow name", f"one of: {', '.join(registry.names())}")
    wf = registry.load(words[1]).WORKFLOW
    flow_id = full_flow_id(root, args.flow, url) if args.flow else None
    current, path = (None, []) if not flow_id else flow_path(root, flow_id, wf.name, url)
    out: dict[str, Any] = {**envelope(None, root, "done", harness), "workflow": wf.name,
                           "mermaid": wf.mermaid(current, path), "states": list(wf.states),
                           "terminal": sorted(wf.terminal), "kinds": wf.kinds()}
    if flow_id:
        out.update(flow_id=flow_id, current=current, path=path)
    fmt = args.format or "mermaid"
    out["format"] = fmt
    if fmt in PICTURES:
        named = default_output(root, wf.name, flow_id, fmt)
        target = output_path(Path(args.output), named.name) if args.output else named
        data = picture(wf, fmt, current, path)
        from workspace.atomic import write_atomic

        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(target, data)
        except OSError as exc:
            raise _unwritable(target, exc, given=bool(args.output)) from None
        out.update(picture=str(target.resolve()), bytes=len(data))
    elif args.output:
        raise UsageError("--output is for --format svg or png",
                         "drop --output (Mermaid text is printed), or add --format svg")
    return out


def _unwritable(target: Path, exc: OSError, given: bool) -> OrchestratorError:
    """The error for a picture that cannot be written at ``target``: a path the person gave
    (``--output``) is bad input (exit 2, ``bad_output``) saying why; the workspace's own
    folder failing is a fault of the machine (``environment_fault``) where it is one."""
    import errno

    from flow.core.errors import WorkflowInputError, environment_fault

    fault = environment_fault(exc)
    if not given and fault is not None:
        return fault
    why = exc.strerror or type(exc).__name__
    what = "--output" if given else "the workspace's graphs folder:"
    return WorkflowInputError(
        f"{what} {str(target)!r} cannot be written: {why}",
        "name a file in a folder you can write (an existing folder, or a new one under it), "
        "e.g. --output graphs/reproduce.svg", code="bad_output",
        errno=errno.errorcode.get(exc.errno or 0, ""))


def default_output(root: Path, workflow: str, flow_id: str | None, fmt: str) -> Path:
    """``<workspace>/graphs/<workflow>[.<flow id, slashes as '+'>].<fmt>``."""
    name = workflow if not flow_id else f"{workflow}.{flow_id.replace('/', '+')}"
    return root / "graphs" / f"{name}.{fmt}"


def output_path(given: Path, name: str) -> Path:
    """Where ``--output given`` writes: ``given`` if it is new or a regular file named for the
    picture's format (``.svg``/``.png``, as ``name`` is), ``given/name`` if it is a folder
    (that one new or such a file too); anything else is a ``bad_input``."""
    import stat

    from flow.core.boundedfile import kind
    from flow.core.errors import WorkflowInputError

    mode = _mode(given)
    target = given / name if mode is not None and stat.S_ISDIR(mode) else given
    mode = _mode(target) if target != given else mode
    suffix = Path(name).suffix
    if mode is None or (stat.S_ISREG(mode) and target.suffix.lower() == suffix):
        return target
    if stat.S_ISREG(mode):  # a picture never replaces another kind of file (/etc/passwd)
        raise WorkflowInputError(
            f"--output {str(target)!r} is an existing file that is not a {suffix} picture; "
            "a picture replaces only an earlier picture of its format",
            f"name a new file, an existing {suffix} file to replace, or a folder (the picture "
            f"is written in it as {name!r})")
    what = "a symbolic link" if stat.S_ISLNK(mode) else kind(mode)
    raise WorkflowInputError(
        f"--output {str(target)!r} is {what}; a picture replaces only a regular file",
        f"name a new file, a regular file to replace, or a folder (the picture is written in "
        f"it as {name!r})")


def _mode(path: Path) -> int | None:
    """The file type bits of ``path`` itself (a link is not followed); None if absent."""
    import os

    from flow.core.errors import WorkflowInputError

    try:
        return os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise WorkflowInputError(f"--output {str(path)!r} cannot be checked: "
                                 f"{exc.strerror or exc}",
                                 "name a new file or a regular file to replace") from None


def full_flow_id(root: Path, given: str, url: str | None) -> str:
    """The full id of the flow ``--flow given`` names: itself when a flow has that id, else
    the one flow it is a tail or the beginning of (``flow.cli.flowids.resolve``: several or
    none is a ``FlowNotFound`` listing the candidates)."""
    from workspace.paths import check_flow_id
    from workspace.selection import open_store

    flow_id = check_flow_id(given)
    if open_store(root, flow_id, url).exists():
        return flow_id
    from flow.cli.flowids import resolve

    from workspace.pgerrors import mask_url

    where = f"workspace {str(root)!r}" if url is None else f"the store {mask_url(url)}"
    return resolve(flow_id, root, url, where)


def flow_path(root: Path, flow_id: str, workflow: str,
              url: str | None = None) -> tuple[str, list[str]]:
    """A flow's current state and the states it went through, from its saved history."""
    from workspace.paths import check_flow_id
    from workspace.selection import open_store

    store = open_store(root, check_flow_id(flow_id), url)
    if not store.exists():
        from flow.core.errors import FlowNotFound

        raise FlowNotFound(f"no flow {flow_id!r} in workspace {str(root)!r}",
                           "run 'orchestrator.py status' to list the flows, or check --workspace")
    state = store.load()
    if state.workflow != workflow:
        raise UsageError(f"flow {flow_id!r} belongs to workflow {state.workflow!r}",
                         f"run 'orchestrator.py graph {state.workflow} --flow {flow_id}'")
    return state.phase, states_taken(state.history, state.phase)


def states_taken(history: list[dict[str, Any]], phase: str) -> list[str]:
    """The states in the order the history entered them (``from`` of the first step, then
    each ``to``); a flow with no step yet is at its one state."""
    steps = [h for h in history if isinstance(h, dict) and h.get("to")]
    if not steps:
        return [phase]
    return [str(steps[0].get("from") or steps[0]["to"]), *(str(h["to"]) for h in steps)]


def picture(wf: Any, fmt: str, current: str | None, path: list[str]) -> bytes:
    """The diagram as svg or png bytes, rendered by Graphviz's ``dot``."""
    import graphviz

    try:
        return bytes(wf.diagram("graphviz", current, path).pipe(format=fmt))
    except graphviz.ExecutableNotFound:
        raise OrchestratorError(
            "drawing a picture needs the Graphviz programs ('dot' is not on PATH)",
            "install them (Debian: apt-get install graphviz), or use --format mermaid",
            code="graphviz_missing") from None
