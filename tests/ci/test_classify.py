"""Classification scenarios, each built on the fake server and read through PyGithub over HTTP."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from flow.github.client import GitHubClient
from flow.workflows.ci.decide import CiData, decide
from flow.workflows.ci.observe import observe
from flow.workflows.ci.patterns import load_patterns
from tests.fakegithub import FakeGitHub, Repo

HEAD, BASE = "a" * 40, "b" * 40
FAIL_LOG = "2026-01-01T00:00:00.0000000Z FAILED test_x.py::test_y - AssertionError: boom\n##[error]Process completed with exit code 1.\n"
LOST_LOG = "Running tests...\n##[error]The runner has received a shutdown signal. This can happen when the runner service is stopped.\n"
QUIET_LOG = "Running tests...\n##[error]Process completed with exit code 1.\n"


def _setup(repo: Repo) -> tuple[Repo, object]:
    repo.add_pull(1, "feature", HEAD, merge_base_sha=BASE)
    return repo, repo.add_workflow("pull", ".github/workflows/pull.yml")


def pending(repo: Repo) -> None:
    _, wf = _setup(repo)
    repo.add_run(wf, HEAD, jobs=[("build", "success"), ("test", None)])


def regression(repo: Repo) -> None:
    _, wf = _setup(repo)
    run = repo.add_run(wf, HEAD, jobs=[("test", "failure")])
    repo.jobs_of(run)[0].log = FAIL_LOG
    repo.add_run(wf, BASE, jobs=[("test", "success")])


def broken_trunk(repo: Repo) -> None:
    _, wf = _setup(repo)
    run = repo.add_run(wf, HEAD, jobs=[("test", "failure")])
    repo.jobs_of(run)[0].log = FAIL_LOG
    repo.add_run(wf, BASE, jobs=[("test", "failure")])


def infra_runner_lost(repo: Repo) -> None:
    _, wf = _setup(repo)
    run = repo.add_run(wf, HEAD, jobs=[("test", "failure")])
    repo.jobs_of(run)[0].log = FAIL_LOG + LOST_LOG


def infra_cancelled(repo: Repo) -> None:
    _, wf = _setup(repo)
    repo.add_run(wf, HEAD, jobs=[("test", "cancelled")])


def infra_no_failure_lines(repo: Repo) -> None:
    _, wf = _setup(repo)
    run = repo.add_run(wf, HEAD, jobs=[("test", "failure")])
    repo.jobs_of(run)[0].log = QUIET_LOG


def infra_summary(repo: Repo) -> None:
    _setup(repo)
    cr = repo.add_check_run(HEAD, "external-ci", "failure")
    cr.output_title = "No space left on device"


def flaky(repo: Repo) -> None:
    _, wf = _setup(repo)
    run = repo.add_run(wf, HEAD, jobs=[("test", "success")])
    repo.rerun_failed(run, all_jobs=True)  # someone re-ran everything; this time it failed
    job = repo.jobs_of(run)[0]
    job.complete("failure", FAIL_LOG)


def ignored_and_green(repo: Repo) -> None:
    _, wf = _setup(repo)
    repo.add_run(wf, HEAD, jobs=[("test", "success"), ("docs", "skipped"), ("bench", "neutral")])


def status_failure(repo: Repo) -> None:
    _setup(repo)
    repo.add_status(HEAD, "ci/jenkins", "failure", "3 tests failed")


def awaiting_approval(repo: Repo) -> None:
    _, wf = _setup(repo)
    repo.add_run(wf, HEAD, status="completed", conclusion="action_required")


def nothing_yet(repo: Repo) -> None:
    _setup(repo)


def unknown_conclusion(repo: Repo) -> None:
    _setup(repo)
    repo.add_check_run(HEAD, "new-thing", "some_new_conclusion")


SCENARIOS: list[tuple[Callable[[Repo], None], dict[str, str], bool]] = [
    (pending, {"build": "green", "test": "pending"}, False),
    (regression, {"test": "regression"}, False),
    (broken_trunk, {"test": "broken_trunk"}, False),
    (infra_runner_lost, {"test": "infra"}, False),
    (infra_cancelled, {"test": "infra"}, False),
    (infra_no_failure_lines, {"test": "infra"}, False),
    (infra_summary, {"external-ci": "infra"}, False),
    (flaky, {"test": "flaky"}, False),
    (ignored_and_green, {"test": "green", "docs": "ignored", "bench": "ignored"}, True),
    (status_failure, {"ci/jenkins": "external"}, False),
    (awaiting_approval, {"pull": "pending"}, False),
    (nothing_yet, {"(no checks yet)": "pending"}, False),
    (unknown_conclusion, {"new-thing": "regression"}, False),
]


@pytest.mark.parametrize("build, expected, green", SCENARIOS, ids=[s[0].__name__ for s in SCENARIOS])
def test_scenario(build: Callable[[Repo], None], expected: dict[str, str], green: bool, client: GitHubClient,
                  fake_github: FakeGitHub, tmp_path: Path) -> None:
    """Each CI situation gets the category the rules give it, and all_green only when truly green."""
    build(fake_github.repo("octo/proj"))
    obs = observe(client, "octo/proj", 1, tmp_path / "cache.json")
    got = {v.check.name: v.category for v in obs.classification.verdicts}
    assert (expected, green) == (got, obs.classification.all_green)


def test_regression_carries_failing_lines(client: GitHubClient, fake_github: FakeGitHub, tmp_path: Path) -> None:
    """A regression's verdict holds the trimmed failing lines of its job log."""
    regression(fake_github.repo("octo/proj"))
    verdict = observe(client, "octo/proj", 1, tmp_path / "c.json").classification.of("regression")[0]
    assert ["FAILED test_x.py::test_y - AssertionError: boom"] == [
        ln for ln in verdict.log.lines if ln.startswith("FAILED")]  # type: ignore[union-attr]


def test_rerun_that_passes_is_green_and_reported(client: GitHubClient, fake_github: FakeGitHub, tmp_path: Path) -> None:
    """A failed job whose re-run passed is green, and listed as recovered (flaky) for the report."""
    repo, wf = _setup(fake_github.repo("octo/proj"))
    run = repo.add_run(wf, HEAD, jobs=[("test", "failure")])
    repo.rerun_failed(run)
    repo.jobs_of(run)[0].complete("success")
    result = observe(client, "octo/proj", 1, tmp_path / "c.json").classification
    assert (True, ["test"]) == (result.all_green, [v.check.name for v in result.recovered])


def test_rerun_targets(client: GitHubClient, fake_github: FakeGitHub, tmp_path: Path) -> None:
    """decide names only the finished run holding an infra verdict for a re-run, with its check; a green run is left."""
    repo, wf = _setup(fake_github.repo("octo/proj"))
    infra_run = repo.add_run(wf, HEAD, jobs=[("lint", "cancelled")])
    repo.add_run(repo.add_workflow("t", ".github/workflows/t.yml"), HEAD, jobs=[("test", "success")])
    obs = observe(client, "octo/proj", 1, tmp_path / "c.json")
    decision = decide(obs.classification, obs.head.runs, obs.pull, CiData(repo="octo/proj", number=1))
    assert ("rerun", [(infra_run.id, ["lint"])]) == (decision.action, [(r.run_id, r.checks) for r in decision.reruns])


def test_expired_log_is_a_regression_not_green(client: GitHubClient, fake_github: FakeGitHub, tmp_path: Path) -> None:
    """When the log cannot be fetched the failure is still handed on as a regression."""
    regression(fake_github.repo("octo/proj"))
    fake_github.blob_ttl = -1.0
    verdict = observe(client, "octo/proj", 1, tmp_path / "c.json").classification.verdicts[0]
    assert ("regression", "failed; its log could not be read") == (verdict.category, verdict.reason)


def test_logs_of_finished_jobs_are_fetched_once(client: GitHubClient, fake_github: FakeGitHub, tmp_path: Path) -> None:
    """A second tick on an unchanged failing PR reuses the cached excerpt instead of re-downloading."""
    regression(fake_github.repo("octo/proj"))
    observe(client, "octo/proj", 1, tmp_path / "c.json")
    observe(client, "octo/proj", 1, tmp_path / "c.json")
    assert 1 == fake_github.count("/logs$")


def test_patterns_load() -> None:
    """The shipped patterns file validates and lists each conclusion once."""
    p = load_patterns()
    groups = [p.conclusions.green, p.conclusions.ignored, p.conclusions.infra, p.conclusions.failed, p.conclusions.blocked]
    names = [c for g in groups for c in g]
    assert len(set(names)) == len(names)
