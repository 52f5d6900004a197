"""Writes and downloads for a CI tick: job logs, re-runs, comments, labels, ready-for-review."""

from __future__ import annotations

from flow.github.client import GitHubClient
from flow.github.errors import GitHubRequestFailed
from flow.github.reads import list_all


def job_log(client: GitHubClient, repo: str, job_id: int, max_bytes: int = 2_000_000) -> str:
    """The raw log of an Actions job, fetched right after GitHub hands out its short-lived URL.

    GitHub answers the logs endpoint with a 302 to a signed URL that expires within
    minutes; the URL is fetched at once, without the token. Keeps the last `max_bytes`
    (failures are at the end). Raises LinkExpired, GitHubRequestFailed, GitHubUnavailable.
    """
    url = client.location(f"/repos/{repo}/actions/jobs/{job_id}/logs")
    data = client.fetch_signed(url, f"log of job {job_id}")
    return data[-max_bytes:].decode("utf-8", errors="replace")


def rerun_failed_jobs(client: GitHubClient, repo: str, run_id: int) -> None:
    """Re-run the failed jobs of a workflow run (a new attempt of the same run).

    Through the requester because PyGithub's WorkflowRun.rerun_failed_jobs returns
    False instead of saying why. Raises GitHubRequestFailed (e.g. 403 while the run
    is still going), RateLimited, GitHubUnavailable.
    """
    client.call(lambda: client.requester.requestJsonAndCheck(
        "POST", f"/repos/{repo}/actions/runs/{run_id}/rerun-failed-jobs"),
        what=f"repos/{repo}/actions/runs/{run_id}/rerun-failed-jobs", write=True)


def post_comment(client: GitHubClient, repo: str, number: int, body: str) -> str:
    """Post an issue comment on PR/issue `number`; returns the comment's html_url.

    Raw JSON through the client's wrapper (no PyGithub object that could fetch the issue
    first, outside the retries). Not retried on a timeout: it may have been posted."""
    path = f"/repos/{repo}/issues/{number}/comments"
    _, data = client.call(lambda: client.requester.requestJsonAndCheck("POST", path, input={"body": body}),
                          what=path[1:], write=True)
    return str((data or {}).get("html_url") or "")


def list_comments(client: GitHubClient, repo: str, number: int) -> list[str]:
    """Bodies of the comments on `number`, oldest first (all pages)."""
    return [c.get("body") or "" for c in list_all(client, f"/repos/{repo}/issues/{number}/comments")]


def add_labels(client: GitHubClient, repo: str, number: int, labels: list[str]) -> list[str]:
    """Add labels to PR/issue `number`; returns the labels it now carries (GitHub's answer)."""
    path = f"/repos/{repo}/issues/{number}/labels"
    _, data = client.call(lambda: client.requester.requestJsonAndCheck("POST", path, input={"labels": labels}),
                          what=path[1:], write=True)
    return [lb.get("name", "") for lb in data or []]


def mark_ready(client: GitHubClient, repo: str, number: int) -> bool:
    """Mark a draft PR ready for review (GraphQL markPullRequestReadyForReview).

    Returns False if it was already ready (no mutation sent), True if it was marked.
    """
    pull = client.call(lambda: client.repo(repo).get_pull(number), what=f"repos/{repo}/pulls/{number}")
    if not pull.draft:
        return False
    data = client.call(lambda: pull.mark_ready_for_review(), what="graphql markPullRequestReadyForReview", write=True)
    if data.get("pullRequest", {}).get("isDraft", True):
        raise GitHubRequestFailed("graphql markPullRequestReadyForReview", 200, "the PR is still a draft",
                                  "mark it ready by hand: gh pr ready " + str(number))
    return True
