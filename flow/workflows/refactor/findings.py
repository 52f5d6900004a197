"""The finding every deterministic check reports, and the report that collects them."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Severity = Literal["error", "warning", "info"]
#: The checks whose errors form verify's hard gate (routed to the coder in fix rounds).
GATE_CHECKS = frozenset({"lint", "test_linter", "line_length"})


class Finding(BaseModel):
    """One problem at a place: which check, a stable code, severity, file and line.

    ``line`` 0 means the whole file (e.g. a sentinel file, which is matched by name).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    check: str
    code: str
    severity: Severity
    file: str
    line: int
    message: str


class CheckResult(BaseModel):
    """One check's verdict: passed means no error-severity finding.

    ``skipped`` (the reason) marks a check that did not run: it blocks nothing, and the
    summary shows it as skipped with the reason, never as a pass.
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    passed: bool
    errors: int
    warnings: int
    skipped: str | None = None


class VerificationReport(BaseModel):
    """All checks of one verify run (``verification.json``)."""

    model_config = ConfigDict(extra="forbid")

    file: str
    checks: list[CheckResult]
    findings: list[Finding]
    waived: list[Finding] = []  # findings judged false positives (see flow.workflows.refactor.decisions)

    @property
    def passed(self) -> bool:
        """True when no check reported an error."""
        return all(c.passed for c in self.checks)

    def lint_errors(self) -> list[Finding]:
        """Error-severity lint findings (the project's L-codes, PyTorch's TEST_LINTER, the
        checkout's line length): the workflow's hard gate routes these to the coder."""
        return [f for f in self.findings if f.check in GATE_CHECKS and f.severity == "error"]


def summarise(name: str, findings: list[Finding]) -> CheckResult:
    """Build the ``CheckResult`` for check ``name`` from its findings."""
    errors = sum(1 for f in findings if f.severity == "error")
    warnings = sum(1 for f in findings if f.severity == "warning")
    return CheckResult(name=name, passed=errors == 0, errors=errors, warnings=warnings)
