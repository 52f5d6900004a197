"""Stage 3 of the ``reproduce`` workflow (seed: "Stage 3: CI Environment Alignment").

Clean the stage-2 outputs, find and fetch the CI wheels (``ci_fetch``), install them,
align the tree to the wheel's commit, fold the CI job log, then run: as written first,
and with the job log's env and flags only when that passes (``stepsflow.decide``).
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from flow.core.outcome import Go
from flow.workflows.reproduce.context import blocked, interpreter, profile_of, reproducer, run_each
from flow.workflows.reproduce.profiles import Profile
from flow.workflows.reproduce.reproducer.forms import Reproducer
from flow.workflows.reproduce.run import runner
from flow.workflows.reproduce.run.attempts import act, decide
from flow.workflows.reproduce.stage1.steps import installed_versions
from flow.workflows.reproduce.verdict.models import CannotVerify, Stage


def stage3(ctx: Any) -> Any:
    """Stage 3: clean, fetch the CI wheels, install them, fold the job log, run, decide."""
    profile, rep = profile_of(ctx), reproducer(ctx)
    ctx.data.current_stage = Stage.CI_ENV.value
    stopped = align(ctx, profile, rep)
    if stopped is not None:
        return stopped
    fold(ctx, profile, rep)
    return act(ctx, decide(ctx, profile, Stage.CI_ENV, "stage3"))


JOB_LOG = "ci_env/job_log.txt"


def align(ctx: Any, profile: Profile, rep: Reproducer) -> Go | None:
    """Clean the stage-2 outputs, fetch and install the CI wheels, keep the CI job log in
    ``ci_env/job_log.txt`` (read by ``fold``). ``Go("decided")`` with a CANNOT_VERIFY
    verdict in ``ctx.data.verdict`` when blocked; None once the CI environment is the
    stage's interpreter. ``rep`` infers ci_repo when neither --ci-repo nor the profile
    names it (``ci_target``; a batch passes the first entry of each group of entries whose
    ``ci_name`` is the same)."""
    from flow.workflows.reproduce.stage3 import fetch as ci_fetch
    from flow.workflows.reproduce.recipes import fill

    if ctx.data.tree and profile.tree is not None:
        for i, tpl in enumerate(profile.tree.clean):  # best effort, as the seed's `|| true`
            runner.run(fill(tpl, tree=ctx.data.tree), cwd=None, env=ctx.settings,
                       log=ctx.path(f"logs/clean-{i}.log"))
    candidates, override = ci_target(profile, rep, ctx.data.ci_repo, ctx.data.tree)
    got = ci_fetch.fetch(profile, candidates, override, ctx.settings, ctx.path("ci_env/wheels"))
    if isinstance(got, CannotVerify):
        ctx.data.verdict = got.model_dump(mode="json")
        return Go("decided")
    ctx.data.ci_image = got.image
    ctx.data.notes += [f"ci_env: run {got.run_id} of {got.repo} (Path {got.path}, {got.head_sha})",
                       *got.notes]
    problem = install_ci(ctx, profile, got.wheels)
    if problem:
        return blocked(ctx, Stage.CI_ENV, problem)
    ctx.write_text(JOB_LOG, got.job_log)
    return None


def ci_target(profile: Profile, rep: Reproducer, explicit: str | None,
              tree: str | None) -> tuple[list[Any] | None, str | None]:
    """Which CI ``align`` fetches from: (the PyTorch profiles' candidate repositories, tried
    in turn: ``explicit`` when it is one, else inferred from the reproducer's paths; or the
    local profile's OWNER/NAME ``explicit`` overriding the profile's own repository)."""
    from flow.workflows.reproduce.stage3 import rules as ci_env

    if profile.ci_env.pytorch is None:  # local: the profile's (or --ci-repo's) repository
        return None, explicit if explicit and "/" in explicit else None
    given = ci_env.CiRepo(explicit) if explicit in {c.value for c in ci_env.CiRepo} else None
    return ci_env.infer_ci_repo(rep, given, tree), None


def ci_name(profile: Profile, rep: Reproducer, explicit: str | None, tree: str | None) -> str:
    """``ci_target`` in words: ``pytorch``, ``torch-xpu-ops or pytorch``, ``OWNER/NAME``, or
    ``the profile's``; entries with the same name are aligned against the same CI."""
    candidates, override = ci_target(profile, rep, explicit, tree)
    if candidates is not None:
        return " or ".join(c.value for c in candidates)
    return override or "the profile's"


def fold(ctx: Any, profile: Profile, rep: Reproducer) -> None:
    """``ctx.data.ci_env``: the env vars and flags the CI job log used for this
    reproducer's target (``decide`` re-runs with them when it passes as written)."""
    from flow.workflows.reproduce.stage3 import rules as ci_env

    log = ctx.path(JOB_LOG)
    job_log = log.read_text() if log.is_file() else ""
    target = (ctx.data.pytest_args or [rep.script or ""])[-1] if rep.step_is_pytest or rep.script else None
    found = ci_env.fold_job_log(job_log, target, tuple(profile.ci_env.env_var_patterns)
                                or ci_env.DEFAULT_ENV_PATTERNS)
    ctx.data.ci_env = found.model_dump(mode="json") if rep.step_is_pytest else {"env": found.env}


def install_ci(ctx: Any, profile: Profile, wheels: list[str]) -> str | None:
    """Install the CI wheels: into a fresh venv (local profile), else uninstall the stack
    and force-install into ``interpreter``'s environment (ORCHESTRATOR_REPRODUCE_PYTHON as
    recorded at start, default the orchestrator's own), then align the tree to the wheel.
    Returns a blocker or None."""
    from flow.workflows.reproduce.recipes import fill
    from flow.workflows.reproduce.stage1.rules import pip_for, pip_install, pip_uninstall

    if profile.source_build.kind == "venv":
        return _install_into_venv(ctx, wheels)
    python = interpreter(ctx)
    pip = pip_for(python)
    runner.run(pip_uninstall(pip, profile.ci_env.uninstall), cwd=None, env=ctx.settings,
               log=ctx.path("logs/ci-uninstall.log"))  # seed: `pip uninstall ... || true`
    problem = run_each(ctx, [pip_install(pip, wheels, force_reinstall=True)], "ci-install",
                       "CI wheel install")
    if problem:
        return problem
    ctx.data.python, ctx.data.path_head = python, str(Path(python).parent)
    # The verdict's report names what stage 3 ran on, not stage 1's nightly set.
    ctx.data.installed_versions = installed_versions(ctx, profile.nightly.packages)
    if ctx.data.tree and profile.tree is not None:
        code, sha = runner.run(fill(profile.tree.wheel_commit_query, python=python),
                               cwd=ctx.path("scratch"), env=ctx.settings,
                               log=ctx.path("logs/wheel-commit.log"))
        wheel_commit = sha.strip().splitlines()[-1] if sha.strip() else ""
        try:
            recipes = [fill(profile.tree.fetch, tree=ctx.data.tree),
                       fill(profile.tree.align, tree=ctx.data.tree,
                            wheel_commit=wheel_commit),
                       fill(profile.tree.submodules, tree=ctx.data.tree)]
        except ValueError as exc:
            return f"cannot align the tree to the CI wheel (query exit {code}): {exc}"
        problem = run_each(ctx, recipes, "align", "aligning the tree to the CI wheel")
        if problem is None:
            ctx.data.notes.append(f"ci_env: tree {ctx.data.tree} detached at the CI wheel's "
                                  f"git_version {wheel_commit} (not the fix base)")
        return problem
    return None


def _install_into_venv(ctx: Any, wheels: list[str]) -> str | None:
    """The local profile: a fresh ``ci_env/venv`` made from the project's interpreter,
    holding the wheels; its test tools are lent by the project's environment (every site
    dir that interpreter sees, after the venv's own); it becomes the stage's interpreter."""
    import json

    from flow.workflows.reproduce.stage2.venv import install_built, tools_pth, venv_plan

    work = ctx.path("ci_env")
    base = interpreter(ctx)
    plan = venv_plan(base, "-", work)
    # --clear inside the job, not an rmtree here: the step is re-run on --resume and
    # gets the recorded jobs back, so it must not undo what they made
    problem = run_each(ctx, [[*plan.create[:-1], "--clear", plan.create[-1]],
                             install_built(sys.executable, plan, wheels)],
                       "ci-install", "CI wheel install")
    if problem:
        return problem
    code, output = runner.run(plan.purelib_query, cwd=None, env=ctx.settings,
                              log=ctx.path("logs/ci-purelib.log"))
    purelib = next((line for line in reversed(output.splitlines()) if Path(line).is_dir()), None)
    if code != 0 or purelib is None:
        return f"the CI venv's site-packages query failed (exit {code}): {output.strip()[-300:]}"
    sites = ("import sys, json; print(json.dumps([p for p in sys.path "
             "if p.endswith(('site-packages', 'dist-packages'))]))")
    code, lent = runner.run([base, "-c", sites], cwd=None, env=ctx.settings,
                            log=ctx.path("logs/ci-lent.log"))
    try:
        dirs = json.loads(lent.strip().splitlines()[-1]) if code == 0 else []
    except (ValueError, IndexError):
        dirs = []
    pth, content = tools_pth(purelib, dirs)
    pth.write_text(content)
    ctx.data.python, ctx.data.path_head = plan.venv_python, str(Path(plan.venv_python).parent)
    return None
