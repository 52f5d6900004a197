"""Starting a new flow's first long run ahead of the engine, and leaving nothing behind when a
start fails.

A workflow that can tell that run from the command line alone names a ``headstart`` module
in ``flow.workflows.registry.HEAD_STARTS``: ``may_plan(opts)`` says from the options alone
whether a plan may come, and ``plan(opts, root, settings)`` answers the flow id and the job,
or None. A supervisor is started ready before either is asked (a start that plans nothing
dismisses it: one idle interpreter for a moment). ``begin`` then takes the new flow's lock (without waiting:
a caller already there keeps the usual path), makes sure no flow lives there yet, and starts
the job (``flow.core.jobs.start_ahead``) while the caller goes on to import the workflow and
run its steps under that same lock; its supervisor is started first, ready for the job, so
that its own start-up overlaps the plan; the job's ``ahead.json`` (written before it starts)
carries the workflow and options the flow is started with. ``HeadStart.close`` ends the job
and removes what a start that never got as far as a saved state left (a saved flow keeps
what its steps decided: ``flow.core.jobs.settle_ahead``), and lets the lock go.

Only the file store: a PostgreSQL store holds its locks in the database (and a campaign's
items are claimed there), so its calls never start anything ahead. Nothing here imports
pydantic.
"""

from __future__ import annotations

import os
from importlib import import_module
from pathlib import Path
from typing import Any

from flow.core.errors import OrchestratorError


class HeadStart:
    """A job started ahead for the new flow ``flow_id``, and the flow's lock, held."""

    def __init__(self, root: Path, flow_id: str, lock: Any) -> None:
        self.root = root
        self.flow_id = flow_id
        self._lock = lock

    @property
    def folder(self) -> Path:
        return Path(self._lock.folder)

    def close(self) -> None:
        """A flow that never got as far as a saved state: end the job, clear the folder.
        A saved flow keeps what its steps decided (``flow.core.jobs.settle_ahead``: adopted,
        kept for a later step, or ended). Then release the lock."""
        from flow.core.jobs import discard_ahead, forget_ahead
        from workspace.paths import STATE_FILE

        try:
            if not (self.folder / STATE_FILE).exists():
                discard_ahead(self.folder)
                remove_unstarted(self.folder, self.root)
            else:
                forget_ahead(self.folder)
        finally:
            self._lock.__exit__(None, None, None)


def begin(workflow: str, opts: dict[str, Any], root: Path) -> HeadStart | None:
    """Start ``workflow``'s first run ahead for the new flow ``opts`` start, holding its
    lock; None when the workflow has no head start, its plan declines, the flow exists or
    is busy. Inputs the flow refuses are left for the usual path to refuse."""
    from flow.workflows.registry import HEAD_STARTS

    name = HEAD_STARTS.get(workflow)
    if name is None:
        return None
    from flow.core import proc

    # first of all: its start-up (an interpreter and its imports) overlaps everything below
    ready = proc.ready_supervisor()
    try:
        module = import_module(name)
        early = _start(module, workflow, opts, root, ready) if module.may_plan(opts) else None
    except BaseException:
        ready.dismiss()
        raise
    if early is None:
        ready.dismiss()
    return early


def _start(module: Any, workflow: str, opts: dict[str, Any], root: Path,
           ready: Any) -> HeadStart | None:
    try:
        plan = module.plan(opts, root, os.environ)
    except OrchestratorError:
        return None
    if plan is None:
        return None
    from flow.core.errors import Busy
    from flow.core.jobs import start_ahead
    from workspace.lock import FlowLock
    from workspace.paths import STATE_FILE, flow_dir

    folder = flow_dir(root, plan.flow_id)
    if folder.exists():
        return None  # a flow lives there (or is being started): the usual path decides
    lock = FlowLock(folder, timeout=0)
    try:
        lock.__enter__()
    except (Busy, OSError):
        return None
    early = HeadStart(root, plan.flow_id, lock)
    try:
        if (folder / STATE_FILE).exists():
            early.close()
            return None
        start_ahead(folder, plan.job_id, plan.argv, cwd=plan.cwd, env=plan.env,
                    log_file=plan.log_file, timeout=plan.timeout, outputs=plan.outputs,
                    ready=ready, phase=plan.phase, visit=plan.visit,
                    start={"workflow": workflow, "opts": start_options(opts)})
    except BaseException:
        early.close()
        raise
    return early


def start_options(opts: dict[str, Any]) -> dict[str, Any]:
    """The options a flow was started with, as JSON keeps them (a later ``--resume`` starts
    the flow from them when the call that started its job ahead ended before saving it)."""
    return {k: v for k, v in opts.items()
            if isinstance(v, (str, int, float, bool, type(None)))
            or isinstance(v, list) and all(isinstance(w, str) for w in v)}


def remove_unstarted(folder: Path, root: Path) -> None:
    """A start that failed leaves no folder behind: only its lock files could be there, and
    the empty folders a run started ahead wrote into (the PostgreSQL store keeps no lock
    files: an empty folder is removed all the same)."""
    for name in (".lock", ".lock.holder"):
        (folder / name).unlink(missing_ok=True)
    for sub in ("jobs", "logs"):
        try:
            (folder / sub).rmdir()
        except OSError:
            pass
    while folder != root and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent
