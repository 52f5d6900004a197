"""The GitHub side of ``ci-targeted``: find the "Rerun Test" run each of our comments started.

How miles' gateway behaves (``comment-ci-command.yml`` and ``run-ci-file.yml``, read from
the repository): a ``/rerun-test <file>`` comment makes the gateway dispatch the "Rerun
Test" workflow **on the default branch**: the run's ``event`` is ``workflow_dispatch``,
its ``head_sha`` is main's tip (never the PR head, which travels only as a workflow input
the runs API does not show), its ``display_title`` is ``/rerun-test <file> (PR #<N>)``, no
job name holds the path, and the gateway replies on the PR "Started `/rerun-test <file>`."
with a link to the run. So a run is ours when:

1. the gateway's reply to our comment (a later comment starting with that sentence) links
   it, and the run's workflow and title agree; else
2. it is a run of the workflow, found by paging the workflow's ``workflow_dispatch`` runs
   newest first (stopping at runs created before our comment), whose title is exactly
   ours (file **and** PR number: another PR's run of the same file is never ours),
   created at or after our comment, and not claimed by another of our attempts (the
   oldest such run).

A comment the gateway refuses (the commenter lacks write permission) gets no run and no
reply: its own "Comment command gateway" run fails instead (``find_refusal``).

The commit a run tested is the PR head we asked for (recorded at dispatch), never the
run's ``head_sha``. Measured time is the "Run tests" step's duration, else None.

Every list is read across its pages by following GitHub's ``Link: rel="next"`` (the PR's
comments, a run's jobs, the workflow's runs), each page through the client's one wrapper.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from flow.github.client import GitHubClient
from flow.github.errors import GitHubRequestFailed
from flow.github.reads import list_all, run_jobs

RERUN_WORKFLOW = "Rerun Test"
GATEWAY_WORKFLOW_FILE = "comment-ci-command.yml"
RERUN_WORKFLOW_FILE = "run-ci-file.yml"
RUN_TESTS_STEP = "Run tests"
PER_PAGE = 100
MAX_PAGES = 20  # 2,000 runs back: far past any poll interval's worth of dispatches
_RUN_LINK = re.compile(r"/actions/runs/(\d+)")
_NEXT = re.compile(r'<([^>]+)>;\s*rel="next"')


class RunSeen(BaseModel):
    """One "Rerun Test" run as a poll sees it (``head_sha``: the run's, i.e. main's tip)."""

    model_config = ConfigDict(extra="forbid")

    id: int
    head_sha: str
    status: str
    conclusion: str | None
    url: str
    title: str
    jobs: list[str]  # job names
    failed_job: int | None = None  # id of the first failed job, for its log
    seconds: int | None = None  # the "Run tests" step's duration, when GitHub gives it


class Comment(BaseModel):
    """A PR conversation comment as the REST API lists it."""

    model_config = ConfigDict(extra="forbid")

    id: int
    body: str
    login: str
    created_at: str


def title_of(path: str, number: int) -> str:
    """The run-name miles' Rerun Test workflow gives a file run of PR ``number``."""
    return f"/rerun-test {path} (PR #{number})"


def reply_prefix(path: str) -> str:
    """How the gateway's reply to ``/rerun-test <path>`` starts."""
    return f"Started `/rerun-test {path}`."


def _stamp(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _seconds(jobs: list[dict[str, Any]]) -> int | None:
    for job in jobs:
        for step in job.get("steps") or []:
            if step.get("name") == RUN_TESTS_STEP:
                start, end = _stamp(step.get("started_at")), _stamp(step.get("completed_at"))
                if start and end and end > start:
                    return int((end - start).total_seconds())
    return None


def list_comments(client: GitHubClient, repo: str, number: int) -> list[Comment]:
    """Every conversation comment of the PR, oldest first (all pages)."""
    rows = list_all(client, f"/repos/{repo}/issues/{number}/comments")
    return [Comment(id=c["id"], body=c.get("body") or "",
                    login=(c.get("user") or {}).get("login", ""),
                    created_at=c.get("created_at") or "") for c in rows]


def comment_counts(client: GitHubClient, repo: str, number: int) -> dict[str, int]:
    """How many comments on the PR have each exact body (stripped)."""
    counts: dict[str, int] = {}
    for c in list_comments(client, repo, number):
        key = c.body.strip()
        counts[key] = counts.get(key, 0) + 1
    return counts


def newest_comment_id(client: GitHubClient, repo: str, number: int) -> int:
    """The highest comment id on the PR now (0 when none): our comment comes after it."""
    return max((c.id for c in list_comments(client, repo, number)), default=0)


def run_seen(client: GitHubClient, repo: str, run: dict[str, Any]) -> RunSeen:
    """A run with its jobs read (names, first failed job, "Run tests" time)."""
    jobs = run_jobs(client, repo, run["id"])  # every page: a matrix run can pass 100 jobs
    failed = next((j["id"] for j in jobs if j.get("conclusion") not in
                   (None, "success", "skipped", "neutral")), None)
    return RunSeen(id=run["id"], head_sha=run.get("head_sha") or "", status=run["status"],
                   conclusion=run.get("conclusion"), url=run.get("html_url") or "",
                   title=run.get("display_title") or "", jobs=[j["name"] for j in jobs],
                   failed_job=failed, seconds=_seconds(jobs))


def get_run(client: GitHubClient, repo: str, run_id: int) -> RunSeen:
    """One run by id, jobs included."""
    _, _, run = client.get_json(f"/repos/{repo}/actions/runs/{run_id}")
    return run_seen(client, repo, run)


def _ours(run: dict[str, Any], title: str, workflow: str) -> bool:
    return run.get("name") == workflow and (run.get("display_title") or "") == title


def find_run(client: GitHubClient, repo: str, number: int, path: str, after_comment: int,
             claimed: set[int], workflow: str = RERUN_WORKFLOW,
             workflow_file: str = RERUN_WORKFLOW_FILE) -> RunSeen | None:
    """The run our ``/rerun-test <path>`` comment (the first such comment with id above
    ``after_comment``) started, by the rules of the module docstring; None while there is
    none yet (or our comment is not on the PR yet)."""
    comments = list_comments(client, repo, number)
    body = f"/rerun-test {path}"
    mine = next((c for c in comments if c.id > after_comment and c.body.strip() == body), None)
    if mine is None:
        return None
    title = title_of(path, number)
    for c in comments:
        if c.id <= mine.id or not c.body.startswith(reply_prefix(path)):
            continue
        for found in _RUN_LINK.findall(c.body):
            run_id = int(found)
            if run_id in claimed:
                continue
            try:
                _, _, run = client.get_json(f"/repos/{repo}/actions/runs/{run_id}")
            except GitHubRequestFailed as err:
                if err.status != 404:
                    raise
                continue  # a run deleted since the reply: look for ours by title instead
            if isinstance(run, dict) and _ours(run, title, workflow):
                return run_seen(client, repo, run)
    since = _stamp(mine.created_at)
    match: dict[str, Any] | None = None
    for runs in _run_pages(client, f"/repos/{repo}/actions/workflows/{workflow_file}/runs"):
        older = False
        for run in runs:  # newest first
            created = _stamp(run.get("created_at"))
            if since is not None and created is not None and created < since:
                older = True
                break
            if run["id"] not in claimed and _ours(run, title, workflow):
                match = run  # keep going: the oldest run after our comment is ours
        if older:
            break
    return run_seen(client, repo, match) if match is not None else None


class Refusal(BaseModel):
    """The comment gateway's failed run for one of our comments: it refused the command."""

    model_config = ConfigDict(extra="forbid")

    run_id: int
    url: str
    failed_job: int | None


def find_refusal(client: GitHubClient, repo: str, number: int, path: str,
                 after_comment: int, workflow_file: str = GATEWAY_WORKFLOW_FILE) -> Refusal | None:
    """The gateway's refusal of our ``/rerun-test <path>`` comment, or None.

    miles' "Comment command gateway" (``comment-ci-command.yml``) runs once per comment a
    user posts, titled "Comment command by <login>"; a commenter without write permission
    makes its ``handle-command`` job fail, and then nothing is dispatched and no "Started"
    reply comes. Our comment is the i-th of our login's comments since it was posted, so
    its gateway run is the i-th run with our title since then (oldest first); refused when
    that run completed with a conclusion other than success, and no reply answers the
    comment."""
    comments = list_comments(client, repo, number)
    body = f"/rerun-test {path}"
    mine = next((c for c in comments if c.id > after_comment and c.body.strip() == body), None)
    if mine is None:
        return None
    if any(c.id > mine.id and c.body.startswith(reply_prefix(path)) for c in comments):
        return None
    since = _stamp(mine.created_at)
    ours = sorted((c for c in comments if c.login == mine.login and _not_before(c.created_at, since)),
                  key=lambda c: c.id)
    index = [c.id for c in ours].index(mine.id)
    title = f"Comment command by {mine.login}"
    runs: list[dict[str, Any]] = []
    query_url = f"/repos/{repo}/actions/workflows/{workflow_file}/runs"
    for page in _run_pages(client, query_url, event="issue_comment"):
        older = False
        for run in page:
            if not _not_before(run.get("created_at"), since):
                older = True
                break
            if (run.get("display_title") or "") == title:
                runs.append(run)
        if older:
            break
    runs.sort(key=lambda r: r["id"])
    if index >= len(runs):
        return None
    run = runs[index]
    if run.get("status") != "completed" or run.get("conclusion") in (None, "success"):
        return None
    seen = run_seen(client, repo, run)
    return Refusal(run_id=seen.id, url=seen.url, failed_job=seen.failed_job)


def _not_before(value: Any, since: datetime | None) -> bool:
    stamp = _stamp(value)
    return since is None or stamp is None or stamp >= since


def _run_pages(client: GitHubClient, url: str, event: str = "workflow_dispatch") -> Any:
    """The workflow's runs of ``event`` a page at a time, newest first, following
    ``Link: rel="next"`` for at most ``MAX_PAGES`` pages."""
    next_url: str | None = url
    query: dict[str, Any] = {"event": event, "per_page": PER_PAGE}
    for _ in range(MAX_PAGES):
        if next_url is None:
            return
        _, headers, got = client.get_json(next_url, query)
        yield (got or {}).get("workflow_runs", []) if isinstance(got, dict) else []
        m = _NEXT.search(headers.get("link", "") or headers.get("Link", ""))
        next_url, query = (m.group(1) if m else None), {}
