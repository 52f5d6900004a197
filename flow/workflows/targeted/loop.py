"""Pure decisions of the ``ci-targeted`` loop: its state, the poll schedule, the final report.

Nothing here does IO; ``declaration.py`` calls these with what it read from git and GitHub.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from flow.core.feeds import Feed
from flow.github.access import Access
from flow.github.trouble import Trouble
from flow.workflows.targeted.config import TargetedConfig
from flow.workflows.targeted.report import AffectedReport
from flow.workflows.targeted.select import Plan
from flow.workflows.targeted.timing import est_time, timing_line

MAX_FIX_ROUNDS = 3
DEFAULT_EST = 600  # seconds assumed for a test without est_time, for the poll schedule only

FileStatus = Literal["queued", "running", "passed", "failed", "timed_out", "refused"]
POLL_HOURS_ENV = "ORCHESTRATOR_TARGETED_POLL_HOURS"
DEFAULT_POLL_HOURS = 24.0  # how long a posted file run may take to be found and finish
Cause = Literal["caused_by_pr", "infra", "flake"]


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Attempt(_M):
    """One run of one file: ``sha`` is the PR head we asked it to test (the gateway
    dispatches on main with the PR head as an input, so the run's own ``head_sha``,
    kept in ``run_sha``, is main's tip), its result and its measured time."""

    round: int
    sha: str
    run_sha: str = ""
    run_id: int | None = None
    url: str = ""
    conclusion: str | None = None
    seconds: int | None = None
    failed_job: int | None = None


class FileRun(_M):
    """A test file the loop runs with ``/rerun-test``; ``after`` is the newest PR comment id
    when its comment was queued (our comment is newer). When it was posted is kept beside
    the state (``posted-at.json``), for the poll deadline."""

    path: str
    status: FileStatus = "queued"
    after: int = 0
    attempts: list[Attempt] = []
    flake_reruns: int = 0
    cause: Cause | None = None
    why: str = ""


class Fix(_M):
    round: int
    files: list[str]
    commit: str
    why: str


class Outbox(_M):
    """What ``post`` must do, recorded before doing it: the exact comment bodies with the
    number of identical comments the PR had then (a count above it means already posted),
    and labels (adding a label twice is harmless)."""

    comments: dict[str, int] = {}
    labels: list[str] = []


class TargetedData(_M):
    repo: str
    number: int
    repo_dir: str
    base: str
    depth: int = 3
    hub_limit: int = 40
    profile: str | None = None
    approved: bool = False
    head_sha: str
    round: int = 0  # fix rounds done
    plan: Plan | None = None
    to_run: list[str] = []  # files of the pending dispatch
    outbox: Outbox | None = None
    files: dict[str, FileRun] = {}
    posted: list[str] = []  # every comment body posted, in order
    labels_added: list[str] = []
    fixes: list[Fix] = []
    reported: list[str] = []  # failures reported without a fix (infra/flake twice, unfixed)
    new_tests: list[str] = []
    suites: dict[str, str] = {}
    est: dict[str, float] = {}
    not_run: list[str] = []
    costs: dict[str, str] = {}  # label -> what it starts ("N registration(s), est Ts")
    total: str = ""  # what the pending labels and files spend in all (each run once)
    alternatives: dict[str, list[str]] = {}  # answer -> labels it adds (from the judgement)
    untraced: list[str] = []  # changed paths the trace could not follow, for the report
    declined: bool = False
    decided: str = ""  # who chose for a plan the trace left to a person, and what
    access: Access = Field(default_factory=Access)  # API URL and token file, fixed at the start
    github: Trouble = Field(default_factory=Trouble)  # waits and questions after GitHub said no
    stopped: str = ""  # why a person ended the flow after GitHub refused a step


class FileVerdict(_M):
    path: str
    cause: Cause
    why: str


class DebugResult(Feed):
    """The debugger's answer for one round: a verdict per failed file, the fixes it made
    and the commit it pushed (None when it pushed nothing)."""

    verdicts: list[FileVerdict]
    fixes: list[str] = []
    pushed_commit: str | None = Field(None, pattern=r"^[0-9a-f]{7,40}$")


def poll_hours(settings: Mapping[str, str]) -> float:
    """The poll deadline from ``ORCHESTRATOR_TARGETED_POLL_HOURS`` (default 24): hours from
    a file's comment after which a run not found or not finished ends the flow as
    ``timed_out``. Raises WorkflowInputError on a value that is not hours >= 0."""
    from flow.core.errors import WorkflowInputError

    from flow.core.bounds import Range, number

    raw = (settings.get(POLL_HOURS_ENV) or "").strip()
    if not raw:
        return DEFAULT_POLL_HOURS
    hours = number(raw, Range(0, 366 * 24, whole=False))
    if hours is None:
        raise WorkflowInputError(f"{POLL_HOURS_ENV}={raw!r} is not a number of hours",
                                 f"set {POLL_HOURS_ENV} to hours in ASCII digits, 0 to a year "
                                 "(8784; e.g. 24)")
    return float(hours)


def poll_minutes(est_times: list[int | float | None]) -> int:
    """Minutes between polls: half the longest pending test's est_time, kept within the
    seed's 10-30 minutes (never a tight loop)."""
    longest = max((e or DEFAULT_EST for e in est_times), default=DEFAULT_EST)
    return min(30, max(10, math.ceil(longest / 120)))


def cron_every(minutes: int) -> str:
    return f"*/{minutes} * * * *"


def files_of(plan: Plan) -> list[str]:
    """The test paths of a plan's ``/rerun-test`` comments."""
    return [c.split(" ", 1)[1] for c in plan.comments]


def not_run(report: AffectedReport, plan: Plan) -> list[str]:
    """What the loop deliberately does not run, and why, from the first trace."""
    out: list[str] = []
    planned = set(files_of(plan))
    for t in report.tests:
        if t.path in planned:
            continue
        if t.disabled:
            out.append(f"{t.path}: disabled ({t.disabled})")
        elif t.backend == "cpu" and not t.labels:
            out.append(f"{t.path}: unlabeled CPU test ({t.suite}) runs on every PR")
        elif t.backend == "rocm":
            out.append(f"{t.path}: ROCm registration; /rerun-test cannot run it")
        elif plan.mode == "labels":
            out.append(f"{t.path}: covered by the labels {', '.join(plan.labels)}")
    out += [f"{u.path}: registration unreadable ({u.reason})" for u in report.unreadable]
    out += [f"hub {h.path} not followed ({h.met})" for h in report.hubs]
    for f in report.frontier:
        left = [p for p in f.reaches if p not in planned]
        if left:  # past the bound, and not joined to the files
            out.append(f"{f.importer}: left at depth {report.depth} (not run: "
                       f"{', '.join(left)})")
    out += [f"judgement: {j}" for j in plan.judgement]
    return sorted(set(out), key=out.index)


def still_not_run(data: TargetedData) -> list[str]:
    """``data.not_run`` without what did run after all: a line whose file, or every test
    file it names, has a run of its own is no longer true."""
    ran = {fr.path for fr in data.files.values() if fr.attempts}
    out = []
    for line in data.not_run:
        subject, _, rest = line.partition(":")
        named = re.findall(r"[\w./-]+\.py", rest.partition("(not run:")[2] or rest)
        if subject in ran or (named and set(named) <= ran):
            continue
        out.append(line)
    return out


def approved_files(data: TargetedData) -> set[str]:
    """Files a person approved a ``/rerun-test`` for (every comment posted was approved)."""
    return {c.split(" ", 1)[1] for c in data.posted if c.startswith("/rerun-test ")}


def fix_round_files(report: AffectedReport, plan: Plan, data: TargetedData,
                    failed: list[str]) -> list[str]:
    """The files a fix round posts: what failed (and the flake re-runs queued), and what
    the fix reaches of the files approved before; a file the fix reaches that nobody
    approved joins only through a new approval question. A file the labels already on
    the PR run is never posted: the fix push re-runs it under them."""
    from flow.workflows.targeted.select import not_twice

    reached = set(files_of(plan))
    wanted = set(failed) | set(data.to_run) | reached
    _, by_labels = not_twice({f"/rerun-test {p}" for p in wanted}, list(data.labels_added),
                             report)
    return sorted(wanted - set(by_labels))


def total_of(report: AffectedReport, labels: list[str], files: list[str]) -> str:
    """The approval question's overall total of ``labels`` and ``files`` (see
    ``report.plan_total``); empty without labels (the files total says it all)."""
    from flow.workflows.targeted.report import plan_total

    if not labels:
        return ""
    return plan_total(report.costs, labels, files, report.file_est, report.key_est)


def label_costs(report: AffectedReport) -> dict[str, str]:
    """``{label: "N registration(s), est Ts"}`` for every label that selects something."""
    from flow.workflows.targeted.report import cost_text

    return {c.label: cost_text(c) for c in report.costs}


def alternatives(plan: Plan, cfg: TargetedConfig,
                 costs: dict[str, str] | None = None) -> dict[str, list[str]]:
    """Answers beyond approve/decline: ``add <label>`` for each broad, fallback or Blackwell
    label a judgement line names that the plan does not add already. For a plan of nothing
    with ``undecided`` files, every label that selects a registration (``costs``) is one."""
    if plan.mode == "nothing" and plan.undecided:
        return {f"add {lab}": [lab] for lab in sorted(costs or {})
                if lab not in cfg.labels.never}
    offered = [*sorted(cfg.labels.scopes), *cfg.labels.fallback,
               *([cfg.labels.blackwell] if cfg.labels.blackwell else [])]
    text = "\n".join(plan.judgement)
    return {f"add {lab}": [lab] for lab in dict.fromkeys(offered)
            if lab not in plan.labels and lab not in cfg.labels.never
            and re.search(rf"(?<![\w-]){re.escape(lab)}(?![\w-])", text)}


def untraced(report: AffectedReport) -> list[str]:
    """Changed paths the trace could not follow to a test, each with why."""
    out = [f"{p}: nothing imports or names it" for p in report.unimported]
    out += [f"{o.path}: outside the import trace ({o.reason})" for o in report.outside_trace]
    out += [f"{e.path}: imported outside this repository ({', '.join(e.importers)})"
            for e in report.external]
    return out


def question(data: TargetedData, comments: list[str], labels: list[str]) -> str:
    """The approval question: exactly what would be posted, what each piece costs, why,
    and the judgement a person must make (the plan's own lines)."""
    from flow.workflows.targeted.report import files_total

    lines = [f"Spend CI runners on {data.repo}#{data.number}? Exactly:"]
    paths = [c.split(" ", 1)[1] for c in comments]
    for c, path in zip(comments, paths):
        est = data.est.get(path)
        lines.append(f"comment: {c}  (est {f'{est:g}s' if est is not None else 'unknown'})")
    for lab in labels:
        lines.append(f"label: {lab}  (starts {data.costs.get(lab, 'an unknown number of runs')})")
    if comments:
        lines.append(f"files total: {files_total(paths, dict(data.est))}, one runner per file")
    if labels and data.total:
        lines.append(f"total: {data.total}")
    return "\n".join(lines + _why_and_answers(data, "approving", "also add"))


def _why_and_answers(data: TargetedData, before: str, verb: str) -> list[str]:
    """The plan's reasons, its judgement lines and each alternative answer with its cost."""
    plan = data.plan
    lines = []
    if plan and plan.reasons:
        lines.append("why: " + "; ".join(plan.reasons))
    if plan and plan.judgement:
        lines.append(f"judge before {before}:")
        lines += [f"- {j}" for j in plan.judgement]
    for answer, labs in data.alternatives.items():
        lines.append(f"or answer {answer!r}: {verb} {', '.join(labs)} (starts "
                     + "; ".join(data.costs.get(lab, "?") for lab in labs) + ")")
    return lines


def choice_question(data: TargetedData) -> str:
    """The question for a plan of nothing that a person must decide: which files the trace
    could not follow, why, and what each label would start."""
    plan = data.plan
    lines = [f"No registered test reaches the changed files below of {data.repo}#{data.number}, "
             "and the config names no label for them: run a label, or answer that no GPU CI "
             "is needed?"]
    lines += [f"- {u}" for u in data.untraced
              if plan and u.split(":", 1)[0] in plan.undecided]
    return "\n".join(lines + _why_and_answers(data, "answering", "add"))


def new_tests(report: AffectedReport) -> list[str]:
    """CUDA test files the diff adds or moves: they need a measured est_time."""
    added = {c.path for c in report.changed if c.status in ("A", "R", "C")}
    return sorted({t.path for t in report.tests if t.backend == "cuda" and t.path in added})


def timing_lines(data: TargetedData, cfg: TargetedConfig) -> list[str]:
    """The PR-description line for each new test with a measured passing run; a note
    saying why for the others."""
    out: list[str] = []
    for path in data.new_tests:
        fr = data.files.get(path)
        ok = [a for a in (fr.attempts if fr else []) if a.conclusion == "success"]
        if not ok:
            out.append(f"{path}: no passing run, so no est_time measured")
            continue
        a = ok[-1]
        if not a.seconds:  # None, or under a second: est_time needs a positive time
            out.append(f"{path}: the run's 'Run tests' step has no timing; read it from "
                       f"{a.url}")
        else:
            out.append(timing_line(path, data.suites.get(path, "?"), a.seconds,
                                   est_time(a.seconds, cfg.timing), a.url))
    return out


def final_report(data: TargetedData, outcome: str, cfg: TargetedConfig) -> dict[str, object]:
    """The seed's report: files run with results and times, failures and the commits that
    fixed them, what was not run and why, plus the timing lines for new tests."""
    files = []
    for fr in data.files.values():
        last = fr.attempts[-1] if fr.attempts else None
        files.append({"path": fr.path, "result": fr.status,
                      "pr_head": last.sha if last else None,
                      "conclusion": last.conclusion if last else None,
                      "seconds": last.seconds if last else None,
                      "run_url": last.url if last else "", "runs": len(fr.attempts)})
    failures = [{"path": fr.path, "cause": fr.cause, "why": fr.why,
                 "fixed_by": [f.commit for f in data.fixes if fr.path in f.files]}
                for fr in data.files.values() if fr.cause]
    return {"outcome": outcome, "pr": f"{data.repo}#{data.number}", "fix_rounds": data.round,
            "files": files, "failures": failures, "labels_added": data.labels_added,
            "comments_posted": data.posted, "reported": data.reported,
            "not_run": still_not_run(data), "timing_lines": timing_lines(data, cfg),
            **({"why": list(data.plan.reasons), "judgement": list(data.plan.judgement),
                "untraced": data.untraced}
               if outcome == "nothing_to_run" and data.plan else {}),
            **({"decided": data.decided} if data.decided else {}),
            "github_problems": list(data.github.history),
            **({"reason": data.stopped} if data.stopped else {})}
