"""Stage 2 of the ``reproduce`` workflow: the source build (a ``run`` task for the local
profile's ``localbuild``, an agent task loading the build skill for pytorch-xpu), its one
ci_commit fallback, then the reproducer against the build.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from flow.core.outcome import Ask, Go, Task
from flow.workflows.reproduce.context import (
    OFFLINE_ENV, REPO_ROOT, blocked, interpreter, profile_of, run_each,
)
from flow.workflows.reproduce.profiles import Profile
from flow.workflows.reproduce.run.attempts import act, decide
from flow.workflows.reproduce.stage2.rules import BuildStep, stage2_build
from flow.workflows.reproduce.verdict.models import ORIGIN_MAIN, CannotVerify, Stage


def _build_task(ctx: Any, profile: Profile, key: str, commit: str | None,
                source: str | None = None, work: str = "build") -> Task:
    """The build of ``source`` (default --source-dir) into ``<flow>/<work>/venv``."""
    source = source or ctx.data.source_dir
    if profile.source_build.kind == "venv":
        build = profile.source_build
        argv = [sys.executable, "-m", "flow.workflows.reproduce.stage2.build", "--source",
                source, "--work", str(ctx.path(work)),
                "--python", interpreter(ctx)]
        argv += ["--commit", commit] if commit else []
        if build.offline or ctx.settings.get(OFFLINE_ENV) == "1":
            argv.append("--offline")
        extras = ctx.data.test_extras or build.test_extras
        argv += ["--extras", ",".join(extras)] if extras else []
        argv += [] if build.editable else ["--no-editable"]
        return Task(key=key, role="runner", feed="run", command=argv, cwd=str(REPO_ROOT),
                    prompt=f"Build {source} into a fresh venv"
                           f"{' at ' + commit if commit else ''} (Stage 2 source build).",
                    timeout_ms=3_600_000, max_attempts=1)
    where = f"the tree at {ctx.data.tree} (detached at {commit or 'origin/main'})"
    return Task(key=key, role="runner", feed="build", max_attempts=1,
                prompt=f"Load the {profile.source_build.skill} skill and follow it to build "
                       f"{where}. Do not run the reproducer. Feed ok=true when the build "
                       "succeeded, ok=false with the failing step in detail otherwise.")


def build_errors(ctx: Any, key: str) -> str:
    """The real error lines of a failed local build, read from the log it was fed with
    (``localbuild.error_lines``); "" when there is none to read."""
    from flow.workflows.reproduce.stage2.build import error_lines

    res = ctx.result(key)
    path = getattr(res, "log_path", None)
    if not path:
        return ""
    try:
        full = Path(path) if Path(path).is_absolute() else ctx.dir / path
        text = full.read_bytes()[-65536:].decode("utf-8", errors="replace")
    except OSError:
        return ""
    return error_lines(text, limit=6).replace("\n", " | ")


def _build_ok(ctx: Any, profile: Profile, key: str, work: str = "build") -> bool | None:
    res = ctx.result(key)
    if res is None:
        return None
    if profile.source_build.kind == "venv":
        return res.exit_code == 0 and (ctx.dir / work / "venv/bin/python").exists()
    return bool(res.ok)


def stage2(ctx: Any) -> Any:
    """Stage 2: build origin/main (a run task), fall back once to ci_commit, run, decide."""
    profile = profile_of(ctx)
    ctx.data.current_stage = Stage.SOURCE_BUILD.value
    pending = source_build(ctx, profile)
    if pending is not None:
        return pending
    if profile.source_build.kind == "venv":
        problem = replace_for_build(ctx, profile)
        if problem:
            return blocked(ctx, Stage.SOURCE_BUILD, problem)
    return act(ctx, decide(ctx, profile, Stage.SOURCE_BUILD, "stage2"))


def source_build(ctx: Any, profile: Profile, source: str | None = None, work: str = "build",
                 fallback: bool = True) -> Ask | Go | None:
    """Stage 2's build, shared by the single flow and the batch: an ``Ask`` (a build to
    run, or the one ci_commit fallback), ``Go("decided")`` with a CANNOT_VERIFY verdict
    in ``ctx.data.verdict``, or None once built (``base``, ``python`` and ``path_head``
    then name the build). ``source`` (default --source-dir) is the tree built into
    ``<flow>/<work>/venv`` (the local profile; its tasks are keyed ``<work>-trunk`` and
    ``<work>-fallback``); ``fallback=False`` for a tree that --ci-commit is no commit of."""
    source = source or ctx.data.source_dir
    if profile.source_build.kind == "venv" and not source:
        return blocked(ctx, Stage.SOURCE_BUILD, "no source dir to build: pass --source-dir DIR")
    trunk, back = f"{work}-trunk", f"{work}-fallback"
    if ctx.data.trunk_ok is None:
        ctx.data.trunk_ok = _build_ok(ctx, profile, trunk, work)
    if ctx.data.trunk_ok is False and ctx.data.fallback_ok is None:
        ctx.data.fallback_ok = _build_ok(ctx, profile, back, work)
    plan = stage2_build(ctx.data.trunk_ok, ctx.data.ci_commit if fallback else None,
                        ctx.data.fallback_ok,
                        f"the tree {source}" if profile.source_build.kind == "venv" else ORIGIN_MAIN)
    if isinstance(plan, CannotVerify):
        why = build_errors(ctx, back if ctx.data.fallback_ok is False else trunk)
        if why:
            plan = plan.model_copy(update={"blocker": f"{plan.blocker}: {why}"})
        ctx.data.verdict = plan.model_dump(mode="json")
        return Go("decided")
    if plan.step is BuildStep.BUILD_TRUNK:
        return Ask([_build_task(ctx, profile, trunk, None, source, work)],
                   extra={"stage": "source_build"})
    if plan.step is BuildStep.FALL_BACK:
        if profile.tree is not None:
            from flow.workflows.reproduce.recipes import fill

            problem = run_each(ctx, [fill(tpl, tree=ctx.data.tree or "", ci_commit=plan.base)
                                     for tpl in (profile.tree.fallback_detach,
                                                 profile.tree.submodules)],
                               "fallback", f"checkout of ci_commit {plan.base}")
            if problem:
                return blocked(ctx, Stage.SOURCE_BUILD, problem)
        return Ask([_build_task(ctx, profile, back, plan.base, source, work)],
                   extra={"stage": "source_build", "fallback": plan.base})
    ctx.data.base = plan.base
    if profile.source_build.kind == "venv":
        ctx.data.python = str((ctx.dir / work / "venv/bin/python"))
        ctx.data.path_head = str((ctx.dir / work / "venv/bin"))
        if ctx.data.fallback_ok:  # built from the clone at ci_commit: the run uses that tree
            ctx.data.tree = fallback_tree(ctx, source, work)
    return None


def fallback_tree(ctx: Any, source: str | None = None, work: str = "build") -> str:
    """The source dir's place inside the build's clone at ci_commit (``build.py
    --commit``: ``<work>/src/<the source dir's path in its repository>``)."""
    source = source or ctx.data.source_dir
    prefix = ctx.query(["git", "-C", source, "rev-parse", "--show-prefix"]).text
    return str(Path(ctx.path(work)) / "src" / prefix.strip()).rstrip("/")


def replace_for_build(ctx: Any, profile: Profile) -> str | None:
    """Choose the working directory again for the built environment (its interpreter may
    hold a compiled non-editable copy whose tree is not built in place, and a ci_commit
    fallback runs in the clone); a blocker or None."""
    from flow.workflows.reproduce.context import reproducer
    from flow.workflows.reproduce.prepare.steps import place

    return place(ctx, profile, reproducer(ctx))
