"""What a stage's table decides, and the rows every stage's table shares (seed: Stage 1
"Run test" and each stage's Decision table).

A decision is either a ``Verdict`` (stop) or a small instruction: ``Next`` (go on to a
stage) or ``RerunWithoutSkip`` (take the skip marker off and run once more). ``from_run``
reads one run's outcome the way every stage does (FAILED reproduces, BLOCKED cannot
verify, collected-zero has no reproducer, a marker skip re-runs once) and leaves the
passing row to the stage's own table (``stage1.rules``, ``stage2.rules``,
``stage3.rules``). Pure: no IO.
"""
from __future__ import annotations

from enum import StrEnum
from typing import Literal, Union

from pydantic import BaseModel, ConfigDict

from flow.workflows.reproduce.run.interpret import Outcome, RunOutcome
from flow.workflows.reproduce.verdict.models import (
    CannotVerify, NoReproducer, Reproduced, Stage, Verdict,
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


def from_run(outcome: RunOutcome, stage: Stage, refined: str, base: str,
             rerun_done: bool, on_pass: Decision) -> Decision:
    """The rows every stage's table shares; ``on_pass`` is the stage's own PASSED row."""
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


