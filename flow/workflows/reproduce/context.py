"""What every step of the ``reproduce`` workflow reads from its flow: the profile, the
interpreter, the parsed reproducer, the scratch folder, the environment and the launcher
for long runs, and the one way a step records CANNOT_VERIFY.

The steps themselves live with their seed section: ``preflight``, ``prepare.steps``,
``stage1.steps``, ``stage2.steps``, ``stage3.steps``, ``unskip.steps``, ``verdict.report``
and ``batch.steps``; each reads ``ctx.data``, runs what the seed says through
``run.runner`` (long runs as ``ctx.job`` background jobs, so every step is re-entrant),
and hands what it saw to the pure rules of its stage.

Settings (``ctx.settings``, i.e. the environment):

- ``ORCHESTRATOR_REPRODUCE_INDEX_URL``: the nightly index (overrides the profile's
  ``nightly.index_url``).
- ``ORCHESTRATOR_REPRODUCE_OFFLINE=1``: the local Stage 2 build without pip's index.
- ``ORCHESTRATOR_REPRODUCE_PYTHON``: the project's interpreter: Stage 1 installs the
  nightly into its environment and runs the reproducer with it (refined_command names it
  by absolute path; its bin dir leads PATH for setup steps, so a bare ``pip`` there means
  it); Stage 2's and Stage 3's venvs are made from it and borrow its packages.
  Default: the orchestrator's own ``sys.executable``. Give a venv's ``bin/python`` as is
  (it is not resolved through its symlink, which would leave the venv). A value that is
  not an executable file is refused when the flow starts (``check_python``); the value
  resolved then is recorded in the state and used by every step (``interpreter``), so a
  ``--resume`` under another environment keeps it.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flow.core.outcome import Go
from flow.workflows.reproduce.profiles import Profile, load_profile
from flow.workflows.reproduce.reproducer.forms import Reproducer, parse_reproducer
from flow.workflows.reproduce.run import runner
from flow.workflows.reproduce.run.deciding import PYTHON_ENV, reproduce_python
from flow.workflows.reproduce.verdict.models import CannotVerify, Stage

REPO_ROOT = Path(__file__).resolve().parents[3]
PROFILE_URL_ENV = "ORCHESTRATOR_REPRODUCE_INDEX_URL"
OFFLINE_ENV = "ORCHESTRATOR_REPRODUCE_OFFLINE"


def check_python(settings: Mapping[str, str]) -> None:
    """Raise WorkflowInputError when ``ORCHESTRATOR_REPRODUCE_PYTHON`` is set but is not an
    executable file (checked at start, before anything is written)."""
    from flow.core.errors import WorkflowInputError

    value = settings.get(PYTHON_ENV)
    if value is None:
        return
    path = reproduce_python(settings)
    if not value.strip() or not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise WorkflowInputError(
            f"{PYTHON_ENV}={value!r} is not an executable file",
            f"set {PYTHON_ENV} to an interpreter such as /path/to/venv/bin/python, "
            "or unset it to use the orchestrator's own")


def interpreter(ctx: Any) -> str:
    """The flow's Stage 1 interpreter: the one ``start`` recorded, so a ``--resume`` with
    another (or no) ``ORCHESTRATOR_REPRODUCE_PYTHON`` does not switch it mid-flow; a state
    saved before it was recorded resolves it from the settings."""
    return ctx.data.reproduce_python or reproduce_python(ctx.settings)


def profile_of(ctx: Any) -> Profile:
    overrides = {}
    if ctx.settings.get(PROFILE_URL_ENV):
        overrides["nightly.index_url"] = ctx.settings[PROFILE_URL_ENV]
    return load_profile(ctx.data.profile, overrides)


def reproducer(ctx: Any) -> Reproducer:
    rep = parse_reproducer(ctx.data.command)
    assert rep is not None  # preflight stopped a flow without a command
    return rep


def blocked(ctx: Any, stage: Stage, blocker: str) -> Go:
    ctx.data.verdict = CannotVerify(stage=stage, blocker=blocker).model_dump(mode="json")
    return Go("decided")


def scratch(ctx: Any) -> str:
    path = ctx.path("scratch")
    path.mkdir(parents=True, exist_ok=True)
    return str(path)


def env_of(ctx: Any) -> dict[str, str]:
    return runner.environment(ctx.settings, ctx.data.path_head)


FOREGROUND_MARGIN_S = 5.0


def launcher(ctx: Any) -> runner.Launch:
    """Long runs as background jobs the flow owns (``ctx.job``: memoized per phase visit
    and key, so a step re-run on --resume gets the recorded result); in the foreground
    for a context without jobs (a unit test's).

    A run whose timeout (``--timeout``) ends within what is left of the call's foreground
    budget (less ``FOREGROUND_MARGIN_S``) runs in the foreground too (``proc.run``, the
    same runner guarantees): it cannot outlive the call, so the detached supervisor, its
    start-up and the job records would only add time. A key that already has a job (a
    call before this one started it, or the command line started it ahead: ``headstart``)
    stays a job, so it is never run twice."""
    job = getattr(ctx, "job", None)
    if job is None:
        return runner.foreground

    def launch(key: str, argv: list[str], log: Path, env: Any, timeout: float,
               cwd: str | None = None) -> Any:
        from flow.core import proc

        if timeout + FOREGROUND_MARGIN_S <= proc.remaining(ctx.settings) \
                and not _has_job(ctx, key):
            return runner.foreground(key, argv, log, env, timeout, cwd)
        base = Path(ctx.dir).resolve()
        name = str(log.relative_to(base)) if log.is_relative_to(base) else f"logs/{key}.log"
        return job(key, argv, log_name=name, env=env, timeout=timeout, cwd=cwd)
    return launch


def _has_job(ctx: Any, key: str) -> bool:
    """A job of this phase visit with ``key`` is recorded in the flow's state, or was
    started ahead by the command line (a stand-in context of a unit test has neither)."""
    state = getattr(ctx, "_state", None)
    jobs = getattr(state, "jobs", None) or {}
    if any(j.key == key and j.phase == state.phase and j.visit == state.visit
           for j in jobs.values()):
        return True
    ahead = getattr(ctx, "started_ahead", None)
    return bool(ahead(key)) if ahead is not None else False


def entry_prefix(ctx: Any) -> str:
    """``<entry id>/`` inside a batch (each entry keeps its own logs), else ""."""
    entry = getattr(ctx.data, "entry_id", None)
    return f"{entry}/" if entry else ""


def run_timeout(ctx: Any, profile: Profile | None = None) -> float:
    """Seconds one reproducer run (or setup, install) may take: ``--timeout``, else the
    profile's ``timeout_s``."""
    if ctx.data.timeout:
        return float(ctx.data.timeout)
    return float((profile or profile_of(ctx)).timeout_s)


def run_each(ctx: Any, commands: list[list[str]], label: str, what: str,
             cwd: str | None = None) -> str | None:
    """Run ``commands`` in order as jobs (logs ``logs/<label>-<i>.log``); the blocker of
    the first one that fails (its real error lines), or None."""
    for i, argv in enumerate(commands):
        result = launcher(ctx)(f"{label}-{i}", argv, ctx.path(f"logs/{label}-{i}.log"),
                               ctx.settings, run_timeout(ctx), cwd)
        if result.timed_out:
            return f"{what} timed out after {run_timeout(ctx):.0f} s: {result.tail(5)}"
        if result.code != 0:
            return f"{what} failed (exit {result.code}): {result.output.strip()[-300:]}"
    return None
