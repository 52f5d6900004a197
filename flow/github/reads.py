"""Reads for a CI tick: the PR, and what CI reports for a commit.

Reads of a commit's checks use conditional requests: each page's ETag and body sit in
an `ETagCache` file the caller names, and a 304 (free against the rate limit) reuses
the cached body. Runs are matched by `head_sha`, never by the run's `pull_requests`,
which GitHub leaves empty for runs from forks.
"""

from __future__ import annotations

import re
import urllib.parse
from pathlib import Path
from typing import Any

from flow.github.cache import ETagCache
from flow.github.checks import check_sha
from flow.github.client import GitHubClient
from flow.github.errors import GitHubRequestFailed, NoPullRequest
from flow.github.models import CheckState, CommitChecks, PullInfo, WorkflowRunState
from flow.github.remote import current_branch, origin_repo

_NEXT = re.compile(r'<([^>]+)>;\s*rel="next"')
_RUN_IN_URL = re.compile(r"/actions/runs/(\d+)")


def _pull_info(repo: str, data: dict[str, Any]) -> PullInfo:
    head = data["head"]
    return PullInfo(
        repo=repo, number=data["number"], head_sha=head["sha"], head_ref=head["ref"],
        head_repo=(head.get("repo") or {}).get("full_name", repo), base_ref=data["base"]["ref"],
        draft=bool(data.get("draft")), node_id=data.get("node_id", ""), html_url=data.get("html_url", ""),
        state=data["state"], merged=data.get("merged_at") is not None,
    )


def find_pr_for_branch(client: GitHubClient, repo: str, branch: str, head_owner: str | None = None) -> PullInfo:
    """The open PR in `repo` whose head is `head_owner:branch` (owner defaults to repo's).

    If none is found and `repo` is a fork, its parent is searched too (the usual
    fork-and-PR setup). Raises UnknownRepo or NoPullRequest.
    """
    owner = head_owner or repo.split("/")[0]
    gh_repo = client.repo(repo)
    candidates = [gh_repo]
    for target in candidates:
        pulls = client.call(lambda: list(target.get_pulls(state="open", head=f"{owner}:{branch}")),
                            what=f"repos/{target.full_name}/pulls")
        if pulls:
            p = pulls[0]  # attributes from the list answer; raw_data would cost a second GET
            return PullInfo(
                repo=target.full_name, number=p.number, head_sha=p.head.sha, head_ref=p.head.ref,
                head_repo=p.head.repo.full_name if p.head.repo else target.full_name, base_ref=p.base.ref,
                draft=bool(p.draft), node_id=p.node_id, html_url=p.html_url, state=p.state,
                merged=p.merged_at is not None,  # in the list answer; `p.merged` would GET the PR
            )
        parent = client.call(lambda: target.parent, what=f"repos/{target.full_name}") if target is gh_repo else None
        if parent is not None:
            candidates.append(parent)
    raise NoPullRequest(repo, f"{owner}:{branch}")


def locate_pr(client: GitHubClient, repo_dir: Path, pr_number: int | None = None,
              repo: str | None = None) -> PullInfo:
    """The PR to babysit: `pr_number` in `repo` (default: origin's), else the current branch's."""
    origin = repo or origin_repo(repo_dir)
    if pr_number is not None:
        return get_pull(client, origin, pr_number)
    return find_pr_for_branch(client, origin, current_branch(repo_dir), origin_repo(repo_dir).split("/")[0])


def get_pull(client: GitHubClient, repo: str, number: int, cache: ETagCache | None = None) -> PullInfo:
    """The PR by number (conditional when `cache` is given). UnknownRepo / NoPullRequest on 404."""
    try:
        data, _ = get_cached(client, cache or ETagCache(None), f"/repos/{repo}/pulls/{number}", {})
    except GitHubRequestFailed as e:
        if e.status != 404:
            raise
        client.repo(repo)  # raises UnknownRepo when it is the repository that is missing
        raise NoPullRequest(repo, f"#{number}") from None
    return _pull_info(repo, data)


def merge_base(client: GitHubClient, repo: str, pull: PullInfo, cache: ETagCache | None = None) -> str:
    """The merge base of the PR head with its base branch (compare API)."""
    data, _ = get_cached(client, cache or ETagCache(None), f"/repos/{repo}/compare/{urllib.parse.quote(pull.base_ref, safe='/')}...{check_sha(pull.head_sha, 'compare')}", {})
    return data["merge_base_commit"]["sha"]


def _key(url: str, params: dict[str, Any]) -> str:
    return url + ("?" + urllib.parse.urlencode(sorted(params.items())) if params else "")


def get_conditional(client: GitHubClient, cache: ETagCache, url: str,
                    params: dict[str, Any]) -> tuple[Any, str | None, bool]:
    """One conditional GET: (body, next page URL, not_modified). A 304 answers from the cache
    and sets not_modified: the body is the one cached, unchanged since it was read."""
    key = _key(url, params)
    entry = cache.get(key)
    status, headers, data = client.get_json(url, params, entry["etag"] if entry else None)
    if status == 304 and entry is not None:
        return entry["body"], entry["next"], True
    m = _NEXT.search(headers.get("link", ""))
    nxt = m.group(1) if m else None
    cache.put(key, headers.get("etag"), data, nxt)
    return data, nxt, False


def get_cached(client: GitHubClient, cache: ETagCache, url: str, params: dict[str, Any]) -> tuple[Any, str | None]:
    """One conditional GET: (body, next page URL). A 304 answers from the cache."""
    body, nxt, _ = get_conditional(client, cache, url, params)
    return body, nxt


def read_all(client: GitHubClient, cache: ETagCache, url: str, params: dict[str, Any],
             key: str) -> tuple[list[Any], int, bool]:
    """Every item of a paginated list, following Link rel="next":
    (items, requests made, whether every page answered 304)."""
    items: list[Any] = []
    requests = 0
    unchanged = True
    next_url: str | None = url
    while next_url:
        body, nxt, not_modified = get_conditional(client, cache, next_url, params)
        requests += 1
        unchanged = unchanged and not_modified
        items.extend(body[key])
        next_url, params = nxt, {}
    return items, requests, unchanged


def get_all(client: GitHubClient, cache: ETagCache, url: str, params: dict[str, Any], key: str) -> tuple[list[Any], int]:
    """Every item of a paginated list, following Link rel="next": (items, requests made)."""
    items, requests, _ = read_all(client, cache, url, params, key)
    return items, requests


def cached_all(cache: ETagCache, url: str, params: dict[str, Any], key: str) -> list[Any] | None:
    """Every item of a paginated list as last read, from the cache alone (no request);
    None when any page of it is not cached."""
    items: list[Any] = []
    next_url: str | None = url
    while next_url:
        entry = cache.get(_key(next_url, params))
        if entry is None:
            return None
        items.extend(entry["body"][key])
        next_url, params = entry["next"], {}
    return items


def _runs_request(repo: str, sha: str, per_page: int) -> tuple[str, dict[str, Any]]:
    return f"/repos/{repo}/actions/runs", {"head_sha": sha, "per_page": per_page}


def _run_of(check: dict[str, Any], by_suite: dict[Any, dict[str, Any]],
            by_id: dict[Any, dict[str, Any]]) -> dict[str, Any] | None:
    """The workflow run a check run belongs to (by check suite, else by the run id in its URL)."""
    run = by_suite.get((check.get("check_suite") or {}).get("id"))
    if run is None:
        m = _RUN_IN_URL.search(check.get("details_url") or "")
        run = by_id.get(int(m.group(1))) if m else None
    return run


def _index(raw_runs: list[dict[str, Any]]) -> tuple[dict[Any, dict[str, Any]], dict[Any, dict[str, Any]]]:
    by_suite = {r["check_suite_id"]: r for r in raw_runs if r.get("check_suite_id") is not None}
    return by_suite, {r["id"]: r for r in raw_runs}


def cached_runs_still_hold(raw_checks: list[dict[str, Any]], combined: dict[str, Any],
                           cached_runs: list[dict[str, Any]]) -> bool:
    """Whether a tick whose check runs and statuses all answered 304 may reuse the cached
    workflow-runs listing instead of asking for it (conditions (c) and (d) of
    `read_commit_checks`; the caller checks (a) and (b))."""
    pending = [c for c in raw_checks if c.get("status") != "completed"]
    if not pending and not any(st.get("state") == "pending" for st in combined.get("statuses", [])):
        return False  # (c) nothing pending: this tick may end the watch, read the runs fresh
    by_suite, by_id = _index(cached_runs)
    running = {run["id"] for c in pending if (run := _run_of(c, by_suite, by_id)) is not None}
    # (d) a run not completed with no pending job could complete (or is still jobless).
    return all(r["id"] in running for r in cached_runs if r.get("status") != "completed")


def read_commit_checks(client: GitHubClient, repo: str, sha: str,
                       cache: ETagCache | Path | None = None) -> CommitChecks:
    """Check runs (all attempts), commit statuses and workflow runs of `sha`, paginated.

    The latest attempt of each check goes to `checks`, earlier ones to `history`;
    workflow runs that have no check runs yet (queued, awaiting approval) appear in
    `checks` as kind="workflow_run" so they count as pending, not as green.

    The workflow-runs request is skipped, and its cached answer (every page) reused, only
    when (a) every check-runs page and the combined status answered 304 (nothing changed
    since the cached reading), (b) every page of the runs listing is cached, (c) at least one
    check run or status is still pending, and (d) every run of the cached listing that is not
    completed has a pending check run in this reading.

    Why that is safe: a workflow run changes without its check runs changing only when it
    is new (no jobs yet), re-run (attempt + 1, jobs not queued yet), approved (from
    action_required to queued: pending either way), or completes with no pending job. (d) rules out the last: a run with a pending job cannot complete, and that
    job's completion changes the check runs, which breaks (a); a not-completed run with no
    pending job (jobless: queued, awaiting approval) fails (d). A new or re-run run only adds
    something pending, and by (c) something is pending already, so `flow.workflows.ci.decide` still
    ends at "pending -> wait" at the latest; the rules before it (regression, re-run of a
    completed run's infra/flaky jobs) see the same check runs the cached listing was read
    with. So this tick cannot end the watch (all_green, needs_attention) on a stale listing:
    a tick that could reads the runs fresh. That covers the flow's own re-runs too: the run
    re-run is in `CiData.reruns`, so decide does not pick it again, and something is pending.
    A run someone else re-ran moments ago still looks completed, so decide may pick it for
    the flow's one re-run; the re-run step then sees its attempt moved on and sends nothing.
    """
    cache = cache if isinstance(cache, ETagCache) else ETagCache(cache)
    sha = check_sha(sha, f"repos/{repo}/commits")
    per_page = client.settings.per_page
    raw_checks, n1, checks_same = read_all(client, cache, f"/repos/{repo}/commits/{sha}/check-runs",
                                           {"filter": "all", "per_page": per_page}, "check_runs")
    # The combined status lists its statuses a page at a time too (a commit can carry hundreds).
    statuses, n2, status_same = read_all(client, cache, f"/repos/{repo}/commits/{sha}/status",
                                         {"per_page": per_page}, "statuses")
    combined = {"statuses": statuses}
    runs_url, runs_params = _runs_request(repo, sha, per_page)
    cached = cached_all(cache, runs_url, runs_params, "workflow_runs") if checks_same and status_same else None
    if cached is not None and cached_runs_still_hold(raw_checks, combined, cached):
        raw_runs, n3 = cached, 0
    else:
        raw_runs, n3, _ = read_all(client, cache, runs_url, runs_params, "workflow_runs")
    cache.save()
    runs = [WorkflowRunState(
        id=r["id"], name=r.get("name") or "", path=r.get("path") or "", head_sha=r["head_sha"], status=r["status"],
        conclusion=r.get("conclusion"), run_attempt=r.get("run_attempt") or 1, event=r.get("event") or "",
    ) for r in raw_runs if r["head_sha"] == sha]
    by_suite, by_id = _index(raw_runs)

    states: list[CheckState] = []
    for c in raw_checks:
        run = _run_of(c, by_suite, by_id)
        out = c.get("output") or {}
        states.append(CheckState(
            kind="check_run", name=c["name"], status=c["status"], conclusion=c.get("conclusion"), id=c["id"],
            run_id=run["id"] if run else None, workflow=run.get("name") if run else None,
            app=(c.get("app") or {}).get("slug"), app_id=_int((c.get("app") or {}).get("id")),
            details_url=c.get("details_url"),
            summary=" ".join(x for x in (out.get("title"), out.get("summary")) if x),
        ))
    latest: dict[str, CheckState] = {}
    for s in sorted(states, key=lambda s: s.id or 0):
        latest[s.key] = s
    history = [s for s in states if latest[s.key] is not s]
    attempts = {r.id: r.run_attempt for r in runs}
    checks = [s.model_copy(update={"run_attempt": attempts.get(s.run_id or -1)}) for s in latest.values()]
    with_checks = {s.run_id for s in states}
    checks += [CheckState(kind="workflow_run", name=r.name, status=r.status, conclusion=r.conclusion, run_id=r.id,
                          run_attempt=r.run_attempt, workflow=r.name)
               for r in runs if r.id not in with_checks]
    for st in combined.get("statuses", []):
        pending = st["state"] == "pending"
        checks.append(CheckState(
            kind="status", name=st["context"], status="in_progress" if pending else "completed",
            conclusion=None if pending else st["state"], details_url=st.get("target_url"),
            summary=st.get("description") or "",
        ))
    return CommitChecks(sha=sha, checks=checks, history=history, runs=runs, requests=n1 + n2 + n3)


def list_all(client: GitHubClient, path: str, params: dict[str, Any] | None = None,
             limit: int | None = None) -> list[Any]:
    """Every item of a bare-list endpoint (comments, labels, pulls), following Link rel=next,
    each page through the client's wrapper; stops after `limit` items. Raw JSON: nothing is
    completed by a later, unwrapped request."""
    items: list[Any] = []
    next_url: str | None = path
    query: dict[str, Any] = {"per_page": client.settings.per_page, **(params or {})}
    while next_url and (limit is None or len(items) < limit):
        _, headers, body = client.get_json(next_url, query)
        items.extend(body or [])
        m = _NEXT.search(headers.get("link", "") or headers.get("Link", ""))
        next_url, query = (m.group(1) if m else None), {}
    return items[:limit] if limit is not None else items


def run_jobs(client: GitHubClient, repo: str, run_id: int, attempt: int | None = None) -> list[dict[str, Any]]:
    """Every job of a workflow run (its latest attempt, or `attempt`), all pages (a matrix run
    can have hundreds of jobs; one page holds at most 100)."""
    url = f"/repos/{repo}/actions/runs/{run_id}" + (f"/attempts/{attempt}/jobs" if attempt else "/jobs")
    jobs, _ = get_all(client, ETagCache(None), url, {"per_page": client.settings.per_page}, "jobs")
    return jobs


def read_tick(client: GitHubClient, repo: str, number: int, cache_path: Path | None = None) -> tuple[PullInfo, CommitChecks]:
    """One tick's reads: the PR (conditional) and its head commit's checks."""
    cache = ETagCache(cache_path)
    pull = get_pull(client, repo, number, cache)
    checks = read_commit_checks(client, repo, pull.head_sha, cache)
    return pull, checks.model_copy(update={"requests": checks.requests + 1})


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
