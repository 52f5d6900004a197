"""Stage 2's rules (seed: "Stage 2: Source Build at origin/main"): the build plan with its
one ci_commit fallback, and the Stage 2 decision table. Pure: no IO.
"""
from __future__ import annotations

from enum import StrEnum
from pydantic import BaseModel, ConfigDict

from flow.workflows.reproduce.run.decision import Decision, Next, from_run
from flow.workflows.reproduce.run.interpret import RunOutcome
from flow.workflows.reproduce.verdict.models import (
    BLOCKER_BOTH_BUILDS_FAIL, CannotVerify, ORIGIN_MAIN, Stage,
)


class BuildStep(StrEnum):
    BUILD_TRUNK = "build_trunk"            # build at origin/main
    FALL_BACK = "fall_back_to_ci_commit"   # checkout --detach ci_commit, submodules, rebuild
    RUN = "run"                            # build ok: run the reproducer on ``base``


class BuildPlan(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    step: BuildStep
    base: str = ORIGIN_MAIN


def stage2_build(trunk_ok: bool | None, ci_commit: str | None,
                 fallback_ok: bool | None = None, built: str = ORIGIN_MAIN) -> BuildPlan | CannotVerify:
    """The build half of Stage 2: build origin/main; on failure fall back once to
    ``ci_commit`` and record it as base; both failing (or trunk failing with no ci_commit)
    is CANNOT_VERIFY. ``None`` means "not built yet"; ``built`` names what the first build
    built, for the blocker (the local profile builds a tree as it is, not origin/main)."""
    if trunk_ok is None:
        return BuildPlan(step=BuildStep.BUILD_TRUNK)
    if trunk_ok:
        return BuildPlan(step=BuildStep.RUN, base=ORIGIN_MAIN)
    if not ci_commit:
        return CannotVerify(stage=Stage.SOURCE_BUILD,
                            blocker=f"{built} fails to build and no ci_commit to fall back to")
    if fallback_ok is None:
        return BuildPlan(step=BuildStep.FALL_BACK, base=ci_commit)
    if fallback_ok:
        return BuildPlan(step=BuildStep.RUN, base=ci_commit)
    return CannotVerify(stage=Stage.SOURCE_BUILD, blocker=BLOCKER_BOTH_BUILDS_FAIL)


def stage2(outcome: RunOutcome, base: str, refined: str, *, rerun_done: bool = False) -> Decision:
    """Stage 2 table (auto only): CANNOT_VERIFY stop; FAILED -> REPRODUCED(source_build,
    base); PASSED -> stage 3."""
    return from_run(outcome, Stage.SOURCE_BUILD, refined, base, rerun_done,
                         Next(stage=Stage.CI_ENV))
