"""The seed's decision tables, one case per row."""
from __future__ import annotations

import pytest

from flow.workflows.reproduce.preflight import preflight
from flow.workflows.reproduce.prepare.rules import after_collect_only
from flow.workflows.reproduce.run.decision import Next, RerunWithoutSkip, StageMode
from flow.workflows.reproduce.run.interpret import Outcome, RunOutcome
from flow.workflows.reproduce.stage1.rules import stage1
from flow.workflows.reproduce.stage2.rules import BuildPlan, BuildStep, stage2, stage2_build
from flow.workflows.reproduce.stage3.rules import stage3
from flow.workflows.reproduce.verdict.models import (
    ALL_STAGES, BLOCKER_BOTH_BUILDS_FAIL, CannotVerify, NoReproducer, NotReproduced, Reproduced,
    Stage, parse_verdict,
)

CMD = "pytest -sv t.py::test_x"
SHA = "0123456789abcdef0123456789abcdef01234567"


def out(kind: Outcome, detail: str = "d") -> RunOutcome:
    return RunOutcome(kind=kind, detail=detail)


@pytest.mark.parametrize("command,expected", [
    (None, NoReproducer(reason="no_command")),
    ("  ", NoReproducer(reason="no_command")),
    (CMD, None),
])
def test_preflight(command: str | None, expected: NoReproducer | None) -> None:
    """No command is NO_REPRODUCER(no_command) before any stage."""
    assert expected == preflight(command)


@pytest.mark.parametrize("outcome,expected", [
    (out(Outcome.COLLECTED_ZERO), NoReproducer(reason="collected_zero")),
    (out(Outcome.BLOCKED, "collection error: x"), CannotVerify(stage=Stage.NIGHTLY, blocker="collection error: x")),
    (out(Outcome.PASSED), None),
])
def test_collect_only_rows(outcome: RunOutcome, expected: object) -> None:
    """collected 0 items stops all stages with NO_REPRODUCER(collected_zero)."""
    assert expected == after_collect_only(outcome)


STAGE1_ROWS = [
    # env problem (install failed / runtime missing)
    (out(Outcome.PASSED), StageMode.AUTO, False, "wheel install failed",
     CannotVerify(stage=Stage.NIGHTLY, blocker="wheel install failed")),
    (out(Outcome.BLOCKED, "missing device: x"), StageMode.AUTO, False, None,
     CannotVerify(stage=Stage.NIGHTLY, blocker="missing device: x")),
    # FAILED
    (out(Outcome.FAILED), StageMode.AUTO, False, None,
     Reproduced(stage=Stage.NIGHTLY, refined_command=CMD)),
    (out(Outcome.FAILED), StageMode.NIGHTLY, True, None,
     Reproduced(stage=Stage.NIGHTLY, refined_command=CMD)),
    # PASSED and stage=auto -> stage 2
    (out(Outcome.PASSED), StageMode.AUTO, False, None, Next(stage=Stage.SOURCE_BUILD)),
    # PASSED and stage=nightly -> NOT_REPRODUCED([nightly])
    (out(Outcome.PASSED, "1 passed"), StageMode.NIGHTLY, False, None,
     NotReproduced(checked_stages=[Stage.NIGHTLY], reason="passes on the nightly wheel (1 passed)")),
    # all skipped by an XPU marker -> re-run without it, once
    (out(Outcome.SKIPPED_XPU_MARKER), StageMode.AUTO, False, None, RerunWithoutSkip(stage=Stage.NIGHTLY)),
    (out(Outcome.SKIPPED_XPU_MARKER, "r"), StageMode.AUTO, True, None,
     CannotVerify(stage=Stage.NIGHTLY, blocker="still skipped without the skip marker: r")),
    # re-run PASSes -> treated as PASSED
    (out(Outcome.PASSED), StageMode.NIGHTLY, True, None,
     NotReproduced(checked_stages=[Stage.NIGHTLY], reason="passes on the nightly wheel (d)")),
]


@pytest.mark.parametrize("outcome,mode,rerun,install,expected", STAGE1_ROWS)
def test_stage1_table(outcome: RunOutcome, mode: StageMode, rerun: bool, install: str | None,
                      expected: object) -> None:
    """Stage 1's decision table, row by row."""
    assert expected == stage1(outcome, mode, CMD, rerun_done=rerun, install_blocker=install)


BUILD_ROWS = [
    (None, SHA, None, BuildPlan(step=BuildStep.BUILD_TRUNK)),
    (True, SHA, None, BuildPlan(step=BuildStep.RUN, base="origin/main")),
    (False, SHA, None, BuildPlan(step=BuildStep.FALL_BACK, base=SHA)),
    (False, SHA, True, BuildPlan(step=BuildStep.RUN, base=SHA)),
    (False, SHA, False, CannotVerify(stage=Stage.SOURCE_BUILD, blocker=BLOCKER_BOTH_BUILDS_FAIL)),
    (False, None, None, CannotVerify(stage=Stage.SOURCE_BUILD,
                                     blocker="origin/main fails to build and no ci_commit to fall back to")),
]


@pytest.mark.parametrize("trunk,ci_commit,fallback,expected", BUILD_ROWS)
def test_stage2_build_plan(trunk: bool | None, ci_commit: str | None, fallback: bool | None,
                           expected: object) -> None:
    """Build origin/main; fall back once to ci_commit (recorded as base); both fail -> blocker."""
    assert expected == stage2_build(trunk, ci_commit, fallback)


@pytest.mark.parametrize("outcome,base,expected", [
    (out(Outcome.BLOCKED, "b"), "origin/main", CannotVerify(stage=Stage.SOURCE_BUILD, blocker="b")),
    (out(Outcome.FAILED), "origin/main", Reproduced(stage=Stage.SOURCE_BUILD, refined_command=CMD)),
    (out(Outcome.FAILED), SHA, Reproduced(stage=Stage.SOURCE_BUILD, base=SHA, refined_command=CMD)),
    (out(Outcome.PASSED), "origin/main", Next(stage=Stage.CI_ENV)),
])
def test_stage2_table(outcome: RunOutcome, base: str, expected: object) -> None:
    """Stage 2's decision table; base is origin/main or the ci_commit fallen back to."""
    assert expected == stage2(outcome, base, CMD)


@pytest.mark.parametrize("outcome,expected", [
    (out(Outcome.BLOCKED, "b"), CannotVerify(stage=Stage.CI_ENV, blocker="b")),
    (out(Outcome.FAILED), Reproduced(stage=Stage.CI_ENV, base="origin/main", refined_command=CMD)),
    (out(Outcome.PASSED, "p"), NotReproduced(checked_stages=ALL_STAGES, reason=(
        "passes on the nightly wheel, the source build and the CI wheel (p)"))),
])
def test_stage3_table(outcome: RunOutcome, expected: object) -> None:
    """Stage 3's table; REPRODUCED keeps base=origin/main, never the wheel's commit."""
    assert expected == stage3(outcome, CMD)


@pytest.mark.parametrize("data,error", [
    ({"verdict": "REPRODUCED", "stage": "nightly", "base": "HEAD~1", "refined_command": "x"}, "neither"),
    ({"verdict": "NOT_REPRODUCED", "checked_stages": ["nightly", "ci_env"], "reason": "r"}, "shape"),
    ({"verdict": "NO_REPRODUCER", "reason": "no_test"}, "no_command"),
    ({"verdict": "CANNOT_VERIFY", "stage": "nightly", "blocker": "b", "extra": 1}, "Extra inputs"),
])
def test_verdict_models_refuse_off_seed_values(data: dict, error: str) -> None:
    """Verdicts accept only the seed's fields and shapes."""
    with pytest.raises(ValueError, match=error):
        parse_verdict(data)


def test_verdict_json_round_trip() -> None:
    """A verdict survives JSON and comes back as the same typed model."""
    verdict = Reproduced(stage=Stage.SOURCE_BUILD, base=SHA, refined_command=CMD)
    assert verdict == parse_verdict(verdict.model_dump_json())
