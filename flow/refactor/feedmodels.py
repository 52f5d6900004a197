"""The refactor workflow's feeds: the seed's "Result JSON Formats", field names kept exactly.

Every model allows the optional ``agent_id`` / ``agent_name`` (``flow.feeds.Feed``).
The analyst feeds ``{}`` (or just its identity): its report is read from the flow folder.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from flow.feeds import Feed
from flow.refactor.analysis import AnalystReport
from flow.refactor.assess import Assessment
from flow.refactor.fields import Field as TestField
from flow.refactor.findings import CheckResult
from flow.refactor.summary import AppliedRule, DeferredFailure


class AnalystFeed(Feed):
    """``--feed analyst``: nothing but the identity; the report is ``analyst_report.json``."""


class CoderFeed(Feed):
    """``--feed coder`` (code, verify and review phases)."""

    success: bool
    tests_moved: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)


class Verdict(BaseModel):
    """One local-test failure's verdict from the coder."""

    model_config = ConfigDict(extra="forbid")

    test_name: str
    verdict: Literal["fixed", "deferred"]
    fix_applied: str | None = None
    defer_reason: str | None = None
    outcome: str | None = None
    device_type: str | None = None


class CoderTestFeed(Feed):
    """``--feed coder`` in the test phase: one verdict per failure."""

    verdicts: list[Verdict]


class CheckerRuleFeed(Feed):
    """``--feed checker`` per rule (code phase); ``issues`` (optional) go to the coder's next fix."""

    passed: bool
    issues: list[str] = Field(default_factory=list)


class ReviewFinding(BaseModel):
    """One finding of the checker's full review."""

    model_config = ConfigDict(extra="forbid")

    severity: str
    category: str = ""
    description: str
    line_number: int | None = None
    coder_responsible: str | None = None


class CheckerReviewFeed(Feed):
    """``--feed checker`` for the mandatory full review; ``all_clear`` is required (``{}`` is refused)."""

    # The published schema states the rule _consistent enforces (all clear, no findings).
    model_config = ConfigDict(extra="forbid", json_schema_extra={
        "if": {"properties": {"all_clear": {"const": True}}, "required": ["all_clear"]},
        "then": {"properties": {"findings": {"maxItems": 0}}}})

    all_clear: bool
    findings: list[ReviewFinding] = Field(default_factory=list)
    summary: str = ""

    @model_validator(mode="after")
    def _consistent(self) -> CheckerReviewFeed:
        if self.all_clear and self.findings:
            raise ValueError("all_clear is true but findings are listed; set all_clear to false "
                             "or drop the findings")
        return self


FEEDS: dict[str, type[BaseModel]] = {
    "analyst": AnalystFeed, "coder": CoderFeed, "coder_test": CoderTestFeed,
    "checker_rule": CheckerRuleFeed, "checker_review": CheckerReviewFeed}


class RefactorData(BaseModel):
    """``ctx.data`` of a refactor flow; loops keep their counters here (visits reset attempts)."""

    model_config = ConfigDict(extra="forbid")

    file: str  # absolute path of the file being refactored, edited in place
    rel: str  # the path relative to the repository root (the field lists' form)
    repo: str  # the repository root (--pytorch-dir, default the current directory)
    field: TestField
    analyst_problems: list[str] = Field(default_factory=list)
    analyst_rejected: int = 0
    agent_rules: list[str] = Field(default_factory=list)
    applied: list[AppliedRule] = Field(default_factory=list)
    rule_index: int = 0
    rule_fixes: int = 0
    rule_fix_limit: int = 3
    retries: dict[str, int] = Field(default_factory=dict)
    tests_moved: list[str] = Field(default_factory=list)
    lint_rounds: int = 0
    review_rounds: int = 0
    fix_key: str | None = None  # a coder fix asked in verify/review, awaited before moving on
    test_rounds: int = 0
    test_devices: list[str] | None = None  # decided once per flow: cpu, plus cuda when present
    test_torch: bool | None = None  # whether the test interpreter finds torch, asked once per flow
    deferred: list[DeferredFailure] = Field(default_factory=list)
    local_tests: str = ""
    checks: list[CheckResult] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    # The gates (escalation keys) a person chose to carry on past; the summary's next step.
    decided_by_person: list[str] = Field(default_factory=list)


def load_assessment(text: bytes) -> Assessment:
    """Parse ``assessment.json``."""
    return Assessment.model_validate_json(text)


def load_report(text: bytes) -> AnalystReport:
    """Parse ``analyst_report.json`` (raises pydantic ``ValidationError`` / ``ValueError``)."""
    return AnalystReport.model_validate_json(text)
