"""The four verdicts of fix-reproduce, with exactly the seed's output fields.

``verdict`` is the discriminator (the seed's heading: REPRODUCED, NOT_REPRODUCED, ...);
``stage``/``base``/``refined_command``/``checked_stages``/``reason``/``blocker`` are the
seed's. Beyond the seed (what a fix-verifier needs), all optional so a verdict of an older flow still
loads: ``environment`` (interpreter, versions, tree state), ``rerun_after_fix``,
``self_check`` (refined_command run by itself in a clean shell), ``cwd_rule`` (which
working-directory rule chose the folder refined_command cds to), ``unskipped`` (the skip
marker taken off or bypassed), and ``attempts``/``failures``/``flaky``/``failure_rate``
(``--repeat``). Other context (CI image reference, notes) travels beside the verdict in
``VerdictReport``.
"""
from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

ORIGIN_MAIN = "origin/main"
WORKING_TREE = "working-tree"  # base of a local source dir that is not a git repository
_SHA = re.compile(r"^[0-9a-f]{7,40}$")

# Blockers the seed names verbatim.
BLOCKER_BOTH_BUILDS_FAIL = "trunk and ci_commit both fail to build"
BLOCKER_NO_XPU_OPS_RUN = "no_recent_successful_torch-xpu-ops_run"
BLOCKER_NO_XPU_WORKFLOW_RUN = "no_recent_successful_xpu_workflow_run"
BLOCKER_NO_WHEEL_IN_ARTIFACT = "no_wheel_in_artifact"
BLOCKER_NO_WHEEL_EXTRACTED = "no_wheel_extracted"


def blocker_unknown_build_env(name: str) -> str:
    """The seed's ``unknown_build_env=<name>`` blocker."""
    return f"unknown_build_env={name}"


class Stage(StrEnum):
    NIGHTLY = "nightly"
    SOURCE_BUILD = "source_build"
    CI_ENV = "ci_env"


ALL_STAGES = [Stage.NIGHTLY, Stage.SOURCE_BUILD, Stage.CI_ENV]


class _Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SelfCheck(BaseModel):
    """``refined_command`` run by itself: ``bash -c`` with only PATH=/usr/bin:/bin and HOME."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    env: str
    exit_code: int
    fails: bool


class Unskipped(BaseModel):
    """The skip marker that hid the failure. ``bypass`` is the pytest flag that keeps it
    from applying (``refined_command`` carries it and fails by itself); None when the
    marker had to be taken out of the file for the run (the file was restored, so a
    fix-verifier must take it out again: ``self_check.fails`` is false then)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    decorator: str
    file: str
    line: int
    bypass: str | None = None


class Attempts(BaseModel):
    """``--repeat N``: how many runs of the deciding stage failed."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    attempts: int = 1
    failures: int = 0


class Reproduced(_Verdict):
    verdict: Literal["REPRODUCED"] = "REPRODUCED"
    stage: Stage
    base: str = ORIGIN_MAIN
    refined_command: str = Field(min_length=1)
    environment: dict[str, Any] | None = None   # envinfo.Environment, dumped
    cwd_rule: str | None = None                 # which working-directory rule chose the cd
    rerun_after_fix: str | None = None          # "" = nothing to run before refined_command
    self_check: SelfCheck | None = None
    unskipped: Unskipped | None = None
    attempts: int = 1
    failures: int = 1
    flaky: bool = False
    failure_rate: float | None = None

    @field_validator("base")
    @classmethod
    def _base_is_main_or_sha(cls, value: str) -> str:
        if value not in (ORIGIN_MAIN, WORKING_TREE) and not _SHA.fullmatch(value):
            raise ValueError(
                f"base {value!r} is neither 'origin/main', 'working-tree' nor a commit sha; "
                "pass origin/main, the ci_commit sha Stage 2 fell back to, or the local "
                "tree's HEAD"
            )
        return value


class NotReproduced(_Verdict):
    verdict: Literal["NOT_REPRODUCED"] = "NOT_REPRODUCED"
    checked_stages: list[Stage]
    reason: str = Field(min_length=1)
    environment: dict[str, Any] | None = None
    cwd_rule: str | None = None
    attempts: int = 1

    @field_validator("checked_stages")
    @classmethod
    def _seed_shapes_only(cls, value: list[Stage]) -> list[Stage]:
        if value not in ([Stage.NIGHTLY], ALL_STAGES):
            raise ValueError(
                f"checked_stages {[str(s) for s in value]} is not a shape the seed allows; "
                "use [nightly] or [nightly, source_build, ci_env]"
            )
        return value


class NoReproducer(_Verdict):
    verdict: Literal["NO_REPRODUCER"] = "NO_REPRODUCER"
    reason: Literal["no_command", "collected_zero"]


class CannotVerify(_Verdict):
    verdict: Literal["CANNOT_VERIFY"] = "CANNOT_VERIFY"
    stage: Stage
    blocker: str = Field(min_length=1)
    environment: dict[str, Any] | None = None   # where it was blocked, once a stage began
    hint: str | None = None   # how to get past the blocker (a missing import: ``hints``)


Verdict = Annotated[
    Union[Reproduced, NotReproduced, NoReproducer, CannotVerify], Field(discriminator="verdict")
]
VERDICT_ADAPTER: TypeAdapter[Verdict] = TypeAdapter(Verdict)


def parse_verdict(data: dict | str | bytes) -> Verdict:
    """Validate a verdict from a dict or JSON text. Raises pydantic.ValidationError."""
    if isinstance(data, (str, bytes)):
        return VERDICT_ADAPTER.validate_json(data)
    return VERDICT_ADAPTER.validate_python(data)


class VerdictReport(BaseModel):
    """A verdict plus what the seed asks to record beside it."""

    model_config = ConfigDict(extra="forbid")
    verdict: Verdict
    installed_versions: dict[str, str] = {}  # e.g. {"torch": "2.9.0.dev20250101+xpu"}
    ci_image: str | None = None               # Stage 3's image reference, for the report
    notes: list[str] = []
