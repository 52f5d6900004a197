"""The refactor workflow's feeds: the seed's "Result JSON Formats", field names kept exactly.

Every model allows the optional ``agent_id`` / ``agent_name`` (``flow.core.feeds.Feed``).
The analyst feeds ``{}`` (or just its identity): its report is read from the flow folder.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from flow.core.feeds import Feed
from flow.workflows.refactor.analysis import AnalystReport
from flow.workflows.refactor.assess import Assessment
from flow.workflows.refactor.decisions import Dispute, DisputeDecision, ShownFinding, Waiver
from flow.workflows.refactor.fields import Field as TestField
from flow.workflows.refactor.findings import CheckResult
from flow.workflows.refactor.summary import AppliedRule, DeferredFailure


class AnalystFeed(Feed):
    """``--feed analyst``: nothing but the identity; the report is ``analyst_report.json``."""


class CoderFeed(Feed):
    """``--feed coder`` (code, verify and review phases).

    ``disputed`` answers findings the coder judges false positives, by the id the prompt gave
    (``L1``, ``R2``, ``I1``) with a reason; the checker decides them. A reply that only
    disputes may set ``success`` false: it is still an answer, not a failed attempt.
    """

    success: bool
    tests_moved: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    disputed: list[Dispute] = Field(default_factory=list)


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


class CheckerDisputeFeed(Feed):
    """``--feed checker`` deciding the coder's disputes: one decision per disputed finding."""

    decisions: list[DisputeDecision]


class CheckerReviewFeed(Feed):
    """``--feed checker`` for the mandatory full review; ``all_clear`` is required (``{}`` is refused).

    ``dispute_decisions`` decides the coder's disputes of the previous review's findings;
    ``disputed`` marks verification findings (ids ``V1``...) the checker judges false
    positives (the checker is their judge, so they are waived at once).
    """

    # The published schema states the rule _consistent enforces (all clear, no findings).
    model_config = ConfigDict(extra="forbid", json_schema_extra={
        "if": {"properties": {"all_clear": {"const": True}}, "required": ["all_clear"]},
        "then": {"properties": {"findings": {"maxItems": 0}}}})

    all_clear: bool
    findings: list[ReviewFinding] = Field(default_factory=list)
    summary: str = ""
    dispute_decisions: list[DisputeDecision] = Field(default_factory=list)
    disputed: list[Dispute] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self) -> CheckerReviewFeed:
        if self.all_clear and self.findings:
            raise ValueError("all_clear is true but findings are listed; set all_clear to false "
                             "or drop the findings")
        return self


FEEDS: dict[str, type[BaseModel]] = {
    "analyst": AnalystFeed, "coder": CoderFeed, "coder_test": CoderTestFeed,
    "checker_rule": CheckerRuleFeed, "checker_review": CheckerReviewFeed,
    "checker_dispute": CheckerDisputeFeed}


class RefactorData(BaseModel):
    """``ctx.data`` of a refactor flow; loops keep their counters here (visits reset attempts)."""

    model_config = ConfigDict(extra="forbid")

    file: str  # absolute path of the file being refactored, edited in place
    rel: str  # the path relative to the repository root (the field lists' form)
    repo: str  # the repository root (--pytorch-dir, default the current directory)
    field: TestField
    analyst_problems: list[str] = Field(default_factory=list)
    analyst_rejected: int = 0
    original_checks: int = 0  # collect-only runs of an original that did not import (a person said retry)
    agent_rules: list[str] = Field(default_factory=list)
    applied: list[AppliedRule] = Field(default_factory=list)
    rule_index: int = 0
    rule_fixes: int = 0
    rule_fix_limit: int = 3
    retries: dict[str, int] = Field(default_factory=dict)
    tests_moved: list[str] = Field(default_factory=list)
    lint_rounds: int = 0
    review_rounds: int = 0
    fix_key: str | None = None  # a coder fix asked in verify/review/test, awaited before moving on
    fix_seq: int = 0  # numbers fix task keys (a round given back must not reuse a key)
    review_seq: int = 0  # numbers review task keys
    test_rounds: int = 0
    test_rounds_granted: int = 0  # local-test rounds a person gave beyond the first 3
    test_devices: list[str] | None = None  # decided once per flow: cpu, plus cuda when present
    test_torch: bool | None = None  # whether the test interpreter finds torch, asked once per flow
    test_python: str | None = None  # the interpreter the tests ran under (chosen once per flow)
    test_torch_info: str | None = None  # which torch it found: "2.13.0 at /path/torch", recorded once
    test_failing: list[str] = Field(default_factory=list)  # the failures last sent for verdicts
    verdict_asks: int = 0  # verdict replies rejected in the current test round
    shown: list[ShownFinding] = Field(default_factory=list)  # findings listed in the open fix round
    review_shown: list[ShownFinding] = Field(default_factory=list)  # a review round's, while disputed
    disputes: list[Dispute] = Field(default_factory=list)  # awaiting the checker's decision
    dispute_key: str | None = None  # the checker task deciding ``disputes``
    dispute_rounds: int = 0
    waivers: list[Waiver] = Field(default_factory=list)  # findings judged false positives
    sentinel_notes: list[tuple[str, str, str]] = Field(default_factory=list)  # (folder, name, reason)
    deferred: list[DeferredFailure] = Field(default_factory=list)
    #: deferred as pre-existing, but the original's own run does not fail them (never deferrable)
    refactor_failures: list[str] = Field(default_factory=list)
    tested_sha: str = ""  # sha256 of the file the last local test run ran
    local_tests: str = ""
    local_counts: str = ""  # the local tests' counts per device, without the interpreter (the PR's line)
    hw_enum: bool | None = None  # whether this PyTorch knows HardwareClassification (asked once)
    codemod_done: str = ""  # sha256 of the file the last recorded verify-time codemod wrote
    hw_counts: dict[str, int] = Field(default_factory=dict)  # label -> tests under --hw-classification
    hw_note: str = ""  # why the --hw-classification runs did not happen
    hw_todo: str = ""  # what must run before the PR when they did not (the check that applies)
    hw_runner: str = ""  # how the counts ran: "python" (FILE --hw-classification) or "pytest" (the conftest filter)
    linter: str = ""  # which TEST_LINTER judged the file (the checkout's script or the built-in rules)
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
