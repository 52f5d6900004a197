"""The ``ci-targeted`` workflow: run only the CI test files a PR can reach, fix, re-run.

``orchestrator.py ci-targeted --base REV [--pr-number N] [--repo owner/name] [--repo-dir DIR]
[--profile NAME] [--approved]``; flow id ``ci-targeted/<owner>/<repo>/pr-<N>``.

trace -> approve (need_human with the exact comments/labels unless --approved; a plan of
nothing that leaves changed files no rule covers asks which label to add, or whether no GPU
CI is needed, even under --approved) -> dispatch
(record the outbox) -> post (one ``/rerun-test <file>`` comment per file, or labels) -> poll
(each comment's own "Rerun Test" run, found as ``runs.find_run`` says, on a 10-30 minute
cron from the tests' est_time; past ``ORCHESTRATOR_TARGETED_POLL_HOURS`` (default 24) the
flow ends ``timed_out``) -> debug (a debugger
task with each failure's log) -> retrace (``--base`` at the PR head the passing runs were
asked to test, recorded at dispatch, after a fix push) -> approve ... ; infra or flake:
re-run once, then report. At most 3 fix rounds, then
``gave_up``. Labels mode ends after adding the labels: the labeled "PR Test" run is watched
with ``--ci-check``, not here.

Every GitHub step (dispatch, post, poll, the debugger's logs; ``flow.workflows.targeted.remote``) maps
GitHub's refusals as ``--ci-check`` does (``flow.github.trouble``): limits, 5xx and timeouts
sleep until GitHub may answer; a refused token, permission, 404 or 422 asks a person
(``retry`` / ``stop``; stop ends in ``stopped``, outcome ``stopped``, naming the refusal).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flow.core.outcome import Ask, Done, Go, Human, Task
from flow.workflows.targeted import loop, remote
# locate and start serve the registry, which reads them from this module.
from flow.core.workflow import Workflow
from flow.workflows.targeted.inputs import locate, start  # noqa: F401
from flow.workflows.targeted.loop import Fix, Outbox, TargetedData
from flow.workflows.targeted.remote import dispatch, poll, post

OUTCOMES = {"nothing": "nothing_to_run", "declined": "declined", "green": "green",
            "labelled": "labels_added", "reported": "failures_reported", "gave_up": "gave_up",
            "timed_out": "timed_out", "stopped": "stopped"}


def _cfg(d: TargetedData) -> Any:
    from flow.workflows.targeted.affected import load

    return load(Path(d.repo_dir), d.profile)


def _plan(ctx: Any, base: str) -> tuple[Any, Any]:
    """Trace ``base...HEAD`` of the checkout and choose files or labels: (report, plan)."""
    from flow.workflows.targeted.affected import cache_dir_for, trace
    from flow.workflows.targeted.select import choose

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
    d.est = {p: e for p, e in report.file_est.items() if e is not None}
    d.costs = loop.label_costs(report)
    d.total = loop.total_of(report, plan.labels, d.to_run)
    d.alternatives = loop.alternatives(plan, _cfg(d), d.costs)
    d.untraced = loop.untraced(report)
    # A "nothing" plan is an answer only when no changed file is left for a person to judge.
    return Go("empty" if plan.mode == "nothing" and not plan.undecided else "traced")


def approve(ctx: Any) -> Any:
    d: TargetedData = ctx.data
    labels = d.outbox.labels if d.outbox else []
    comments = [f"/rerun-test {p}" for p in d.to_run]
    undecided = d.plan is not None and d.plan.mode == "nothing" and bool(d.plan.undecided)
    if undecided:  # --approved approves a plan; it cannot choose one
        return _undecided(ctx, d)
    # A fix round re-running files approved before needs no new answer; a file or label
    # nobody approved yet does.
    if d.approved or (d.posted and not labels and set(d.to_run) <= loop.approved_files(d)):
        return Go("approved")
    key = f"approve-{len(d.posted)}-{len(d.labels_added)}-r{d.round}"
    answer = ctx.answer(key)
    if answer is None:
        options = {"approve": "post exactly these comments / add these labels",
                   "decline": "spend nothing; end with the report"}
        options |= {a: "approve, and also add " + ", ".join(labs)
                    for a, labs in d.alternatives.items()}
        return Human(key, loop.question(d, comments, labels), options,
                     extra={"comments": comments, "labels": labels,
                            "costs": {lab: d.costs.get(lab) for lab in labels},
                            "est": {p: d.est.get(p) for p in d.to_run},
                            "judgement": list(d.plan.judgement) if d.plan else [],
                            "alternatives": d.alternatives})
    if answer == "decline":
        d.declined = True
        return Go("declined")
    extra = d.alternatives.get(answer, [])
    if extra and d.outbox is not None:
        d.outbox.labels = sorted(set(d.outbox.labels) | set(extra))
    return Go("approved")


def _undecided(ctx: Any, d: TargetedData) -> Any:
    """The trace reached no test and the config names no labels for some changed files
    (the seed: "entry points, or code loaded some other way"): a person chooses a label to
    run, or answers that no GPU CI is needed, and the report records who decided."""
    assert d.plan is not None
    key = "choose-0"
    answer = ctx.answer(key)
    if answer is None:
        options = {"no_gpu": "no GPU CI is needed for these files: end nothing_to_run, "
                             "recording this answer as the decision"}
        options |= {a: "add " + ", ".join(labs) + " (" + "; ".join(
            d.costs.get(lab, "?") for lab in labs) + ")" for a, labs in d.alternatives.items()}
        options["decline"] = "spend nothing and decide nothing; end with the report"
        return Human(key, loop.choice_question(d), options,
                     extra={"comments": [], "labels": [], "undecided": list(d.plan.undecided),
                            "untraced": list(d.untraced), "costs": dict(d.costs),
                            "judgement": list(d.plan.judgement),
                            "alternatives": d.alternatives})
    if answer == "decline":
        d.declined = True
        return Go("declined")
    if answer == "no_gpu":
        d.decided = "a person answered that no GPU CI is needed for " + ", ".join(
            d.plan.undecided)
        return Go("empty")
    d.outbox = Outbox(labels=sorted(d.alternatives.get(answer, [])))
    d.decided = f"a person chose {', '.join(d.outbox.labels)} for " + ", ".join(
        d.plan.undecided)
    return Go("approved")


def debug(ctx: Any) -> Any:
    from agents.prompts import Untrusted, fence, render

    d: TargetedData = ctx.data
    failed = sorted((f for f in d.files.values() if f.status == "failed"), key=lambda f: f.path)
    if d.round >= loop.MAX_FIX_ROUNDS:
        return Go("exhausted")
    res = ctx.result("debugger")
    if res is None:
        text = remote.failure_texts(ctx, failed)
        if remote.is_outcome(text):  # GitHub said no while reading the logs
            return text
        history = "\n".join(f"round {x.round}: {x.commit} fixed {', '.join(x.files)}: {x.why}"
                            for x in d.fixes) or "(none)"
        prompt = render("targeted_debugger", number=d.number, repo=d.repo,
                        repo_dir=d.repo_dir, fix_round=d.round + 1,
                        max_rounds=loop.MAX_FIX_ROUNDS,
                        head_sha=fence(failed[0].attempts[-1].sha, inline=True),
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
    from flow.workflows.targeted.errors import TargetedError

    d: TargetedData = ctx.data
    fix = d.fixes[-1].commit
    where = Path(d.repo_dir)
    from flow.core import proc

    probe = proc.capture(["git", "-C", str(where), "merge-base", "--is-ancestor", fix, "HEAD"])
    if not probe.ok:
        raise TargetedError(f"the fix commit {fix!r} is not in the history of HEAD in "
                            f"{str(where)!r}", "pull the PR branch there, then --resume")
    # The PR head the passing runs tested (recorded at dispatch), never a run's head_sha:
    # the gateway runs on main, whose tip is no commit of this branch.
    ran = [a.sha for f in d.files.values() for a in f.attempts if a.conclusion == "success"]
    base = ran[-1] if ran else d.files[d.fixes[-1].files[0]].attempts[-1].sha
    report, plan = _plan(ctx, base)
    ctx.write_json(f"trace-{d.round}.json", report.model_dump(mode="json"))
    failed = [f.path for f in d.files.values() if f.status == "failed"]
    d.to_run = loop.fix_round_files(report, plan, d, failed)
    d.outbox = Outbox(labels=plan.labels if plan.mode == "labels" else [])
    d.total = loop.total_of(report, d.outbox.labels, d.to_run)
    d.plan = plan
    for t in report.tests:
        d.suites.setdefault(t.path, t.suite)
    for path, est in report.file_est.items():
        if est is not None:
            d.est.setdefault(path, est)
    return Go("rerun")


def finish(ctx: Any) -> Any:
    d: TargetedData = ctx.data
    outcome = OUTCOMES[ctx.phase]
    result = loop.final_report(d, outcome, _cfg(d))
    nxt = []
    if d.labels_added:
        nxt.append("watch the labeled PR Test run: " + ctx.cmds.cli(
            "--ci-check", "--pr-number", str(d.number), "--repo", d.repo))
    if outcome in ("gave_up", "failures_reported", "timed_out"):
        nxt.append("read the failures above and decide by hand; the report lists each cause")
    if outcome == "stopped":
        nxt.append(f"GitHub refused a step ({d.stopped}); once it is mended, start again with "
                   + ctx.cmds.cli("ci-targeted", "--base", d.base, "--pr-number",
                                  str(d.number), "--repo", d.repo, "--repo-dir", d.repo_dir,
                                  "--restart"))
    if any(f.status == "running" for f in d.files.values()):
        nxt.append("runs still going were not watched to the end: " + ", ".join(
            f"{f.path} ({f.attempts[-1].url or 'run not found yet'})"
            for f in d.files.values() if f.status == "running"))
    return Done(result, nxt)


WORKFLOW = Workflow(
    name="ci-targeted",
    states=("trace", "approve", "dispatch", "post", "poll", "debug", "retrace",
            "nothing", "declined", "green", "labelled", "reported", "gave_up", "timed_out",
            "stopped"),
    transitions=(("traced", "trace", "approve"), ("empty", "trace", "nothing"),
                 ("empty", "approve", "nothing"),
                 ("approved", "approve", "dispatch"), ("declined", "approve", "declined"),
                 ("queued", "dispatch", "post"),
                 ("posted", "post", "poll"), ("labelled", "post", "labelled"),
                 ("green", "poll", "green"), ("failed", "poll", "debug"),
                 ("timed_out", "poll", "timed_out"),
                 ("fixed", "debug", "retrace"), ("rerun", "debug", "approve"),
                 ("retry", "debug", "debug"), ("report", "debug", "reported"),
                 ("exhausted", "debug", "gave_up"), ("rerun", "retrace", "approve"),
                 ("abandon", "dispatch", "stopped"), ("abandon", "post", "stopped"),
                 ("abandon", "poll", "stopped"), ("abandon", "debug", "stopped")),
    initial="trace",
    terminal=frozenset({"nothing", "declined", "green", "labelled", "reported", "gave_up",
                        "timed_out", "stopped"}),
    steps={"trace": trace_step, "approve": approve, "dispatch": dispatch, "post": post,
           "poll": poll, "debug": debug, "retrace": retrace, "nothing": finish,
           "declined": finish, "green": finish, "labelled": finish, "reported": finish,
           "gave_up": finish, "timed_out": finish, "stopped": finish},
    feeds={"debug": loop.DebugResult},
    data_model=TargetedData,
    asks_person=frozenset({"approve", "dispatch", "post", "poll", "debug"}),
    sleeps=frozenset({"dispatch", "post", "poll", "debug"}),
    skill="pr-ci-targeted",
    description="Run only the CI test files a PR reaches, fix failures, re-run what the fix reaches.",
)
