"""One CI observation: read the PR's checks, fetch what classification needs, classify.

The IO composition the CI workflow's tick step calls; every decision is in
`flow.workflows.ci.classify`. Imports PyGithub (through flow.github), so it is not imported by
`flow.workflows.ci`'s __init__.

Cost of a tick, every request conditional (ETag; a 304 costs no rate limit):
1 (the PR) and nothing more when the PR is closed or merged, or when its head is still
`awaiting_head` (the commit the debugger pushed a fix from: decide waits on the PR alone).
Otherwise + ceil(check runs / 100) + 1 (statuses) + ceil(runs / 100), where the runs
listing costs 0 when every check-runs page and the statuses answered 304, something is
still pending and every unfinished run has a pending job (see
flow.github.reads.read_commit_checks): an unchanged pending PR with 300 check runs costs
1 + 3 + 1 = 5. Only when a check is red: the merge base (1), the merge base's checks (same
formula) and, once per failed job, its log (302 + download; trimmed excerpts of finished
jobs are cached, since a finished job's log never changes). The base branch's required
checks (protection and rules, flow.github.required: 2 requests) are read once per head
commit and kept in the flow (`known_required`); a tick whose decision acts (anything but
wait) reads them again first (`refresh_required`), so nothing ends or is debugged on a stale
reading.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from flow.github.actions import job_log
from flow.github.cache import ETagCache
from flow.github.client import GitHubClient
from flow.github.errors import GitHubRequestFailed, LinkExpired
from flow.github.models import CommitChecks, PullInfo, RequiredChecks
from flow.github.reads import get_pull, merge_base, read_commit_checks
from flow.github.required import read_required
from flow.workflows.ci.classify import (
    CheckVerdict, TickClassification, checks_needing_logs, classify_tick, failed_checks,
)
from flow.workflows.ci.logs import LogExcerpt, trim_log
from flow.workflows.ci.patterns import Patterns, load_patterns
from flow.workflows.ci.required import split


class Observation(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    pull: PullInfo
    head: CommitChecks
    merge_base_sha: str | None
    classification: TickClassification
    requests: int  # HTTP requests this observation made (304s included)
    checks_read: bool = True  # False: the tick stopped at the PR (closed, or awaiting a push)
    required: RequiredChecks | None = None  # None when the checks were not read
    optional_failing: list[CheckVerdict] = []  # red optional checks: reported, not acted on
    every_check: TickClassification | None = None  # before the split (for a re-read)
    required_reused: bool = False  # `required` is the flow's kept reading, not read now


def observe(client: GitHubClient, repo: str, number: int, cache_path: Path | None,
            patterns: Patterns | None = None, awaiting_head: str | None = None,
            babysit_optional: bool = False,
            known_required: RequiredChecks | None = None) -> Observation:
    """Read and classify PR `number`'s head commit. Raises flow.github errors (RateLimited, ...).

    A job log that cannot be fetched (expired link, 404) is left out: classify then
    treats that check as a regression, the conservative reading.

    `awaiting_head`: the head the debugger pushed a fix from (`CiData.awaiting.from_sha`).
    While the open PR's head is still that commit, decide waits for the push on the PR
    alone, so nothing else is read (as for a closed PR), and the classification is that of
    no checks: pending.

    The classification holds the required checks of the PR's base branch only
    (flow.workflows.ci.required.split); red optional checks are in `optional_failing`.
    """
    patterns = patterns or load_patterns()
    cache = ETagCache(cache_path)
    before = _count(client)
    pull = get_pull(client, repo, number, cache)
    if pull.state != "open" or pull.head_sha == awaiting_head:
        # decide answers on the PR alone (the flow ends, or waits for the debugger's push):
        # no checks, logs or merge base are read
        cache.save()
        empty = CommitChecks(sha=pull.head_sha)
        return Observation(pull=pull, head=empty, merge_base_sha=None,
                           classification=classify_tick(empty, base=None, logs={}, patterns=patterns),
                           requests=_count(client) - before, checks_read=False)
    head = read_commit_checks(client, repo, pull.head_sha, cache)
    base: CommitChecks | None = None
    base_sha: str | None = None
    logs: dict[int, LogExcerpt] = {}
    if failed_checks(head, patterns):
        base_sha = merge_base(client, repo, pull, cache)
        base = read_commit_checks(client, repo, base_sha, cache)
        for check in checks_needing_logs(head, patterns):
            key = f"log:{repo}:{check.id}"
            known = cache.recall(key)
            if known is not None:
                logs[check.id] = LogExcerpt.model_validate(known)  # type: ignore[index]
                continue
            try:
                excerpt = job_failure_lines(client, repo, check.id, patterns)  # type: ignore[arg-type]
            except (LinkExpired, GitHubRequestFailed):
                continue
            logs[check.id] = excerpt  # type: ignore[index]
            cache.remember(key, excerpt.model_dump())
    reuse = (known_required is not None and known_required.branch == pull.base_ref
             and known_required.sha == pull.head_sha)
    required = known_required if reuse else read_required(client, repo, pull.base_ref, cache,
                                                          pull.head_sha)
    cache.save()
    every = classify_tick(head, base=base, logs=logs, patterns=patterns)
    result, optional = split(every, required, babysit_optional)
    return Observation(pull=pull, head=head, merge_base_sha=base_sha, classification=result,
                       requests=_count(client) - before, required=required,
                       optional_failing=optional, every_check=every, required_reused=reuse)


def refresh_required(client: GitHubClient, repo: str, obs: Observation, cache_path: Path | None,
                     babysit_optional: bool = False) -> Observation:
    """`obs` with the required checks read now (when they were the flow's kept reading)."""
    if not obs.required_reused or obs.every_check is None:
        return obs
    cache = ETagCache(cache_path)
    before = _count(client)
    required = read_required(client, repo, obs.pull.base_ref, cache, obs.pull.head_sha)
    result, optional = split(obs.every_check, required, babysit_optional)
    return obs.model_copy(update={"classification": result, "required": required,
                                  "optional_failing": optional, "required_reused": False,
                                  "requests": obs.requests + _count(client) - before})


def _count(client: GitHubClient) -> int:
    return client.request_count


def job_failure_lines(client: GitHubClient, repo: str, job_id: int, patterns: Patterns | None = None) -> LogExcerpt:
    """The job's log trimmed to failing lines (``flow.workflows.ci.logs.trim_log``)."""
    patterns = patterns or load_patterns()
    return trim_log(job_log(client, repo, job_id, patterns.logs.max_bytes), patterns)
