"""What a verdict says beyond the seed's fields, for a fix-verifier: the environment it was reached
in, what a fix-verifier runs before ``refined_command``, the self-check, the skip marker
taken off and the attempt counts. ``finalize`` is applied to every REPRODUCED and
NOT_REPRODUCED decision (``stepsflow.act``).
"""
from __future__ import annotations

import sys
from typing import Any

from flow.workflows.reproduce.context import interpreter, profile_of, scratch
from flow.workflows.reproduce.profiles import Profile
from flow.workflows.reproduce.run import runner
from flow.workflows.reproduce.verdict.models import NotReproduced, Stage


def finalize(ctx: Any, verdict: Any) -> Any:
    """The table's verdict with what a fix-verifier needs beside the seed's fields: the
    environment, rerun_after_fix, the self-check, unskipped and the attempt counts; the
    local profile's base is the tree's HEAD (``working-tree`` when it is no git repo)."""
    from flow.workflows.reproduce.verdict.models import WORKING_TREE, Reproduced, SelfCheck

    if not isinstance(verdict, (Reproduced, NotReproduced)):
        return verdict
    profile = profile_of(ctx)
    env = describe_environment(ctx, profile)
    counts = ctx.data.attempt_counts or {"attempts": 1, "failures": 1}
    if isinstance(verdict, NotReproduced):
        return verdict.model_copy(update={"environment": env.model_dump(mode="json"),
                                          "attempts": counts["attempts"]})
    update: dict[str, Any] = {"environment": env.model_dump(mode="json")}
    if profile.tree is None and ctx.data.source_dir and verdict.base == "origin/main" \
            and verdict.stage != Stage.CI_ENV:
        update["base"] = env.tree.head if env.tree and env.tree.git and env.tree.head else WORKING_TREE
    update["rerun_after_fix"] = rerun_after_fix(ctx, profile, env, verdict.stage)
    home = runner.clean_env(ctx.settings)["HOME"]
    exit_code = ctx.data.last_exit if ctx.data.last_exit is not None else 1
    update["self_check"] = SelfCheck(env=f"PATH={runner.CLEAN_PATH} HOME={home}",
                                     exit_code=exit_code, fails=exit_code != 0)
    if ctx.data.unskipped:
        update["unskipped"] = ctx.data.unskipped
    n, failures = counts["attempts"], counts["failures"]
    update.update(attempts=n, failures=failures, flaky=0 < failures < n,
                  failure_rate=round(failures / n, 3) if n > 1 else None)
    return verdict.model_copy(update=update)


def describe_environment(ctx: Any, profile: Profile) -> Any:
    """``envinfo.Environment`` of the stage's interpreter and the source tree."""
    from flow.workflows.reproduce.verdict import environment as envinfo

    python = ctx.data.python or interpreter(ctx)
    project = profile.project or envinfo.project_name(ctx.data.source_dir)
    packages = list(dict.fromkeys([*profile.nightly.packages, *([project] if project else [])]))
    if envinfo.is_this_interpreter(python):
        output = envinfo.probe_here(packages)
    else:
        _, output = runner.query(envinfo.probe_argv(python, packages), cwd=scratch(ctx),
                                 env=runner.clean_env(ctx.settings))
    where = ctx.data.source_dir or ctx.data.tree
    tree = None
    if where:
        tree = envinfo.tree_state(where, lambda argv: runner.query(argv, env=ctx.settings))
    env = envinfo.read_probe(python, output, project, packages, tree)
    if not ctx.data.installed_versions:
        ctx.data.installed_versions = {n: v for n, v in env.packages.items()
                                       if n in profile.nightly.packages}
    return env


def rerun_after_fix(ctx: Any, profile: Profile, env: Any, stage: Stage) -> str:
    """What a fix-verifier runs before refined_command (``envinfo.rerun_after_fix``)."""
    from flow.workflows.reproduce.verdict import environment as envinfo

    built_elsewhere = profile.source_build.kind == "skill" or profile.nightly.kind == "index"
    note = profile.source_build.rerun_after_fix if built_elsewhere else None
    if note is None and env.project_install == "installed" and ctx.data.source_dir:
        ours = str(ctx.dir) in env.interpreter  # a venv of this flow has no pip of its own
        pip = ([sys.executable, "-m", "pip", "--python", env.interpreter] if ours
               else [env.interpreter, "-m", "pip"])
        import shlex

        return " ".join(shlex.quote(w) for w in [*pip, "install", "--no-deps",
                                                  "--force-reinstall", ctx.data.source_dir])
    return envinfo.rerun_after_fix(env, ctx.data.source_dir, note or None)
