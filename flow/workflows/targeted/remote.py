"""The GitHub steps of ``ci-targeted`` (dispatch, post, poll, reading failure logs), each run
through ``flow.github.trouble.guarded`` as ``--ci-check``'s steps are.

When GitHub says no:

- transient (primary or secondary rate limit, 5xx, timeouts through every retry): ``Sleep``
  (``schedule_cron``, ``targeted_phase`` ``rate_limited`` / ``github_unavailable``) until
  the time ``trouble.wait_seconds`` computes, kept in ``TargetedData.github``, so a tick that
  fires earlier asks GitHub nothing.
- permanent (401, 403 permission, 404, 422, a missing token or unreadable token file):
  ``Human`` quoting GitHub with how to mend it: ``retry`` asks again, ``stop`` ends the flow
  in ``stopped`` (outcome ``stopped``, the report naming the refusal and what was done).

Each step is safe to repeat after a failure part-way: ``post`` takes each comment out of the
outbox as GitHub accepts it (and skips one a crashed run posted, by the PR's comment
counts), ``poll`` keeps what it learnt of each run, ``dispatch`` writes only after its reads.
A job log GitHub no longer has (404, 410, an expired link) is named in the debugger's prompt
as unavailable: logs expire, and the run link is still there.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from flow.core.outcome import Go, Human, Sleep
from flow.github.trouble import guarded
from flow.workflows.targeted import loop
from flow.workflows.targeted.inputs import client_of
from flow.workflows.targeted.loop import Attempt, FileRun, Outbox, TargetedData

POSTED_AT = "posted-at.json"  # {test path: ISO time its latest comment was posted}
LOG_GONE = (404, 410)  # a job log GitHub no longer keeps


def fields(d: TargetedData) -> Callable[[str], dict[str, Any]]:
    """The fields a GitHub wait or question prints: which kind, and the PR."""
    def extra(kind: str) -> dict[str, Any]:
        return {"targeted_phase": kind, "pr": f"{d.repo}#{d.number}", "fix_round": d.round}
    return extra


def abandon(d: TargetedData) -> Callable[[str], Go]:
    """A person answered ``stop`` to a GitHub question: end honestly, naming the failure."""
    def stop(reason: str) -> Go:
        d.stopped = f"stopped by a person after GitHub refused: {reason}"
        return Go("abandon")
    return stop


def run_guarded(ctx: Any, step: str, body: Callable[[], Any]) -> Any:
    d: TargetedData = ctx.data
    return guarded(ctx, d.github, step, body, abandon(d), fields(d))


def is_outcome(value: Any) -> bool:
    """Whether ``run_guarded`` answered with an outcome (a wait, a question, a stop)."""
    return isinstance(value, (Go, Sleep, Human))


# -- dispatch ------------------------------------------------------------------------------

def dispatch(ctx: Any) -> Any:
    """Record what ``post`` will do, with the PR's comment counts now, before doing it."""
    return run_guarded(ctx, "dispatch", lambda: _dispatch(ctx, ctx.data))


def _dispatch(ctx: Any, d: TargetedData) -> Any:
    from flow.github.reads import get_pull
    from flow.workflows.targeted.runs import list_comments

    client = client_of(d, ctx.settings)
    comments = list_comments(client, d.repo, d.number)
    # The PR head the gateway will dispatch: what these runs test (not the runs' head_sha).
    head = get_pull(client, d.repo, d.number).head_sha
    counts: dict[str, int] = {}
    for c in comments:
        counts[c.body.strip()] = counts.get(c.body.strip(), 0) + 1
    after = max((c.id for c in comments), default=0)
    d.head_sha = head
    bodies = [f"/rerun-test {p}" for p in d.to_run]
    d.outbox = Outbox(comments={b: counts.get(b, 0) for b in bodies},
                      labels=d.outbox.labels if d.outbox else [])
    for p in d.to_run:
        fr = d.files.setdefault(p, FileRun(path=p))
        fr.status, fr.after = "queued", after
        fr.attempts.append(Attempt(round=d.round, sha=d.head_sha))
    return Go("queued")


# -- post ----------------------------------------------------------------------------------

def post(ctx: Any) -> Any:
    """Post each outbox comment not yet on the PR (its count is above the recorded one if a
    crashed earlier run posted it), then add the labels."""
    return run_guarded(ctx, "post", lambda: _post(ctx, ctx.data))


def _post(ctx: Any, d: TargetedData) -> Any:
    from flow.github.actions import add_labels, post_comment
    from flow.workflows.targeted.runs import comment_counts

    box = d.outbox or Outbox()
    d.outbox = box
    client = client_of(d, ctx.settings)
    counts = comment_counts(client, d.repo, d.number) if box.comments else {}
    for body, before in list(box.comments.items()):
        if counts.get(body, 0) <= before:
            post_comment(client, d.repo, d.number, body)
        # Done: out of the outbox, so a retry after a later failure neither posts nor
        # records it twice.
        del box.comments[body]
        d.posted.append(body)
    if box.labels:
        add_labels(client, d.repo, d.number, box.labels)
        d.labels_added += [lab for lab in box.labels if lab not in d.labels_added]
        box.labels = []
    # When each file's comment went out, for the poll deadline: a file beside the state, so
    # the state holds no wall-clock time (a replay of the same flow ends in the same state).
    posted = posted_at(ctx)
    now = datetime.now(timezone.utc).isoformat()
    for p in d.to_run:
        d.files[p].status = "running"
        posted[p] = now
    if d.to_run:
        ctx.write_json(POSTED_AT, posted)
    d.outbox, d.to_run = None, []
    return Go("posted" if any(f.status == "running" for f in d.files.values()) else "labelled")


def posted_at(ctx: Any) -> dict[str, str]:
    try:
        got = ctx.read_json(POSTED_AT)
    except (OSError, ValueError):
        return {}
    return got if isinstance(got, dict) else {}


# -- poll ----------------------------------------------------------------------------------

def poll(ctx: Any) -> Any:
    """Find each running file's own run (see ``runs.find_run``) and read its result; past
    the poll deadline (``ORCHESTRATOR_TARGETED_POLL_HOURS``) the files still going end
    the flow as ``timed_out``, said so, never as green."""
    return run_guarded(ctx, "poll", lambda: _poll(ctx, ctx.data))


def _poll(ctx: Any, d: TargetedData) -> Any:
    from flow.workflows.targeted.runs import find_refusal, find_run, get_run

    hours = loop.poll_hours(ctx.settings)  # a bad setting is refused before any request
    running = [f for f in d.files.values() if f.status == "running"]
    client = client_of(d, ctx.settings)
    claimed = {a.run_id for f in d.files.values() for a in f.attempts if a.run_id}
    for fr in sorted(running, key=lambda f: f.path):
        att = fr.attempts[-1]
        if att.run_id is not None:
            run = get_run(client, d.repo, att.run_id)
        else:
            run = find_run(client, d.repo, d.number, fr.path, fr.after, claimed)
        if run is None:
            refusal = find_refusal(client, d.repo, d.number, fr.path, fr.after)
            if refusal is not None:
                fr.status = "refused"
                att.run_id, att.url, att.conclusion = refusal.run_id, refusal.url, "refused"
                why = _refusal_text(ctx, refusal.failed_job)
                d.reported.append(f"{fr.path}: the comment gateway refused /rerun-test "
                                  f"({refusal.url}): {why}")
                d.stopped = (f"the comment gateway refused /rerun-test {fr.path} ({why}; run "
                             f"{refusal.url}): the commenter needs write permission on "
                             f"{d.repo}, or a maintainer must post the comment")
            continue
        claimed.add(run.id)
        att.run_id, att.url, att.run_sha = run.id, run.url, run.head_sha
        if run.status == "completed":
            att.conclusion, att.seconds = run.conclusion, run.seconds
            att.failed_job = run.failed_job
            fr.status = "passed" if run.conclusion == "success" else "failed"
    if any(f.status == "refused" for f in d.files.values()):
        return Go("abandon")  # polling on would wait the whole deadline for no run
    waiting = [f for f in d.files.values() if f.status == "running"]
    if waiting:
        now = datetime.now(timezone.utc)
        posted = posted_at(ctx)
        late = [f for f in waiting if f.path in posted
                and (now - datetime.fromisoformat(posted[f.path])).total_seconds() >= hours * 3600]
        if late:
            for f in late:
                f.status = "timed_out"
                run_id = f.attempts[-1].run_id
                d.reported.append(f"{f.path}: no finished run found within {hours:g} h of the "
                                  f"comment ({f'run {run_id}' if run_id else 'no run found'})")
            return Go("timed_out")
        minutes = loop.poll_minutes([d.est.get(f.path) for f in waiting])
        return Sleep(f"{len(waiting)} /rerun-test run(s) of {d.repo}#{d.number} still going: "
                     + ", ".join(f.path for f in waiting),
                     cron_interval=loop.cron_every(minutes), poll_seconds=minutes * 60,
                     extra={"targeted_phase": "waiting_for_runs"})
    failed = [f for f in d.files.values() if f.status == "failed"]
    return Go("failed" if failed else "green")


def _refusal_text(ctx: Any, job_id: int | None) -> str:
    """The gateway's own error line for a refused command (``::error::...``), or what is
    known when its log cannot be read."""
    from flow.github.actions import job_log
    from flow.github.errors import GitHubRequestFailed, LinkExpired

    if job_id is None:
        return "its gateway run failed"
    try:
        text = job_log(client_of(ctx.data, ctx.settings), ctx.data.repo, job_id, 65_536)
    except (LinkExpired, GitHubRequestFailed):
        return "its gateway run failed (log unavailable)"
    errors = [ln.split("::error::", 1)[1].strip() for ln in str(text).splitlines()
              if "::error::" in ln]
    return "; ".join(errors[:3]) or "its gateway run failed"


# -- failure logs for the debugger ---------------------------------------------------------

def failure_texts(ctx: Any, failed: list[FileRun]) -> Any:
    """Each failed file's log lines for the debugger's prompt, or a GitHub outcome."""
    return run_guarded(ctx, "debug", lambda: "".join(_failure_text(ctx, f) for f in failed))


def _failure_text(ctx: Any, fr: FileRun) -> str:
    from flow.workflows.ci.observe import job_failure_lines
    from flow.github.errors import GitHubRequestFailed, LinkExpired

    d: TargetedData = ctx.data
    att = fr.attempts[-1]
    head = f"### {fr.path} ({att.conclusion}; run {att.url or att.run_id})\n"
    if att.failed_job is None:
        return head + "(no failed job to read a log from)\n"
    try:
        ex = job_failure_lines(client_of(d, ctx.settings), d.repo, att.failed_job)
    except LinkExpired as err:
        return head + f"(log unavailable: {err.message})\n"
    except GitHubRequestFailed as err:
        if err.status not in LOG_GONE:
            raise  # a refused token or permission: a person can mend it
        return head + f"(log unavailable: {err.message})\n"
    infra = f"(matches the known infra pattern {ex.infra})\n" if ex.infra else ""
    return head + infra + "\n".join(ex.lines) + "\n"
