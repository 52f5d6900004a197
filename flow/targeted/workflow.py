"""The ``ci-targeted`` workflow: run only the CI test files a PR can reach, fix, re-run.

``orchestrator.py ci-targeted --base REV [--pr-number N] [--repo owner/name] [--repo-dir DIR]
[--profile NAME] [--approved]``; flow id ``ci-targeted/<owner>/<repo>/pr-<N>``.

trace -> approve (need_human with the exact comments/labels unless --approved) -> dispatch
(record the outbox) -> post (one ``/rerun-test <file>`` comment per file, or labels) -> poll
("Rerun Test" runs, on a 10-30 minute cron from the tests' est_time) -> debug (a debugger
task with each failure's log) -> retrace (``--base`` at the SHA the runs used, after a fix
push) -> approve ... ; infra or flake: re-run once, then report. At most 3 fix rounds, then
``gave_up``. Labels mode ends after adding the labels: the labeled "PR Test" run is watched
with ``--ci-check``, not here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flow.outcome import Ask, Done, Go, Human, Sleep, Task
from flow.targeted import loop
# locate and start serve the registry, which reads them from this module.
from flow.targeted.inputs import github, locate, start  # noqa: F401
from flow.targeted.loop import Attempt, FileRun, Fix, Outbox, TargetedData
from flow.workflow import Workflow

OUTCOMES = {"nothing": "nothing_to_run", "declined": "declined", "green": "green",
            "labelled": "labels_added", "reported": "failures_reported", "gave_up": "gave_up"}


def _cfg(d: TargetedData) -> Any:
    from flow.targeted.cli import load

    return load(Path(d.repo_dir), d.profile)


def _plan(ctx: Any, base: str) -> tuple[Any, Any]:
    """Trace ``base...HEAD`` of the checkout and choose files or labels: (report, plan)."""
    from flow.targeted.cli import cache_dir_for, trace
    from flow.targeted.select import choose

    d: TargetedData = ctx.data
    cfg = _cfg(d)
    report = trace(Path(d.repo_dir), base, d.depth, d.hub_limit, cfg,
                   cache_dir=cache_dir_for(ctx.root, Path(d.repo_dir)))
    return report, choose(report, cfg)


def trace_step(ctx: Any) -> Any:
    d: TargetedData = ctx.data
    report, plan = _plan(ctx, d.base)
    ctx.write_json("trace-0.json", report.model_dump(mode="json"))
    d.plan = plan
    d.to_run = loop.files_of(plan)
    d.outbox = Outbox(labels=plan.labels)
    d.not_run = loop.not_run(report, plan)
    d.new_tests = loop.new_tests(report)
    d.suites = {t.path: t.suite for t in report.tests}
    d.est = {t.path: t.est_time for t in report.tests if t.est_time}
    return Go("empty" if plan.mode == "nothing" else "traced")


def approve(ctx: Any) -> Any:
    d: TargetedData = ctx.data
    labels = d.outbox.labels if d.outbox else []
    comments = [f"/rerun-test {p}" for p in d.to_run]
    # A fix round re-running files was approved with the first dispatch; new labels were not.
    if d.approved or (d.posted and not labels):
        return Go("approved")
    key = f"approve-{len(d.posted)}-{len(d.labels_added)}-r{d.round}"
    answer = ctx.answer(key)
    if answer is None:
        lines = [f"comment: {c}" for c in comments] + [f"label: {lab}" for lab in labels]
        why = "; ".join(d.plan.reasons) if d.plan else ""
        return Human(key, f"Spend CI runners on {d.repo}#{d.number}? Exactly:\n"
                     + "\n".join(lines) + (f"\n({why})" if why else ""),
                     {"approve": "post exactly these comments / add these labels",
                      "decline": "spend nothing; end with the report"},
                     extra={"comments": comments, "labels": labels})
    if answer == "decline":
        d.declined = True
        return Go("declined")
    return Go("approved")


def dispatch(ctx: Any) -> Any:
    """Record what ``post`` will do, with the PR's comment counts now, before doing it."""
    from flow.github.reads import get_pull
    from flow.targeted.runs import comment_counts, newest_run_id

    d: TargetedData = ctx.data
    client = github(ctx.settings)
    counts = comment_counts(client, d.repo, d.number)
    after = newest_run_id(client, d.repo)
    d.head_sha = get_pull(client, d.repo, d.number).head_sha
    bodies = [f"/rerun-test {p}" for p in d.to_run]
    d.outbox = Outbox(comments={b: counts.get(b, 0) for b in bodies},
                      labels=d.outbox.labels if d.outbox else [])
    for p in d.to_run:
        fr = d.files.setdefault(p, FileRun(path=p))
        fr.status, fr.after = "queued", after
        fr.attempts.append(Attempt(round=d.round, sha=d.head_sha))
    return Go("queued")


def post(ctx: Any) -> Any:
    """Post each outbox comment not yet on the PR (its count is above the recorded one if a
    crashed earlier run posted it), then add the labels."""
    from flow.github.actions import add_labels, post_comment
    from flow.targeted.runs import comment_counts

    d: TargetedData = ctx.data
    box = d.outbox or Outbox()
    client = github(ctx.settings)
    counts = comment_counts(client, d.repo, d.number) if box.comments else {}
    for body, before in box.comments.items():
        if counts.get(body, 0) <= before:
            post_comment(client, d.repo, d.number, body)
        d.posted.append(body)
    if box.labels:
        add_labels(client, d.repo, d.number, box.labels)
        d.labels_added += [lab for lab in box.labels if lab not in d.labels_added]
    for p in d.to_run:
        d.files[p].status = "running"
    d.outbox, d.to_run = None, []
    return Go("posted" if any(f.status == "running" for f in d.files.values()) else "labelled")


def poll(ctx: Any) -> Any:
    from flow.github.errors import RateLimited
    from flow.targeted.runs import list_runs, names_file

    d: TargetedData = ctx.data
    running = [f for f in d.files.values() if f.status == "running"]
    try:
        runs = list_runs(github(ctx.settings), d.repo, min(f.after for f in running))
    except RateLimited as err:
        # Polling can wait: sleep past the reset instead of failing the tick.
        return Sleep(f"GitHub rate limit reached; it resets at {err.reset_at.isoformat()}",
                     cron_interval=loop.cron_every(30), poll_seconds=1800)
    claimed = {a.run_id for f in d.files.values() for a in f.attempts if a.run_id}
    for fr in sorted(running, key=lambda f: f.path):
        att = fr.attempts[-1]
        run = next((r for r in runs if r.id == att.run_id), None) or next(
            (r for r in runs if r.id > fr.after and r.id not in claimed
             and names_file(r, fr.path)), None)
        if run is None:
            continue
        claimed.add(run.id)
        att.run_id, att.url, att.sha = run.id, run.url, run.head_sha
        if run.status == "completed":
            att.conclusion, att.seconds, att.failed_job = run.conclusion, run.seconds, run.failed_job
            fr.status = "passed" if run.conclusion == "success" else "failed"
    waiting = [f for f in d.files.values() if f.status == "running"]
    if waiting:
        minutes = loop.poll_minutes([d.est.get(f.path) for f in waiting])
        return Sleep(f"{len(waiting)} /rerun-test run(s) of {d.repo}#{d.number} still going: "
                     + ", ".join(f.path for f in waiting),
                     cron_interval=loop.cron_every(minutes), poll_seconds=minutes * 60)
    failed = [f for f in d.files.values() if f.status == "failed"]
    return Go("failed" if failed else "green")


def _failure_text(ctx: Any, fr: FileRun) -> str:
    from flow.github.actions import job_failure_lines
    from flow.github.errors import GitHubError

    att = fr.attempts[-1]
    head = f"### {fr.path} ({att.conclusion}; run {att.url or att.run_id})\n"
    if att.failed_job is None:
        return head + "(no failed job to read a log from)\n"
    try:
        ex = job_failure_lines(github(ctx.settings), ctx.data.repo, att.failed_job)
    except GitHubError as err:
        return head + f"(log unavailable: {err.message})\n"
    infra = f"(matches the known infra pattern {ex.infra})\n" if ex.infra else ""
    return head + infra + "\n".join(ex.lines) + "\n"


def debug(ctx: Any) -> Any:
    from agents.prompts import Untrusted, render

    d: TargetedData = ctx.data
    failed = sorted((f for f in d.files.values() if f.status == "failed"), key=lambda f: f.path)
    if d.round >= loop.MAX_FIX_ROUNDS:
        return Go("exhausted")
    res = ctx.result("debugger")
    if res is None:
        text = "".join(_failure_text(ctx, f) for f in failed)
        history = "\n".join(f"round {x.round}: {x.commit} fixed {', '.join(x.files)}: {x.why}"
                            for x in d.fixes) or "(none)"
        prompt = render("targeted_debugger", number=d.number, repo=d.repo,
                        repo_dir=d.repo_dir, fix_round=d.round + 1,
                        max_rounds=loop.MAX_FIX_ROUNDS, head_sha=failed[0].attempts[-1].sha,
                        failures=Untrusted(text, "CI failure logs"),
                        history=Untrusted(history, "earlier fix rounds"))
        return Ask([Task(key="debugger", role="debugger", feed="debug", prompt=prompt,
                         cwd=d.repo_dir)],
                   extra={"fix_round": d.round + 1, "failures": [f.path for f in failed]})
    d.round += 1
    verdicts = {v.path: v for v in res.verdicts}
    rerun: list[str] = []
    pr_caused: list[str] = []
    for fr in failed:
        v = verdicts.get(fr.path)
        fr.cause, fr.why = (v.cause, v.why) if v else ("caused_by_pr", "the debugger gave no verdict")
        if fr.cause == "caused_by_pr":
            pr_caused.append(fr.path)
        elif fr.flake_reruns == 0:
            fr.flake_reruns = 1
            rerun.append(fr.path)
        else:
            d.reported.append(f"{fr.path}: {fr.cause} again after one re-run: {fr.why}")
    d.to_run = rerun
    d.outbox = Outbox()
    if pr_caused and res.pushed_commit:
        d.fixes.append(Fix(round=d.round, files=pr_caused, commit=res.pushed_commit,
                           why="; ".join(res.fixes) or "; ".join(d.files[p].why
                                                                  for p in pr_caused)))
        return Go("fixed")
    if pr_caused:
        d.reported += [f"{p}: caused by the PR, no fix pushed in round {d.round}"
                       for p in pr_caused]
        return Go("exhausted" if d.round >= loop.MAX_FIX_ROUNDS else "retry")
    return Go("rerun" if rerun else "report")


def retrace(ctx: Any) -> Any:
    """Re-trace from the SHA the runs used to the fix, and queue what it reaches."""
    from flow.targeted.errors import TargetedError

    d: TargetedData = ctx.data
    fix = d.fixes[-1].commit
    where = Path(d.repo_dir)
    from flow import proc

    probe = proc.capture(["git", "-C", str(where), "merge-base", "--is-ancestor", fix, "HEAD"])
    if not probe.ok:
        raise TargetedError(f"the fix commit {fix!r} is not in the history of HEAD in "
                            f"{str(where)!r}", "pull the PR branch there, then --resume")
    ran = [a.sha for f in d.files.values() for a in f.attempts if a.conclusion == "success"]
    base = ran[-1] if ran else d.files[d.fixes[-1].files[0]].attempts[-1].sha
    report, plan = _plan(ctx, base)
    ctx.write_json(f"trace-{d.round}.json", report.model_dump(mode="json"))
    failed = [f.path for f in d.files.values() if f.status == "failed"]
    d.to_run = sorted(set(loop.files_of(plan)) | set(failed) | set(d.to_run))
    d.outbox = Outbox(labels=plan.labels if plan.mode == "labels" else [])
    d.plan = plan
    for t in report.tests:
        d.suites.setdefault(t.path, t.suite)
        if t.est_time:
            d.est.setdefault(t.path, t.est_time)
    return Go("rerun")


def finish(ctx: Any) -> Any:
    d: TargetedData = ctx.data
    outcome = OUTCOMES[ctx.phase]
    result = loop.final_report(d, outcome, _cfg(d))
    nxt = []
    if d.labels_added:
        nxt.append("watch the labeled PR Test run: " + ctx.cmds.cli(
            "--ci-check", "--pr-number", str(d.number), "--repo", d.repo))
    if outcome in ("gave_up", "failures_reported"):
        nxt.append("read the failures above and decide by hand; the report lists each cause")
    return Done(result, nxt)


WORKFLOW = Workflow(
    name="ci-targeted",
    states=("trace", "approve", "dispatch", "post", "poll", "debug", "retrace",
            "nothing", "declined", "green", "labelled", "reported", "gave_up"),
    transitions=(("traced", "trace", "approve"), ("empty", "trace", "nothing"),
                 ("approved", "approve", "dispatch"), ("declined", "approve", "declined"),
                 ("queued", "dispatch", "post"),
                 ("posted", "post", "poll"), ("labelled", "post", "labelled"),
                 ("green", "poll", "green"), ("failed", "poll", "debug"),
                 ("fixed", "debug", "retrace"), ("rerun", "debug", "approve"),
                 ("retry", "debug", "debug"), ("report", "debug", "reported"),
                 ("exhausted", "debug", "gave_up"), ("rerun", "retrace", "approve")),
    initial="trace",
    terminal=frozenset({"nothing", "declined", "green", "labelled", "reported", "gave_up"}),
    steps={"trace": trace_step, "approve": approve, "dispatch": dispatch, "post": post,
           "poll": poll, "debug": debug, "retrace": retrace, "nothing": finish,
           "declined": finish, "green": finish, "labelled": finish, "reported": finish,
           "gave_up": finish},
    feeds={"debug": loop.DebugResult},
    data_model=TargetedData,
    skill="pr-ci-targeted",
    description="Run only the CI test files a PR reaches, fix failures, re-run what the fix reaches.",
)
