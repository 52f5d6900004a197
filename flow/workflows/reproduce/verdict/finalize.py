"""What a verdict says beyond the seed's fields, for a fix-verifier: the environment it was reached
in, what a fix-verifier runs before ``refined_command``, the self-check, the skip marker
taken off and the attempt counts. ``finalize`` is applied to every REPRODUCED and
NOT_REPRODUCED decision (``stepsflow.act``).
"""
from __future__ import annotations

import sys
from typing import Any

from flow.workflows.reproduce.context import interpreter, profile_of
from flow.workflows.reproduce.profiles import Profile
from flow.workflows.reproduce.run.deciding import CLEAN_PATH, clean_env
from flow.workflows.reproduce.verdict.models import NotReproduced, Stage


def finalize(ctx: Any, verdict: Any) -> Any:
    """The table's verdict with what a fix-verifier needs beside the seed's fields: the
    environment, rerun_after_fix, the self-check, unskipped and the attempt counts; the
    local profile's base is the tree's HEAD (``working-tree`` when it is no git repo)."""
    from flow.workflows.reproduce.verdict.models import WORKING_TREE, Reproduced, SelfCheck

    if not isinstance(verdict, (Reproduced, NotReproduced)):
        return verdict
    profile = profile_of(ctx)
    env = describe_environment(ctx, profile, ctx.data.current_stage)
    counts = ctx.data.attempt_counts or {"attempts": 1, "failures": 1}
    if isinstance(verdict, NotReproduced):
        return verdict.model_copy(update={"environment": env.model_dump(mode="json"),
                                          "cwd_rule": ctx.data.cwd_rule,
                                          "attempts": counts["attempts"]})
    update: dict[str, Any] = {"environment": env.model_dump(mode="json"),
                              "cwd_rule": ctx.data.cwd_rule}
    if profile.tree is None and ctx.data.source_dir and verdict.base == "origin/main" \
            and verdict.stage != Stage.CI_ENV:
        update["base"] = env.tree.head if env.tree and env.tree.git and env.tree.head else WORKING_TREE
    update["rerun_after_fix"] = rerun_after_fix(ctx, profile, env, verdict.stage)
    home = clean_env(ctx.settings)["HOME"]
    exit_code = ctx.data.last_exit if ctx.data.last_exit is not None else 1
    update["self_check"] = SelfCheck(env=f"PATH={CLEAN_PATH} HOME={home}",
                                     exit_code=exit_code, fails=exit_code != 0)
    if ctx.data.unskipped:
        update["unskipped"] = ctx.data.unskipped
    n, failures = counts["attempts"], counts["failures"]
    update.update(attempts=n, failures=failures, flaky=0 < failures < n,
                  failure_rate=round(failures / n, 3) if n > 1 else None)
    return verdict.model_copy(update=update)


def with_environment(ctx: Any, verdict: dict[str, Any] | None) -> dict[str, Any] | None:
    """A CANNOT_VERIFY verdict (a collection error, a failed setup step, a timeout) with
    ``environment`` filled as every other verdict has it, once prepare chose the
    interpreter, and, when its blocker is a missing import, the ``hint`` that names the
    module and how to add it (``hints``); any other verdict as it is."""
    if not verdict or verdict.get("verdict") != "CANNOT_VERIFY":
        return verdict
    if not verdict.get("environment") and ctx.data.python:
        env = describe_environment(ctx, profile_of(ctx), verdict.get("stage") or Stage.NIGHTLY)
        verdict = {**verdict, "environment": env.model_dump(mode="json")}
    if not verdict.get("hint"):
        from flow.workflows.reproduce.verdict.hints import for_verdict

        found = for_verdict(ctx, verdict)
        if found:
            verdict = {**verdict, "hint": found}
    return verdict


def describe_environment(ctx: Any, profile: Profile, stage: Stage | str) -> Any:
    """``envinfo.Environment`` of the stage's interpreter and the tree the run used (the
    project identified from installed metadata; prepare's probe reused when it was of
    this interpreter). A Stage 1 verdict's tree is the one prepare found before any run
    (``tree_found``); Stage 2 and 3 change the tree (a build, a checkout at the wheel's
    commit), so theirs is read now. When the installed copy is not the tree, a note says
    so."""
    from flow.workflows.reproduce.prepare.steps import project_probe, read_tree
    from flow.workflows.reproduce.verdict import environment as envinfo

    python = ctx.data.python or interpreter(ctx)
    where = ctx.data.tree or ctx.data.source_dir
    other = other_tree(ctx, where)
    # the project is the one of the tree the reproducer ran in (a batch entry's own clone)
    project = profile.project or envinfo.project_name(other or ctx.data.source_dir)
    packages = list(dict.fromkeys([*profile.nightly.packages, *([project] if project else [])]))
    output = project_probe(ctx, profile, python, other)
    tree = None
    if other is not None:
        # the command cd'd into another git tree: that tree ran, so its HEAD is named
        tree = read_tree(ctx, other)
        note = (f"the reproducer ran in {ctx.data.cwd}, inside the git tree {other} (not "
                f"--source-dir {where}); the verdict names that tree's HEAD")
        if note not in ctx.data.notes:
            ctx.data.notes.append(note)
    elif where and ctx.data.tree_found and Stage(stage) is Stage.NIGHTLY:
        tree = envinfo.TreeState.model_validate(ctx.data.tree_found)
    elif where:
        tree = read_tree(ctx, where)
    env = envinfo.read_probe(python, output, project, packages, tree)
    # what the deciding run imported decides whether it ran other code than the tree
    env = envinfo.from_imports(env, ctx.data.imported, tree.path if tree else where)
    if env.project_install == "installed" and env.project_origin != "the tree" and where:
        note = (f"{env.project} {env.project_version} is installed from {env.project_origin}, "
                f"not from the tree {other or where}; a fix in the tree is not seen by that copy")
        if note not in ctx.data.notes:
            ctx.data.notes.append(note)
    if env.other_code and (env.project_install == "editable" or env.imported_from):
        note = (f"WARNING: this verdict ran other code than the tree: {env.other_code}; a fix "
                "in the tree is not seen until the tree is installed (rerun_after_fix)")
        if note not in ctx.data.notes:
            ctx.data.notes.append(note)
    if not ctx.data.installed_versions:
        ctx.data.installed_versions = {n: v for n, v in env.packages.items()
                                       if n in profile.nightly.packages}
    return env




def other_tree(ctx: Any, where: str | None) -> str | None:
    """The top of the git work tree the reproducer ran in (its ``cwd``, after the
    command's own ``cd``s) when that is not the source tree ``where``; None when it ran in
    the source tree, outside any git tree, or in the flow's own folder."""
    from pathlib import Path

    cwd = ctx.data.cwd
    if not cwd or not where or not Path(cwd).is_dir():
        return None
    here, source = Path(cwd).resolve(), Path(where).resolve()
    if here.is_relative_to(source) or here.is_relative_to(Path(ctx.dir).resolve()):
        return None
    got = ctx.query(["git", "-C", str(here), "rev-parse", "--show-toplevel"], env=ctx.settings)
    top = got.text.strip().splitlines()[-1] if got.code == 0 and got.text.strip() else ""
    if not top or Path(top).resolve() == source:
        return None
    return top


def rerun_after_fix(ctx: Any, profile: Profile, env: Any, stage: Stage) -> str:
    """What a fix-verifier runs before refined_command (``envinfo.rerun_after_fix``)."""
    from flow.workflows.reproduce.verdict import environment as envinfo

    built_elsewhere = profile.source_build.kind == "skill" or profile.nightly.kind == "index"
    note = profile.source_build.rerun_after_fix if built_elsewhere else None
    if note is None and env.project_install == "installed" and ctx.data.source_dir \
            and not envinfo.ran_the_tree(env) \
            and str(ctx.dir) in env.interpreter and not _has_pip(env.interpreter):
        # a CI-wheel venv of this flow has no pip of its own: the orchestrator's pip
        # (22.3 or later, it has --python) installs into it
        import shlex

        return " ".join(shlex.quote(w) for w in [
            sys.executable, "-m", "pip", "--python", env.interpreter, "install", "--no-deps",
            "--force-reinstall", fixed_tree(ctx, env) or ctx.data.source_dir])
    return envinfo.rerun_after_fix(env, fixed_tree(ctx, env), note or None)


def fixed_tree(ctx: Any, env: Any) -> str | None:
    """The tree a fix goes into: the git tree the reproducer ran in when it is another than
    --source-dir's (``describe_environment`` named it in ``env.tree``: a batch entry that
    ``cd``s into its own clone), else --source-dir."""
    from pathlib import Path

    where = ctx.data.tree or ctx.data.source_dir
    if env.tree is not None and where and Path(env.tree.path).resolve() != Path(where).resolve():
        return env.tree.path
    return ctx.data.source_dir


def _has_pip(python: str) -> bool:
    """The venv of ``python`` has pip in its own site-packages."""
    from pathlib import Path

    prefix = Path(python).parent.parent
    return any(prefix.glob("lib/python*/site-packages/pip/__init__.py"))
