"""The fake server speaks the REST shapes PyGithub's own objects read (so other workflows can use it)."""

from __future__ import annotations

import io
import zipfile

import pytest
import requests

from flow.github.actions import post_comment
from flow.github.client import GitHubClient, connect, ClientSettings
from flow.github.errors import GitHubUnavailable
from tests.fakegithub import FakeGitHub

SHA = "a" * 40


@pytest.fixture
def scenario(fake_github: FakeGitHub):  # noqa: ANN201
    repo = fake_github.repo("octo/proj")
    repo.add_pull(4, "feature", SHA, draft=True)
    wf = repo.add_workflow("pull", ".github/workflows/pull.yml")
    run = repo.add_run(wf, SHA, head_branch="feature", jobs=[(f"job {i}", "success") for i in range(5)])
    repo.jobs_of(run)[0].log = "hello log"
    run.add_artifact("Wheel-1", {"dist/x.whl": b"W"})
    return repo, wf, run


def test_pygithub_objects_read_the_fake(client: GitHubClient, scenario) -> None:  # noqa: ANN001
    """PyGithub's Repository, PullRequest, Commit check runs, Workflow runs, jobs and artifacts all parse."""
    repo, wf, run = scenario
    gh_repo = client.gh.get_repo("octo/proj")
    pr = gh_repo.get_pull(4)
    runs = list(gh_repo.get_workflow("pull.yml").get_runs(branch="feature", status="success"))
    got = (
        pr.head.sha, pr.draft, gh_repo.get_commit(SHA).get_check_runs().totalCount,
        [r.id for r in runs], runs[0].run_attempt, [j.name for j in runs[0].jobs()][:2],
        [a.name for a in runs[0].get_artifacts()],
    )
    assert (SHA, True, 5, [run.id], 1, ["job 0", "job 1"], ["Wheel-1"]) == got


def test_pygithub_follows_link_pagination(client: GitHubClient, fake_github: FakeGitHub, scenario) -> None:  # noqa: ANN001
    """With per_page=2 PyGithub walks three Link-header pages to list five jobs."""
    _, _, run = scenario
    gh = connect(fake_github.base_url, fake_github.token, settings=ClientSettings(per_page=2)).gh
    jobs = list(gh.get_repo("octo/proj").get_workflow_run(run.id).jobs())
    assert (5, 3) == (len(jobs), fake_github.count(r"/jobs$"))


def test_job_log_redirect_and_artifact_zip(client: GitHubClient, fake_github: FakeGitHub, scenario) -> None:  # noqa: ANN001
    """WorkflowJob.logs_url() gives the 302 target; the artifact zip URL redirects to a real zip."""
    repo, _, run = scenario
    job = client.gh.get_repo("octo/proj").get_workflow_run(run.id).jobs()[0]
    log = requests.get(job.logs_url(), timeout=5).text
    zipped = requests.get(f"{fake_github.base_url}/repos/octo/proj/actions/artifacts/{run.artifacts[0].id}/zip",
                          headers={"Authorization": f"token {fake_github.token}"}, timeout=5)
    names = zipfile.ZipFile(io.BytesIO(zipped.content)).namelist()
    assert ("hello log", ["dist/x.whl"]) == (log, names)


def test_rate_limit_headers_and_304_budget(fake_github: FakeGitHub, scenario) -> None:  # noqa: ANN001
    """Each 200 spends one unit shown in X-RateLimit-Remaining; a 304 answer spends none."""
    url = f"{fake_github.base_url}/repos/octo/proj/pulls/4"
    auth = {"Authorization": f"token {fake_github.token}"}
    first = requests.get(url, headers=auth, timeout=5)
    again = requests.get(url, headers={**auth, "If-None-Match": first.headers["ETag"]}, timeout=5)
    assert (200, 304, "4999", 4999) == (first.status_code, again.status_code,
                                         first.headers["X-RateLimit-Remaining"], fake_github.rate_remaining)


def test_write_that_times_out_is_not_repeated(fake_github: FakeGitHub, scenario) -> None:  # noqa: ANN001
    """A comment POST that times out is reported, not re-sent (it may have been posted)."""
    slow = fake_github.fault(r"/comments$", None, delay=1.5, method="POST")
    client = connect(settings=ClientSettings(timeout=1, backoff=0.0, seconds_between_writes=None), sleep=lambda s: None)
    with pytest.raises(GitHubUnavailable):
        post_comment(client, "octo/proj", 4, "hello")
    # the slow POST is still being served; it does land, which is why it is not re-sent
    fake_github.wait_landed(slow)
    assert (1, ["hello"]) == (fake_github.count(r"/comments$", "POST"),
                              [c["body"] for c in scenario[0].comments[4]])


def test_pull_request_fields_files_and_review_threads(client: GitHubClient, fake_github: FakeGitHub) -> None:
    """PyGithub reads a merged PR's author, body, labels and merged flag, walks its paginated
    files, and sees every reply of a thread point at the thread's root."""
    repo = fake_github.repo("octo/proj")
    p = repo.add_pull(7, "fix", SHA, head_repo="fork/proj", author="alice", body="Fixes #1",
                      labels=["Merged"], files=[f"test/t{i}.py" for i in range(3)])
    p.add_file("img.png", "added", additions=0, patch=None)
    p.merge()
    root = p.add_review_comment("why?", "bob", path="test/t0.py", line=4)
    reply = p.add_review_comment("because", "alice", reply_to=root.id)
    p.add_review_comment("and then?", "bob", reply_to=reply.id)
    gh = connect(fake_github.base_url, fake_github.token, settings=ClientSettings(per_page=2)).gh
    pr = gh.get_repo("octo/proj").get_pull(7)
    files = list(pr.get_files())
    threads = [(c.user.login, c.path, c.line, c.in_reply_to_id) for c in pr.get_review_comments()]
    got = (pr.user.login, pr.head.user.login, pr.body, [lb.name for lb in pr.labels], pr.state,
           pr.merged, pr.merged_at is not None, [(f.filename, f.status, f.changes) for f in files][-2:],
           files[-1].patch, files[0].patch is not None, threads)
    assert ("alice", "fork", "Fixes #1", ["Merged"], "closed", True, True,
            [("test/t2.py", "modified", 1), ("img.png", "added", 0)], None, True,
            [("bob", "test/t0.py", 4, None), ("alice", "test/t0.py", 4, root.id),
             ("bob", "test/t0.py", 4, root.id)]) == got
    assert 2 == fake_github.count(r"/pulls/7/files$")


def test_closed_pull_is_listed_unmerged(client: GitHubClient, fake_github: FakeGitHub) -> None:
    """A closed PR leaves the open listing and reads merged=False once completed."""
    repo = fake_github.repo("octo/proj")
    repo.add_pull(1, "a", SHA)
    repo.add_pull(2, "b", "c" * 40).close()
    gh_repo = client.gh.get_repo("octo/proj")
    listed = ([p.number for p in gh_repo.get_pulls(state="open")],
              [(p.number, p.merged) for p in gh_repo.get_pulls(state="closed")])
    assert ([1], [(2, False)]) == listed


def _json(fake: FakeGitHub, path: str) -> tuple[int, object]:
    resp = requests.get(fake.base_url + path, headers={"Authorization": f"token {fake.token}"}, timeout=5)
    return resp.status_code, resp.json()


def test_runs_and_comments_are_created_in_order(fake_github: FakeGitHub, scenario) -> None:  # noqa: ANN001
    """Each run and comment gets its own creation time, later than the one before (GitHub's
    format, whole seconds and Z), never one fixed time for all."""
    repo, wf, run = scenario
    comment = repo.add_comment(4, "/rerun-test test/x.py", "alice")
    later = repo.add_run(wf, SHA)
    _, first = _json(fake_github, f"/repos/octo/proj/actions/runs/{run.id}")
    _, second = _json(fake_github, f"/repos/octo/proj/actions/runs/{later.id}")
    stamps = [first["created_at"], comment["created_at"], second["created_at"]]  # type: ignore[index]
    assert (stamps, True) == (sorted(set(stamps)), all(s.endswith("Z") and len(s) == 20 for s in stamps))


def test_protection_and_rules_answer_as_github_does(fake_github: FakeGitHub, scenario) -> None:  # noqa: ANN001
    """No protection: 404 "Branch not protected"; protected: contexts and checks agree; the
    rules list holds a required_status_checks rule naming its contexts."""
    repo, _, _ = scenario
    bare = _json(fake_github, "/repos/octo/proj/branches/main/protection/required_status_checks")
    repo.protect("main", ["test"])
    repo.add_ruleset(["main"], ["lint"])
    _, prot = _json(fake_github, "/repos/octo/proj/branches/main/protection/required_status_checks")
    _, rules = _json(fake_github, "/repos/octo/proj/rules/branches/main")
    assert ((404, "Branch not protected"), ["test"], [{"context": "test", "app_id": None}],
            [("required_status_checks", [{"context": "lint"}])]) == (
        (bare[0], bare[1]["message"]), prot["contexts"], prot["checks"],  # type: ignore[index]
        [(r["type"], r["parameters"]["required_status_checks"]) for r in rules])  # type: ignore[index,union-attr]


def test_a_deleted_roots_reply_and_a_bot_merge(fake_github: FakeGitHub, scenario) -> None:  # noqa: ANN001
    """A reply outlives its deleted root, still pointing at it; a bot-merged PR is closed, has
    merged_at null and the Merged label."""
    repo, _, _ = scenario
    pull = repo.pulls[4]
    root = pull.add_review_comment("root", "bob")
    reply = pull.add_review_comment("reply", "alice", reply_to=root.id)
    pull.delete_review_comment(root.id)
    _, comments = _json(fake_github, "/repos/octo/proj/pulls/4/comments")
    repo.bot_merge(4)
    _, merged = _json(fake_github, "/repos/octo/proj/pulls/4")
    assert ([(reply.id, root.id)], "closed", None, ["Merged"]) == (
        [(c["id"], c["in_reply_to_id"]) for c in comments],  # type: ignore[index,union-attr]
        merged["state"], merged["merged_at"], [lb["name"] for lb in merged["labels"]])  # type: ignore[index]
