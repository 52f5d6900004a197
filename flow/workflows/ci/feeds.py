"""The debugger's result (`--feed debugger`), validated before anything is recorded."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from flow.core.feeds import Feed

SHA_PATTERN = r"^[0-9a-fA-F]{7,40}$"
_SHA = re.compile(SHA_PATTERN)


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


def _name_only(value: Any) -> Any:
    if isinstance(value, str) and value:
        return {"check_name": value}
    return value


class DebuggerResult(Feed):
    """`{fixes_applied, unrelated, pushed_commit}`; `pushed_commit` null when nothing was pushed."""

    fixes_applied: list[FixApplied]
    # A plain check name stands for {"check_name": name}; the published schema says so too.
    unrelated: list[Annotated[Unrelated, BeforeValidator(
        _name_only, json_schema_input_type=Unrelated | Annotated[str, Field(min_length=1)])]
    ] = Field(default_factory=list)
    # "" means nothing was pushed, like null; anything else must look like a sha.
    pushed_commit: Annotated[str, Field(pattern=r"^([0-9a-fA-F]{7,40})?$")] | None

    @field_validator("pushed_commit")
    @classmethod
    def _sha(cls, value: str | None) -> str | None:
        if value is None or value == "":
            return None
        if not _SHA.fullmatch(value):
            raise ValueError(f"pushed_commit {value!r} is not a commit sha; give the full sha "
                             f"of the pushed commit (git rev-parse HEAD), or null if nothing "
                             f"was pushed")
        return value.lower()
