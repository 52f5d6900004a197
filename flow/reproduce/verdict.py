"""The four verdicts of fix-reproduce, with exactly the seed's output fields.

``verdict`` is the discriminator (the seed's heading: REPRODUCED, NOT_REPRODUCED, ...);
every other field is the seed's. Extra context (installed versions, CI image reference)
travels beside the verdict in ``VerdictReport``, never inside it.
"""
from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

ORIGIN_MAIN = "origin/main"
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


class Reproduced(_Verdict):
    verdict: Literal["REPRODUCED"] = "REPRODUCED"
    stage: Stage
    base: str = ORIGIN_MAIN
    refined_command: str = Field(min_length=1)

    @field_validator("base")
    @classmethod
    def _base_is_main_or_sha(cls, value: str) -> str:
        if value != ORIGIN_MAIN and not _SHA.fullmatch(value):
            raise ValueError(
                f"base {value!r} is neither 'origin/main' nor a commit sha; "
                "pass origin/main, or the ci_commit sha Stage 2 fell back to"
            )
        return value


class NotReproduced(_Verdict):
    verdict: Literal["NOT_REPRODUCED"] = "NOT_REPRODUCED"
    checked_stages: list[Stage]
    reason: str = Field(min_length=1)

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
