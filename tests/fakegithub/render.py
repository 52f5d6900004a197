"""JSON shapes of GitHub REST objects, as PyGithub 2.x reads them.

Each function takes the server's base URL so that the `url` fields PyGithub follows
point back at the fake server.
"""

from __future__ import annotations

import hashlib
import zlib
from typing import Any

from tests.fakegithub.state import (
    FIXED_TIME, Artifact, CheckRun, Pull, PullFile, Repo, ReviewComment, Ruleset, Status, Workflow,
    WorkflowRun,
)


def user(login: str) -> dict[str, Any]:
    """A simple-user (the keys the description requires)."""
    uid = abs(hash(login)) % 10_000
    api = f"https://api.github.example/users/{login}"
    return {"login": login, "id": uid, "node_id": f"U_{uid}", "type": "Bot" if login.endswith("[bot]") else "User",
            "site_admin": False, "url": api, "html_url": f"https://github.example/{login}",
            "avatar_url": f"https://avatars.example/u/{uid}", "gravatar_id": "",
            **{f"{k}_url": f"{api}/{k}" for k in ("followers", "following", "gists", "starred",
                                                  "subscriptions", "organizations", "repos",
                                                  "events", "received_events")}}


def repo(base: str, r: Repo) -> dict[str, Any]:
    owner, name = r.full_name.split("/")
    url = f"{base}/repos/{r.full_name}"
    return {
        "id": r.id, "name": name, "full_name": r.full_name, "owner": user(owner), "private": False,
        "url": url, "html_url": f"https://github.example/{r.full_name}", "default_branch": r.default_branch,
        "fork": r.parent is not None,
        **({"parent": repo(base, Repo(r.parent))} if r.parent else {}),
    }


def pull(base: str, r: Repo, p: Pull, labels: list[dict[str, Any]], *, full: bool = True) -> dict[str, Any]:
    """A PR; `full` (the single-PR GET) adds what GitHub leaves out of listings: merged and counts."""
    url = f"{base}/repos/{r.full_name}/pulls/{p.number}"
    head_owner = p.head_repo.split("/")[0]
    head_repo = Repo(p.head_repo) if p.head_repo != r.full_name else r
    out = {
        "id": p.number * 7, "node_id": p.node_id, "number": p.number, "state": p.state, "draft": p.draft,
        "title": p.title, "body": p.body, "url": url,
        "html_url": f"https://github.example/{r.full_name}/pull/{p.number}",
        "issue_url": f"{base}/repos/{r.full_name}/issues/{p.number}",
        "head": {"ref": p.head_ref, "sha": p.head_sha, "label": f"{head_owner}:{p.head_ref}",
                 "repo": repo(base, head_repo), "user": user(head_owner)},
        "base": {"ref": p.base_ref, "sha": p.base_sha, "label": f"{r.full_name.split('/')[0]}:{p.base_ref}",
                 "repo": repo(base, r), "user": user(r.full_name.split("/")[0])},
        "user": user(p.login), "labels": labels, "created_at": FIXED_TIME, "updated_at": FIXED_TIME,
        "closed_at": p.closed_at, "merged_at": p.merged_at,
        "_links": {"self": {"href": url}}, "assignee": None, "milestone": None, "locked": False,
        "author_association": "CONTRIBUTOR", "auto_merge": None, "merge_commit_sha": None,
        "comments_url": f"{base}/repos/{r.full_name}/issues/{p.number}/comments",
        "commits_url": f"{url}/commits", "review_comments_url": f"{url}/comments",
        "review_comment_url": f"{base}/repos/{r.full_name}/pulls/comments{{/number}}",
        "statuses_url": f"{base}/repos/{r.full_name}/statuses/{p.head_sha}",
        "diff_url": f"https://github.example/{r.full_name}/pull/{p.number}.diff",
        "patch_url": f"https://github.example/{r.full_name}/pull/{p.number}.patch",
    }
    if full:
        out.update({
            "mergeable": None, "mergeable_state": "unknown", "maintainer_can_modify": False,
            "merged": p.merged_at is not None, "merged_by": user("maintainer") if p.merged_at else None,
            "comments": len(r.comments.get(p.number, [])), "review_comments": len(p.review_comments),
            "commits": 1, "changed_files": len(p.files), "additions": sum(f.additions for f in p.files),
            "deletions": sum(f.deletions for f in p.files),
        })
    return out


def pull_file(base: str, r: Repo, p: Pull, f: PullFile) -> dict[str, Any]:
    sha = hashlib.sha1(f"{p.head_sha}:{f.filename}".encode()).hexdigest()
    return {
        "sha": sha, "filename": f.filename, "status": f.status, "additions": f.additions,
        "deletions": f.deletions, "changes": f.additions + f.deletions,
        "blob_url": f"https://github.example/{r.full_name}/blob/{p.head_sha}/{f.filename}",
        "raw_url": f"https://github.example/{r.full_name}/raw/{p.head_sha}/{f.filename}",
        "contents_url": f"{base}/repos/{r.full_name}/contents/{f.filename}?ref={p.head_sha}",
        **({"patch": f.patch} if f.patch is not None else {}),  # GitHub omits it for binary or huge diffs
    }


def review_comment(base: str, r: Repo, p: Pull, c: ReviewComment) -> dict[str, Any]:
    """A pull-request-review-comment. `in_reply_to_id` is not required by the description and
    GitHub sends it only on replies: a thread's root comment has no such key (not null)."""
    url = f"{base}/repos/{r.full_name}/pulls/comments/{c.id}"
    html = f"https://github.example/{r.full_name}/pull/{p.number}#discussion_r{c.id}"
    pr_url = f"{base}/repos/{r.full_name}/pulls/{p.number}"
    out = {
        "id": c.id, "node_id": f"PRRC_{c.id}", "body": c.body, "user": user(c.login), "path": c.path,
        "line": c.line, "original_line": c.line, "side": "RIGHT", "position": 1, "original_position": 1,
        "start_line": None, "original_start_line": None, "start_side": None, "subject_type": "line",
        "diff_hunk": "@@ -1 +1 @@", "commit_id": p.head_sha, "original_commit_id": p.head_sha,
        "pull_request_review_id": c.id + 1, "author_association": "MEMBER",
        "created_at": c.created_at, "updated_at": c.updated_at, "url": url, "html_url": html,
        "pull_request_url": pr_url,
        "_links": {"self": {"href": url}, "html": {"href": html}, "pull_request": {"href": pr_url}},
    }
    if c.in_reply_to_id is not None:
        out["in_reply_to_id"] = c.in_reply_to_id
    return out


def issue_comment(base: str, r: Repo, number: int, c: dict[str, Any]) -> dict[str, Any]:
    cid = c["id"]
    return {
        "id": cid, "node_id": f"IC_{cid}", "author_association": "NONE",
        "body": c["body"], "user": user(c["login"]), "created_at": c["created_at"],
        "updated_at": c["updated_at"], "url": f"{base}/repos/{r.full_name}/issues/comments/{cid}",
        "html_url": f"https://github.example/{r.full_name}/issues/{number}#c{cid}",
        "issue_url": f"{base}/repos/{r.full_name}/issues/{number}",
    }


def labels(base: str, r: Repo, names: list[str]) -> list[dict[str, Any]]:
    return [{"id": abs(hash(n)) % 10_000, "node_id": f"LA_{abs(hash(n)) % 10_000}", "name": n,
             "color": "ededed", "default": False, "description": None,
             "url": f"{base}/repos/{r.full_name}/labels/{n}"} for n in names]


def check_run(base: str, r: Repo, c: CheckRun) -> dict[str, Any]:
    url = f"{base}/repos/{r.full_name}/check-runs/{c.id}"
    details = (
        f"https://github.example/{r.full_name}/actions/runs/{c.run_id}/job/{c.id}" if c.run_id else None
    )
    return {
        "id": c.id, "node_id": f"CR_{c.id}", "head_sha": c.head_sha, "name": c.name, "status": c.status,
        "conclusion": c.conclusion, "pull_requests": [],
        "url": url, "html_url": details, "details_url": details, "external_id": str(c.id),
        "started_at": None if c.status == "queued" else FIXED_TIME,
        "completed_at": FIXED_TIME if c.status == "completed" else None,
        "app": {"slug": c.app, "name": c.app, "id": app_id(c.app)},
        # The check suite: for an Actions job its run's (an id of its own, never the run id).
        "check_suite": {"id": c.suite_id},
        "output": {"title": c.output_title, "summary": c.output_summary, "text": None, "annotations_count": 0},
    }


def job(base: str, r: Repo, c: CheckRun, run: WorkflowRun) -> dict[str, Any]:
    url = f"{base}/repos/{r.full_name}/actions/jobs/{c.id}"
    return {
        "id": c.id, "node_id": f"J_{c.id}", "runner_group_id": 1,
        "run_id": run.id, "run_attempt": c.run_attempt, "head_sha": c.head_sha, "name": c.name,
        "status": c.status, "conclusion": c.conclusion, "workflow_name": run.workflow.name,
        "head_branch": run.head_branch,
        "url": url, "html_url": f"https://github.example/{r.full_name}/actions/runs/{run.id}/job/{c.id}",
        "run_url": f"{base}/repos/{r.full_name}/actions/runs/{run.id}",
        "check_run_url": f"{base}/repos/{r.full_name}/check-runs/{c.id}",
        "started_at": None if c.status == "queued" else FIXED_TIME,
        "completed_at": FIXED_TIME if c.status == "completed" else None, "created_at": FIXED_TIME,
        "steps": [
            {"name": s.name, "number": s.number, "status": s.status if c.status == "completed" else c.status,
             "conclusion": s.conclusion if c.status == "completed" else None}
            for s in c.steps
        ],
        "labels": ["linux"], "runner_name": c.runner_name, "runner_id": 1, "runner_group_name": "default",
    }


def workflow(base: str, r: Repo, w: Workflow) -> dict[str, Any]:
    return {
        "id": w.id, "node_id": f"W_{w.id}", "name": w.name, "path": w.path, "state": w.state,
        "url": f"{base}/repos/{r.full_name}/actions/workflows/{w.id}",
        "html_url": f"https://github.example/{r.full_name}/blob/main/{w.path}",
        "badge_url": f"https://github.example/{r.full_name}/workflows/{w.name}/badge.svg",
        "created_at": FIXED_TIME, "updated_at": FIXED_TIME,
    }


def workflow_run(base: str, r: Repo, run: WorkflowRun, status: str, conclusion: str | None) -> dict[str, Any]:
    url = f"{base}/repos/{r.full_name}/actions/runs/{run.id}"
    return {
        "id": run.id, "node_id": f"WFR_{run.id}", "display_title": run.display_title or "commit",
        "check_suite_url": f"{base}/repos/{r.full_name}/check-suites/{run.check_suite_id}",
        "check_suite_node_id": f"CS_{run.check_suite_id}", "head_commit": None,
        "name": run.workflow.name, "workflow_id": run.workflow.id, "path": run.workflow.path,
        "head_sha": run.head_sha, "head_branch": run.head_branch, "event": run.event, "status": status,
        "conclusion": conclusion, "run_attempt": run.run_attempt, "run_number": run.run_number,
        "url": url, "html_url": f"https://github.example/{r.full_name}/actions/runs/{run.id}",
        "jobs_url": f"{url}/jobs", "logs_url": f"{url}/logs", "artifacts_url": f"{url}/artifacts",
        "cancel_url": f"{url}/cancel", "rerun_url": f"{url}/rerun",
        "workflow_url": f"{base}/repos/{r.full_name}/actions/workflows/{run.workflow.id}",
        # Like GitHub, runs from forks carry no pull_requests: consumers must match on head_sha.
        "pull_requests": [], "check_suite_id": run.check_suite_id, "created_at": run.created_at,
        "updated_at": run.created_at,
        "run_started_at": run.created_at, "repository": repo(base, r), "head_repository": repo(base, r),
    }


def artifact(base: str, r: Repo, a: Artifact, run: WorkflowRun) -> dict[str, Any]:
    url = f"{base}/repos/{r.full_name}/actions/artifacts/{a.id}"
    return {
        "id": a.id, "node_id": f"A_{a.id}", "name": a.name, "size_in_bytes": len(a.zip_bytes()), "url": url,
        "archive_download_url": f"{url}/zip", "expired": a.expired, "created_at": FIXED_TIME,
        "expires_at": FIXED_TIME, "updated_at": FIXED_TIME,
        "workflow_run": {"id": run.id, "head_sha": run.head_sha, "head_branch": run.head_branch},
    }


def status(base: str, r: Repo, s: Status) -> dict[str, Any]:
    return {
        "id": s.id, "node_id": f"SC_{s.id}", "avatar_url": None, "required": False,
        "state": s.state, "context": s.context, "description": s.description,
        "target_url": s.target_url, "url": f"{base}/repos/{r.full_name}/statuses/{s.sha}",
        "created_at": FIXED_TIME, "updated_at": FIXED_TIME, "creator": user("ci-bot"),
    }


def combined_state(statuses: list[Status]) -> str:
    """GitHub's rule: failure if any failed or errored, pending if any pending or none, else success."""
    states = {s.state for s in statuses}
    if states & {"failure", "error"}:
        return "failure"
    if not statuses or "pending" in states:
        return "pending"
    return "success"


def app_id(slug: str) -> int:
    """A GitHub App's id for `slug`, the same in every process (tests tie required checks to it)."""
    return zlib.crc32(slug.encode()) % 100_000 + 1


def required_status_checks(base: str, r: Repo, branch: str, contexts: list[str]) -> dict[str, Any]:
    """protected-branch-required-status-check: `contexts` (deprecated) and `checks` agree;
    `checks[].app_id` is null (any app) unless the protection ties the context to one."""
    url = f"{base}/repos/{r.full_name}/branches/{branch}/protection/required_status_checks"
    apps = r.protection_apps.get(branch, {})
    return {"url": url, "strict": True, "contexts": list(contexts), "contexts_url": url + "/contexts",
            "checks": [{"context": c, "app_id": apps.get(c)} for c in contexts]}


def required_checks_rule(r: Repo, rs: Ruleset) -> dict[str, Any]:
    """repository-rule-detailed of type required_status_checks, as a ruleset applies it."""
    return {"type": "required_status_checks", "ruleset_source_type": "Repository",
            "ruleset_source": r.full_name, "ruleset_id": rs.id,
            "parameters": {"strict_required_status_checks_policy": False,
                           "do_not_enforce_on_create": False,
                           "required_status_checks": [
                               {"context": c, **({"integration_id": rs.apps[c]} if c in rs.apps else {})}
                               for c in rs.contexts]}}
