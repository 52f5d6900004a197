"""Route table of the fake GitHub server: (method, path regex) -> handler over the state."""

from __future__ import annotations

import re
import urllib.parse
from typing import TYPE_CHECKING, Any, Callable

from tests.fakegithub import render
from tests.fakegithub.server import Paged, Reply
from tests.fakegithub.state import FIXED_TIME, Pull, Repo

if TYPE_CHECKING:
    from tests.fakegithub.server import FakeGitHub

Handler = Callable[..., Reply]
_ROUTES: list[tuple[str, re.Pattern[str], Handler]] = []
_REPO = r"/repos/(?P<owner>[^/]+)/(?P<name>[^/]+)"
NOT_FOUND = Reply(404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"})


def _on(method: str, pattern: str) -> Callable[[Handler], Handler]:
    def deco(fn: Handler) -> Handler:
        _ROUTES.append((method, re.compile(f"^{pattern}$"), fn))
        return fn
    return deco


def route(fake: "FakeGitHub", method: str, path: str, query: dict[str, str], body: Any) -> Reply:
    """Dispatch one request; unknown paths and repos answer 404 like GitHub."""
    for verb, rx, fn in _ROUTES:
        m = rx.match(path)
        if m and verb == method:
            args = m.groupdict()
            if "owner" in args:
                repo = fake.repos.get(f"{args.pop('owner')}/{args.pop('name')}")
                if repo is None:
                    return NOT_FOUND
                args["repo"] = repo
            return fn(fake, query=query, body=body, **args)
    return NOT_FOUND


def _sha_of(repo: Repo, ref: str) -> str:
    for p in repo.pulls.values():
        if ref in (p.head_ref, p.head_sha):
            return p.head_sha
    return ref


@_on("GET", _REPO)
def get_repo(fake: "FakeGitHub", repo: Repo, **_: Any) -> Reply:
    return Reply(body=render.repo(fake.base_url, repo))


@_on("GET", _REPO + r"/pulls")
def list_pulls(fake: "FakeGitHub", repo: Repo, query: dict[str, str], **_: Any) -> Reply:
    state, head = query.get("state", "open"), query.get("head")
    pulls = [p for p in repo.pulls.values() if state in ("all", p.state)]
    if head:
        owner, _, ref = head.partition(":")
        pulls = [p for p in pulls if p.head_ref == ref and p.head_repo.split("/")[0] == owner]
    return Reply(body=Paged([_pull(fake, repo, p, full=False) for p in pulls]))


def _pull(fake: "FakeGitHub", repo: Repo, p: Pull, *, full: bool) -> dict[str, Any]:
    names = repo.labels.get(p.number, [])
    return render.pull(fake.base_url, repo, p, render.labels(fake.base_url, repo, names), full=full)


@_on("GET", _REPO + r"/pulls/(?P<number>\d+)")
def get_pull(fake: "FakeGitHub", repo: Repo, number: str, **_: Any) -> Reply:
    p = repo.pulls.get(int(number))
    return NOT_FOUND if p is None else Reply(body=_pull(fake, repo, p, full=True))


@_on("GET", _REPO + r"/pulls/(?P<number>\d+)/files")
def list_pull_files(fake: "FakeGitHub", repo: Repo, number: str, **_: Any) -> Reply:
    p = repo.pulls.get(int(number))
    if p is None:
        return NOT_FOUND
    return Reply(body=Paged([render.pull_file(fake.base_url, repo, p, f) for f in p.files]))


@_on("GET", _REPO + r"/pulls/(?P<number>\d+)/comments")
def list_review_comments(fake: "FakeGitHub", repo: Repo, number: str, query: dict[str, str],
                         **_: Any) -> Reply:
    """Inline review comments, oldest first; `since` keeps those updated at or after it."""
    p = repo.pulls.get(int(number))
    if p is None:
        return NOT_FOUND
    since = query.get("since", "")
    rows = sorted((c for c in p.review_comments if c.updated_at >= since), key=lambda c: (c.created_at, c.id))
    if query.get("direction") == "desc":
        rows.reverse()
    return Reply(body=Paged([render.review_comment(fake.base_url, repo, p, c) for c in rows]))


@_on("GET", _REPO + r"/pulls/comments/(?P<cid>\d+)")
def get_review_comment(fake: "FakeGitHub", repo: Repo, cid: str, **_: Any) -> Reply:
    for p in repo.pulls.values():
        for c in p.review_comments:
            if c.id == int(cid):
                return Reply(body=render.review_comment(fake.base_url, repo, p, c))
    return NOT_FOUND


@_on("GET", _REPO + r"/compare/(?P<base>[^.]+)\.\.\.(?P<head>.+)")
def compare(fake: "FakeGitHub", repo: Repo, base: str, head: str, **_: Any) -> Reply:
    head_sha = _sha_of(repo, head)
    pull = next((p for p in repo.pulls.values() if p.head_sha == head_sha), None)
    mb = pull.merge_base_sha if pull else base
    url = f"{fake.base_url}/repos/{repo.full_name}"

    def commit(sha: str) -> dict[str, Any]:
        return {"sha": sha, "url": f"{url}/commits/{sha}", "commit": {"message": "c"}}

    return Reply(body={
        "url": f"{url}/compare/{base}...{head}", "html_url": "https://github.example/compare",
        "status": "ahead", "ahead_by": 1, "behind_by": 0, "total_commits": 1,
        "base_commit": commit(_sha_of(repo, base)), "merge_base_commit": commit(mb), "commits": [commit(head_sha)],
        "files": [],
    })


@_on("GET", _REPO + r"/commits/(?P<ref>[^/]+)/check-runs")
def list_check_runs(fake: "FakeGitHub", repo: Repo, ref: str, query: dict[str, str], **_: Any) -> Reply:
    sha = _sha_of(repo, ref)
    runs = [c for c in repo.check_runs if c.head_sha == sha]
    if query.get("filter", "latest") == "latest":
        latest: dict[tuple[str, int | None], Any] = {}
        for c in runs:  # later records are later attempts
            latest[(c.name, c.run_id)] = c
        runs = list(latest.values())
    runs.sort(key=lambda c: -c.id)
    return Reply(body=Paged([render.check_run(fake.base_url, repo, c) for c in runs], "check_runs"))


@_on("GET", _REPO + r"/commits/(?P<ref>[^/]+)/status")
def combined_status(fake: "FakeGitHub", repo: Repo, ref: str, **_: Any) -> Reply:
    sha = _sha_of(repo, ref)
    latest: dict[str, Any] = {}
    for s in repo.statuses:
        if s.sha == sha:
            latest[s.context] = s
    statuses = list(latest.values())
    # The statuses list pages like any other (per_page, Link); state and total_count cover all.
    return Reply(body=Paged([render.status(fake.base_url, repo, s) for s in statuses], "statuses", {
        "state": render.combined_state(statuses), "sha": sha,
        "repository": render.repo(fake.base_url, repo),
        "commit_url": f"{fake.base_url}/repos/{repo.full_name}/commits/{sha}",
        "url": f"{fake.base_url}/repos/{repo.full_name}/commits/{sha}/status",
    }))


@_on("GET", _REPO + r"/commits/(?P<ref>[^/]+)")
def get_commit(fake: "FakeGitHub", repo: Repo, ref: str, **_: Any) -> Reply:
    sha = _sha_of(repo, ref)
    return Reply(body={"sha": sha, "url": f"{fake.base_url}/repos/{repo.full_name}/commits/{sha}",
                       "commit": {"message": "commit", "author": {"name": "a", "date": FIXED_TIME}},
                       "files": [], "parents": []})


@_on("GET", _REPO + r"/actions/workflows")
def list_workflows(fake: "FakeGitHub", repo: Repo, **_: Any) -> Reply:
    return Reply(body=Paged([render.workflow(fake.base_url, repo, w) for w in repo.workflows], "workflows"))


def _workflow(repo: Repo, key: str) -> Any:
    return next((w for w in repo.workflows if str(w.id) == key or w.path.rsplit("/", 1)[-1] == key), None)


@_on("GET", _REPO + r"/actions/workflows/(?P<key>[^/]+)")
def get_workflow(fake: "FakeGitHub", repo: Repo, key: str, **_: Any) -> Reply:
    w = _workflow(repo, key)
    return NOT_FOUND if w is None else Reply(body=render.workflow(fake.base_url, repo, w))


def _runs_reply(fake: "FakeGitHub", repo: Repo, runs: list[Any], query: dict[str, str]) -> Reply:
    out = []
    for run in sorted(runs, key=lambda r: -r.id):  # newest first, as GitHub lists them
        status, conclusion = repo.run_status(run)
        want = query.get("status")
        if want and want not in (status, conclusion):
            continue
        if query.get("branch") not in (None, run.head_branch) or query.get("head_sha") not in (None, run.head_sha):
            continue
        if query.get("event") not in (None, run.event):
            continue
        out.append(render.workflow_run(fake.base_url, repo, run, status, conclusion))
    return Reply(body=Paged(out, "workflow_runs"))


@_on("GET", _REPO + r"/actions/workflows/(?P<key>[^/]+)/runs")
def list_workflow_runs(fake: "FakeGitHub", repo: Repo, key: str, query: dict[str, str], **_: Any) -> Reply:
    w = _workflow(repo, key)
    if w is None:
        return NOT_FOUND
    return _runs_reply(fake, repo, [r for r in repo.runs if r.workflow is w], query)


@_on("GET", _REPO + r"/actions/runs")
def list_repo_runs(fake: "FakeGitHub", repo: Repo, query: dict[str, str], **_: Any) -> Reply:
    return _runs_reply(fake, repo, list(repo.runs), query)


@_on("GET", _REPO + r"/actions/runs/(?P<run_id>\d+)")
def get_run(fake: "FakeGitHub", repo: Repo, run_id: str, **_: Any) -> Reply:
    run = repo.find_run(int(run_id))
    if run is None:
        return NOT_FOUND
    return Reply(body=render.workflow_run(fake.base_url, repo, run, *repo.run_status(run)))


@_on("GET", _REPO + r"/actions/runs/(?P<run_id>\d+)/jobs")
def list_jobs(fake: "FakeGitHub", repo: Repo, run_id: str, query: dict[str, str], **_: Any) -> Reply:
    run = repo.find_run(int(run_id))
    if run is None:
        return NOT_FOUND
    jobs = [c for c in repo.check_runs if c.run_id == run.id] if query.get("filter") == "all" else repo.jobs_of(run)
    return Reply(body=Paged([render.job(fake.base_url, repo, c, run) for c in jobs], "jobs"))


@_on("GET", _REPO + r"/actions/jobs/(?P<job_id>\d+)")
def get_job(fake: "FakeGitHub", repo: Repo, job_id: str, **_: Any) -> Reply:
    job = repo.find_job(int(job_id))
    run = repo.find_run(job.run_id) if job and job.run_id else None
    return NOT_FOUND if job is None or run is None else Reply(body=render.job(fake.base_url, repo, job, run))


@_on("GET", _REPO + r"/actions/jobs/(?P<job_id>\d+)/logs")
def job_logs(fake: "FakeGitHub", repo: Repo, job_id: str, **_: Any) -> Reply:
    job = repo.find_job(int(job_id))
    if job is None or job.status != "completed":
        return NOT_FOUND
    return Reply(302, None, {"Location": fake.sign_blob(job.log.encode(), "text/plain")})


@_on("POST", _REPO + r"/actions/runs/(?P<run_id>\d+)/rerun-failed-jobs")
def rerun_failed(fake: "FakeGitHub", repo: Repo, run_id: str, **_: Any) -> Reply:
    run = repo.find_run(int(run_id))
    if run is None:
        return NOT_FOUND
    if repo.run_status(run)[0] != "completed":
        return Reply(403, {"message": "This workflow run is not completed",
                           "documentation_url": "https://docs.github.com/rest/actions/workflow-runs"})
    repo.rerun_failed(run)
    return Reply(201, {})  # the description's empty-object


@_on("GET", _REPO + r"/actions/runs/(?P<run_id>\d+)/artifacts")
def list_artifacts(fake: "FakeGitHub", repo: Repo, run_id: str, query: dict[str, str], **_: Any) -> Reply:
    run = repo.find_run(int(run_id))
    if run is None:
        return NOT_FOUND
    arts = [a for a in run.artifacts if query.get("name") in (None, a.name)]
    return Reply(body=Paged([render.artifact(fake.base_url, repo, a, run) for a in arts], "artifacts"))


@_on("GET", _REPO + r"/actions/artifacts/(?P<art_id>\d+)/zip")
def artifact_zip(fake: "FakeGitHub", repo: Repo, art_id: str, **_: Any) -> Reply:
    for run in repo.runs:
        for a in run.artifacts:
            if a.id == int(art_id):
                if a.expired:
                    return Reply(410, {"message": "Artifact has expired"})
                return Reply(302, None, {"Location": fake.sign_blob(a.zip_bytes(), "application/zip")})
    return NOT_FOUND


@_on("GET", _REPO + r"/issues/(?P<number>\d+)/comments")
def list_comments(fake: "FakeGitHub", repo: Repo, number: str, **_: Any) -> Reply:
    n = int(number)
    return Reply(body=Paged([render.issue_comment(fake.base_url, repo, n, c) for c in repo.comments.get(n, [])]))


@_on("POST", _REPO + r"/issues/(?P<number>\d+)/comments")
def create_comment(fake: "FakeGitHub", repo: Repo, number: str, body: Any, **_: Any) -> Reply:
    comment = repo.add_comment(int(number), body["body"])
    return Reply(201, render.issue_comment(fake.base_url, repo, int(number), comment))


@_on("GET", _REPO + r"/issues/(?P<number>\d+)/labels")
def list_labels(fake: "FakeGitHub", repo: Repo, number: str, **_: Any) -> Reply:
    return Reply(body=Paged(render.labels(fake.base_url, repo, repo.labels.get(int(number), []))))


@_on("POST", _REPO + r"/issues/(?P<number>\d+)/labels")
def add_labels(fake: "FakeGitHub", repo: Repo, number: str, body: Any, **_: Any) -> Reply:
    names = body["labels"] if isinstance(body, dict) else body
    have = repo.labels.setdefault(int(number), [])
    have.extend(n if isinstance(n, str) else n["name"] for n in names if n not in have)
    return Reply(200, render.labels(fake.base_url, repo, have))


@_on("GET", _REPO + r"/branches/(?P<branch>[^/]+)/protection/required_status_checks")
def required_status_checks(fake: "FakeGitHub", repo: Repo, branch: str, **_: Any) -> Reply:
    """Branch protection's required checks; 404 "Branch not protected" without protection."""
    name = urllib.parse.unquote(branch)
    if name not in repo.protection:
        return Reply(404, {"message": "Branch not protected",
                           "documentation_url": "https://docs.github.com/rest/branches/branch-protection"})
    return Reply(body=render.required_status_checks(fake.base_url, repo, name, repo.protection[name]))


@_on("GET", _REPO + r"/rules/branches/(?P<branch>[^/]+)")
def branch_rules(fake: "FakeGitHub", repo: Repo, branch: str, **_: Any) -> Reply:
    """Every active rule for the branch, a bare paginated list (here: required checks only)."""
    name = urllib.parse.unquote(branch)
    rules = [render.required_checks_rule(repo, rs) for rs in repo.rulesets if name in rs.branches]
    return Reply(body=Paged(rules))


@_on("POST", r"/graphql")
def graphql(fake: "FakeGitHub", body: Any, **_: Any) -> Reply:
    query = body.get("query", "")
    if "markPullRequestReadyForReview" not in query:
        return Reply(200, {"errors": [{"message": "unsupported query in fake server"}]})
    node = body["variables"]["input"]["pullRequestId"]
    for repo in fake.repos.values():
        for p in repo.pulls.values():
            if p.node_id == node:
                p.draft = False
                return Reply(200, {"data": {"markPullRequestReadyForReview": {
                    "clientMutationId": None, "pullRequest": {"isDraft": False}}}})
    return Reply(200, {"errors": [{"type": "NOT_FOUND", "message": f"Could not resolve to a node with the global id of '{node}'"}]})


@_on("GET", r"/rate_limit")
def rate_limit(fake: "FakeGitHub", **_: Any) -> Reply:
    core = {"limit": fake.rate_limit, "remaining": fake.rate_remaining, "reset": fake.rate_reset,
            "used": fake.rate_limit - fake.rate_remaining}
    return Reply(body={"resources": {"core": core}, "rate": core}, counts=False)
