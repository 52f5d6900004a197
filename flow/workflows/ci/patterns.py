"""reference/ci/patterns.toml, validated when loaded.

Which conclusions are green, ignored, infra or failed; which log lines are failure
lines; which log or summary text marks a known infrastructure failure.
"""

from __future__ import annotations

import re
import tomllib
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from flow.core.errors import OrchestratorError
from reference import DIR as REFERENCE

DEFAULT_PATH = REFERENCE / "ci" / "patterns.toml"


class PatternsInvalid(OrchestratorError):
    code = "ci_patterns_invalid"


def _compile(rx: str) -> str:
    try:
        re.compile(rx)
    except re.error as e:
        raise ValueError(f"bad regular expression {rx!r}: {e}") from None
    return rx


class Conclusions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    green: list[str]
    ignored: list[str]
    infra: list[str]
    failed: list[str]
    blocked: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _disjoint(self) -> "Conclusions":
        seen: dict[str, str] = {}
        for group in ("green", "ignored", "infra", "failed", "blocked"):
            for c in getattr(self, group):
                if c in seen:
                    raise ValueError(f"conclusion {c!r} is listed in both {seen[c]!r} and {group!r}; keep one")
                seen[c] = group
        return self


class LogRules(BaseModel):
    model_config = ConfigDict(extra="forbid")
    context: int = Field(ge=0, le=20)
    max_lines: int = Field(gt=0)
    max_bytes: int = Field(gt=0)
    failure_lines: list[str]
    not_failure_lines: list[str] = Field(default_factory=list)

    _check = field_validator("failure_lines", "not_failure_lines")(lambda v: [_compile(x) for x in v])


class InfraPattern(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    pattern: str

    _check = field_validator("pattern")(_compile)


class Patterns(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    conclusions: Conclusions
    logs: LogRules
    infra: list[InfraPattern]

    def infra_match(self, text: str) -> str | None:
        """Name of the first known infra pattern found in `text`, or None."""
        for p in self.infra:
            if re.search(p.pattern, text, re.MULTILINE):
                return p.name
        return None


def load_patterns(path: Path | None = None) -> Patterns:
    """Parse and validate the patterns file; PatternsInvalid names the file and the fault."""
    return _load(path or DEFAULT_PATH)


@lru_cache(maxsize=8)
def _load(path: Path) -> Patterns:
    try:
        return Patterns.model_validate(tomllib.loads(path.read_text()))
    except (OSError, tomllib.TOMLDecodeError, ValueError) as e:
        raise PatternsInvalid(f"cannot load CI patterns from {str(path)!r}: {e}",
                              "fix the file (see the comments at its top) and re-run") from None
