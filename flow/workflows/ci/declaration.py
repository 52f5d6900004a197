"""The `ci` workflow (`orchestrator.py --ci-check`): babysit one pull request's CI.

Flow id `ci/<owner>/<repo>/pr-<N>`. States:

    ci_monitor --debug--> ci_debug --debugged--> ci_monitor
    ci_monitor --rerun--> ci_rerun --rerun_requested--> ci_monitor
    ci_monitor --green / stop--> ci_report --finished_green--> ci_done
    ci_debug --stop--> ci_report --finished_red--> ci_stopped
    ci_monitor --pr_closed--> ci_closed
    ci_monitor / ci_rerun --abandon--> ci_stopped   (a person answered `stop` to a GitHub question)

`ci_monitor` observes once per call (flow.workflows.ci.observe) and carries out `flow.workflows.ci.decide`:
pending -> `schedule_cron` in phase ci_monitor; regressions -> one debugger task in
ci_debug; infra/flaky -> ci_rerun re-runs the failed jobs of each run once; the end goes
through ci_report, which does the GitHub writes (mark ready, the give-up comment), then to
ci_done (`outcome: all_green`) or ci_stopped (`gave_up` / `needs_attention`, with what
still fails; never "all checks passed"). A merged or closed PR ends in ci_closed
(`outcome: merged` / `closed`) on the tick that sees it, with no GitHub write.

GitHub writes survive a crash between the write and the save: the intent is saved first
(`rerun_pending`, `end`), and each write checks remote state before acting (the run's
attempt number, the PR's draft flag, a marker in the PR's comments).

When GitHub says no, every step has an outcome (flow.github.trouble): rate limits and
outages sleep (`schedule_cron`, ci_phase `rate_limited` / `github_unavailable`) until GitHub
may answer; a refused token, permission, 404 or 422 asks a person (`need_human`: retry once
mended, or stop). A refused re-run is a decision, not a question: it is recorded on the
re-run (`refused`), never sent again, and the failures it would have re-run are reported to
a person (`needs_attention`, the summary names the refusal). A refused end write (mark
ready, the comment) is recorded in `report_problems` and named in the result.

Settings (environment, read when the flow starts and kept in its state): GITHUB_TOKEN /
GH_TOKEN (read on every tick, never stored), ORCHESTRATOR_GITHUB_TOKEN_FILE (a file holding
the token, for cron jobs), ORCHESTRATOR_GITHUB_API, ORCHESTRATOR_CI_MAX_ROUNDS (default 3),
ORCHESTRATOR_CI_COMMENT=1 (comment on the PR when the flow stops without green),
ORCHESTRATOR_CI_OPTIONAL_CHECKS=babysit (debug and re-run optional checks too; the default
`report` decides on the checks the base branch requires and reports optional failures),
ORCHESTRATOR_CI_PUSH_DEADLINE_MINUTES (default 120: how long to wait for the debugger's push
to reach the PR), ORCHESTRATOR_CI_RUN_DEADLINE_MINUTES (default 720: how long one head may
stay pending), ORCHESTRATOR_GITHUB_BACKOFF (first retry wait, seconds; read every tick).
PyGithub is imported only inside the steps that talk to GitHub.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from agents.prompts import Untrusted, fence, render
from flow.core.errors import WorkflowInputError
from flow.core.outcome import Ask, Done, Go, Sleep, Task
from flow.core.workflow import Workflow
from flow.github.access import Access, access_from, connect_with
from flow.github.trouble import guarded
from flow.workflows.ci.decide import (
    DEFAULT_MAX_ROUNDS, DEFAULT_PUSH_DEADLINE_MINUTES, DEFAULT_RUN_DEADLINE_MINUTES, Awaiting,
    CiData, Decision, EndReport, FixRound, decide, failure_of, seen_checks,
)
from flow.workflows.ci.end import REFUSALS, closed, done, report, stopped
from flow.workflows.ci.end import extra_for as _extra
from flow.workflows.ci.end import required_fields as _required
from flow.workflows.ci.end import waiting_fields as _waiting
from flow.workflows.ci.feeds import DebuggerResult
from flow.workflows.ci.text import failures_text, history_text

_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
MAX_ROUNDS_ENV = "ORCHESTRATOR_CI_MAX_ROUNDS"
COMMENT_ENV = "ORCHESTRATOR_CI_COMMENT"
PUSH_DEADLINE_ENV = "ORCHESTRATOR_CI_PUSH_DEADLINE_MINUTES"
RUN_DEADLINE_ENV = "ORCHESTRATOR_CI_RUN_DEADLINE_MINUTES"
CACHE = "github_cache.json"


# -- locating and starting ---------------------------------------------------------------

def _repo_dir(opts: Mapping[str, Any]) -> Path:
    return Path(opts.get("repo_dir") or ".").resolve()


def _client(access: Access, settings: Mapping[str, str]) -> Any:
    """A client for the flow's recorded API URL; the token from the environment or the file."""
    return connect_with(access, settings)


def _target(opts: Mapping[str, Any]) -> tuple[str, int]:
    """(owner/repo, PR number) the options name; asks GitHub only to find a branch's PR."""
    import os

    repo = opts.get("repo")
    if repo is not None and not _REPO.fullmatch(repo):
        raise WorkflowInputError(f"--repo {repo!r} is not owner/name",
                                 "pass --repo OWNER/NAME, e.g. --repo pytorch/pytorch")
    number = opts.get("pr_number")
    if number is not None and number <= 0:
        raise WorkflowInputError(f"--pr-number {number!r} is not a PR number",
                                 "pass the number shown in the PR's URL, e.g. --pr-number 123")
    if number is not None:
        if repo is None:
            from flow.github.remote import origin_repo

            repo = origin_repo(_repo_dir(opts))
        return repo, number
    from flow.github.reads import locate_pr

    pull = locate_pr(_client(access_from(os.environ), os.environ), _repo_dir(opts), None, repo)
    return pull.repo, pull.number


def locate(opts: dict[str, Any], root: Path) -> str:
    """`ci/<owner>/<repo>/pr-<N>`; without --pr-number the current branch's open PR."""
    repo, number = _target(opts)
    # Hand what was found to start(), which then asks GitHub nothing more to find the PR.
    opts["repo"], opts["pr_number"] = repo, number
    return f"ci/{repo}/pr-{number}"


def start(opts: dict[str, Any], root: Path, settings: Mapping[str, str]) -> CiData:
    """Initial data; checks token, repository and PR now, so a bad start writes nothing.

    GitHub rate limited or down at the start is no error: the flow starts and its first
    tick sleeps until GitHub may answer (the wait is recorded, so it asks nothing sooner).
    """
    from flow.github.errors import GitHubUnavailable, RateLimited
    from flow.github.reads import get_pull
    from flow.github.trouble import Trouble, transient

    repo, number = _target(opts)
    rounds, comment = _max_rounds(settings), _comment_on_stop(settings)
    push = _positive(settings, PUSH_DEADLINE_ENV, DEFAULT_PUSH_DEADLINE_MINUTES, "minutes")
    runs = _positive(settings, RUN_DEADLINE_ENV, DEFAULT_RUN_DEADLINE_MINUTES, "minutes")
    access = access_from(settings)
    data = CiData(repo=repo, number=number, mark_ready=bool(opts.get("mark_ready")),
                  max_rounds=rounds, comment_on_stop=comment, access=access,
                  babysit_optional=_babysit_optional(settings),
                  push_deadline_minutes=push, run_deadline_minutes=runs)
    try:
        pull = get_pull(_client(access, settings), repo, number)
    except (RateLimited, GitHubUnavailable) as err:
        trouble = Trouble()
        transient(err, trouble, {})
        return data.model_copy(update={"github": trouble})
    return data.model_copy(update={"pr_url": pull.html_url, "head_sha": pull.head_sha})


def _positive(settings: Mapping[str, str], name: str, default: int, unit: str) -> int:
    """A whole number of ``unit`` in ASCII digits (``flow.core.bounds``), at most 100 rounds
    or a year of minutes (a larger deadline overflows the clock's arithmetic)."""
    from flow.core.bounds import Range, number

    raw = settings.get(name, "").strip()
    if not raw:
        return default
    rng = Range(1, 100 if unit == "rounds" else 366 * 24 * 60, unit=f"of {unit}")
    value = number(raw, rng)
    if value is None:
        raise WorkflowInputError(f"{name}={raw!r} is not {rng.says()} (ASCII digits)",
                                 f"unset it for {default} {unit}, or set e.g. {name}={default}")
    return int(value)


def _max_rounds(settings: Mapping[str, str]) -> int:
    return _positive(settings, MAX_ROUNDS_ENV, DEFAULT_MAX_ROUNDS, "rounds")


def _babysit_optional(settings: Mapping[str, str]) -> bool:
    from flow.workflows.ci.required import OPTIONAL_ENV

    raw = settings.get(OPTIONAL_ENV, "").strip().lower()
    if raw in ("", "report"):
        return False
    if raw == "babysit":
        return True
    raise WorkflowInputError(f"{OPTIONAL_ENV}={settings[OPTIONAL_ENV]!r} is neither report nor babysit",
                             f"unset {OPTIONAL_ENV} (optional checks' failures are reported, not "
                             f"debugged), or set {OPTIONAL_ENV}=babysit to treat every check as required")


def _comment_on_stop(settings: Mapping[str, str]) -> bool:
    raw = settings.get(COMMENT_ENV, "").strip().lower()
    if raw in ("", "0", "false", "no", "off"):
        return False
    if raw in ("1", "true", "yes", "on"):
        return True
    raise WorkflowInputError(f"{COMMENT_ENV}={settings[COMMENT_ENV]!r} is neither on nor off",
                             f"set {COMMENT_ENV}=1 to comment on the PR when the flow stops "
                             f"without green, or unset it")


# -- shared pieces -------------------------------------------------------------------------

def _abandon(d: CiData) -> Any:
    """A person answered `stop` to a GitHub question: end honestly, naming the failure."""
    def stop(reason: str) -> Go:
        d.end = EndReport(outcome="stopped", head_sha=d.head_sha, still_failing=list(d.failures),
                          reason=f"stopped by a person after GitHub refused: {reason}")
        return Go("abandon")
    return stop


# -- steps ---------------------------------------------------------------------------------

def monitor(ctx: Any) -> Any:
    """Observe once; act on `flow.workflows.ci.decide`'s decision."""
    d: CiData = ctx.data
    return guarded(ctx, d.github, "ci_monitor", lambda: _monitor(ctx, d), _abandon(d), _extra(d))


def _monitor(ctx: Any, d: CiData) -> Any:
    from flow.workflows.ci.observe import observe, refresh_required

    now = datetime.now(timezone.utc)
    client = _client(d.access, ctx.settings)
    obs = observe(client, d.repo, d.number, ctx.path(CACHE),
                  awaiting_head=d.awaiting.from_sha if d.awaiting is not None else None,
                  babysit_optional=d.babysit_optional, known_required=d.required)
    d.head_sha = obs.pull.head_sha
    d.pr_url = obs.pull.html_url or d.pr_url
    decision: Decision = decide(obs.classification, obs.head.runs, obs.pull, d, now)
    if decision.action not in ("wait", "closed") and obs.required_reused:
        # The kept reading of the required checks decided an action: read them again first.
        obs = refresh_required(client, d.repo, obs, ctx.path(CACHE), d.babysit_optional)
        decision = decide(obs.classification, obs.head.runs, obs.pull, d, now)
    if obs.checks_read:
        d.checks = seen_checks(obs.every_check or obs.classification, obs.classification)
        d.checks_sha = obs.head.sha
    if obs.required is not None:
        if obs.required != d.required and obs.required.note:
            ctx.log(f"required checks: {obs.required.note}")
        d.required = obs.required
    if d.awaiting is not None and decision.ci_phase != "waiting_for_push":
        d.awaiting = None  # the head moved: a new round starts on it
    ctx.log(f"{decision.action}: {decision.reason}")
    if decision.action == "wait" and decision.ci_phase == "waiting_for_ci":
        if d.waiting_sha != d.head_sha:
            d.waiting_sha, d.waiting_since = d.head_sha, now.isoformat()
    elif decision.action != "wait":
        d.waiting_sha = d.waiting_since = None
    if decision.action == "wait":
        return Sleep(decision.reason, extra=_waiting(d, decision.ci_phase))
    if decision.action == "debug":
        d.failures = decision.failures
        return Go("debug")
    if decision.action == "rerun":
        d.rerun_pending = decision.reruns
        return Go("rerun")
    d.end = decision.end
    if d.end is not None and obs.optional_failing:
        d.end.optional_failing = [failure_of(v) for v in obs.optional_failing]
    return Go({"green": "green", "closed": "pr_closed"}.get(decision.action, "stop"))


def debug(ctx: Any) -> Any:
    """One debugger task per round; its result opens the next round (or ends the flow)."""
    d: CiData = ctx.data
    res: DebuggerResult | None = ctx.result("debugger")
    round_no = d.fix_round + 1
    if res is None:
        failures = [f.model_dump(mode="json") for f in d.failures]
        prompt = render("ci_debugger", repo=d.repo, number=d.number,
                        pr_url=fence(d.pr_url, inline=True), head_sha=fence(d.head_sha, inline=True), fix_round=round_no, max_rounds=d.max_rounds,
                        failures=Untrusted(failures_text(d.failures), "CI failures and log lines"),
                        history=Untrusted(history_text(d.fix_history), "earlier debugger reports"))
        return Ask([Task(key="debugger", role="debugger", feed="debugger", prompt=prompt)],
                   extra={"ci_phase": "debugging", "fix_round": round_no,
                          "pr_url": d.pr_url, "pr_number": d.number, "head_sha": d.head_sha,
                          "failures": failures, **_required(d)})
    d.fix_round = round_no
    d.fix_history.append(FixRound(
        round=round_no, head_sha=d.head_sha, failures=[f.check_name for f in d.failures],
        fixes_applied=[f.model_dump() for f in res.fixes_applied],
        unrelated=[u.model_dump() for u in res.unrelated], pushed_commit=res.pushed_commit))
    if res.pushed_commit:
        d.awaiting = Awaiting(from_sha=d.head_sha, pushed=res.pushed_commit,
                              since=datetime.now(timezone.utc).isoformat())
        return Go("debugged")
    unrelated = {u.check_name for u in res.unrelated}
    if d.failures and {f.check_name for f in d.failures} <= unrelated:
        d.end = EndReport(outcome="needs_attention", head_sha=d.head_sha,
                          reason="the debugger judged every failure unrelated to this PR and "
                                 "pushed nothing", still_failing=list(d.failures))
        return Go("stop")
    return Go("debugged")  # nothing pushed: the next tick counts another round on this head


def rerun(ctx: Any) -> Any:
    """Re-run the failed jobs of each pending run, unless GitHub shows it was done already.

    A refusal (403 "Must have admin rights to Repository.", 404, 409, 422) is recorded on the
    re-run and never sent again; decide then reports those failures to a person.
    """
    d: CiData = ctx.data
    return guarded(ctx, d.github, "ci_rerun", lambda: _rerun(ctx, d), _abandon(d), _extra(d))


def _rerun(ctx: Any, d: CiData) -> Any:
    from flow.github.actions import rerun_failed_jobs
    from flow.github.errors import GitHubRequestFailed

    client = _client(d.access, ctx.settings)
    for item in list(d.rerun_pending):
        try:
            _, _, run = client.get_json(f"/repos/{d.repo}/actions/runs/{item.run_id}")
            # A crash after the POST but before the save left the intent: the attempt moved on.
            if int((run or {}).get("run_attempt") or 1) <= item.attempt:
                rerun_failed_jobs(client, d.repo, item.run_id)
        except GitHubRequestFailed as err:
            if err.status not in REFUSALS:
                raise
            item = item.model_copy(update={"refused": f"{err.status} {err.reason}"})
            d.github.history.append(f"ci_rerun: re-run of run {item.run_id} refused: {err.status} "
                                    f"{err.reason}")
            ctx.log(f"re-run of run {item.run_id} refused: {err.status} {err.reason}")
        d.reruns.append(item)
        d.rerun_pending = [r for r in d.rerun_pending if r.run_id != item.run_id]
    return Go("rerun_requested")


WORKFLOW = Workflow(
    name="ci",
    states=("ci_monitor", "ci_debug", "ci_rerun", "ci_report", "ci_done", "ci_stopped",
            "ci_closed"),
    transitions=(
        ("debug", "ci_monitor", "ci_debug"), ("debugged", "ci_debug", "ci_monitor"),
        ("rerun", "ci_monitor", "ci_rerun"), ("rerun_requested", "ci_rerun", "ci_monitor"),
        ("green", "ci_monitor", "ci_report"), ("stop", "ci_monitor", "ci_report"),
        ("stop", "ci_debug", "ci_report"),
        ("finished_green", "ci_report", "ci_done"), ("finished_red", "ci_report", "ci_stopped"),
        ("pr_closed", "ci_monitor", "ci_closed"),
        ("abandon", "ci_monitor", "ci_stopped"), ("abandon", "ci_rerun", "ci_stopped"),
    ),
    initial="ci_monitor",
    terminal=frozenset({"ci_done", "ci_stopped", "ci_closed"}),
    steps={"ci_monitor": monitor, "ci_debug": debug, "ci_rerun": rerun, "ci_report": report,
           "ci_done": done, "ci_stopped": stopped, "ci_closed": closed},
    feeds={"debugger": DebuggerResult},
    data_model=CiData,
    asks_person=frozenset({"ci_monitor", "ci_rerun", "ci_report"}),  # GitHub refused: mend or stop
    sleeps=frozenset({"ci_monitor", "ci_rerun", "ci_report"}),  # CI pending, GitHub rate limited
    skill="pytorch-test-refactoring",
    description="Watch a PR's CI: debug regressions, re-run flaky or infra jobs once, "
                "report green or what still fails.",
)
