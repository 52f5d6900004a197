"""The single-reproducer steps of the ``reproduce`` workflow (see ``workflow``).

Each step reads ``ctx.data``, runs what the seed says through ``runner``/``ci_fetch``, and
hands what it saw to the pure tables in ``stages``; the decision becomes a trigger.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

from flow.outcome import Ask, Go, Task
from flow.reproduce import runner
from flow.reproduce.forms import Form, Reproducer, parse_reproducer
from flow.reproduce.profiles import Profile, load_profile
from flow.reproduce.stages import (
    BuildStep, Decision, Next, RerunWithoutSkip, StageMode, after_collect_only, stage1 as stage1_table,
    stage2 as stage2_table, stage2_build, stage3 as stage3_table,
)
from flow.reproduce.verdict import CannotVerify, Stage

REPO_ROOT = Path(__file__).resolve().parents[2]
PROFILE_URL_ENV = "ORCHESTRATOR_REPRODUCE_INDEX_URL"


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


def prepare_tree(ctx: Any, profile: Profile, rep: Reproducer) -> str | None:
    """Prepare's tree (seed: "Get the pytorch tree"); returns a blocker or None.

    local: the --source-dir as is. Profiles with git recipes: fetch a given tree, or clone
    into the workspace's scratch dir; then detach at origin/main and update submodules."""
    if profile.tree is None:
        ctx.data.tree = ctx.data.source_dir
        if ctx.data.tree is None and rep.needs_tree:
            return "the reproducer needs a source tree: pass --source-dir DIR"
        return None
    from flow.reproduce.commands import fill

    tree = ctx.data.source_dir or str(ctx.root / (profile.source_build.scratch_subdir or "tree"))
    recipes = []
    if not Path(tree, ".git").exists():
        recipes.append(fill(profile.tree.clone, clone_url=profile.source_build.clone_url or "",
                            tree=tree))
    recipes += [fill(r, tree=tree) for r in (profile.tree.fetch, profile.tree.detach_main,
                                              profile.tree.submodules)]
    for i, argv in enumerate(recipes):
        code, output = runner.run(argv, cwd=None, env=ctx.settings,
                                  log=ctx.path(f"logs/prepare-{i}.log"))
        if code != 0:
            return f"prepare: {' '.join(argv[:4])} failed (exit {code}): {output.strip()[-300:]}"
    ctx.data.tree = tree
    return None


def prepare(ctx: Any) -> Any:
    """needs_tree per the seed's table, the tree, and the cwd rules (never inside a tree)."""
    from flow.reproduce.errors import InTreeImportTrap, UnresolvedNodeId
    from flow.reproduce.wheels import choose_cwd

    profile, rep = profile_of(ctx), reproducer(ctx)
    if rep.needs_tree or ctx.data.source_dir:
        problem = prepare_tree(ctx, profile, rep)
        if problem:
            return blocked(ctx, Stage.NIGHTLY, problem)
    try:
        choice = choose_cwd(rep, scratch=scratch(ctx), tree=ctx.data.tree,
                            package=profile.import_package,
                            **({"xpu_ops_subdir": profile.xpu_ops_subdir} if profile.xpu_ops_subdir else {}))
    except (InTreeImportTrap, UnresolvedNodeId) as exc:
        return blocked(ctx, Stage.NIGHTLY, str(exc))
    ctx.data.cwd = choice.cwd
    ctx.data.pytest_args = choice.pytest_args if choice.pytest_args is not None else rep.pytest_args
    ctx.data.python = sys.executable
    ctx.data.path_head = str(Path(sys.executable).parent)
    return Go("prepared")


def collect(ctx: Any) -> Any:
    """The collect-only check (pytest form): collected 0 items stops every stage."""
    rep = reproducer(ctx)
    if rep.form is not Form.PYTEST:
        return Go("collected")
    outcome = runner.collect(rep, python=ctx.data.python, cwd=ctx.data.cwd,
                             pytest_args=ctx.data.pytest_args or [], env=env_of(ctx),
                             log=ctx.path("logs/collect.log"))
    verdict = after_collect_only(outcome)
    if verdict is not None:
        ctx.data.verdict = verdict.model_dump(mode="json")
        return Go("decided")
    return Go("collected")


def install_nightly(ctx: Any, profile: Profile) -> str | None:
    """Stage 1's install: the profile's packages (same build day, else reinstalled together);
    records the versions. ``kind=current`` installs nothing. Returns a blocker or None."""
    import json

    from flow.reproduce.wheels import install_plan, pip_for, pip_install, same_build_day, versions_query

    nightly, pip = profile.nightly, pip_for(sys.executable)
    commands = []
    if nightly.kind == "index":
        commands.append(pip_install(pip, nightly.packages, index_url=nightly.index_url,
                                    pre=nightly.pre, upgrade=True))
    for i, argv in enumerate(commands):
        code, output = runner.run(argv, cwd=scratch(ctx), env=ctx.settings,
                                  log=ctx.path(f"logs/install-{i}.log"))
        if code != 0:
            return f"nightly install failed (exit {code}): {output.strip()[-300:]}"
    code, output = runner.run(versions_query(sys.executable, nightly.packages), cwd=scratch(ctx),
                              env=ctx.settings, log=ctx.path("logs/versions.log"))
    installed = json.loads(output.strip().splitlines()[-1]) if code == 0 else {}
    if nightly.same_day_check:
        check = same_build_day(installed, nightly.packages)
        for i, argv in enumerate(install_plan(pip, check, nightly.packages,
                                              index_url=nightly.index_url, pre=nightly.pre)):
            code, output = runner.run(argv, cwd=scratch(ctx), env=ctx.settings,
                                      log=ctx.path(f"logs/reinstall-{i}.log"))
            if code != 0:
                return f"reinstall of {nightly.packages} failed (exit {code}): {output.strip()[-300:]}"
        if not check.ok:
            code, output = runner.run(versions_query(sys.executable, nightly.packages),
                                      cwd=scratch(ctx), env=ctx.settings,
                                      log=ctx.path("logs/versions.log"))
            installed = json.loads(output.strip().splitlines()[-1]) if code == 0 else {}
    ctx.data.installed_versions = installed
    return None


def exercise(ctx: Any, profile: Profile, label: str) -> runner.Exercise:
    rep = reproducer(ctx)
    align = ctx.data.ci_env
    return runner.exercise(rep, cwd=ctx.data.cwd, pytest_args=ctx.data.pytest_args,
                           env=env_of(ctx), log=ctx.path(f"logs/{label}.log"),
                           failure_pattern=ctx.data.failure_pattern,
                           markers=tuple(profile.skip_markers),
                           extra_env=align.get("env") or None, timeout=align.get("timeout"),
                           exitfirst=bool(align.get("exitfirst")))


def table(ctx: Any, stage: str, ran: runner.Exercise) -> Decision:
    mode = StageMode(ctx.data.stage)
    done = ctx.data.rerun_done
    if stage == Stage.NIGHTLY:
        return stage1_table(ran.outcome, mode, ran.refined, rerun_done=done)
    if stage == Stage.SOURCE_BUILD:
        return stage2_table(ran.outcome, ctx.data.base, ran.refined, rerun_done=done)
    return stage3_table(ran.outcome, ran.refined, rerun_done=done)


def act(ctx: Any, decision: Decision, *, from_unskip: bool = False) -> Go:
    """A decision as a trigger; a skip-marker re-run records the pending restore first."""
    if isinstance(decision, RerunWithoutSkip):
        found = runner.node_target(ctx.data.pytest_args, ctx.data.cwd)
        if found is None:
            return blocked(ctx, Stage(ctx.data.current_stage),
                           "skipped by an XPU marker, but no single test file::test target to "
                           "remove it from; give the node id")
        from flow.reproduce.skipmarker import PendingRestore

        ctx.data.pending_restore = PendingRestore.of(found[0], found[0].read_bytes())
        return Go("unskip")
    if isinstance(decision, Next):
        ctx.data.current_stage = decision.stage.value
        ctx.data.rerun_done = False
        if from_unskip:
            return Go("to_stage2" if decision.stage is Stage.SOURCE_BUILD else "to_stage3")
        return Go("next")
    ctx.data.verdict = decision.model_dump(mode="json")
    return Go("decided")


def stage1(ctx: Any) -> Any:
    """Stage 1: install the nightly, run any setup steps, run the reproducer, decide."""
    profile, rep = profile_of(ctx), reproducer(ctx)
    ctx.data.current_stage = Stage.NIGHTLY.value
    problem = install_nightly(ctx, profile)
    if problem:
        return blocked(ctx, Stage.NIGHTLY, problem)
    problem = runner.run_setup(rep, cwd=scratch(ctx), env=env_of(ctx), logs=ctx.path("logs"))
    if problem:
        return blocked(ctx, Stage.NIGHTLY, problem)
    return act(ctx, table(ctx, Stage.NIGHTLY, exercise(ctx, profile, "stage1")))


def unskip(ctx: Any) -> Any:
    """Take the XPU skip marker off the target test, re-run once, restore the file, decide.
    The file was restored by the step wrapper already if a previous try was interrupted."""
    from flow.reproduce.errors import SkipMarkerNotFound
    from flow.reproduce.skipmarker import remove_skip_marker, restore, write_atomic

    profile, pending = profile_of(ctx), ctx.data.pending_restore
    stage = ctx.data.current_stage
    found = runner.node_target(ctx.data.pytest_args, ctx.data.cwd)
    try:
        if pending is None or found is None:  # the test file went away since act() saw it
            raise SkipMarkerNotFound(f"no test file for {ctx.data.pytest_args} under "
                                     f"{ctx.data.cwd} any more", target=str(ctx.data.pytest_args))
        removal = remove_skip_marker(pending.original(), found[1], tuple(profile.skip_markers))
    except SkipMarkerNotFound as exc:
        ctx.data.pending_restore = None
        return blocked(ctx, Stage(stage), f"skipped, but the XPU marker cannot be removed: {exc}")
    try:
        write_atomic(pending.path, removal.modified)
        ran = exercise(ctx, profile, f"{stage}-unskipped")
    finally:
        restore(pending)
    ctx.data.pending_restore = None
    ctx.data.rerun_done = True
    ctx.data.notes.append(f"{stage}: re-ran without {removal.removed} on {removal.function}; "
                          f"file restored")
    return act(ctx, table(ctx, stage, ran), from_unskip=True)


def _build_task(ctx: Any, profile: Profile, key: str, commit: str | None) -> Task:
    if profile.source_build.kind == "venv":
        argv = [sys.executable, "-m", "flow.reproduce.localbuild", "--source",
                ctx.data.source_dir, "--work", str(ctx.path("build"))]
        argv += ["--commit", commit] if commit else []
        return Task(key=key, role="runner", feed="run", command=argv, cwd=str(REPO_ROOT),
                    prompt=f"Build {ctx.data.source_dir} into a fresh venv"
                           f"{' at ' + commit if commit else ''} (Stage 2 source build).",
                    timeout_ms=3_600_000, max_attempts=1)
    where = f"the tree at {ctx.data.tree} (detached at {commit or 'origin/main'})"
    return Task(key=key, role="runner", feed="build", max_attempts=1,
                prompt=f"Load the {profile.source_build.skill} skill and follow it to build "
                       f"{where}. Do not run the reproducer. Feed ok=true when the build "
                       "succeeded, ok=false with the failing step in detail otherwise.")


def _build_ok(ctx: Any, profile: Profile, key: str) -> bool | None:
    res = ctx.result(key)
    if res is None:
        return None
    if profile.source_build.kind == "venv":
        return res.exit_code == 0 and (ctx.dir / "build/venv/bin/python").exists()
    return bool(res.ok)


def stage2(ctx: Any) -> Any:
    """Stage 2: build origin/main (a run task), fall back once to ci_commit, run, decide."""
    profile = profile_of(ctx)
    ctx.data.current_stage = Stage.SOURCE_BUILD.value
    if profile.source_build.kind == "venv" and not ctx.data.source_dir:
        return blocked(ctx, Stage.SOURCE_BUILD, "no source dir to build: pass --source-dir DIR")
    if ctx.data.trunk_ok is None:
        ctx.data.trunk_ok = _build_ok(ctx, profile, "build-trunk")
    if ctx.data.trunk_ok is False and ctx.data.fallback_ok is None:
        ctx.data.fallback_ok = _build_ok(ctx, profile, "build-fallback")
    plan = stage2_build(ctx.data.trunk_ok, ctx.data.ci_commit, ctx.data.fallback_ok)
    if isinstance(plan, CannotVerify):
        return act(ctx, plan)
    if plan.step is BuildStep.BUILD_TRUNK:
        return Ask([_build_task(ctx, profile, "build-trunk", None)], extra={"stage": "source_build"})
    if plan.step is BuildStep.FALL_BACK:
        if profile.tree is not None:
            from flow.reproduce.commands import fill

            for i, tpl in enumerate((profile.tree.fallback_detach, profile.tree.submodules)):
                argv = fill(tpl, tree=ctx.data.tree or "", ci_commit=plan.base)
                code, output = runner.run(argv, cwd=None, env=ctx.settings,
                                          log=ctx.path(f"logs/fallback-{i}.log"))
                if code != 0:
                    return blocked(ctx, Stage.SOURCE_BUILD, f"checkout of ci_commit failed: "
                                                            f"{output.strip()[-300:]}")
        return Ask([_build_task(ctx, profile, "build-fallback", plan.base)],
                   extra={"stage": "source_build", "fallback": plan.base})
    ctx.data.base = plan.base
    if profile.source_build.kind == "venv":
        ctx.data.python = str((ctx.dir / "build/venv/bin/python"))
        ctx.data.path_head = str((ctx.dir / "build/venv/bin"))
    return act(ctx, table(ctx, Stage.SOURCE_BUILD, exercise(ctx, profile, "stage2")))


def stage3(ctx: Any) -> Any:
    """Stage 3: clean stage-2 outputs, find and fetch CI wheels, install them, align the
    tree, fold the CI job log's env and flags into the command, run, decide."""
    from flow.reproduce import ci_fetch, ci_env

    profile, rep = profile_of(ctx), reproducer(ctx)
    ctx.data.current_stage = Stage.CI_ENV.value
    if ctx.data.tree and profile.tree is not None:
        from flow.reproduce.commands import fill

        for i, tpl in enumerate(profile.tree.clean):
            runner.run(fill(tpl, tree=ctx.data.tree), cwd=None, env=ctx.settings,
                       log=ctx.path(f"logs/clean-{i}.log"))
    explicit = ctx.data.ci_repo
    if profile.ci_env.pytorch is None:  # local: the profile's (or --ci-repo's) repository
        candidates, override = None, explicit if explicit and "/" in explicit else None
    else:
        given = ci_env.CiRepo(explicit) if explicit in {c.value for c in ci_env.CiRepo} else None
        candidates, override = ci_env.infer_ci_repo(rep, given, ctx.data.tree), None
    wheels_dir = ctx.path("ci_env/wheels")
    got = ci_fetch.fetch(profile, candidates, override, ctx.settings, wheels_dir)
    if isinstance(got, CannotVerify):
        return act(ctx, got)
    ctx.data.ci_image = got.image
    ctx.data.notes += [f"ci_env: run {got.run_id} of {got.repo} (Path {got.path}, {got.head_sha})",
                       *got.notes]
    problem = install_ci(ctx, profile, got.wheels)
    if problem:
        return blocked(ctx, Stage.CI_ENV, problem)
    target = (ctx.data.pytest_args or [rep.script or ""])[-1] if rep.step_is_pytest or rep.script else None
    align = ci_env.fold_job_log(got.job_log, target, tuple(profile.ci_env.env_var_patterns)
                                or ci_env.DEFAULT_ENV_PATTERNS)
    ctx.data.ci_env = align.model_dump(mode="json") if rep.step_is_pytest else {"env": align.env}
    return act(ctx, table(ctx, Stage.CI_ENV, exercise(ctx, profile, "stage3")))


def install_ci(ctx: Any, profile: Profile, wheels: list[str]) -> str | None:
    """Install the CI wheels: into a fresh venv (local profile), else uninstall the stack
    and force-install into the current environment, then align the tree to the wheel."""
    from flow.reproduce.commands import fill
    from flow.reproduce.wheels import pip_for, pip_install, pip_uninstall

    if profile.source_build.kind == "venv":
        from flow.reproduce.sourcebuild import install_built, pytest_script, tools_pth, venv_plan
        import sysconfig

        work = ctx.path("ci_env")
        shutil.rmtree(work / "venv", ignore_errors=True)
        plan = venv_plan(sys.executable, "-", work)
        commands = [plan.create, install_built(sys.executable, plan, wheels)]
        for i, argv in enumerate(commands):
            code, output = runner.run(argv, cwd=None, env=ctx.settings,
                                      log=ctx.path(f"logs/ci-install-{i}.log"))
            if code != 0:
                return f"CI wheel install failed (exit {code}): {output.strip()[-300:]}"
        code, purelib = runner.run(plan.purelib_query, cwd=None, env=ctx.settings,
                                   log=ctx.path("logs/ci-purelib.log"))
        pth, content = tools_pth(purelib.strip().splitlines()[-1], [sysconfig.get_path("purelib")])
        pth.write_text(content)
        script, body = pytest_script(plan)
        script.write_text(body)
        script.chmod(0o755)
        ctx.data.python, ctx.data.path_head = plan.venv_python, str(Path(plan.venv_python).parent)
        return None
    pip = pip_for(sys.executable)
    commands = [pip_uninstall(pip, profile.ci_env.uninstall),
                pip_install(pip, wheels, force_reinstall=True)]
    for i, argv in enumerate(commands):
        code, output = runner.run(argv, cwd=None, env=ctx.settings,
                                  log=ctx.path(f"logs/ci-install-{i}.log"))
        if code != 0 and i == 1:
            return f"CI wheel install failed (exit {code}): {output.strip()[-300:]}"
    ctx.data.python, ctx.data.path_head = sys.executable, str(Path(sys.executable).parent)
    if ctx.data.tree and profile.tree is not None:
        code, sha = runner.run(fill(profile.tree.wheel_commit_query, python=sys.executable),
                               cwd=ctx.path("scratch"), env=ctx.settings,
                               log=ctx.path("logs/wheel-commit.log"))
        try:
            recipes = [fill(profile.tree.fetch, tree=ctx.data.tree),
                       fill(profile.tree.align, tree=ctx.data.tree,
                            wheel_commit=sha.strip().splitlines()[-1] if sha.strip() else ""),
                       fill(profile.tree.submodules, tree=ctx.data.tree)]
        except ValueError as exc:
            return f"cannot align the tree to the CI wheel: {exc}"
        for i, argv in enumerate(recipes):
            code, output = runner.run(argv, cwd=None, env=ctx.settings,
                                      log=ctx.path(f"logs/align-{i}.log"))
            if code != 0:
                return f"aligning the tree failed (exit {code}): {output.strip()[-300:]}"
    return None
