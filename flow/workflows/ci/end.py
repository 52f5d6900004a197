"""The end of a CI watch (the `ci` workflow's ci_report, ci_done, ci_stopped, ci_closed
steps) and the waiting fields the monitor shares with it.

ci_report does the end's GitHub writes (mark ready, the give-up comment), each idempotent by
remote state; a write GitHub refuses (403, 404, 409, 422) is recorded in
`CiData.report_problems` and named in the result, never retried. The terminal steps print
what happened, what still fails and what GitHub refused, never "all checks passed" unless
every check passed.
"""

from __future__ import annotations

from typing import Any

from flow.core.outcome import Done, Go
from flow.github.access import connect_with
from flow.github.trouble import guarded
from flow.workflows.ci.decide import CiData
from flow.workflows.ci.text import stop_comment

REFUSALS = (403, 404, 409, 422)  # a re-run or end write GitHub will not do as asked


def required_fields(d: CiData) -> dict[str, Any]:
    """Which checks decide green, as printed on every tick and at the end (the fallback's
    note included, so "every check counts" is never silent)."""
    if d.required is None:
        return {}
    r = d.required
    return {"required_checks": {"source": r.source, "branch": r.branch, "contexts": r.contexts,
                                **({"apps": r.apps} if r.apps else {}), "note": r.note or None}}


def waiting_fields(d: CiData, ci_phase: str) -> dict[str, Any]:
    return {"pr_url": d.pr_url, "pr_number": d.number, "head_sha": d.head_sha,
            "ci_phase": ci_phase, "fix_round": d.fix_round, **required_fields(d)}


def extra_for(d: CiData) -> Any:
    """The waiting fields for a GitHub wait: ci_phase rate_limited or github_unavailable."""
    def extra(kind: str) -> dict[str, Any]:
        return waiting_fields(d, kind)
    return extra


def report(ctx: Any) -> Any:
    """The end's GitHub writes, each idempotent by remote state; then the terminal state.

    A write GitHub refuses (403, 404, 409, 422) is recorded in `report_problems` and the flow
    ends anyway, naming it; a stop answered to a GitHub question ends it the same way.
    """
    d: CiData = ctx.data
    assert d.end is not None, "ci_report is only entered with data.end set"
    trigger = "finished_green" if d.end.outcome == "all_green" else "finished_red"

    def stop(reason: str) -> Go:
        d.report_problems.append(f"stopped by a person after GitHub refused: {reason}")
        return Go(trigger)

    return guarded(ctx, d.github, "ci_report", lambda: _report(ctx, d, trigger), stop, extra_for(d))


def _report(ctx: Any, d: CiData, trigger: str) -> Any:
    from flow.github.actions import list_comments, mark_ready, post_comment
    from flow.github.errors import GitHubRequestFailed

    end = d.end
    assert end is not None
    client = connect_with(d.access, ctx.settings)
    try:
        if end.outcome == "all_green":
            if d.mark_ready and not d.marked_ready:
                mark_ready(client, d.repo, d.number)  # no-op (False) when already ready
                d.marked_ready = True
        elif d.comment_on_stop and d.comment_url is None:
            marker = f"<!-- orchestrator:{ctx.flow_id}:{end.outcome}:round-{d.fix_round} -->"
            if not any(marker in body for body in list_comments(client, d.repo, d.number)):
                d.comment_url = post_comment(client, d.repo, d.number, stop_comment(d, marker))
            else:
                d.comment_url = ""  # posted by an earlier run of this step
    except GitHubRequestFailed as err:
        if err.status not in REFUSALS:
            raise
        what = "mark the PR ready" if end.outcome == "all_green" else "comment on the PR"
        d.report_problems.append(f"GitHub refused to {what}: {err.status} {err.reason}")
    return Go(trigger)


def done(ctx: Any) -> Any:
    d: CiData = ctx.data
    assert d.end is not None
    result = {"outcome": "all_green", "pr_url": d.pr_url, "pr_number": d.number,
              "head_sha": d.end.head_sha, "fix_history": [r.model_dump() for r in d.fix_history],
              "fix_rounds": d.fix_round, "marked_ready": d.marked_ready,
              "recovered_flaky": d.end.recovered, "github_problems": _problems(d),
              "optional_failing": [f.model_dump() for f in d.end.optional_failing],
              **required_fields(d)}
    steps = [] if d.marked_ready else [f"Mark the PR ready for review: gh pr ready {d.number} "
                                       f"--repo {d.repo} (or re-run with --mark-ready)."]
    steps += [f"GitHub refused a step: {p}." for p in d.report_problems]
    if d.end.optional_failing:
        from agents.prompts import fence  # check names come from GitHub: data, fenced

        names = ", ".join(fence(f.check_name, inline=True, limit=120) for f in d.end.optional_failing)
        steps.append(f"Every required check passed; optional checks fail and were not debugged: "
                     f"{names}.")
    steps.append("Delete this PR's CI cron job (CronDelete) or poll loop: the flow is finished.")
    return Done(result, steps)


def stopped(ctx: Any) -> Any:
    d: CiData = ctx.data
    assert d.end is not None
    failing = [f.model_dump() for f in d.end.still_failing]
    result = {"outcome": d.end.outcome, "reason": d.end.reason, "pr_url": d.pr_url,
              "pr_number": d.number, "head_sha": d.end.head_sha, "still_failing": failing,
              "fix_history": [r.model_dump() for r in d.fix_history], "fix_rounds": d.fix_round,
              "comment_url": d.comment_url or None, "github_problems": _problems(d),
              "refused_reruns": [r.model_dump() for r in d.reruns if r.refused],
              "optional_failing": [f.model_dump() for f in d.end.optional_failing],
              **required_fields(d)}
    from agents.prompts import fence  # check names come from GitHub: data, fenced

    names = ", ".join(fence(n, inline=True, limit=120)
                      for n in sorted({f.check_name for f in d.end.still_failing})) or "(none listed)"
    steps = [f"CI is NOT green; do not mark the PR ready. Still failing: {names}.",
             *[f"GitHub refused to re-run run {r.run_id} ({r.refused}): ask someone with write "
               f"access to re-run its failed jobs ({', '.join(r.checks)}), or look at them."
               for r in d.reruns if r.refused],
             *[f"GitHub refused a step: {p}." for p in d.report_problems],
             "Delete this PR's CI cron job (CronDelete) or poll loop.",
             "After fixing by hand (or once trunk is fixed), watch again with: "
             + ctx.cmds.cli("--ci-check", "--repo", d.repo, "--pr-number", str(d.number),
                            "--restart")]
    return Done(result, steps)


def _problems(d: CiData) -> list[str]:
    return [*d.github.history, *d.report_problems]


def closed(ctx: Any) -> Any:
    d: CiData = ctx.data
    assert d.end is not None
    result = {"outcome": d.end.outcome, "reason": d.end.reason, "pr_url": d.pr_url,
              "pr_number": d.number, "head_sha": d.end.head_sha, "fix_rounds": d.fix_round,
              "fix_history": [r.model_dump() for r in d.fix_history]}
    return Done(result, [f"Delete this PR's CI cron job (CronDelete) or poll loop: the PR is "
                         f"{d.end.outcome}, nothing is left to watch."])
