"""One stage's runs of the reproducer and what they decide (seed: Stage 1 "Run
test", used by every stage): ``exercise`` runs it once, ``attempts`` up to ``--repeat``
times, ``decide`` reads the stage's table (Stage 3 once more with the CI job log's env and
flags), and ``act`` turns the decision into the flow's next trigger: the next stage, the
re-run without the skip marker (planned and recorded first), or the finalized verdict.
"""
from __future__ import annotations

from typing import Any

from flow.core.outcome import Go
from flow.workflows.reproduce.context import (
    blocked, launcher, profile_of, reproducer, run_timeout, scratch,
)
from flow.workflows.reproduce.profiles import Profile
from flow.workflows.reproduce.run import runner
from flow.workflows.reproduce.run.deciding import attempt_label
from flow.workflows.reproduce.run.decision import Decision, Next, RerunWithoutSkip, StageMode
from flow.workflows.reproduce.stage1.rules import stage1 as stage1_table
from flow.workflows.reproduce.verdict.models import NotReproduced, Stage


def exercise(ctx: Any, profile: Profile, label: str, *, aligned: bool = False) -> runner.Exercise:
    """One run of the reproducer; ``aligned`` adds what Stage 3 folded from the CI job log."""
    rep = reproducer(ctx)
    align = ctx.data.ci_env if aligned else {}
    from flow.workflows.reproduce.run.block import BlockState, uses_folder

    # a shell block's setup ran in this stage: its variables, PATH and interpreter carry
    block = (BlockState.model_validate(ctx.data.block)
             if ctx.data.block and ctx.data.current_stage == Stage.NIGHTLY.value else None)
    # a run "outside any source tree" in the flow's empty scratch dir, or in an empty folder
    # a block's setup made for it: refined_command cds to a fresh temp dir instead, so it
    # still runs once the workspace (or that folder) is gone
    fresh = (ctx.data.cwd == scratch(ctx) and not rep.setup
             or block is not None and not uses_folder(block, scratch(ctx)))
    return runner.exercise(rep, cwd=ctx.data.cwd, pytest_args=ctx.data.pytest_args,
                           fresh_cwd=fresh,
                           settings=ctx.settings, log=ctx.path(f"logs/{label}.log"),
                           failure_pattern=ctx.data.failure_pattern,
                           markers=tuple(profile.skip_markers), python=ctx.data.python,
                           bin_dir=ctx.data.path_head, bypass=ctx.data.bypass,
                           activate=profile.activate, launch=launcher(ctx),
                           timeout=run_timeout(ctx, profile), key=label,
                           extra_env=align.get("env") or None,
                           pytest_timeout=align.get("timeout"),
                           exitfirst=bool(align.get("exitfirst")), block=block)


def table(ctx: Any, stage: str, ran: runner.Exercise, label: str = "the nightly wheel") -> Decision:
    mode = StageMode(ctx.data.stage)
    done = ctx.data.rerun_done
    if stage == Stage.NIGHTLY:
        return stage1_table(ran.outcome, mode, ran.refined, rerun_done=done, label=label)
    if stage == Stage.SOURCE_BUILD:
        from flow.workflows.reproduce.stage2.rules import stage2 as stage2_table

        return stage2_table(ran.outcome, ctx.data.base, ran.refined, rerun_done=done)
    from flow.workflows.reproduce.stage3.rules import stage3 as stage3_table

    return stage3_table(ran.outcome, ran.refined, rerun_done=done, label=label)


def attempts(ctx: Any, profile: Profile, label: str, *, aligned: bool = False) -> runner.Exercise:
    """Run the reproducer up to ``--repeat`` times (one run by default). Every attempt
    runs unless one is blocked (that one decides: a timeout or an infra cause is never
    averaged away). Any failing attempt makes the stage's outcome FAILED; the counts go
    to ``ctx.data.attempt_counts`` and the last deciding run's exit code to ``last_exit``."""
    from flow.workflows.reproduce.run.interpret import Outcome

    runs: list[runner.Exercise] = []
    repeat = max(1, ctx.data.repeat)
    for i in range(repeat):
        ran = exercise(ctx, profile, attempt_label(label, repeat, i), aligned=aligned)
        runs.append(ran)
        if ran.outcome.kind not in (Outcome.FAILED, Outcome.PASSED):
            break
    failed = [r for r in runs if r.outcome.kind is Outcome.FAILED]
    chosen = failed[0] if failed else runs[-1]
    ctx.data.attempt_counts = {"attempts": len(runs), "failures": len(failed)}
    ctx.data.last_exit = chosen.exit_code
    ctx.data.imported = chosen.imports
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
        from flow.workflows.reproduce.unskip.plan import plan as unskip_plan

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
    from flow.workflows.reproduce.verdict.finalize import finalize

    ctx.data.verdict = finalize(ctx, decision).model_dump(mode="json")
    return Go("decided")
