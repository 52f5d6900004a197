"""What one observation costs in requests, over the fake GitHub: the unchanged pending PR and
the tick that waits for the debugger's push."""

from __future__ import annotations

from pathlib import Path

from flow.github.client import GitHubClient
from flow.workflows.ci.decide import Awaiting, CiData, decide
from flow.workflows.ci.observe import observe
from tests.fakegithub import FakeGitHub, Repo

HEAD, BASE, FIX = "a" * 40, "b" * 40, "c" * 40
FAIL_LOG = "FAILED test_x.py::test_y - AssertionError: boom\n##[error]Process completed with exit code 1.\n"


def _pr(fake: FakeGitHub) -> Repo:
    repo = fake.repo("octo/proj")
    repo.add_pull(1, "feature", HEAD, merge_base_sha=BASE)
    return repo


def test_an_unchanged_pending_pr_costs_five_requests_and_still_waits(client: GitHubClient, fake_github: FakeGitHub,
                                                                     tmp_path: Path) -> None:
    """300 check runs, 5 running: the second tick is PR + 3 pages + statuses, all 304, same
    verdicts; the required checks read by the first tick for this head are reused."""
    repo = _pr(fake_github)
    for w in range(10):
        run = repo.add_run(repo.add_workflow(f"wf{w}", f".github/workflows/wf{w}.yml"), HEAD)
        for j in range(30):
            repo.add_job(run, f"job {j:02d}", None if w == 0 and j < 5 else "success")
    repo.add_status(HEAD, "ci/legacy", "success")
    cache = tmp_path / "c.json"
    first = observe(client, "octo/proj", 1, cache)
    fake_github.reset_log()
    second = observe(client, "octo/proj", 1, cache, known_required=first.required)
    assert (5, {304}, 0) == (second.requests, {r.status for r in fake_github.requests},
                             fake_github.count("/actions/runs$"))
    assert (first.classification, first.head) == (second.classification, second.head.model_copy(
        update={"requests": first.head.requests}))
    assert {"pending": 5, "green": 296} == {c: len(second.classification.of(c)) for c in ("pending", "green")}
    data = CiData(repo="octo/proj", number=1)
    assert "waiting_for_ci" == decide(second.classification, second.head.runs, second.pull, data).ci_phase


def test_awaiting_the_debuggers_push_reads_only_the_pr(client: GitHubClient, fake_github: FakeGitHub,
                                                       tmp_path: Path) -> None:
    """Head still the debugged commit: one request (the PR), and decide waits for the push as before;
    once the head moves the full tick runs again."""
    repo = _pr(fake_github)
    wf = repo.add_workflow("pull", ".github/workflows/pull.yml")
    repo.jobs_of(repo.add_run(wf, HEAD, jobs=[("test", "failure")]))[0].log = FAIL_LOG
    repo.add_run(wf, BASE, jobs=[("test", "success")])
    cache = tmp_path / "c.json"
    observe(client, "octo/proj", 1, cache)
    fake_github.reset_log()
    obs = observe(client, "octo/proj", 1, cache, awaiting_head=HEAD)
    assert (1, ["/repos/octo/proj/pulls/1"], False) == (
        obs.requests, [r.path for r in fake_github.requests], obs.checks_read)
    data = CiData(repo="octo/proj", number=1, fix_round=1, awaiting=Awaiting(from_sha=HEAD, pushed=FIX))
    decision = decide(obs.classification, obs.head.runs, obs.pull, data)
    assert ("wait", "waiting_for_push") == (decision.action, decision.ci_phase)
    repo.push(1, FIX)
    repo.add_run(wf, FIX, jobs=[("test", None)])
    moved = observe(client, "octo/proj", 1, cache, awaiting_head=HEAD)
    assert (True, FIX, ["pending"]) == (moved.checks_read, moved.head.sha,
                                        [v.category for v in moved.classification.verdicts])


def test_a_closed_pr_is_not_short_circuited_as_awaiting(client: GitHubClient, fake_github: FakeGitHub,
                                                        tmp_path: Path) -> None:
    """Merged while the debugger's push is awaited: the tick still reports the PR closed (decide ends it)."""
    _pr(fake_github).pulls[1].merge()
    obs = observe(client, "octo/proj", 1, tmp_path / "c.json", awaiting_head=HEAD)
    data = CiData(repo="octo/proj", number=1, awaiting=Awaiting(from_sha=HEAD, pushed=FIX))
    decision = decide(obs.classification, obs.head.runs, obs.pull, data)
    assert ("closed", "merged", 1) == (decision.action, decision.ci_phase, obs.requests)
