"""Reading a tick: pagination, ETag/304 with the on-disk cache, latest attempt, fork PRs."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from flow.github.client import GitHubClient
from flow.github.models import CommitChecks, PullInfo
from flow.github.reads import find_pr_for_branch, get_pull, read_commit_checks, read_tick
from tests.fakegithub import FakeGitHub, Repo, WorkflowRun

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


# -- reusing the cached workflow-runs listing (read_commit_checks, conditions (a)-(d)) ----------

def runs_requests(fake: FakeGitHub) -> list[int]:
    """Statuses of the workflow-runs listing requests seen since the last reset."""
    return [r.status for r in fake.requests if r.path.endswith("/actions/runs")]


def pending_pr(fake: FakeGitHub, checks: int = 250) -> tuple[Repo, WorkflowRun]:
    """A PR whose run `pull` has `checks` jobs, two still running; a finished run `lint`; a status."""
    repo = fake.repo("octo/proj")
    repo.add_pull(1, "feature", SHA)
    run = repo.add_run(repo.add_workflow("pull", ".github/workflows/pull.yml"), SHA)
    for i in range(checks):
        repo.add_job(run, f"job {i:03d}", None if i < 2 else "success")
    repo.add_run(repo.add_workflow("lint", ".github/workflows/lint.yml"), SHA, jobs=[("ruff", "success")])
    repo.add_status(SHA, "ci/legacy", "success")
    return repo, run


def second_tick(client: GitHubClient, fake: FakeGitHub, cache: Path) -> tuple[PullInfo, CommitChecks]:
    read_tick(client, "octo/proj", 1, cache)
    fake.reset_log()
    return read_tick(client, "octo/proj", 1, cache)


def test_unchanged_pending_pr_reuses_the_cached_runs_listing(client: GitHubClient, fake_github: FakeGitHub,
                                                             tmp_path: Path) -> None:
    """(a)-(d) hold: PR + 3 check-run pages + statuses, all 304, and the same reading as a full read."""
    pending_pr(fake_github)
    _, checks = second_tick(client, fake_github, tmp_path / "etags.json")
    seen = [(r.path.rsplit("/", 1)[-1], r.status) for r in fake_github.requests]
    fresh = read_commit_checks(client, "octo/proj", SHA)  # no cache: every request made
    assert ([("1", 304)] + [("check-runs", 304)] * 3 + [("status", 304)], 5) == (seen, checks.requests)
    assert (fresh.checks, fresh.history, fresh.runs) == (checks.checks, checks.history, checks.runs)


def test_a_check_run_completing_reads_the_runs_fresh(client: GitHubClient, fake_github: FakeGitHub,
                                                     tmp_path: Path) -> None:
    """(a) fails when a job finishes: its page changed, so the runs listing is asked for again.
    The last pending job finishing completes the run, which the fresh read shows."""
    repo, run = pending_pr(fake_github, checks=3)
    cache = tmp_path / "etags.json"
    read_tick(client, "octo/proj", 1, cache)
    repo.jobs_of(run)[0].complete("success")
    fake_github.reset_log()
    _, checks = read_tick(client, "octo/proj", 1, cache)
    assert ([304], 4) == (runs_requests(fake_github), checks.requests)  # the run is still in progress
    repo.jobs_of(run)[1].complete("success")
    fake_github.reset_log()
    _, checks = read_tick(client, "octo/proj", 1, cache)
    assert [200] == runs_requests(fake_github)
    assert {"completed"} == {r.status for r in checks.runs}


def test_nothing_pending_reads_the_runs_fresh(client: GitHubClient, fake_github: FakeGitHub,
                                              tmp_path: Path) -> None:
    """(c): every check finished, so this tick may end the watch: the runs are always asked for."""
    many_checks(fake_github, 250)
    _, checks = second_tick(client, fake_github, tmp_path / "etags.json")
    assert ([304], 6) == (runs_requests(fake_github), checks.requests)


def test_a_jobless_run_not_completed_reads_the_runs_fresh(client: GitHubClient, fake_github: FakeGitHub,
                                                          tmp_path: Path) -> None:
    """(d): a queued run with no jobs yet (approval, runner pending) may change with no check run
    changing, so the listing is asked for even while other jobs run."""
    repo, _ = pending_pr(fake_github, checks=3)
    repo.add_run(repo.add_workflow("gpu", ".github/workflows/gpu.yml"), SHA)
    cache = tmp_path / "etags.json"
    _, checks = second_tick(client, fake_github, cache)
    assert ([304], ("workflow_run", "queued")) == (
        runs_requests(fake_github), next((c.kind, c.status) for c in checks.checks if c.name == "gpu"))


def test_a_run_still_open_with_every_job_done_reads_the_runs_fresh(client: GitHubClient, fake_github: FakeGitHub,
                                                                   tmp_path: Path) -> None:
    """(d): GitHub can list a run in_progress a moment after its last job finished; that run may
    complete with no check run changing, so the listing is asked for until it shows completed."""
    repo, _ = pending_pr(fake_github, checks=3)
    lagging = repo.add_run(repo.add_workflow("docs", ".github/workflows/docs.yml"), SHA,
                           jobs=[("build", "success")], status="in_progress")
    cache = tmp_path / "etags.json"
    second_tick(client, fake_github, cache)
    assert [304] == runs_requests(fake_github)
    lagging.status = None  # the fake derives it from the jobs again: completed
    fake_github.reset_log()
    _, checks = read_tick(client, "octo/proj", 1, cache)
    assert ([200], "completed") == (runs_requests(fake_github),
                                    next(r.status for r in checks.runs if r.id == lagging.id))


def test_a_pending_status_alone_keeps_the_listing_until_it_changes(client: GitHubClient, fake_github: FakeGitHub,
                                                                   tmp_path: Path) -> None:
    """(c) counts a pending commit status: every run finished, a status pending -> runs reused;
    the status turning green changes the combined status, so (a) fails and the runs are read."""
    repo = fake_github.repo("octo/proj")
    repo.add_pull(1, "feature", SHA)
    repo.add_run(repo.add_workflow("pull", ".github/workflows/pull.yml"), SHA, jobs=[("test", "success")])
    repo.add_status(SHA, "ci/jenkins", "pending")
    cache = tmp_path / "etags.json"
    _, checks = second_tick(client, fake_github, cache)
    assert ([], 3) == (runs_requests(fake_github), checks.requests)
    repo.add_status(SHA, "ci/jenkins", "success")
    fake_github.reset_log()
    read_tick(client, "octo/proj", 1, cache)
    assert [304] == runs_requests(fake_github)


def test_a_missing_runs_page_in_the_cache_reads_the_runs(client: GitHubClient, fake_github: FakeGitHub,
                                                         tmp_path: Path) -> None:
    """(b): a listing not (wholly) cached (evicted, or a cache from before) is asked for."""
    pending_pr(fake_github, checks=3)
    path = tmp_path / "etags.json"
    read_tick(client, "octo/proj", 1, path)
    entries = orjson.loads(path.read_bytes())  # [[key, entry], ...]: drop the runs listing
    path.write_bytes(orjson.dumps([e for e in entries if "/actions/runs" not in e[0]]))
    fake_github.reset_log()
    read_tick(client, "octo/proj", 1, path)
    assert [200] == runs_requests(fake_github)  # unconditional: no ETag left to send


def test_a_changed_status_reads_the_runs_fresh(client: GitHubClient, fake_github: FakeGitHub,
                                               tmp_path: Path) -> None:
    """(a) covers the combined status too: a new status, check runs unchanged -> runs asked for."""
    repo, _ = pending_pr(fake_github, checks=3)
    cache = tmp_path / "etags.json"
    read_tick(client, "octo/proj", 1, cache)
    repo.add_status(SHA, "ci/other", "pending")
    fake_github.reset_log()
    read_tick(client, "octo/proj", 1, cache)
    assert [304] == runs_requests(fake_github)
