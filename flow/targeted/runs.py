"""The GitHub side of ``ci-targeted``: the PR's "Rerun Test" runs, matched to test files.

A ``/rerun-test <file>`` comment makes the repository's "Rerun Test" workflow dispatch one
run on the test's home suite at the PR head SHA. GitHub does not link such a run to the
comment, so a run is matched to a file when all hold: it belongs to the workflow named
``workflow`` (default "Rerun Test"), its id is above the newest run id seen when the comment
was queued (run ids grow), and the file path appears in the run's ``display_title`` or in
one of its job names. This is our reading of miles' workflow (its display title names the
PR and the file); a repository whose runs name neither needs a different matcher.

Measured time is the "Run tests" step's duration from the jobs API (``started_at`` /
``completed_at``), else None: never guessed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from flow.github.client import GitHubClient

RERUN_WORKFLOW = "Rerun Test"
RUN_TESTS_STEP = "Run tests"


class RunSeen(BaseModel):
    """One "Rerun Test" run as a poll sees it."""

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


def newest_run_id(client: GitHubClient, repo: str, workflow: str = RERUN_WORKFLOW) -> int:
    """The highest id among the repository's latest runs of ``workflow`` (0 when none)."""
    _, _, body = client.get_json(f"/repos/{repo}/actions/runs", {"per_page": 100})
    ids = [r["id"] for r in (body or {}).get("workflow_runs", []) if r.get("name") == workflow]
    return max(ids, default=0)


def list_runs(client: GitHubClient, repo: str, after: int,
              workflow: str = RERUN_WORKFLOW) -> list[RunSeen]:
    """Runs of ``workflow`` with id above ``after``, oldest first, each with its job names.

    Reads the newest 100 runs of the repository (enough for one PR's file runs between two
    polls). Raises the flow.github errors (RateLimited, GitHubUnavailable, ...)."""
    _, _, body = client.get_json(f"/repos/{repo}/actions/runs", {"per_page": 100})
    out: list[RunSeen] = []
    for r in sorted((body or {}).get("workflow_runs", []), key=lambda r: r["id"]):
        if r.get("name") != workflow or r["id"] <= after:
            continue
        _, _, jb = client.get_json(f"/repos/{repo}/actions/runs/{r['id']}/jobs",
                                   {"per_page": 100})
        jobs = (jb or {}).get("jobs", [])
        failed = next((j["id"] for j in jobs if j.get("conclusion") not in
                       (None, "success", "skipped", "neutral")), None)
        out.append(RunSeen(id=r["id"], head_sha=r["head_sha"], status=r["status"],
                           conclusion=r.get("conclusion"), url=r.get("html_url") or "",
                           title=r.get("display_title") or "", jobs=[j["name"] for j in jobs],
                           failed_job=failed, seconds=_seconds(jobs)))
    return out


def names_file(run: RunSeen, path: str) -> bool:
    """True when ``run`` names test file ``path`` in its title or a job name."""
    return path in run.title or any(path in j for j in run.jobs)


def comment_counts(client: GitHubClient, repo: str, number: int) -> dict[str, int]:
    """How many comments on the PR have each exact body (stripped)."""
    from flow.github.actions import list_comments

    counts: dict[str, int] = {}
    for body in list_comments(client, repo, number):
        key = (body or "").strip()
        counts[key] = counts.get(key, 0) + 1
    return counts
