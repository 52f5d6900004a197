"""The single-reproducer steps of the ``reproduce`` workflow (see ``workflow``), and the
helpers they share with Stage 3 (``ciflow``) and the batch sweep (``batchflow``).

Each step reads ``ctx.data``, runs what the seed says through ``runner`` (long runs as
``ctx.job`` background jobs, so every step is re-entrant), and hands what it saw to the
pure tables in ``stages``; the decision becomes a trigger. Stage 2 is in ``buildflow``,
the skip-marker re-run in ``unskipflow``, the verdict's extra fields in ``verdictflow``.

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
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flow.outcome import Go
from flow.reproduce import runner
from flow.reproduce.forms import Form, Reproducer, parse_reproducer
from flow.reproduce.profiles import Profile, load_profile
from flow.reproduce.stages import (
    Decision, Next, RerunWithoutSkip, StageMode, after_collect_only, stage1 as stage1_table,
    stage2 as stage2_table, stage3 as stage3_table,
)
from flow.reproduce.verdict import CannotVerify, NotReproduced, Stage

REPO_ROOT = Path(__file__).resolve().parents[2]
PROFILE_URL_ENV = "ORCHESTRATOR_REPRODUCE_INDEX_URL"
PYTHON_ENV = "ORCHESTRATOR_REPRODUCE_PYTHON"
OFFLINE_ENV = "ORCHESTRATOR_REPRODUCE_OFFLINE"


def reproduce_python(settings: Mapping[str, str]) -> str:
    """The interpreter of Stage 1 (see the module docstring): ``ORCHESTRATOR_REPRODUCE_PYTHON``
    made absolute (symlinks kept), else ``sys.executable``."""
    value = settings.get(PYTHON_ENV)
    return os.path.abspath(os.path.expanduser(value)) if value else sys.executable


def check_python(settings: Mapping[str, str]) -> None:
    """Raise WorkflowInputError when ``ORCHESTRATOR_REPRODUCE_PYTHON`` is set but is not an
    executable file (checked at start, before anything is written)."""
    from flow.errors import WorkflowInputError

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


def launcher(ctx: Any) -> runner.Launch:
    """Long runs as background jobs the flow owns (``ctx.job``: memoized per phase visit
    and key, so a step re-run on --resume gets the recorded result); in the foreground
    for a context without jobs (a unit test's)."""
    job = getattr(ctx, "job", None)
    if job is None:
        return runner.foreground

    def launch(key: str, argv: list[str], log: Path, env: Any, timeout: float,
               cwd: str | None = None) -> Any:
        base = Path(ctx.dir).resolve()
        name = str(log.relative_to(base)) if log.is_relative_to(base) else f"logs/{key}.log"
        return job(key, argv, log_name=name, env=env, timeout=timeout, cwd=cwd)
    return launch


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
    problem = run_each(ctx, recipes, "prepare", f"prepare of the tree at {tree}")
    if problem:
        return problem
    ctx.data.tree = tree
    return None


def prepare(ctx: Any) -> Any:
    """needs_tree per the seed's table, the tree, and the cwd rules (never inside a tree)."""
    profile, rep = profile_of(ctx), reproducer(ctx)
    if rep.needs_tree or ctx.data.source_dir:
        problem = prepare_tree(ctx, profile, rep)
        if problem:
            return blocked(ctx, Stage.NIGHTLY, problem)
    problem = place(ctx, profile, rep)
    if problem:
        return blocked(ctx, Stage.NIGHTLY, problem)
    ctx.data.python = interpreter(ctx)
    ctx.data.path_head = str(Path(ctx.data.python).parent)
    return Go("prepared")


def place(ctx: Any, profile: Profile, rep: Reproducer) -> str | None:
    """Set ``cwd`` and ``pytest_args`` for the tree in ``ctx.data.tree`` (the seed's cwd
    rules, never inside a tree); returns a blocker or None. Touches no file."""
    from flow.reproduce.errors import InTreeImportTrap, UnresolvedNodeId
    from flow.reproduce.wheels import choose_cwd

    try:
        choice = choose_cwd(rep, scratch=scratch(ctx), tree=ctx.data.tree,
                            package=profile.import_package,
                            **({"xpu_ops_subdir": profile.xpu_ops_subdir} if profile.xpu_ops_subdir else {}))
    except (InTreeImportTrap, UnresolvedNodeId) as exc:
        return str(exc)
    ctx.data.cwd = choice.cwd
    ctx.data.pytest_args = choice.pytest_args if choice.pytest_args is not None else rep.pytest_args
    return None


def collect(ctx: Any) -> Any:
    """The collect-only check (pytest form): collected 0 items stops every stage."""
    rep = reproducer(ctx)
    if rep.form is not Form.PYTEST:
        return Go("collected")
    if profile_of(ctx).nightly.kind == "current":
        # Stage 1 installs nothing, so its one pytest run is the collect check too:
        # "no tests ran" there is NO_REPRODUCER(collected_zero) by the same rules.
        return Go("collected")
    outcome = runner.collect(rep, python=ctx.data.python, cwd=ctx.data.cwd,
                             pytest_args=ctx.data.pytest_args or [], env=env_of(ctx),
                             log=ctx.path("logs/collect.log"), launch=launcher(ctx),
                             timeout=run_timeout(ctx))
    verdict = after_collect_only(outcome)
    if verdict is not None:
        ctx.data.verdict = verdict.model_dump(mode="json")
        return Go("decided")
    return Go("collected")


def installed_versions(ctx: Any, packages: list[str]) -> dict[str, str]:
    """{package: version} in the Stage 1 interpreter (``interpreter``); {} when the
    query fails. The JSON line is searched from the end: stderr (a warning) is appended
    after stdout."""
    import json

    from flow.reproduce.wheels import versions_query

    _, output = runner.run(versions_query(interpreter(ctx), packages),
                           cwd=scratch(ctx), env=ctx.settings, log=ctx.path("logs/versions.log"))
    for line in reversed(output.splitlines()):
        try:
            found = json.loads(line)
        except ValueError:
            continue
        if isinstance(found, dict):
            return {str(k): str(v) for k, v in found.items()}
    return {}


def install_nightly(ctx: Any, profile: Profile) -> str | None:
    """Stage 1's install into ``interpreter``'s environment: the profile's packages;
    when they are not all from one build day, uninstall them and reinstall them together,
    then read the versions again and note the outcome. Records the versions.
    ``kind=current`` installs nothing. Returns a blocker (a failed pip run, or a set still
    mixed after the reinstall, naming the versions) or None."""
    from flow.reproduce.wheels import install_plan, listed, pip_for, pip_install, same_build_day

    nightly, pip = profile.nightly, pip_for(interpreter(ctx))
    if nightly.kind == "index":
        problem = run_each(ctx, [pip_install(pip, nightly.packages, index_url=nightly.index_url,
                                             pre=nightly.pre, upgrade=True)],
                           "install", "nightly install", cwd=scratch(ctx))
        if problem:
            return problem
    if nightly.kind == "current" and not nightly.same_day_check:
        return None  # nothing installed: the verdict's environment probe reads the versions
    installed = installed_versions(ctx, nightly.packages)
    ctx.data.installed_versions = installed
    if not nightly.same_day_check:
        return None
    check = same_build_day(installed, nightly.packages)
    if check.ok:
        return None
    problem = run_each(ctx, install_plan(pip, check, nightly.packages,
                                         index_url=nightly.index_url, pre=nightly.pre),
                       "reinstall", f"reinstall of {nightly.packages}", cwd=scratch(ctx))
    if problem:
        return problem
    installed = installed_versions(ctx, nightly.packages)
    ctx.data.installed_versions = installed
    again = same_build_day(installed, nightly.packages)
    now = (f"now one build day ({listed(installed, nightly.packages)})" if again.ok
           else f"still {again.reason}")
    ctx.data.notes.append(f"nightly: after install, {check.reason}; uninstalled and reinstalled "
                          f"together: {now}")
    if not again.ok:
        return (f"the nightly set is still not from one build day after uninstalling and "
                f"reinstalling it together: {listed(installed, nightly.packages)}; the index "
                "may not have all wheels of the newest day yet, retry later")
    return None


def exercise(ctx: Any, profile: Profile, label: str, *, aligned: bool = False) -> runner.Exercise:
    """One run of the reproducer; ``aligned`` adds what Stage 3 folded from the CI job log."""
    rep = reproducer(ctx)
    align = ctx.data.ci_env if aligned else {}
    return runner.exercise(rep, cwd=ctx.data.cwd, pytest_args=ctx.data.pytest_args,
                           settings=ctx.settings, log=ctx.path(f"logs/{label}.log"),
                           failure_pattern=ctx.data.failure_pattern,
                           markers=tuple(profile.skip_markers), python=ctx.data.python,
                           bin_dir=ctx.data.path_head, bypass=ctx.data.bypass,
                           activate=profile.activate, launch=launcher(ctx),
                           timeout=run_timeout(ctx, profile), key=label,
                           extra_env=align.get("env") or None,
                           pytest_timeout=align.get("timeout"),
                           exitfirst=bool(align.get("exitfirst")))


def table(ctx: Any, stage: str, ran: runner.Exercise, label: str = "the nightly wheel") -> Decision:
    mode = StageMode(ctx.data.stage)
    done = ctx.data.rerun_done
    if stage == Stage.NIGHTLY:
        return stage1_table(ran.outcome, mode, ran.refined, rerun_done=done, label=label)
    if stage == Stage.SOURCE_BUILD:
        return stage2_table(ran.outcome, ctx.data.base, ran.refined, rerun_done=done)
    return stage3_table(ran.outcome, ran.refined, rerun_done=done, label=label)


def attempts(ctx: Any, profile: Profile, label: str, *, aligned: bool = False) -> runner.Exercise:
    """Run the reproducer up to ``--repeat`` times (one run by default). Every attempt
    runs unless one is blocked (that one decides: a timeout or an infra cause is never
    averaged away). Any failing attempt makes the stage's outcome FAILED; the counts go
    to ``ctx.data.attempt_counts`` and the last deciding run's exit code to ``last_exit``."""
    from flow.reproduce.interpret import Outcome

    runs: list[runner.Exercise] = []
    repeat = max(1, ctx.data.repeat)
    for i in range(repeat):
        ran = exercise(ctx, profile, label if repeat == 1 else f"{label}-attempt{i + 1}",
                       aligned=aligned)
        runs.append(ran)
        if ran.outcome.kind not in (Outcome.FAILED, Outcome.PASSED):
            break
    failed = [r for r in runs if r.outcome.kind is Outcome.FAILED]
    chosen = failed[0] if failed else runs[-1]
    ctx.data.attempt_counts = {"attempts": len(runs), "failures": len(failed)}
    ctx.data.last_exit = chosen.exit_code
    if len(runs) > 1:
        ctx.data.notes.append(f"{label}: {len(failed)} of {len(runs)} attempts failed")
    return chosen


def decide(ctx: Any, profile: Profile, stage: str, label: str) -> Decision:
    """Run the reproducer and read the stage's table. Stage 3 runs it as written first and,
    only when that passes, once more with the env and flags folded from the CI job log
    (seed: "What to check if the failure still doesn't reproduce")."""
    decision = table(ctx, stage, attempts(ctx, profile, label), profile.nightly_label)
    align = ctx.data.ci_env
    if stage == Stage.CI_ENV and isinstance(decision, NotReproduced) and any(align.values()):
        ctx.data.notes.append(f"{label}: passes as written; re-ran with the CI job log's "
                              f"{align}")
        decision = table(ctx, stage, attempts(ctx, profile, f"{label}-aligned", aligned=True),
                         profile.nightly_label)
    return decision


def act(ctx: Any, decision: Decision, *, from_unskip: bool = False) -> Go:
    """A decision as a trigger; a skip-marker re-run records what it will do first."""
    if isinstance(decision, RerunWithoutSkip):
        ctx.data.skipped_exit = ctx.data.last_exit
        from flow.reproduce.unskipflow import plan as unskip_plan

        problem = unskip_plan(ctx, profile_of(ctx))
        if problem:
            return blocked(ctx, Stage(ctx.data.current_stage), problem)
        return Go("unskip")
    if isinstance(decision, Next):
        ctx.data.current_stage = decision.stage.value
        ctx.data.rerun_done = False
        ctx.data.bypass = None
        ctx.data.unskipped = None
        if from_unskip:
            return Go("to_stage2" if decision.stage is Stage.SOURCE_BUILD else "to_stage3")
        return Go("next")
    from flow.reproduce.verdictflow import finalize

    ctx.data.verdict = finalize(ctx, decision).model_dump(mode="json")
    return Go("decided")


def stage1(ctx: Any) -> Any:
    """Stage 1: install the nightly, run any setup steps, run the reproducer, decide."""
    profile, rep = profile_of(ctx), reproducer(ctx)
    ctx.data.current_stage = Stage.NIGHTLY.value
    problem = install_nightly(ctx, profile)
    if problem:
        return blocked(ctx, Stage.NIGHTLY, problem)
    problem = runner.run_setup(rep, cwd=scratch(ctx), env=env_of(ctx),
                               log=ctx.path("logs/setup.log"), launch=launcher(ctx),
                               timeout=run_timeout(ctx, profile))
    if problem:
        return blocked(ctx, Stage.NIGHTLY, problem)
    return act(ctx, decide(ctx, profile, Stage.NIGHTLY, "stage1"))


# Steps and helpers kept in their own modules (imported last: they use the ones above).
from flow.reproduce.buildflow import source_build, stage2  # noqa: E402
from flow.reproduce.unskipflow import unskip  # noqa: E402

__all__ = ["source_build", "stage2", "unskip"]
