"""What one observation costs in requests, over the fake GitHub."""

from __future__ import annotations

from pathlib import Path

from flow.ci.decide import CiData, decide
from flow.ci.observe import observe
from flow.github.client import GitHubClient
from tests.fakegithub import FakeGitHub, Repo

HEAD, BASE = "a" * 40, "b" * 40


def _pr(fake: FakeGitHub) -> Repo:
    repo = fake.repo("octo/proj")
    repo.add_pull(1, "feature", HEAD, merge_base_sha=BASE)
    return repo


def test_an_unchanged_pending_pr_costs_five_requests_and_still_waits(client: GitHubClient, fake_github: FakeGitHub,
                                                                     tmp_path: Path) -> None:
    """300 check runs, 5 running: the second tick is PR + 3 pages + statuses, all 304, same verdicts."""
    repo = _pr(fake_github)
    for w in range(10):
        run = repo.add_run(repo.add_workflow(f"wf{w}", f".github/workflows/wf{w}.yml"), HEAD)
        for j in range(30):
            repo.add_job(run, f"job {j:02d}", None if w == 0 and j < 5 else "success")
    repo.add_status(HEAD, "ci/legacy", "success")
    cache = tmp_path / "c.json"
    first = observe(client, "octo/proj", 1, cache)
    fake_github.reset_log()
    second = observe(client, "octo/proj", 1, cache)
    assert (5, {304}, 0) == (second.requests, {r.status for r in fake_github.requests},
                             fake_github.count("/actions/runs$"))
    assert (first.classification, first.head) == (second.classification, second.head.model_copy(
        update={"requests": first.head.requests}))
    assert {"pending": 5, "green": 296} == {c: len(second.classification.of(c)) for c in ("pending", "green")}
    data = CiData(repo="octo/proj", number=1)
    assert "waiting_for_ci" == decide(second.classification, second.head.runs, second.pull, data).ci_phase

