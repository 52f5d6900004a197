"""What one CI tick decides, as a pure function of the classification and the flow's data.

`decide(classification, runs, pull, data)` returns one `Decision`; the `ci` workflow's
steps (``declaration``) carry it out. Precedence, first match wins:

0. the PR is merged or closed: end (`merged` / `closed`); nothing is left to watch, and a
   debugger or re-run on it would be wasted work (or a push to a merged branch)
1. the debugger pushed a commit and the PR head has not moved off the debugged head: wait,
   until `push_deadline_minutes` after the debugger's result; then stop (`needs_attention`:
   the push never reached the PR)
2. a regression: hand it to the debugger (a new fix round), or stop with `gave_up` once
   `max_rounds` rounds were used
3. infra or flaky checks in a *completed* workflow run not re-run before: re-run its failed
   jobs (once per run id, ever)
4. anything still pending (including infra in a run that is still going): wait, until
   `run_deadline_minutes` after this head started waiting; then stop (`timed_out`, naming
   what is still pending)
5. red checks nobody here can fix (broken trunk, infra or flaky that failed again after its
   re-run or whose re-run GitHub refused, a red status with no workflow run): stop with
   `needs_attention`
6. every check green or ignored, at least one green: `all_green`

"Every check" here is every *required* check: the classification decide gets holds only the
checks the base branch requires (flow.workflows.ci.required), unless GitHub would not say
which those are (then every check counts, visibly).
7. otherwise (only ignored checks): wait; that is never "all checks passed"

Imports no PyGithub.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from flow.github.access import Access
from flow.github.models import PullInfo, RequiredChecks, WorkflowRunState
from flow.github.trouble import Trouble
from flow.workflows.ci.classify import RED, CheckVerdict, TickClassification

DEFAULT_MAX_ROUNDS = 3
DEFAULT_PUSH_DEADLINE_MINUTES = 120
DEFAULT_RUN_DEADLINE_MINUTES = 12 * 60


class Failure(BaseModel):
    """One red check as handed to the debugger and kept in the round's history."""

    model_config = ConfigDict(extra="forbid")
    check_name: str
    job: str
    category: str
    reason: str
    workflow: str | None = None
    run_id: int | None = None
    job_id: int | None = None
    details_url: str | None = None
    failing_lines: list[str] = Field(default_factory=list)
    log_truncated: bool = False


class SeenCheck(BaseModel):
    """One check of the PR's head as the last tick that read the checks saw it (the flow's
    page lists them): its name, GitHub's status and conclusion, this tick's category, whether
    it decides green (a required check, or every check when none are known) and its link."""

    model_config = ConfigDict(extra="forbid")
    name: str
    kind: str = "check_run"
    status: str = ""
    conclusion: str | None = None
    category: str = ""
    required: bool = True
    workflow: str | None = None
    details_url: str | None = None


class Rerun(BaseModel):
    """A workflow run whose failed jobs this flow re-ran (or is about to): never twice."""

    model_config = ConfigDict(extra="forbid")
    run_id: int
    attempt: int  # the run's attempt when the re-run was decided
    head_sha: str
    checks: list[str] = Field(default_factory=list)
    refused: str | None = None  # GitHub's refusal ("403 Must have admin rights ..."): never retried


class Awaiting(BaseModel):
    """The debugger pushed `pushed`; the flow waits until the PR head leaves `from_sha`."""

    model_config = ConfigDict(extra="forbid")
    from_sha: str
    pushed: str
    since: str | None = None  # ISO UTC: when the debugger reported the push


class FixRound(BaseModel):
    model_config = ConfigDict(extra="forbid")
    round: int
    head_sha: str
    failures: list[str]
    fixes_applied: list[dict[str, Any]] = Field(default_factory=list)
    unrelated: list[dict[str, Any]] = Field(default_factory=list)
    pushed_commit: str | None = None


class EndReport(BaseModel):
    """How the flow ends; set by the step that decides it, read by the report and done steps."""

    model_config = ConfigDict(extra="forbid")
    outcome: Literal["all_green", "gave_up", "needs_attention", "timed_out", "stopped", "merged",
                     "closed"]
    reason: str
    head_sha: str
    still_failing: list[Failure] = Field(default_factory=list)
    recovered: list[str] = Field(default_factory=list)
    optional_failing: list[Failure] = Field(default_factory=list)  # reported, never babysat


class CiData(BaseModel):
    """`ctx.data` of the ci workflow."""

    model_config = ConfigDict(extra="forbid")
    repo: str
    number: int
    pr_url: str = ""
    mark_ready: bool = False
    comment_on_stop: bool = False
    max_rounds: int = Field(default=DEFAULT_MAX_ROUNDS, ge=1)
    head_sha: str = ""
    fix_round: int = 0  # fix rounds whose debugger result was applied
    failures: list[Failure] = Field(default_factory=list)  # the open round's failures
    awaiting: Awaiting | None = None
    fix_history: list[FixRound] = Field(default_factory=list)
    rerun_pending: list[Rerun] = Field(default_factory=list)
    reruns: list[Rerun] = Field(default_factory=list)
    end: EndReport | None = None
    marked_ready: bool = False
    comment_url: str | None = None
    access: Access = Field(default_factory=Access)  # API URL and token file, fixed at the start
    github: Trouble = Field(default_factory=Trouble)  # waits and questions after GitHub said no
    push_deadline_minutes: int = Field(default=DEFAULT_PUSH_DEADLINE_MINUTES, ge=1)
    run_deadline_minutes: int = Field(default=DEFAULT_RUN_DEADLINE_MINUTES, ge=1)
    waiting_sha: str | None = None  # the head CI is being waited on, and since when (ISO UTC)
    waiting_since: str | None = None
    report_problems: list[str] = Field(default_factory=list)  # end writes GitHub refused
    required: RequiredChecks | None = None  # the base branch's required checks, last read
    babysit_optional: bool = False  # ORCHESTRATOR_CI_OPTIONAL_CHECKS=babysit: every check counts
    checks: list[SeenCheck] = Field(default_factory=list)  # the head's checks, last read
    # the commit `checks` belong to; no clock is kept with them, so a tick that sees the same
    # checks changes nothing and saves nothing
    checks_sha: str | None = None


Action = Literal["wait", "debug", "rerun", "stop", "green", "closed"]


class Decision(BaseModel):
    model_config = ConfigDict(extra="forbid")
    action: Action
    ci_phase: str
    reason: str
    failures: list[Failure] = Field(default_factory=list)
    reruns: list[Rerun] = Field(default_factory=list)
    end: EndReport | None = None


def failure_of(v: CheckVerdict) -> Failure:
    """The debugger's view of one red verdict (log lines as read, never interpreted)."""
    c = v.check
    return Failure(
        check_name=c.name, job=f"{c.workflow} / {c.name}" if c.workflow else c.name,
        category=v.category, reason=v.reason, workflow=c.workflow, run_id=c.run_id,
        job_id=c.id if c.kind == "check_run" else None, details_url=c.details_url,
        failing_lines=list(v.log.lines) if v.log else [],
        log_truncated=bool(v.log and v.log.truncated))


def seen_checks(every: TickClassification, deciding: TickClassification) -> list[SeenCheck]:
    """Every check of the tick (``every``: before the required split) as the page lists it,
    each marked required when it is among the verdicts that decide (``deciding``), then the
    required checks that have not reported yet (GitHub's "Expected")."""
    keys = {v.check.key for v in deciding.verdicts}

    def seen(v: CheckVerdict, required: bool) -> SeenCheck:
        c = v.check
        return SeenCheck(name=c.name, kind=c.kind, status=c.status, conclusion=c.conclusion,
                         category=v.category, required=required, workflow=c.workflow,
                         details_url=c.details_url)

    out = [seen(v, v.check.key in keys) for v in every.verdicts]
    known = {v.check.key for v in every.verdicts}
    out.extend(seen(v, True) for v in deciding.verdicts if v.check.key not in known)
    return out


def _minutes_since(stamp: str | None, now: datetime) -> float:
    if not stamp:
        return 0.0
    return (now - datetime.fromisoformat(stamp)).total_seconds() / 60


def decide(result: TickClassification, runs: list[WorkflowRunState], pull: PullInfo,
           data: CiData, now: datetime | None = None) -> Decision:
    """The next action for this tick; see the module docstring. Never raises."""
    now = now or datetime.now(timezone.utc)
    head_sha = pull.head_sha
    if pull.state == "closed":
        outcome: Literal["merged", "closed"] = "merged" if pull.merged else "closed"
        return Decision(action="closed", ci_phase=outcome, reason=f"the PR was {outcome}",
                        end=EndReport(outcome=outcome, head_sha=head_sha,
                                      reason=f"PR #{pull.number} was {outcome} on GitHub; "
                                             f"CI is no longer watched"))
    if data.awaiting is not None and head_sha == data.awaiting.from_sha:  # both full shas from GitHub
        waited = _minutes_since(data.awaiting.since, now)
        if waited > data.push_deadline_minutes:
            return Decision(action="stop", ci_phase="needs_attention", reason=(
                "the debugger's push never reached the PR"), end=EndReport(
                outcome="needs_attention", head_sha=head_sha, still_failing=list(data.failures),
                reason=f"the debugger reported pushing {data.awaiting.pushed[:12]}, but after "
                       f"{int(waited)} minutes (deadline {data.push_deadline_minutes}) the PR head "
                       f"is still {head_sha[:12]}: the push went elsewhere or failed"))
        return Decision(action="wait", ci_phase="waiting_for_push",
                        reason=f"the debugger pushed {data.awaiting.pushed[:12]}; the PR head is "
                               f"still {head_sha[:12]}")
    regressions = result.of("regression")
    if regressions:
        failures = [failure_of(v) for v in regressions]
        if data.fix_round >= data.max_rounds:
            still_red = [failure_of(v) for v in result.verdicts if v.category in RED]
            return Decision(action="stop", ci_phase="gave_up", reason=(
                f"{len(failures)} check(s) still fail after {data.fix_round} fix round(s), "
                f"the limit"), end=EndReport(outcome="gave_up", head_sha=head_sha,
                                             reason=f"fix-round limit {data.max_rounds} reached",
                                             still_failing=still_red))
        return Decision(action="debug", ci_phase="debugging", failures=failures,
                        reason=f"{len(failures)} regression(s) on {head_sha[:12]}")

    done_runs = {r.run_id for r in data.reruns}
    by_run = {r.id: r for r in runs}
    candidates: dict[int, Rerun] = {}
    for v in result.verdicts:
        rid = v.check.run_id
        if v.category not in ("infra", "flaky") or rid is None or rid in done_runs:
            continue
        run = by_run.get(rid)
        if run is None or run.status != "completed":
            continue
        entry = candidates.setdefault(rid, Rerun(run_id=rid, attempt=run.run_attempt,
                                                 head_sha=head_sha))
        entry.checks.append(v.check.name)
    if candidates:
        names = sorted({n for r in candidates.values() for n in r.checks})
        return Decision(action="rerun", ci_phase="rerunning", reruns=list(candidates.values()),
                        reason=f"infra or flaky failures ({', '.join(names)}): re-running "
                               f"the failed jobs of run(s) {sorted(candidates)} once")

    pending = result.of("pending")
    waiting_runs = [v for v in result.verdicts if v.category in ("infra", "flaky")
                    and v.check.run_id is not None and v.check.run_id not in done_runs]
    if pending or waiting_runs:
        waited = _minutes_since(data.waiting_since, now) if data.waiting_sha == head_sha else 0.0
        if waited > data.run_deadline_minutes:
            names = sorted({v.check.name for v in [*pending, *waiting_runs]})
            return Decision(action="stop", ci_phase="timed_out", reason="CI ran past its deadline",
                            end=EndReport(outcome="timed_out", head_sha=head_sha,
                                          reason=f"{len(names)} check(s) still not finished after "
                                                 f"{int(waited)} minutes (deadline "
                                                 f"{data.run_deadline_minutes}): {', '.join(names)}",
                                          still_failing=[failure_of(v) for v in [*pending, *waiting_runs]]))
        return Decision(action="wait", ci_phase="waiting_for_ci",
                        reason=f"{len(pending) + len(waiting_runs)} check(s) still running "
                               f"on {head_sha[:12]}")

    red = [v for v in result.verdicts if v.category in ("broken_trunk", "infra", "flaky", "external")]
    if red:
        return Decision(action="stop", ci_phase="needs_attention", reason=(
            "checks fail for reasons a code fix here cannot address"),
            end=EndReport(outcome="needs_attention", head_sha=head_sha,
                          reason=_why(red, {r.run_id: r for r in data.reruns}),
                          still_failing=[failure_of(v) for v in red]))
    if result.all_green:
        return Decision(action="green", ci_phase="done", reason="every check passed",
                        end=EndReport(outcome="all_green", head_sha=head_sha,
                                      reason="every check is green or ignored",
                                      recovered=[v.check.name for v in result.recovered]))
    return Decision(action="wait", ci_phase="waiting_for_ci",
                    reason="no check has passed yet (only ignored ones reported)")


def _why(red: list[CheckVerdict], reruns: dict[int, Rerun]) -> str:
    from agents.prompts import fence  # check names come from GitHub: data, fenced

    parts = []
    for v in red:
        name = fence(v.check.name, inline=True, limit=120)
        done = reruns.get(v.check.run_id) if v.check.run_id is not None else None
        if v.category == "broken_trunk":
            parts.append(f"{name}: also fails at the merge base (broken trunk)")
        elif v.category == "external":
            parts.append(f"{name}: {v.reason}")
        elif done is not None and done.refused:
            parts.append(f"{name}: GitHub refused to re-run run {done.run_id} "
                         f"({done.refused}); someone with write access must re-run it")
        elif done is not None:
            parts.append(f"{name}: failed the same way after its one re-run "
                         f"({v.reason})")
        else:
            parts.append(f"{name}: {v.reason}; it cannot be re-run from here")
    return "; ".join(parts)
