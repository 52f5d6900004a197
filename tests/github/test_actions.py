"""Job logs through the expiring redirect, re-runs, comments, labels, ready-for-review."""

from __future__ import annotations

import pytest

from flow.github.actions import (
    add_labels, job_log, list_comments, mark_ready, post_comment, rerun_failed_jobs,
)
from flow.github.client import GitHubClient
from flow.github.errors import GitHubRequestFailed, LinkExpired
from flow.workflows.ci.observe import job_failure_lines
from tests.fakegithub import FakeGitHub

SHA = "a" * 40
LOG = """2026-01-01T00:00:00.0000000Z ##[group]Run pytest
2026-01-01T00:00:01.0000000Z collected 3 items
2026-01-01T00:00:02.0000000Z test_a.py::test_ok PASSED
2026-01-01T00:00:03.0000000Z FAILED test_a.py::test_bad - AssertionError: 1 != 2
2026-01-01T00:00:04.0000000Z ##[error]Process completed with exit code 1.
"""


@pytest.fixture
def failed_job(fake_github: FakeGitHub):  # noqa: ANN201
    repo = fake_github.repo("octo/proj")
    repo.add_pull(1, "feature", SHA)
    run = repo.add_run(repo.add_workflow("pull", ".github/workflows/pull.yml"), SHA,
                       jobs=[("build", "success"), ("test", "failure")])
    job = repo.check_runs[-1]
    job.log = LOG
    return repo, run, job


def test_log_follows_redirect_and_is_trimmed(client: GitHubClient, fake_github: FakeGitHub, failed_job) -> None:  # noqa: ANN001
    """The log comes through the 302 to a signed URL; only failure lines (and context) are kept."""
    _, _, job = failed_job
    excerpt = job_failure_lines(client, "octo/proj", job.id)
    assert (1, "FAILED test_a.py::test_bad - AssertionError: 1 != 2", 302) == (
        excerpt.failure_lines, excerpt.lines[-2], fake_github.requests[0].status)


def test_expired_log_link_is_typed(client: GitHubClient, fake_github: FakeGitHub, failed_job) -> None:  # noqa: ANN001
    """A signed log URL that expired before the fetch raises LinkExpired, not garbage text."""
    fake_github.blob_ttl = -1.0
    with pytest.raises(LinkExpired):
        job_log(client, "octo/proj", failed_job[2].id)


def test_blob_fetch_sends_no_token(client: GitHubClient, fake_github: FakeGitHub, failed_job) -> None:  # noqa: ANN001
    """The signed download, on another host, is fetched without credentials."""
    seen: list[str | None] = []
    original = fake_github.handle_blob

    def spy(method, path, headers):  # noqa: ANN001, ANN202
        seen.append(headers.get("authorization"))
        return original(method, path, headers)

    fake_github.handle_blob = spy  # type: ignore[method-assign]
    job_log(client, "octo/proj", failed_job[2].id)
    assert ([None], True) == (seen, fake_github.blob_url.split(":")[1] != fake_github.base_url.split(":")[1])


def test_rerun_failed_jobs_makes_attempt_two(client: GitHubClient, fake_github: FakeGitHub, failed_job) -> None:  # noqa: ANN001
    """Re-running failed jobs gives attempt 2 with only the failed job queued again."""
    repo, run, _ = failed_job
    rerun_failed_jobs(client, "octo/proj", run.id)
    assert (2, [("build", "completed"), ("test", "queued")]) == (
        run.run_attempt, sorted((j.name, j.status) for j in repo.jobs_of(run)))


def test_rerun_of_running_workflow_is_refused(client: GitHubClient, fake_github: FakeGitHub) -> None:
    """GitHub refuses to re-run a run still in progress; that surfaces as a 403 GitHubRequestFailed."""
    repo = fake_github.repo("octo/proj")
    run = repo.add_run(repo.add_workflow("pull", ".github/workflows/pull.yml"), SHA, jobs=[("test", None)])
    with pytest.raises(GitHubRequestFailed) as err:
        rerun_failed_jobs(client, "octo/proj", run.id)
    assert 403 == err.value.status


def test_comment_is_posted_once(client: GitHubClient, fake_github: FakeGitHub, failed_job) -> None:  # noqa: ANN001
    """A comment posts with one POST and reads back."""
    post_comment(client, "octo/proj", 1, "CI gave up: test still fails")
    assert (["CI gave up: test still fails"], 1) == (list_comments(client, "octo/proj", 1),
                                                     fake_github.count("/comments$", "POST"))


def test_labels_are_added(client: GitHubClient, fake_github: FakeGitHub, failed_job) -> None:  # noqa: ANN001
    """Labels add without duplicates and the current set is returned."""
    add_labels(client, "octo/proj", 1, ["ci-failed"])
    assert ["ci-failed", "flaky"] == add_labels(client, "octo/proj", 1, ["ci-failed", "flaky"])


def test_mark_ready_uses_graphql_once(client: GitHubClient, fake_github: FakeGitHub, failed_job) -> None:  # noqa: ANN001
    """A draft PR is marked ready through the GraphQL mutation; a second call sends no mutation."""
    first = mark_ready(client, "octo/proj", 1)
    second = mark_ready(client, "octo/proj", 1)
    assert (True, False, False, 1) == (first, second, failed_job[0].pulls[1].draft, fake_github.count("^/graphql$"))
