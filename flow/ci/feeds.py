"""The debugger's result (`--feed debugger`), validated before anything is recorded."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from flow.feeds import Feed

_SHA = re.compile(r"^[0-9a-fA-F]{7,40}$")


class FixApplied(BaseModel):
    """What the debugger did about one failure."""

    model_config = ConfigDict(extra="forbid")
    check_name: str = Field(min_length=1)
    failure: str
    verdict: str = Field(min_length=1)  # e.g. "fixed", "unrelated", "flaky"
    rationale: str
    change: str = ""


class Unrelated(BaseModel):
    """A failure the debugger judged unrelated to the PR (a plain check name is accepted)."""

    model_config = ConfigDict(extra="forbid")
    check_name: str = Field(min_length=1)
    reason: str = ""


class DebuggerResult(Feed):
    """`{fixes_applied, unrelated, pushed_commit}`; `pushed_commit` null when nothing was pushed."""

    fixes_applied: list[FixApplied]
    unrelated: list[Unrelated] = Field(default_factory=list)
    pushed_commit: str | None

    @field_validator("unrelated", mode="before")
    @classmethod
    def _names(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"check_name": v} if isinstance(v, str) else v for v in value]
        return value

    @field_validator("pushed_commit")
    @classmethod
    def _sha(cls, value: str | None) -> str | None:
        if value is None or value == "":
            return None
        if not _SHA.match(value):
            raise ValueError(f"pushed_commit {value!r} is not a commit sha; give the full sha "
                             f"of the pushed commit (git rev-parse HEAD), or null if nothing "
                             f"was pushed")
        return value.lower()
