"""Which checks a PR's base branch requires before it may merge: branch protection plus the
repository rules, read the way GitHub's REST description gives them.

- ``GET /repos/{o}/{r}/branches/{b}/protection/required_status_checks``: the protection's
  required checks (``contexts``, and ``checks[].context``). GitHub answers 404 with the
  message "Branch not protected" when the branch has no protection ("Required status checks
  not enabled" when its protection requires none); reading protection
  needs admin rights, so a token without them gets 403 or 404 "Not Found".
- ``GET /repos/{o}/{r}/rules/branches/{b}``: every active rule of every ruleset that applies
  to the branch (readable with read access); a rule of type ``required_status_checks``
  names its checks in ``parameters.required_status_checks[].context``.

`read_required` asks both (conditional requests: a 304 is free against the rate limit) and
answers a `RequiredChecks` (flow.github.models). When GitHub refuses either read (403/404 other than "Branch not
protected"), or neither names a check, the answer is the fallback "every check counts", and
its `note` says why, so the fallback is visible in what the flow prints. A check matches a
required context by its name (check runs) or its context (commit statuses); where a rule
ties a context to an app (protection's ``checks[].app_id``, a rule's ``integration_id``;
``-1`` and null mean any app), only a check run of that app counts (a same-named check of
another app is optional). Commit statuses name no app: their context alone decides.
"""

from __future__ import annotations

import urllib.parse

from flow.github.cache import ETagCache
from flow.github.client import GitHubClient
from flow.github.errors import GitHubRequestFailed
from flow.github.models import RequiredChecks
from flow.github.reads import get_cached, get_conditional

# 404s that say "nothing required here", not "you may not look": no protection at all, or a
# protection that requires no status check.
NOT_REQUIRED = ("branch not protected", "required status checks not enabled")


def _refused(err: GitHubRequestFailed) -> bool:
    return err.status in (403, 404)


def read_required(client: GitHubClient, repo: str, branch: str,
                  cache: ETagCache | None = None, sha: str = "") -> RequiredChecks:
    """The required checks of `branch` (protection and rules), or the visible fallback.

    `sha` is the head commit the reading is for (kept so a flow knows when to read again).
    Raises only what a read raises besides a 403/404 refusal (RateLimited, GitHubUnavailable,
    other GitHubRequestFailed), so a rate limit still makes the tick wait.
    """
    cache = cache or ETagCache(None)
    quoted = urllib.parse.quote(branch, safe="")
    contexts: set[str] = set()
    apps: dict[str, set[int]] = {}

    def tie(context: str, app: object) -> None:
        if isinstance(app, int) and not isinstance(app, bool) and app > 0:
            apps.setdefault(context, set()).add(app)

    refusals: list[str] = []
    requests = 0
    try:
        requests += 1
        body, _ = get_cached(client, cache,
                             f"/repos/{repo}/branches/{quoted}/protection/required_status_checks", {})
        contexts.update(str(c) for c in (body or {}).get("contexts") or [])
        for c in (body or {}).get("checks") or []:
            if isinstance(c, dict) and c.get("context"):
                contexts.add(str(c["context"]))
                tie(str(c["context"]), c.get("app_id"))
    except GitHubRequestFailed as err:
        if not _refused(err):
            raise
        if err.status != 404 or not any(m in err.reason.lower() for m in NOT_REQUIRED):
            refusals.append(f"branch protection: {err.status} {err.reason}")
    try:
        rules, n = _rules(client, cache, repo, quoted)
        requests += n
        for rule in rules:
            if isinstance(rule, dict) and rule.get("type") == "required_status_checks":
                params = rule.get("parameters") or {}
                for c in params.get("required_status_checks") or []:
                    if isinstance(c, dict) and c.get("context"):
                        contexts.add(str(c["context"]))
                        tie(str(c["context"]), c.get("integration_id"))
    except GitHubRequestFailed as err:
        if not _refused(err):
            raise
        requests += 1
        refusals.append(f"repository rules: {err.status} {err.reason}")
    cache.save()
    if refusals:
        return RequiredChecks(branch=branch, sha=sha, source="every_check", requests=requests, note=(
            f"GitHub would not show which checks {branch!r} requires ({'; '.join(refusals)}): "
            f"every check counts as required. A token that may read branch protection "
            f"(admin, or Administration: read) lets the flow tell required from optional checks"))
    if not contexts:
        return RequiredChecks(branch=branch, sha=sha, source="every_check", requests=requests, note=(
            f"neither branch protection nor the repository rules of {branch!r} require a "
            f"check: every check counts as required"))
    # A context required once by any app (protection's checks without an app) stays open to
    # any app only if no rule ties it; a tie anywhere restricts it to the apps named.
    return RequiredChecks(branch=branch, sha=sha, source="branch_rules", contexts=sorted(contexts),
                          apps={c: sorted(a) for c, a in sorted(apps.items())}, requests=requests)


def _rules(client: GitHubClient, cache: ETagCache, repo: str, quoted: str) -> tuple[list[object], int]:
    """Every rule for the branch: a bare list, paginated, each page a conditional GET."""
    items: list[object] = []
    requests = 0
    url: str | None = f"/repos/{repo}/rules/branches/{quoted}"
    params: dict[str, object] = {"per_page": client.settings.per_page}
    while url:
        body, url, _ = get_conditional(client, cache, url, params)
        requests += 1
        items.extend(body or [])
        params = {}
    return items, requests
