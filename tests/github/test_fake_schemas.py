"""The fake GitHub answers as GitHub's published REST description says (tests/fakegithub/schemas.py),
and behaves as GitHub documents: limits, pagination past 100, redirects to another host, refusals,
and miles' Rerun Test gateway."""

from __future__ import annotations

import time
from typing import Any

import pytest
import requests

from tests.fakegithub import FakeGitHub
from tests.fakegithub.schemas import check
from tests.fakegithub.server import ADMIN_RIGHTS

SHA = "a" * 40
MAIN = "c" * 40


@pytest.fixture
def world(fake_github: FakeGitHub) -> dict[str, Any]:
    repo = fake_github.repo("octo/proj")
    pull = repo.add_pull(4, "feature", SHA, labels=["Merged"], files=["test/test_a.py"])
    root = pull.add_review_comment("why?", "rev")
    pull.add_review_comment("because", "dev", reply_to=root.id)
    repo.add_comment(4, "hello")
    wf = repo.add_workflow("pull", ".github/workflows/pull.yml")
    run = repo.add_run(wf, SHA, jobs=[("build", "success"), ("test", "failure")])
    run.add_artifact("w", {"x.whl": b"w"})
    repo.add_status(SHA, "ci/legacy", "success")
    repo.protect("main", ["test"])
    repo.add_ruleset(["main"], ["build"])
    return {"repo": repo, "run": run, "root": root, "job": repo.jobs_of(run)[0]}


def _get(fake: FakeGitHub, path: str, method: str = "GET", **kw: Any) -> requests.Response:
    return requests.request(method, fake.base_url + path, timeout=5, allow_redirects=False,
                            headers={"Authorization": f"token {fake.token}"}, **kw)


CASES = [  # (endpoint, method, path template)
    ("pulls.get", "GET", "/repos/octo/proj/pulls/4"),
    ("pulls.list", "GET", "/repos/octo/proj/pulls?state=all"),
    ("pulls.list-files", "GET", "/repos/octo/proj/pulls/4/files"),
    ("pulls.list-review-comments", "GET", "/repos/octo/proj/pulls/4/comments"),
    ("pulls.get-review-comment", "GET", "/repos/octo/proj/pulls/comments/{root}"),
    ("issues.list-comments", "GET", "/repos/octo/proj/issues/4/comments"),
    ("issues.list-labels-on-issue", "GET", "/repos/octo/proj/issues/4/labels"),
    ("checks.list-for-ref", "GET", f"/repos/octo/proj/commits/{SHA}/check-runs?filter=all"),
    ("repos.get-combined-status-for-ref", "GET", f"/repos/octo/proj/commits/{SHA}/status"),
    ("actions.list-workflow-runs-for-repo", "GET", "/repos/octo/proj/actions/runs"),
    ("actions.list-workflow-runs", "GET", "/repos/octo/proj/actions/workflows/pull.yml/runs"),
    ("actions.get-workflow-run", "GET", "/repos/octo/proj/actions/runs/{run}"),
    ("actions.list-jobs-for-workflow-run", "GET", "/repos/octo/proj/actions/runs/{run}/jobs"),
    ("actions.get-job-for-workflow-run", "GET", "/repos/octo/proj/actions/jobs/{job}"),
    ("actions.list-repo-workflows", "GET", "/repos/octo/proj/actions/workflows"),
    ("actions.list-workflow-run-artifacts", "GET", "/repos/octo/proj/actions/runs/{run}/artifacts"),
    ("repos.get-status-checks-protection", "GET", "/repos/octo/proj/branches/main/protection/required_status_checks"),
    ("repos.get-branch-rules", "GET", "/repos/octo/proj/rules/branches/main"),
    ("error", "GET", "/repos/octo/missing"),
    ("issues.create-comment", "POST", "/repos/octo/proj/issues/4/comments"),
    ("issues.add-labels", "POST", "/repos/octo/proj/issues/4/labels"),
    ("actions.re-run-workflow-failed-jobs", "POST", "/repos/octo/proj/actions/runs/{run}/rerun-failed-jobs"),
]


@pytest.mark.parametrize(("endpoint", "method", "path"), CASES, ids=[c[0] for c in CASES])
def test_every_endpoint_matches_the_published_description(fake_github: FakeGitHub, world: dict[str, Any],
                                                          endpoint: str, method: str, path: str) -> None:
    """Each endpoint the project calls answers with the keys and types GitHub's description gives."""
    url = path.format(root=world["root"].id, run=world["run"].id, job=world["job"].id)
    payload = {"body": "x"} if "comments" in url else {"labels": ["a"]} if "labels" in url else None
    resp = _get(fake_github, url, method, json=payload)
    assert [] == check(endpoint, resp.json() if resp.content else None)


def test_root_review_comment_omits_in_reply_to_id(fake_github: FakeGitHub, world: dict[str, Any]) -> None:
    """A thread's root has no in_reply_to_id key at all; the reply carries the root's id."""
    rows = _get(fake_github, "/repos/octo/proj/pulls/4/comments").json()
    assert [False, world["root"].id] == ["in_reply_to_id" in rows[0], rows[1].get("in_reply_to_id")]


def test_schema_catches_null_in_reply_to_id() -> None:
    """The schema check refuses what the old fake sent: in_reply_to_id: null."""
    assert any("in_reply_to_id" in v for v in check("pulls.get-review-comment", {"in_reply_to_id": None}))


def test_check_suite_ids_differ_from_run_ids(fake_github: FakeGitHub, world: dict[str, Any]) -> None:
    """A job's check_suite.id is its run's check_suite_id, which is not the run id."""
    run = _get(fake_github, f"/repos/octo/proj/actions/runs/{world['run'].id}").json()
    checks = _get(fake_github, f"/repos/octo/proj/commits/{SHA}/check-runs").json()["check_runs"]
    assert ({run["check_suite_id"]}, True) == ({c["check_suite"]["id"] for c in checks},
                                               run["check_suite_id"] != run["id"])


def test_logs_redirect_to_another_host(fake_github: FakeGitHub, world: dict[str, Any]) -> None:
    """The job-logs endpoint answers 302 with a Location on the blob host, which serves the log."""
    resp = _get(fake_github, f"/repos/octo/proj/actions/jobs/{world['job'].id}/logs")
    loc = resp.headers["Location"]
    assert (302, True, 200) == (resp.status_code, loc.startswith(fake_github.blob_url),
                                requests.get(loc, timeout=5).status_code)


def test_more_than_100_runs_page_with_link(fake_github: FakeGitHub) -> None:
    """150 runs list as 100 + 50 over a Link rel=next, total_count 150."""
    repo = fake_github.repo("octo/many")
    wf = repo.add_workflow("w", ".github/workflows/w.yml")
    for _ in range(150):
        repo.add_run(wf, SHA, jobs=[("j", "success")])
    first = _get(fake_github, "/repos/octo/many/actions/runs?per_page=100")
    nxt = first.links["next"]["url"]
    second = requests.get(nxt, headers={"Authorization": f"token {fake_github.token}"}, timeout=5)
    assert (150, 100, 50, "next" in second.links) == (
        first.json()["total_count"], len(first.json()["workflow_runs"]),
        len(second.json()["workflow_runs"]), False)


def test_statuses_page_with_link(fake_github: FakeGitHub) -> None:
    """The combined status lists its statuses a page at a time (per_page, Link)."""
    repo = fake_github.repo("octo/st")
    for i in range(5):
        repo.add_status(SHA, f"ctx{i}", "success")
    resp = _get(fake_github, f"/repos/octo/st/commits/{SHA}/status?per_page=2")
    assert (5, 2, True) == (resp.json()["total_count"], len(resp.json()["statuses"]), "next" in resp.links)


LIMITS = [  # (how, status, remaining header, has retry-after)
    ("primary-403", 403, "0", False),
    ("primary-429", 429, "0", False),
    ("secondary-with-retry-after", 403, "5000", True),
    ("secondary-without-retry-after", 403, "5000", False),
]


@pytest.mark.parametrize(("how", "status", "remaining", "retry"), LIMITS, ids=[c[0] for c in LIMITS])
def test_rate_limits_as_documented(fake_github: FakeGitHub, world: dict[str, Any], how: str, status: int,
                                   remaining: str, retry: bool) -> None:
    """Primary: remaining 0 and a reset; secondary: budget left, retry-after only when named."""
    if how.startswith("primary"):
        fake_github.rate_remaining, fake_github.rate_limit_status = 0, status
    else:
        fake_github.secondary_limit(retry_after=30 if retry else None)
    resp = _get(fake_github, "/repos/octo/proj/pulls/4")
    got = (resp.status_code, resp.headers["X-RateLimit-Remaining"], "Retry-After" in resp.headers,
           int(resp.headers["X-RateLimit-Reset"]) > time.time(), "rate limit" in resp.json()["message"])
    assert (status, remaining, retry, True, True) == got


def test_rerun_refused_without_admin_rights(fake_github: FakeGitHub, world: dict[str, Any]) -> None:
    """A refused re-run answers 403 with GitHub's message, every time, and changes nothing."""
    fake_github.refuse(r"/rerun-failed-jobs$", message=ADMIN_RIGHTS)
    url = f"/repos/octo/proj/actions/runs/{world['run'].id}/rerun-failed-jobs"
    answers = [(_get(fake_github, url, "POST").status_code, _get(fake_github, url, "POST").json()["message"])]
    assert ([(403, ADMIN_RIGHTS)], 1) == (answers, world["run"].run_attempt)


def test_miles_gateway_dispatches_on_main(fake_github: FakeGitHub) -> None:
    """/rerun-test dispatches "Rerun Test" on main at main's tip, titled with the file and PR, with
    miles' job names, and the gateway replies on the PR."""
    repo = fake_github.repo("radixark/miles")
    repo.add_pull(9, "feat", SHA)
    repo.enable_rerun_gateway(MAIN, {"tests/fast/test_cpu.py": "cpu"})
    for f in ("tests/e2e/test_gpu.py", "tests/fast/test_cpu.py"):
        _get(fake_github, "/repos/radixark/miles/issues/9/comments", "POST", json={"body": f"/rerun-test {f}"})
    runs = _get(fake_github, "/repos/radixark/miles/actions/runs").json()["workflow_runs"]
    rerun = sorted((r for r in runs if r["name"] == "Rerun Test"), key=lambda r: r["id"])
    jobs = [sorted(j["name"] for j in _get(fake_github, f"/repos/radixark/miles/actions/runs/{r['id']}/jobs")
                   .json()["jobs"]) for r in rerun]
    replies = [c["body"].split("\n")[0] for c in repo.comments[9] if c["login"] == "miles-ci[bot]"]
    assert ([("/rerun-test tests/e2e/test_gpu.py (PR #9)", MAIN, "main", "workflow_dispatch"),
             ("/rerun-test tests/fast/test_cpu.py (PR #9)", MAIN, "main", "workflow_dispatch")],
            [["resolve-file-run", "run-cpu-file", "run-cuda-file / run"],
             ["resolve-file-run", "run-cpu-file / run-cpu", "run-cuda-file"]],
            ["Started `/rerun-test tests/e2e/test_gpu.py`.", "Started `/rerun-test tests/fast/test_cpu.py`."]) == (
        [(r["display_title"], r["head_sha"], r["head_branch"], r["event"]) for r in rerun], jobs, replies)
