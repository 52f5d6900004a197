"""In-memory GitHub state that a test builds and mutates while the fake server runs.

Plain dataclasses: this is a test fixture, not a boundary. One source of truth per
object: an Actions job *is* a check run (same id, as on GitHub), so the check-runs
listing and a run's jobs listing are two views of the same `CheckRun` records.
"""

from __future__ import annotations

import io
import itertools
import threading
import zipfile
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.fakegithub.gateway import RerunGateway

_ids = itertools.count(1000)
FIXED_TIME = "2026-01-01T00:00:00Z"


def next_id() -> int:
    """Return a fresh id, unique across every object of every fake server."""
    return next(_ids)


_clock_lock = threading.Lock()
_last_stamp = [datetime(2000, 1, 1, tzinfo=timezone.utc)]


def stamp() -> str:
    """A creation time as GitHub writes it (UTC, whole seconds, "Z"): the wall clock, moved one
    second past the last stamp when it would repeat it, so that each run and comment is created
    after the one before it, as on GitHub (where the time windows that find "the run after my
    comment" depend on it)."""
    with _clock_lock:
        now = datetime.now(timezone.utc).replace(microsecond=0)
        now = max(now, _last_stamp[0] + timedelta(seconds=1))
        _last_stamp[0] = now
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Step:
    name: str
    number: int
    status: str = "completed"
    conclusion: str | None = "success"


@dataclass
class CheckRun:
    """A check run; when `run_id` is set it is also the Actions job of that run."""

    id: int
    head_sha: str
    name: str
    status: str = "queued"  # queued -> in_progress -> completed
    conclusion: str | None = None
    app: str = "github-actions"
    run_id: int | None = None
    run_attempt: int = 1
    last_attempt: int = 0  # a job that passed is carried into later attempts without a new check run
    log: str = ""
    steps: list[Step] = field(default_factory=list)
    output_title: str | None = None
    output_summary: str | None = None
    runner_name: str | None = "runner-1"
    suite_id: int = field(default_factory=next_id)  # its check suite: a run's, or its app's own

    def start(self) -> None:
        """Move the check to in_progress."""
        self.status, self.conclusion = "in_progress", None

    def complete(self, conclusion: str, log: str | None = None) -> None:
        """Finish the check with `conclusion`, optionally setting its log text."""
        self.status, self.conclusion = "completed", conclusion
        if log is not None:
            self.log = log


@dataclass
class Artifact:
    id: int
    name: str
    files: dict[str, bytes]
    expired: bool = False

    def zip_bytes(self) -> bytes:
        """The artifact as GitHub serves it: one zip of its files."""
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            for path, data in self.files.items():
                zf.writestr(path, data)
        return buf.getvalue()


@dataclass
class Workflow:
    id: int
    name: str
    path: str
    state: str = "active"


@dataclass
class WorkflowRun:
    id: int
    workflow: Workflow
    head_sha: str
    head_branch: str
    event: str = "pull_request"
    run_attempt: int = 1
    status: str | None = None  # None: derived from the jobs of the latest attempt
    conclusion: str | None = None
    artifacts: list[Artifact] = field(default_factory=list)
    run_number: int = 1
    display_title: str = ""  # GitHub's run-name (empty: the head commit's message, "commit")
    check_suite_id: int = field(default_factory=next_id)  # never the run id, as on GitHub
    created_at: str = field(default_factory=stamp)  # when it was created (stamp: increasing)

    def add_artifact(self, name: str, files: dict[str, bytes]) -> Artifact:
        """Attach an artifact whose zip holds `files` (path -> bytes)."""
        art = Artifact(next_id(), name, files)
        self.artifacts.append(art)
        return art


@dataclass
class Status:
    id: int
    sha: str
    context: str
    state: str  # pending | success | failure | error
    description: str = ""
    target_url: str | None = None


@dataclass
class PullFile:
    """One changed file of a PR, as `GET /pulls/{n}/files` lists it (`changes` is derived)."""

    filename: str
    status: str = "modified"  # added | removed | modified | renamed | copied | changed | unchanged
    additions: int = 1
    deletions: int = 0
    patch: str | None = "@@ -1 +1 @@\n-old\n+new"


@dataclass
class ReviewComment:
    """An inline review comment; a reply's `in_reply_to_id` is its thread's root, as on GitHub."""

    id: int
    body: str
    login: str
    path: str
    line: int | None
    created_at: str
    updated_at: str
    in_reply_to_id: int | None = None


@dataclass
class Pull:
    number: int
    head_ref: str
    head_sha: str
    head_repo: str
    base_ref: str
    base_sha: str
    merge_base_sha: str
    draft: bool = True
    state: str = "open"  # open | closed (a merged PR is closed with merged_at set)
    node_id: str = ""
    title: str = "A pull request"
    author: str = ""  # the PR's user.login; empty: the head repo's owner
    body: str | None = None
    merged_at: str | None = None
    closed_at: str | None = None
    files: list[PullFile] = field(default_factory=list)
    review_comments: list[ReviewComment] = field(default_factory=list)

    @property
    def login(self) -> str:
        """Who opened the PR (GitHub's `user.login`)."""
        return self.author or self.head_repo.split("/")[0]

    def close(self, at: str = FIXED_TIME) -> None:
        """Close the PR without merging it."""
        self.state, self.closed_at = "closed", at

    def merge(self, at: str = FIXED_TIME) -> None:
        """Merge the PR: closed, with `merged_at` set (GitHub's `merged` is derived from it)."""
        self.state, self.closed_at, self.merged_at = "closed", at, at

    def add_file(self, filename: str, status: str = "modified", *, additions: int = 1,
                 deletions: int = 0, patch: str | None = "@@ -1 +1 @@\n-old\n+new") -> PullFile:
        """Record one changed file of the PR."""
        f = PullFile(filename, status, additions, deletions, patch)
        self.files.append(f)
        return f

    def delete_review_comment(self, comment_id: int) -> None:
        """Delete one review comment, as GitHub does: its replies stay, their
        `in_reply_to_id` still naming the deleted root."""
        self.review_comments = [c for c in self.review_comments if c.id != comment_id]

    def add_review_comment(self, body: str, login: str, *, reply_to: int | None = None,
                           path: str = "README.md", line: int | None = 1,
                           at: str = FIXED_TIME) -> ReviewComment:
        """Post an inline review comment; `reply_to` (any comment of the thread) makes it a reply.

        As on GitHub, a reply inherits its thread's path and line and points at the root.
        """
        if reply_to is not None:
            parent = next((c for c in self.review_comments if c.id == reply_to), None)
            if parent is None:
                raise KeyError(f"no review comment {reply_to} on PR {self.number}")
            path, line = parent.path, parent.line
            reply_to = parent.in_reply_to_id or parent.id
        c = ReviewComment(next_id(), body, login, path, line, at, at, reply_to)
        self.review_comments.append(c)
        return c


@dataclass
class Ruleset:
    """A repository ruleset's `required_status_checks` rule for the branches it targets."""

    id: int
    branches: list[str]
    contexts: list[str]
    apps: dict[str, int] = field(default_factory=dict)  # context -> the app that must set it


@dataclass
class Repo:
    full_name: str
    id: int = field(default_factory=next_id)
    default_branch: str = "main"
    parent: str | None = None  # set for a fork: the upstream's full name
    pulls: dict[int, Pull] = field(default_factory=dict)
    check_runs: list[CheckRun] = field(default_factory=list)
    statuses: list[Status] = field(default_factory=list)
    workflows: list[Workflow] = field(default_factory=list)
    runs: list[WorkflowRun] = field(default_factory=list)
    comments: dict[int, list[dict]] = field(default_factory=dict)  # issue/PR conversation, by number
    labels: dict[int, list[str]] = field(default_factory=dict)  # label names, by issue/PR number
    branches: dict[str, str] = field(default_factory=dict)  # branch -> tip sha (default branch too)
    gateway: RerunGateway | None = None  # miles' comment gateway, when enabled
    protection: dict[str, list[str]] = field(default_factory=dict)  # branch -> required contexts
    protection_apps: dict[str, dict[str, int]] = field(default_factory=dict)  # branch -> context -> app id
    rulesets: list[Ruleset] = field(default_factory=list)  # rulesets with required checks
    merge_bot: str | None = None  # a login that merges PRs by closing them (PyTorch's pytorchmergebot)

    # ---- builders -------------------------------------------------------------
    def add_pull(
        self,
        number: int,
        head_ref: str,
        head_sha: str,
        *,
        head_repo: str | None = None,
        base_ref: str = "main",
        base_sha: str = "b" * 40,
        merge_base_sha: str | None = None,
        draft: bool = True,
        title: str = "A pull request",
        author: str = "",
        body: str | None = None,
        labels: list[str] | None = None,
        files: list[str] | None = None,
    ) -> Pull:
        """Open a pull request; `head_repo` other than this repo makes it a fork PR.

        `author` is its user.login (default: the head repo's owner); `files` are changed file
        names (more detail through `Pull.add_file`); `labels` land in `self.labels[number]`.
        """
        pull = Pull(
            number, head_ref, head_sha, head_repo or self.full_name, base_ref, base_sha,
            merge_base_sha or base_sha, draft, node_id=f"PR_node_{number}", title=title,
            author=author, body=body,
        )
        for name in files or []:
            pull.add_file(name)
        if labels is not None:
            self.labels[number] = list(labels)
        self.pulls[number] = pull
        return pull

    def add_comment(self, number: int, body: str, login: str = "bot", *, at: str | None = None) -> dict:
        """Post a conversation comment on issue or PR `number`; returns the stored record.

        `at` defaults to a fresh `stamp()` (each comment later than the one before, as on
        GitHub). Records hold data only (id, body, login, times); render.issue_comment adds
        GitHub's shape.
        """
        at = at or stamp()
        comment = {"id": next_id(), "body": body, "login": login, "created_at": at, "updated_at": at}
        self.comments.setdefault(number, []).append(comment)
        if self.gateway is not None:
            self.gateway.on_comment(self, number, body, login)
        return comment

    def enable_rerun_gateway(self, main_sha: str, hardware: dict[str, str] | None = None) -> RerunGateway:
        """Install miles' `/rerun-test <file>` gateway (see RerunGateway); `main` points at `main_sha`."""
        from tests.fakegithub.gateway import RerunGateway

        self.branches[self.default_branch] = main_sha
        self.gateway = RerunGateway(self, hardware or {})
        return self.gateway

    def push(self, number: int, new_sha: str) -> None:
        """A new commit arrives on the PR's head branch."""
        self.pulls[number].head_sha = new_sha

    def add_workflow(self, name: str, path: str) -> Workflow:
        """Declare a workflow file (`path` like .github/workflows/pull.yml)."""
        wf = Workflow(next_id(), name, path)
        self.workflows.append(wf)
        return wf

    def add_run(
        self,
        workflow: Workflow,
        head_sha: str,
        *,
        head_branch: str = "feature",
        event: str = "pull_request",
        jobs: list[tuple[str, str | None]] | None = None,
        status: str | None = None,
        conclusion: str | None = None,
    ) -> WorkflowRun:
        """Create a workflow run; `jobs` are (name, conclusion or None for queued)."""
        run = WorkflowRun(
            next_id(), workflow, head_sha, head_branch, event, status=status, conclusion=conclusion,
            run_number=len(self.runs) + 1,
        )
        self.runs.append(run)
        for name, concl in jobs or []:
            self.add_job(run, name, concl)
        return run

    def add_job(self, run: WorkflowRun, name: str, conclusion: str | None = None, log: str = "") -> CheckRun:
        """Add a job (and so a check run) to the run's latest attempt."""
        cr = CheckRun(next_id(), run.head_sha, name, run_id=run.id, run_attempt=run.run_attempt, log=log,
                      suite_id=run.check_suite_id)
        cr.steps = [Step("Set up job", 1), Step("Run tests", 2)]
        if conclusion is not None:
            cr.complete(conclusion)
            cr.steps[-1].conclusion = conclusion
        self.check_runs.append(cr)
        return cr

    def add_check_run(self, head_sha: str, name: str, conclusion: str | None = None, *, app: str = "ci-app") -> CheckRun:
        """A check run from a non-Actions app (no workflow run behind it)."""
        cr = CheckRun(next_id(), head_sha, name, app=app)
        if conclusion is not None:
            cr.complete(conclusion)
        self.check_runs.append(cr)
        return cr

    def add_status(self, sha: str, context: str, state: str, description: str = "") -> Status:
        """Post a legacy commit status."""
        st = Status(next_id(), sha, context, state, description)
        self.statuses.append(st)
        return st

    def protect(self, branch: str, contexts: list[str], apps: dict[str, int] | None = None) -> None:
        """Branch protection on `branch` requiring the checks `contexts` (job or status names),
        each in `apps` only when set by that app (`checks[].app_id`)."""
        self.protection[branch] = list(contexts)
        self.protection_apps[branch] = dict(apps or {})

    def add_ruleset(self, branches: list[str], contexts: list[str],
                    apps: dict[str, int] | None = None) -> Ruleset:
        """An active ruleset whose required_status_checks rule applies to `branches`; a context
        in `apps` carries that app's `integration_id`."""
        rs = Ruleset(next_id(), list(branches), list(contexts), dict(apps or {}))
        self.rulesets.append(rs)
        return rs

    def bot_merge(self, number: int, bot: str = "pytorchmergebot", at: str = FIXED_TIME) -> None:
        """A merge bot lands the PR's commits itself and closes it with the `Merged` label:
        GitHub shows it closed, `merged_at` null (PyTorch's pytorchmergebot)."""
        self.merge_bot = bot
        self.pulls[number].close(at)
        names = self.labels.setdefault(number, [])
        if "Merged" not in names:
            names.append("Merged")

    # ---- views ----------------------------------------------------------------
    def jobs_of(self, run: WorkflowRun, attempt: int | None = None) -> list[CheckRun]:
        """Jobs of one attempt (default: the latest)."""
        want = attempt or run.run_attempt
        return [c for c in self.check_runs
                if c.run_id == run.id and c.run_attempt <= want <= max(c.run_attempt, c.last_attempt)]

    def run_status(self, run: WorkflowRun) -> tuple[str, str | None]:
        """(status, conclusion): explicit if set, else derived from the latest attempt's jobs."""
        if run.status is not None:
            return run.status, run.conclusion
        jobs = self.jobs_of(run)
        if not jobs:
            return "queued", None
        if all(j.status == "completed" for j in jobs):
            bad = [j.conclusion for j in jobs if j.conclusion not in ("success", "skipped", "neutral")]
            return "completed", ("failure" if "failure" in bad else bad[0] if bad else "success")
        if any(j.status == "in_progress" or j.status == "completed" for j in jobs):
            return "in_progress", None
        return "queued", None

    def rerun_failed(self, run: WorkflowRun, *, all_jobs: bool = False) -> None:
        """GitHub's re-run: a new attempt; failed jobs (or all, with all_jobs) queue again, the rest carry over."""
        old = self.jobs_of(run)
        run.run_attempt += 1
        run.status = run.conclusion = None
        for job in old:
            if not all_jobs and job.conclusion in ("success", "skipped", "neutral"):
                job.last_attempt = run.run_attempt
                continue
            cr = CheckRun(next_id(), job.head_sha, job.name, run_id=run.id, run_attempt=run.run_attempt,
                          suite_id=run.check_suite_id)
            cr.steps = [Step(s.name, s.number) for s in job.steps]
            self.check_runs.append(cr)

    def find_job(self, job_id: int) -> CheckRun | None:
        return next((c for c in self.check_runs if c.id == job_id), None)

    def find_run(self, run_id: int) -> WorkflowRun | None:
        return next((r for r in self.runs if r.id == run_id), None)

