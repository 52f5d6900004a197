"""The `ci` workflow (`orchestrator.py --ci-check`): babysit one pull request's CI.

Flow id `ci/<owner>/<repo>/pr-<N>`. States:

    ci_monitor --debug--> ci_debug --debugged--> ci_monitor
    ci_monitor --rerun--> ci_rerun --rerun_requested--> ci_monitor
    ci_monitor --green / stop--> ci_report --finished_green--> ci_done
    ci_debug --stop--> ci_report --finished_red--> ci_stopped
    ci_monitor --pr_closed--> ci_closed

`ci_monitor` observes once per call (flow.ci.observe) and carries out `flow.ci.decide`:
pending -> `schedule_cron` in phase ci_monitor; regressions -> one debugger task in
ci_debug; infra/flaky -> ci_rerun re-runs the failed jobs of each run once; the end goes
through ci_report, which does the GitHub writes (mark ready, the give-up comment), then to
ci_done (`outcome: all_green`) or ci_stopped (`gave_up` / `needs_attention`, with what
still fails; never "all checks passed"). A merged or closed PR ends in ci_closed
(`outcome: merged` / `closed`) on the tick that sees it, with no GitHub write.

GitHub writes survive a crash between the write and the save: the intent is saved first
(`rerun_pending`, `end`), and each write checks remote state before acting (the run's
attempt number, the PR's draft flag, a marker in the PR's comments).

Settings (environment): GITHUB_TOKEN / GH_TOKEN, ORCHESTRATOR_GITHUB_API,
ORCHESTRATOR_CI_MAX_ROUNDS (default 3), ORCHESTRATOR_CI_COMMENT=1 (comment on the PR when
the flow stops without green), ORCHESTRATOR_GITHUB_BACKOFF (first retry wait, seconds).
PyGithub is imported only inside the steps that talk to GitHub.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from agents.prompts import Untrusted, fence, render
from flow.ci.decide import DEFAULT_MAX_ROUNDS, Awaiting, CiData, Decision, EndReport, FixRound, decide
from flow.ci.feeds import DebuggerResult
from flow.ci.text import failures_text, history_text, stop_comment
from flow.errors import WorkflowInputError
from flow.outcome import Ask, Done, Go, Sleep, Task
from flow.workflow import Workflow

_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
MAX_ROUNDS_ENV = "ORCHESTRATOR_CI_MAX_ROUNDS"
COMMENT_ENV = "ORCHESTRATOR_CI_COMMENT"
CACHE = "github_cache.json"


# -- locating and starting ---------------------------------------------------------------

def _repo_dir(opts: Mapping[str, Any]) -> Path:
    return Path(opts.get("repo_dir") or ".").resolve()


def _client(settings: Mapping[str, str]) -> Any:
    from flow.github.client import connect

    return connect(env=settings)  # reads the token, API URL and backoff settings itself


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

    pull = locate_pr(_client(os.environ), _repo_dir(opts), None, repo)
    return pull.repo, pull.number


def locate(opts: dict[str, Any], root: Path) -> str:
    """`ci/<owner>/<repo>/pr-<N>`; without --pr-number the current branch's open PR."""
    repo, number = _target(opts)
    # Hand what was found to start(), which then asks GitHub nothing more to find the PR.
    opts["repo"], opts["pr_number"] = repo, number
    return f"ci/{repo}/pr-{number}"


def start(opts: dict[str, Any], root: Path, settings: Mapping[str, str]) -> CiData:
    """Initial data; checks token, repository and PR now, so a bad start writes nothing."""
    from flow.github.reads import get_pull

    repo, number = _target(opts)
    rounds, comment = _max_rounds(settings), _comment_on_stop(settings)
    pull = get_pull(_client(settings), repo, number)
    return CiData(repo=repo, number=number, pr_url=pull.html_url,
                  mark_ready=bool(opts.get("mark_ready")), max_rounds=rounds,
                  comment_on_stop=comment, head_sha=pull.head_sha)


def _max_rounds(settings: Mapping[str, str]) -> int:
    raw = settings.get(MAX_ROUNDS_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_ROUNDS
    if not raw.isdigit() or int(raw) < 1:
        raise WorkflowInputError(f"{MAX_ROUNDS_ENV}={raw!r} is not a positive whole number",
                                 f"unset it for {DEFAULT_MAX_ROUNDS} rounds, or set e.g. "
                                 f"{MAX_ROUNDS_ENV}=2")
    return int(raw)


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

def _waiting(d: CiData, ci_phase: str) -> dict[str, Any]:
    return {"pr_url": d.pr_url, "pr_number": d.number, "head_sha": d.head_sha,
            "ci_phase": ci_phase, "fix_round": d.fix_round}


def _rate_limited(d: CiData, err: Any, now: datetime | None = None) -> Sleep:
    """Come back when GitHub's budget refills: `*/N` with N the minutes left (1..59).

    A `*/N` cron fires within N minutes whatever the harness's time zone; firing a little
    early only costs one more rate-limited answer, which GitHub does not count.
    """
    now = now or datetime.now(timezone.utc)
    seconds = max((err.reset_at - now).total_seconds(), 0.0) + 5
    minutes = min(max(math.ceil(seconds / 60), 1), 59)
    return Sleep(f"GitHub rate limit reached; it resets at {err.reset_at.isoformat()}: "
                 f"next tick in about {minutes} minute(s)", cron_interval=f"*/{minutes} * * * *",
                 poll_seconds=int(math.ceil(seconds)), extra=_waiting(d, "rate_limited"))


# -- steps ---------------------------------------------------------------------------------

def monitor(ctx: Any) -> Any:
    """Observe once; act on `flow.ci.decide`'s decision."""
    from flow.ci.observe import observe
    from flow.github.errors import RateLimited

    d: CiData = ctx.data
    try:
        obs = observe(_client(ctx.settings), d.repo, d.number, ctx.path(CACHE),
                      awaiting_head=d.awaiting.from_sha if d.awaiting is not None else None)
    except RateLimited as err:
        return _rate_limited(d, err)
    d.head_sha = obs.pull.head_sha
    d.pr_url = obs.pull.html_url or d.pr_url
    decision: Decision = decide(obs.classification, obs.head.runs, obs.pull, d)
    if d.awaiting is not None and decision.ci_phase != "waiting_for_push":
        d.awaiting = None  # the head moved: a new round starts on it
    ctx.log(f"{decision.action}: {decision.reason}")
    if decision.action == "wait":
        return Sleep(decision.reason, extra=_waiting(d, decision.ci_phase))
    if decision.action == "debug":
        d.failures = decision.failures
        return Go("debug")
    if decision.action == "rerun":
        d.rerun_pending = decision.reruns
        return Go("rerun")
    d.end = decision.end
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
                          "failures": failures})
    d.fix_round = round_no
    d.fix_history.append(FixRound(
        round=round_no, head_sha=d.head_sha, failures=[f.check_name for f in d.failures],
        fixes_applied=[f.model_dump() for f in res.fixes_applied],
        unrelated=[u.model_dump() for u in res.unrelated], pushed_commit=res.pushed_commit))
    if res.pushed_commit:
        d.awaiting = Awaiting(from_sha=d.head_sha, pushed=res.pushed_commit)
        return Go("debugged")
    unrelated = {u.check_name for u in res.unrelated}
    if d.failures and {f.check_name for f in d.failures} <= unrelated:
        d.end = EndReport(outcome="needs_attention", head_sha=d.head_sha,
                          reason="the debugger judged every failure unrelated to this PR and "
                                 "pushed nothing", still_failing=list(d.failures))
        return Go("stop")
    return Go("debugged")  # nothing pushed: the next tick counts another round on this head


def rerun(ctx: Any) -> Any:
    """Re-run the failed jobs of each pending run, unless GitHub shows it was done already."""
    from flow.github.actions import rerun_failed_jobs
    from flow.github.errors import RateLimited

    d: CiData = ctx.data
    try:
        client = _client(ctx.settings)
        for item in d.rerun_pending:
            _, _, run = client.get_json(f"/repos/{d.repo}/actions/runs/{item.run_id}")
            # A crash after the POST but before the save left the intent: the attempt moved on.
            if int((run or {}).get("run_attempt") or 1) <= item.attempt:
                rerun_failed_jobs(client, d.repo, item.run_id)
            d.reruns.append(item)
            d.rerun_pending = [r for r in d.rerun_pending if r.run_id != item.run_id]
    except RateLimited as err:
        return _rate_limited(d, err)
    return Go("rerun_requested")


def report(ctx: Any) -> Any:
    """The end's GitHub writes, each idempotent by remote state; then the terminal state."""
    from flow.github.actions import list_comments, mark_ready, post_comment
    from flow.github.errors import RateLimited

    d: CiData = ctx.data
    end = d.end
    assert end is not None, "ci_report is only entered with data.end set"
    try:
        client = _client(ctx.settings)
        if end.outcome == "all_green":
            if d.mark_ready and not d.marked_ready:
                mark_ready(client, d.repo, d.number)  # no-op (False) when already ready
                d.marked_ready = True
            return Go("finished_green")
        if d.comment_on_stop and d.comment_url is None:
            marker = f"<!-- orchestrator:{ctx.flow_id}:{end.outcome}:round-{d.fix_round} -->"
            if not any(marker in body for body in list_comments(client, d.repo, d.number)):
                d.comment_url = post_comment(client, d.repo, d.number, stop_comment(d, marker))
            else:
                d.comment_url = ""  # posted by an earlier run of this step
    except RateLimited as err:
        return _rate_limited(d, err)
    return Go("finished_red")


def done(ctx: Any) -> Any:
    d: CiData = ctx.data
    assert d.end is not None
    result = {"outcome": "all_green", "pr_url": d.pr_url, "pr_number": d.number,
              "head_sha": d.end.head_sha, "fix_history": [r.model_dump() for r in d.fix_history],
              "fix_rounds": d.fix_round, "marked_ready": d.marked_ready,
              "recovered_flaky": d.end.recovered}
    steps = [] if d.marked_ready else [f"Mark the PR ready for review: gh pr ready {d.number} "
                                       f"--repo {d.repo} (or re-run with --mark-ready)."]
    steps.append("Delete this PR's CI cron job (CronDelete) or poll loop: the flow is finished.")
    return Done(result, steps)


def stopped(ctx: Any) -> Any:
    d: CiData = ctx.data
    assert d.end is not None
    failing = [f.model_dump() for f in d.end.still_failing]
    result = {"outcome": d.end.outcome, "reason": d.end.reason, "pr_url": d.pr_url,
              "pr_number": d.number, "head_sha": d.end.head_sha, "still_failing": failing,
              "fix_history": [r.model_dump() for r in d.fix_history], "fix_rounds": d.fix_round,
              "comment_url": d.comment_url or None}
    # Check names come from GitHub: data, fenced.
    names = ", ".join(fence(n, inline=True, limit=120)
                      for n in sorted({f.check_name for f in d.end.still_failing})) or "(none listed)"
    steps = [f"CI is NOT green; do not mark the PR ready. Still failing: {names}.",
             "Delete this PR's CI cron job (CronDelete) or poll loop.",
             "After fixing by hand (or once trunk is fixed), watch again with: "
             + ctx.cmds.cli("--ci-check", "--repo", d.repo, "--pr-number", str(d.number),
                            "--restart")]
    return Done(result, steps)


def closed(ctx: Any) -> Any:
    d: CiData = ctx.data
    assert d.end is not None
    result = {"outcome": d.end.outcome, "reason": d.end.reason, "pr_url": d.pr_url,
              "pr_number": d.number, "head_sha": d.end.head_sha, "fix_rounds": d.fix_round,
              "fix_history": [r.model_dump() for r in d.fix_history]}
    return Done(result, [f"Delete this PR's CI cron job (CronDelete) or poll loop: the PR is "
                         f"{d.end.outcome}, nothing is left to watch."])


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
    ),
    initial="ci_monitor",
    terminal=frozenset({"ci_done", "ci_stopped", "ci_closed"}),
    steps={"ci_monitor": monitor, "ci_debug": debug, "ci_rerun": rerun, "ci_report": report,
           "ci_done": done, "ci_stopped": stopped, "ci_closed": closed},
    feeds={"debugger": DebuggerResult},
    data_model=CiData,
    skill="pytorch-test-refactoring",
    description="Watch a PR's CI: debug regressions, re-run flaky or infra jobs once, "
                "report green or what still fails.",
)
