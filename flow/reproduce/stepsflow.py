"""The single-reproducer steps of the ``reproduce`` workflow (see ``workflow``), and the
helpers they share with Stage 3 (``ciflow``) and the batch sweep (``batchflow``).

Each step reads ``ctx.data``, runs what the seed says through ``runner``, and hands what
it saw to the pure tables in ``stages``; the decision becomes a trigger.

Settings (``ctx.settings``, i.e. the environment):

- ``ORCHESTRATOR_REPRODUCE_INDEX_URL``: the nightly index (overrides the profile's
  ``nightly.index_url``).
- ``ORCHESTRATOR_REPRODUCE_PYTHON``: the interpreter whose environment Stage 1 installs
  the nightly into and runs the reproducer with (its bin dir leads PATH, so a bare
  ``python``/``pytest`` in the reproducer means it); also the environment Stage 3 installs
  the CI wheels into when the profile builds no venv, and the batch's build environment.
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

from flow.outcome import Ask, Go, Task
from flow.reproduce import runner
from flow.reproduce.forms import Form, Reproducer, parse_reproducer
from flow.reproduce.profiles import Profile, load_profile
from flow.reproduce.stages import (
    BuildStep, Decision, Next, RerunWithoutSkip, StageMode, after_collect_only, stage1 as stage1_table,
    stage2 as stage2_table, stage2_build, stage3 as stage3_table,
)
from flow.reproduce.verdict import CannotVerify, NotReproduced, Reproduced, Stage

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


def _unskip_plan(ctx: Any, profile: Profile, bypass: bool = True) -> str | None:
    """Prepare the skip-marker re-run; a blocker, or None. A pytest marker is bypassed with
    ``-p no:skipping`` (nothing edited; ``bypass=False`` after that did not work, e.g.
    under ``--strict-markers``); another marker is taken out of the file: the pending
    restore, with the hash of the edited bytes, is recorded (saved by the transition that
    follows) before the edit."""
    from flow.reproduce.errors import SkipMarkerNotFound
    from flow.reproduce.skipmarker import (
        PendingRestore, decorators, is_pytest_mark, marker_matches, remove_skip_marker,
    )

    found = runner.node_target(ctx.data.pytest_args, ctx.data.cwd)
    if found is None:
        return ("skipped by a skip marker, but no single test file::test target to remove it "
                "from; give the node id")
    path, node = found
    source = path.read_bytes()
    try:
        marks = [d for d in decorators(source, node)
                 if any(marker_matches(d.name, m) for m in profile.skip_markers)]
    except SkipMarkerNotFound as exc:
        return f"skipped, but the skip marker cannot be located: {exc}"
    first = marks[0] if marks else None
    if bypass and first is not None and all(is_pytest_mark(d.name) for d in marks):
        ctx.data.bypass = "-p no:skipping"
        ctx.data.unskipped = {"decorator": first.name, "file": str(path), "line": first.line,
                              "bypass": ctx.data.bypass}
        return None
    try:
        removal = remove_skip_marker(source, node, tuple(profile.skip_markers))
    except SkipMarkerNotFound as exc:
        return f"skipped, but the skip marker cannot be removed: {exc}"
    ctx.data.pending_restore = PendingRestore.of(path, source, removal.modified)
    ctx.data.unskipped = {"decorator": first.name if first else removal.removed[0],
                          "file": str(path), "line": first.line if first else 0, "bypass": None}
    return None


def act(ctx: Any, decision: Decision, *, from_unskip: bool = False) -> Go:
    """A decision as a trigger; a skip-marker re-run records what it will do first."""
    if isinstance(decision, RerunWithoutSkip):
        ctx.data.skipped_exit = ctx.data.last_exit
        problem = _unskip_plan(ctx, profile_of(ctx))
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
    ctx.data.verdict = finalize(ctx, decision).model_dump(mode="json")
    return Go("decided")


def finalize(ctx: Any, verdict: Any) -> Any:
    """The table's verdict with what issue 11 adds beside the seed's fields: the
    environment, rerun_after_fix, the self-check, unskipped and the attempt counts; the
    local profile's base is the tree's HEAD (``working-tree`` when it is no git repo)."""
    from flow.reproduce.verdict import WORKING_TREE, Reproduced, SelfCheck

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
    from flow.reproduce import envinfo

    python = ctx.data.python or interpreter(ctx)
    project = profile.project or envinfo.project_name(ctx.data.source_dir)
    packages = list(dict.fromkeys([*profile.nightly.packages, *([project] if project else [])]))
    if envinfo.is_this_interpreter(python):
        output = envinfo.probe_here(packages)
    else:
        _, output = runner.run(envinfo.probe_argv(python, packages), cwd=scratch(ctx),
                               env=runner.clean_env(ctx.settings),
                               log=ctx.path("logs/environment.log"))
    where = ctx.data.source_dir or ctx.data.tree
    tree = None
    if where:
        def git(argv: list[str]) -> tuple[int, str]:
            return runner.run(argv, cwd=None, env=dict(ctx.settings),
                              log=ctx.path("logs/tree-state.log"))
        tree = envinfo.tree_state(where, git)
    env = envinfo.read_probe(python, output, project, packages, tree)
    if not ctx.data.installed_versions:
        ctx.data.installed_versions = {n: v for n, v in env.packages.items()
                                       if n in profile.nightly.packages}
    return env


def rerun_after_fix(ctx: Any, profile: Profile, env: Any, stage: Stage) -> str:
    """What a fix-verifier runs before refined_command (``envinfo.rerun_after_fix``)."""
    from flow.reproduce import envinfo

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


def _ours(pending: Any) -> bool:
    """The file still holds the original bytes or exactly our edit (nobody else's)."""
    import hashlib

    try:
        now = Path(pending.path).read_bytes()
    except OSError:
        return False
    return now == pending.original() or (
        pending.edited_sha256 is not None
        and hashlib.sha256(now).hexdigest() == pending.edited_sha256)


def unskip(ctx: Any) -> Any:
    """The skip-marker re-run. A bypassed pytest marker: run again with the bypass flag
    (the refined command carries it). Another marker: take it off the target test, run,
    put the file back (only over our own edit), then run refined_command once more in a
    clean shell: with the marker back it does not fail, which ``self_check`` records."""
    from flow.reproduce.errors import SkipMarkerNotFound
    from flow.reproduce.skipmarker import remove_skip_marker, restore
    from workspace.atomic import write_atomic

    profile, pending = profile_of(ctx), ctx.data.pending_restore
    stage = ctx.data.current_stage
    if ctx.data.bypass:
        decision = decide(ctx, profile, stage, f"{entry_prefix(ctx)}{stage}-unskipped")
        if isinstance(decision, CannotVerify):  # the bypass does not work for this project
            ctx.data.notes.append(f"{stage}: {ctx.data.bypass} did not work ({decision.blocker[:200]}); "
                                  "taking the marker out of the file instead")
            ctx.data.bypass = None
            problem = _unskip_plan(ctx, profile, bypass=False)
            if problem:
                return blocked(ctx, Stage(stage), problem)
            return Go("retry")  # saves the pending restore before the edit
        ctx.data.rerun_done = True
        ctx.data.notes.append(f"{stage}: re-ran with {ctx.data.bypass} (bypasses "
                              f"{ctx.data.unskipped and ctx.data.unskipped['decorator']}); "
                              "no file edited")
        return act(ctx, decision, from_unskip=True)
    if ctx.data.restore_kept:
        kept, ctx.data.restore_kept = ctx.data.restore_kept, None
        return blocked(ctx, Stage(stage), f"{kept} was changed by someone else while the "
                       "skip-marker re-run was interrupted; it is kept as it is (check whether "
                       "the marker is still off), then run again with --restart")
    found = runner.node_target(ctx.data.pytest_args, ctx.data.cwd)
    try:
        if pending is None or found is None:  # the test file went away since act() saw it
            raise SkipMarkerNotFound(f"no test file for {ctx.data.pytest_args} under "
                                     f"{ctx.data.cwd} any more", target=str(ctx.data.pytest_args))
        removal = remove_skip_marker(pending.original(), found[1], tuple(profile.skip_markers))
    except SkipMarkerNotFound as exc:
        ctx.data.pending_restore = None
        return blocked(ctx, Stage(stage), f"skipped, but the skip marker cannot be removed: {exc}")
    from flow.jobs import Pending

    if not _ours(pending):  # changed by someone else since act() read it: not ours to edit
        ctx.data.pending_restore = None
        ctx.data.notes.append(f"{pending.path} changed after the skip-marker edit was planned; "
                              "kept as the user left it")
        return blocked(ctx, Stage(stage), f"{pending.path} was changed by someone else while "
                       "the skip-marker re-run was pending; it is kept as it is, then run "
                       "again with --restart")
    write_atomic(pending.path, removal.modified)
    try:
        decision = decide(ctx, profile, stage, f"{entry_prefix(ctx)}{stage}-unskipped")
    except Pending:
        raise  # the run goes on in the background on the edited file; resumed, not undone
    except BaseException:
        restore(pending)
        raise
    restored = restore(pending)
    counts, ran_exit = ctx.data.attempt_counts, ctx.data.last_exit
    ctx.data.pending_restore = None
    ctx.data.rerun_done = True
    ctx.data.notes.append(f"{stage}: re-ran without {removal.removed} on {removal.function}; "
                          f"file {'kept as the user changed it' if restored == 'kept' else 'restored'}")
    if isinstance(decision, Reproduced):  # the self-check: with the marker back, the
        # refined command is the one the stage ran first, which was all skipped
        ctx.data.last_exit = ctx.data.skipped_exit if ctx.data.skipped_exit is not None else 0
        ctx.data.notes.append(f"{stage}: with {removal.removed} back, refined_command exits "
                              f"{ctx.data.last_exit} by itself (the test is skipped); take "
                              "the marker off first (unskipped names it)")
        ctx.data.attempt_counts = counts
    else:
        ctx.data.last_exit = ran_exit
    return act(ctx, decision, from_unskip=True)


def _build_task(ctx: Any, profile: Profile, key: str, commit: str | None) -> Task:
    if profile.source_build.kind == "venv":
        build = profile.source_build
        argv = [sys.executable, "-m", "flow.reproduce.localbuild", "--source",
                ctx.data.source_dir, "--work", str(ctx.path("build")),
                "--python", interpreter(ctx)]
        argv += ["--commit", commit] if commit else []
        if build.offline or ctx.settings.get(OFFLINE_ENV) == "1":
            argv.append("--offline")
        extras = ctx.data.test_extras or build.test_extras
        argv += ["--extras", ",".join(extras)] if extras else []
        argv += [] if build.editable else ["--no-editable"]
        return Task(key=key, role="runner", feed="run", command=argv, cwd=str(REPO_ROOT),
                    prompt=f"Build {ctx.data.source_dir} into a fresh venv"
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
    from flow.reproduce.localbuild import error_lines

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
    pending = source_build(ctx, profile)
    if pending is not None:
        return pending
    return act(ctx, decide(ctx, profile, Stage.SOURCE_BUILD, "stage2"))


def source_build(ctx: Any, profile: Profile) -> Ask | Go | None:
    """Stage 2's build, shared by the single flow and the batch: an ``Ask`` (a build to
    run, or the one ci_commit fallback), ``Go("decided")`` with a CANNOT_VERIFY verdict
    in ``ctx.data.verdict``, or None once built (``base``, ``python`` and ``path_head``
    then name the build)."""
    if profile.source_build.kind == "venv" and not ctx.data.source_dir:
        return blocked(ctx, Stage.SOURCE_BUILD, "no source dir to build: pass --source-dir DIR")
    if ctx.data.trunk_ok is None:
        ctx.data.trunk_ok = _build_ok(ctx, profile, "build-trunk")
    if ctx.data.trunk_ok is False and ctx.data.fallback_ok is None:
        ctx.data.fallback_ok = _build_ok(ctx, profile, "build-fallback")
    plan = stage2_build(ctx.data.trunk_ok, ctx.data.ci_commit, ctx.data.fallback_ok)
    if isinstance(plan, CannotVerify):
        why = build_errors(ctx, "build-fallback" if ctx.data.fallback_ok is False else "build-trunk")
        if why:
            plan = plan.model_copy(update={"blocker": f"{plan.blocker}: {why}"})
        ctx.data.verdict = plan.model_dump(mode="json")
        return Go("decided")
    if plan.step is BuildStep.BUILD_TRUNK:
        return Ask([_build_task(ctx, profile, "build-trunk", None)], extra={"stage": "source_build"})
    if plan.step is BuildStep.FALL_BACK:
        if profile.tree is not None:
            from flow.reproduce.commands import fill

            problem = run_each(ctx, [fill(tpl, tree=ctx.data.tree or "", ci_commit=plan.base)
                                     for tpl in (profile.tree.fallback_detach,
                                                 profile.tree.submodules)],
                               "fallback", f"checkout of ci_commit {plan.base}")
            if problem:
                return blocked(ctx, Stage.SOURCE_BUILD, problem)
        return Ask([_build_task(ctx, profile, "build-fallback", plan.base)],
                   extra={"stage": "source_build", "fallback": plan.base})
    ctx.data.base = plan.base
    if profile.source_build.kind == "venv":
        ctx.data.python = str((ctx.dir / "build/venv/bin/python"))
        ctx.data.path_head = str((ctx.dir / "build/venv/bin"))
    return None
