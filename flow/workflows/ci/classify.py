"""Classify every check of a CI tick (pure).

Input: the head commit's `CommitChecks` (from flow.github.reads), optionally the merge
base's, the trimmed logs of failed jobs, and the patterns data. Output: one verdict per
check. Precedence for a red check, first match wins:

1. flaky        an earlier attempt of the same check on the same sha passed
2. infra        the check's summary or its log matches a known infra pattern
3. broken_trunk the same check also fails at the merge base
4. external     a commit status (codecov, EasyCLA, Jenkins) or another app's check run, with
                no workflow run behind it: no job log to read, nothing to re-run; decide stops
                with needs_attention (the ci seed's decide rule 5)
5. infra        the log was read and holds no failure lines
6. regression   everything else, including a red Actions job whose log could not be read
                (an unknown is handed to the debugger, never read as green)

Non-red checks: not completed -> pending; conclusion in `blocked` -> pending (waiting
on a person); `green` -> green; `ignored` (neutral, skipped) -> ignored; `infra`
(cancelled, startup_failure, stale) -> infra. A conclusion the data does not list is a
regression. No checks at all is not green: CI may not have started.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict

from flow.github.models import CheckState, CommitChecks
from flow.workflows.ci.logs import LogExcerpt
from flow.workflows.ci.patterns import Patterns

Category = Literal["green", "ignored", "pending", "regression", "broken_trunk", "infra", "flaky",
                   "external"]
RED: tuple[Category, ...] = ("regression", "broken_trunk", "infra", "flaky", "external")


class CheckVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    check: CheckState
    category: Category
    reason: str
    log: LogExcerpt | None = None


class TickClassification(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    sha: str
    verdicts: list[CheckVerdict]

    def of(self, category: Category) -> list[CheckVerdict]:
        return [v for v in self.verdicts if v.category == category]

    @property
    def all_green(self) -> bool:
        """True only if at least one check passed and every other one is green or ignored."""
        cats = {v.category for v in self.verdicts}
        return "green" in cats and cats <= {"green", "ignored"}

    @property
    def recovered(self) -> list[CheckVerdict]:
        """Green checks that failed in an earlier attempt on this commit: flaky, worth reporting."""
        return [v for v in self.verdicts if v.category == "green" and "earlier attempt failed" in v.reason]


def failed_checks(head: CommitChecks, patterns: Patterns) -> list[CheckState]:
    """Completed checks whose conclusion is in `failed`: the ones whose logs (and merge base) matter."""
    return [c for c in head.checks if c.status == "completed" and c.conclusion in patterns.conclusions.failed]


def checks_needing_logs(head: CommitChecks, patterns: Patterns) -> list[CheckState]:
    """Failed Actions jobs (check runs tied to a workflow run): their logs can be fetched by job id."""
    return [c for c in failed_checks(head, patterns) if c.kind == "check_run" and c.run_id is not None and c.id]


def classify_check(check: CheckState, head: CommitChecks, base: CommitChecks | None,
                   logs: Mapping[int, LogExcerpt], patterns: Patterns) -> CheckVerdict:
    """The verdict for one check; see the module docstring for the rules."""
    groups = patterns.conclusions
    c = check.conclusion

    def v(category: Category, reason: str, log: LogExcerpt | None = None) -> CheckVerdict:
        return CheckVerdict(check=check, category=category, reason=reason, log=log)

    if check.status != "completed":
        return v("pending", f"{check.kind} is {check.status}")
    if c in groups.blocked:
        return v("pending", f"conclusion {c!r}: waiting for a maintainer's approval to run")
    if c in groups.green:
        if any(h.key == check.key and h.conclusion in groups.failed for h in head.history):
            return v("green", f"conclusion {c!r}; an earlier attempt failed (flaky)")
        return v("green", f"conclusion {c!r}")
    if c in groups.ignored:
        return v("ignored", f"conclusion {c!r} is ignored by reference/ci/patterns.toml")
    if c in groups.infra:
        return v("infra", f"conclusion {c!r}: the job ended without a test result")
    if c not in groups.failed:
        return v("regression", f"unknown conclusion {c!r}; add it to reference/ci/patterns.toml")

    log = logs.get(check.id) if check.id is not None else None
    if any(h.key == check.key and h.conclusion in groups.green for h in head.history):
        return v("flaky", "an earlier attempt of this check on the same commit passed", log)
    infra = patterns.infra_match(check.summary) or (log.infra if log else None)
    if infra:
        return v("infra", f"known infrastructure failure: {infra}", log)
    if base is not None and any(
        b.key == check.key and b.status == "completed" and b.conclusion in groups.failed for b in base.checks
    ):
        return v("broken_trunk", f"the same check also fails at the merge base {base.sha[:12]}", log)
    if check.run_id is None and (check.kind == "status" or check.app != "github-actions"):
        what = "commit status" if check.kind == "status" else f"check run of the app {check.app!r}"
        return v("external", f"a failing {what} with no workflow run: no log to read and "
                             f"nothing to re-run from here; see its details_url", log)
    if log is not None and log.failure_lines == 0:
        return v("infra", "the log holds no failure lines", log)
    if log is None and check in checks_needing_logs(head, patterns):
        return v("regression", "failed; its log could not be read", None)
    return v("regression", f"conclusion {c!r}", log)


def classify_tick(head: CommitChecks, *, base: CommitChecks | None = None,
                  logs: Mapping[int, LogExcerpt] | None = None, patterns: Patterns) -> TickClassification:
    """A verdict for every check of the head commit. Never raises on well-formed input."""
    logs = logs or {}
    verdicts = [classify_check(c, head, base, logs, patterns) for c in head.checks]
    if not head.checks:
        verdicts = [CheckVerdict(
            check=CheckState(kind="workflow_run", name="(no checks yet)", status="queued"),
            category="pending", reason="no check run, status or workflow run reported for this commit yet",
        )]
    return TickClassification(sha=head.sha, verdicts=verdicts)
