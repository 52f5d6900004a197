"""Reading a tick: pagination, ETag/304 with the on-disk cache, latest attempt, fork PRs."""

from __future__ import annotations

from pathlib import Path

import pytest

from flow.github.client import GitHubClient
from flow.github.reads import find_pr_for_branch, get_pull, read_commit_checks, read_tick
from tests.fakegithub import FakeGitHub

SHA = "a" * 40


def many_checks(fake: FakeGitHub, n: int) -> None:
    repo = fake.repo("octo/proj")
    repo.add_pull(1, "feature", SHA)
    wf = repo.add_workflow("pull", ".github/workflows/pull.yml")
    run = repo.add_run(wf, SHA)
    for i in range(n):
        repo.add_job(run, f"job {i:03d}", "success")


def test_all_pages_are_read(client: GitHubClient, fake_github: FakeGitHub) -> None:
    """250 check runs come back whole through three Link-header pages."""
    many_checks(fake_github, 250)
    checks = read_commit_checks(client, "octo/proj", SHA)
    assert (250, 3) == (len(checks.checks), fake_github.count("check-runs$"))


def test_unchanged_pr_answers_304_from_the_disk_cache(client: GitHubClient, fake_github: FakeGitHub, tmp_path: Path) -> None:
    """A second tick (a new process: only the cache file carries over) is all 304s and costs no rate limit."""
    many_checks(fake_github, 250)
    cache = tmp_path / "etags.json"
    first = read_tick(client, "octo/proj", 1, cache)
    fake_github.reset_log()
    budget = fake_github.rate_remaining
    second = read_tick(client, "octo/proj", 1, cache)
    statuses = {r.status for r in fake_github.requests}
    assert (first[1].checks, {304}, budget, 6) == (second[1].checks, statuses, fake_github.rate_remaining, second[1].requests)


def test_changed_check_is_seen_despite_cache(client: GitHubClient, fake_github: FakeGitHub, tmp_path: Path) -> None:
    """A check run finishing between ticks changes its page's ETag, so the new state is read."""
    repo = fake_github.repo("octo/proj")
    repo.add_pull(1, "feature", SHA)
    run = repo.add_run(repo.add_workflow("pull", ".github/workflows/pull.yml"), SHA, jobs=[("build", None)])
    cache = tmp_path / "etags.json"
    read_tick(client, "octo/proj", 1, cache)
    repo.check_runs[0].complete("failure")
    _, checks = read_tick(client, "octo/proj", 1, cache)
    assert [("build", "completed", "failure", run.id)] == [(c.name, c.status, c.conclusion, c.run_id) for c in checks.checks]


def test_latest_attempt_per_check(client: GitHubClient, fake_github: FakeGitHub) -> None:
    """After a re-run the check shows attempt 2 (queued); attempt 1's failure moves to history."""
    repo = fake_github.repo("octo/proj")
    repo.add_pull(1, "feature", SHA)
    run = repo.add_run(repo.add_workflow("pull", ".github/workflows/pull.yml"), SHA,
                       jobs=[("build", "success"), ("test", "failure")])
    repo.rerun_failed(run)
    checks = read_commit_checks(client, "octo/proj", SHA)
    latest = sorted((c.name, c.status, c.run_attempt) for c in checks.checks)
    assert ([("build", "completed", 2), ("test", "queued", 2)], [("test", "failure")]) == (
        latest, [(h.name, h.conclusion) for h in checks.history])


def test_fork_pr_runs_matched_by_head_sha(client: GitHubClient, fake_github: FakeGitHub) -> None:
    """Runs of a fork PR (no pull_requests) are found by head_sha; another sha's runs are not."""
    repo = fake_github.repo("octo/proj")
    repo.add_pull(3, "feature", SHA, head_repo="me/proj")
    wf = repo.add_workflow("pull", ".github/workflows/pull.yml")
    mine = repo.add_run(wf, SHA, jobs=[("test", "success")])
    repo.add_run(wf, "f" * 40, jobs=[("test", "failure")])
    _, checks = read_tick(client, "octo/proj", 3)
    assert ([mine.id], ["success"]) == ([r.id for r in checks.runs], [c.conclusion for c in checks.checks])


def test_run_without_jobs_counts_as_pending(client: GitHubClient, fake_github: FakeGitHub) -> None:
    """A queued workflow run with no jobs yet appears as a pending workflow_run check."""
    repo = fake_github.repo("octo/proj")
    repo.add_run(repo.add_workflow("lint", ".github/workflows/lint.yml"), SHA)
    checks = read_commit_checks(client, "octo/proj", SHA)
    assert [("workflow_run", "lint", "queued")] == [(c.kind, c.name, c.status) for c in checks.checks]


def test_commit_statuses_are_read(client: GitHubClient, fake_github: FakeGitHub) -> None:
    """Legacy statuses map to checks: pending -> in_progress, others -> completed with the state."""
    repo = fake_github.repo("octo/proj")
    repo.add_status(SHA, "ci/jenkins", "pending")
    repo.add_status(SHA, "ci/jenkins", "failure", "tests failed")
    repo.add_status(SHA, "ci/lint", "pending")
    checks = read_commit_checks(client, "octo/proj", SHA)
    got = sorted((c.name, c.status, c.conclusion, c.summary) for c in checks.checks)
    assert [("ci/jenkins", "completed", "failure", "tests failed"), ("ci/lint", "in_progress", None, "")] == got


def test_new_commit_is_picked_up(client: GitHubClient, fake_github: FakeGitHub, tmp_path: Path) -> None:
    """After a push the tick reads the new head sha's checks, not the cached old ones."""
    repo = fake_github.repo("octo/proj")
    repo.add_pull(1, "feature", SHA)
    wf = repo.add_workflow("pull", ".github/workflows/pull.yml")
    repo.add_run(wf, SHA, jobs=[("test", "failure")])
    cache = tmp_path / "etags.json"
    read_tick(client, "octo/proj", 1, cache)
    repo.push(1, "b" * 40)
    repo.add_run(wf, "b" * 40, jobs=[("test", None)])
    pull, checks = read_tick(client, "octo/proj", 1, cache)
    assert ("b" * 40, ["queued"]) == (pull.head_sha, [c.status for c in checks.checks])


def test_corrupt_cache_file_costs_a_full_read(client: GitHubClient, fake_github: FakeGitHub, tmp_path: Path) -> None:
    """A garbled cache file is treated as empty: the tick reads everything afresh and rewrites it."""
    many_checks(fake_github, 3)
    cache = tmp_path / "etags.json"
    cache.write_text("{not json")
    _, checks = read_tick(client, "octo/proj", 1, cache)
    assert (3, {200}) == (len(checks.checks), {r.status for r in fake_github.requests})


@pytest.mark.parametrize(("end", "expected"), [
    (None, ("open", False)), ("close", ("closed", False)), ("merge", ("closed", True)),
])
def test_pull_info_carries_open_closed_and_merged(client: GitHubClient, fake_github: FakeGitHub,
                                                 end: str | None, expected: tuple[str, bool]) -> None:
    """get_pull reports GitHub's state and whether a closed PR was merged."""
    pull = fake_github.repo("octo/proj").add_pull(1, "feature", SHA)
    if end is not None:
        getattr(pull, end)()
    info = get_pull(client, "octo/proj", 1)
    assert expected == (info.state, info.merged)


def test_branch_lookup_reads_state_from_the_listing(client: GitHubClient, fake_github: FakeGitHub) -> None:
    """find_pr_for_branch fills state and merged from the list answer, with no extra PR GET."""
    fake_github.repo("octo/proj").add_pull(3, "feature", SHA)
    info = find_pr_for_branch(client, "octo/proj", "feature")
    assert (3, "open", False, 0) == (info.number, info.state, info.merged,
                                     fake_github.count(r"/pulls/3$"))
