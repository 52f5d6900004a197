"""The seed's decision tables as pure functions: preflight, collect-only, Stage 1, the
Stage 2 build plan with its one ci_commit fallback, Stage 2 and Stage 3.

Each function takes what the step observed and returns either a ``Verdict`` (stop) or a
small instruction model saying what to do next. No IO.
"""
from __future__ import annotations

from enum import StrEnum
from typing import Literal, Union

from pydantic import BaseModel, ConfigDict

from flow.reproduce.interpret import Outcome, RunOutcome
from flow.reproduce.verdict import (
    ALL_STAGES, BLOCKER_BOTH_BUILDS_FAIL, ORIGIN_MAIN, CannotVerify, NoReproducer,
    NotReproduced, Reproduced, Stage, Verdict,
)


class StageMode(StrEnum):
    AUTO = "auto"
    NIGHTLY = "nightly"


class Next(BaseModel):
    """Go on to ``stage`` (the table's ``-> stage N`` rows)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    action: Literal["next_stage"] = "next_stage"
    stage: Stage


class RerunWithoutSkip(BaseModel):
    """Remove the XPU skip decorator from the target test, re-run once, restore."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    action: Literal["rerun_without_skip"] = "rerun_without_skip"
    stage: Stage


Decision = Union[Verdict, Next, RerunWithoutSkip]


def preflight(command: str | None) -> NoReproducer | None:
    """NO_REPRODUCER(no_command) when there is no command; None to go on."""
    if command is None or not command.strip():
        return NoReproducer(reason="no_command")
    return None


def after_collect_only(outcome: RunOutcome, stage: Stage = Stage.NIGHTLY) -> Verdict | None:
    """collected 0 items -> NO_REPRODUCER(collected_zero) for all stages; a collection
    error -> CANNOT_VERIFY; otherwise None (go on)."""
    if outcome.kind is Outcome.COLLECTED_ZERO:
        return NoReproducer(reason="collected_zero")
    if outcome.kind is Outcome.BLOCKED:
        return CannotVerify(stage=stage, blocker=outcome.detail)
    return None


def _run_decision(outcome: RunOutcome, stage: Stage, refined: str, base: str,
                  rerun_done: bool, on_pass: Decision) -> Decision:
    if outcome.kind is Outcome.FAILED:
        return Reproduced(stage=stage, base=base, refined_command=refined)
    if outcome.kind is Outcome.BLOCKED:
        return CannotVerify(stage=stage, blocker=outcome.detail)
    if outcome.kind is Outcome.COLLECTED_ZERO:
        return NoReproducer(reason="collected_zero")
    if outcome.kind is Outcome.SKIPPED_XPU_MARKER:
        if not rerun_done:
            return RerunWithoutSkip(stage=stage)
        # Still skipped with the marker gone: something else skips it.
        return CannotVerify(stage=stage, blocker=f"still skipped without the skip marker: {outcome.detail}")
    return on_pass


def stage1(outcome: RunOutcome, mode: StageMode, refined: str, *, rerun_done: bool = False,
           install_blocker: str | None = None, label: str = "the nightly wheel") -> Decision:
    """Stage 1 table: env problem -> CANNOT_VERIFY; FAILED -> REPRODUCED(nightly);
    PASSED + auto -> stage 2; PASSED + nightly -> NOT_REPRODUCED([nightly])."""
    if install_blocker:
        return CannotVerify(stage=Stage.NIGHTLY, blocker=install_blocker)
    on_pass: Decision = (
        Next(stage=Stage.SOURCE_BUILD) if mode is StageMode.AUTO else
        NotReproduced(checked_stages=[Stage.NIGHTLY],
                      reason=f"passes on {label} ({outcome.detail})"))
    return _run_decision(outcome, Stage.NIGHTLY, refined, ORIGIN_MAIN, rerun_done, on_pass)


class BuildStep(StrEnum):
    BUILD_TRUNK = "build_trunk"            # build at origin/main
    FALL_BACK = "fall_back_to_ci_commit"   # checkout --detach ci_commit, submodules, rebuild
    RUN = "run"                            # build ok: run the reproducer on ``base``


class BuildPlan(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    step: BuildStep
    base: str = ORIGIN_MAIN


def stage2_build(trunk_ok: bool | None, ci_commit: str | None,
                 fallback_ok: bool | None = None) -> BuildPlan | CannotVerify:
    """The build half of Stage 2: build origin/main; on failure fall back once to
    ``ci_commit`` and record it as base; both failing (or trunk failing with no ci_commit)
    is CANNOT_VERIFY. ``None`` means "not built yet"."""
    if trunk_ok is None:
        return BuildPlan(step=BuildStep.BUILD_TRUNK)
    if trunk_ok:
        return BuildPlan(step=BuildStep.RUN, base=ORIGIN_MAIN)
    if not ci_commit:
        return CannotVerify(stage=Stage.SOURCE_BUILD,
                            blocker="origin/main fails to build and no ci_commit to fall back to")
    if fallback_ok is None:
        return BuildPlan(step=BuildStep.FALL_BACK, base=ci_commit)
    if fallback_ok:
        return BuildPlan(step=BuildStep.RUN, base=ci_commit)
    return CannotVerify(stage=Stage.SOURCE_BUILD, blocker=BLOCKER_BOTH_BUILDS_FAIL)


def stage2(outcome: RunOutcome, base: str, refined: str, *, rerun_done: bool = False) -> Decision:
    """Stage 2 table (auto only): CANNOT_VERIFY stop; FAILED -> REPRODUCED(source_build,
    base); PASSED -> stage 3."""
    return _run_decision(outcome, Stage.SOURCE_BUILD, refined, base, rerun_done,
                         Next(stage=Stage.CI_ENV))


def stage3(outcome: RunOutcome, refined: str, *, rerun_done: bool = False,
           label: str = "the nightly wheel") -> Decision:
    """Stage 3 table: FAILED -> REPRODUCED(ci_env, base=origin/main, never the wheel's
    commit); PASSED -> NOT_REPRODUCED(all three stages)."""
    return _run_decision(
        outcome, Stage.CI_ENV, refined, ORIGIN_MAIN, rerun_done,
        NotReproduced(checked_stages=list(ALL_STAGES),
                      reason=f"passes on {label}, the source build and the CI wheel ({outcome.detail})"))
