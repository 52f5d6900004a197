"""Typed GitHub errors. Messages quote the bad value and end with how to mend it.

They never contain the token: `GitHubClient` builds every message itself from the
request path and status, not from request headers.
"""

from __future__ import annotations

from datetime import datetime, timezone

from flow.core.errors import OrchestratorError


class GitHubError(OrchestratorError):
    """Base of every error the GitHub adapter raises."""

    code = "github_error"


class MissingToken(GitHubError):
    code = "github_missing_token"

    def __init__(self, token_file: str | None = None) -> None:
        where = f", and the token file {token_file!r} holds none" if token_file else ""
        super().__init__(
            f"no GitHub token: neither GITHUB_TOKEN nor GH_TOKEN is set{where}",
            "export GITHUB_TOKEN=<a token with repo and actions scope> (or GH_TOKEN), or name a "
            "file that holds it with ORCHESTRATOR_GITHUB_TOKEN_FILE=/abs/path when the flow starts "
            "(a cron job's minimal environment then still finds it), then re-run",
        )


class BadSetting(GitHubError):
    """An environment setting of the adapter holds a value it cannot use."""

    code = "github_bad_setting"

    def __init__(self, name: str, value: str, expected: str) -> None:
        super().__init__(
            f"{name}={value!r} is not {expected}",
            f"unset {name} for the default, or export a valid value, then re-run",
            setting=name,
        )


class UnknownRepo(GitHubError):
    code = "github_unknown_repo"

    def __init__(self, repo: str, api_url: str) -> None:
        super().__init__(
            f"repository {repo!r} not found at {api_url}",
            "check the `origin` remote (git remote get-url origin) or pass --repo owner/name; "
            "a private repo also answers 'not found' when the token cannot read it",
            repo=repo,
        )


class NoPullRequest(GitHubError):
    code = "github_no_pull_request"

    def __init__(self, repo: str, head: str) -> None:
        super().__init__(
            f"no open pull request in {repo!r} has head {head!r}",
            "push the branch and open a (draft) PR first, or pass --pr-number N",
            repo=repo, head=head,
        )


class NoOriginRemote(GitHubError):
    code = "github_no_origin"

    def __init__(self, where: str, detail: str) -> None:
        super().__init__(
            f"cannot read a GitHub owner/repo from the `origin` remote of {where!r}: {detail}",
            "run inside a clone whose origin is https://HOST/OWNER/REPO(.git) or git@HOST:OWNER/REPO(.git), "
            "or pass --pr-number and --repo",
        )


class RateLimited(GitHubError):
    """GitHub refused for a rate limit; `reset_at` is the earliest time to ask again (UTC).

    `kind` "primary": the hourly budget is spent (`x-ratelimit-remaining: 0`), `reset_at` is
    GitHub's `x-ratelimit-reset`. "secondary": too much too fast; `retry_after` is GitHub's
    `retry-after` when it sent one, else None and `reset_at` is one minute on (GitHub's
    documented minimum; callers grow the wait when it happens again).
    """

    code = "github_rate_limited"

    def __init__(self, reset_at: datetime, path: str, kind: str = "primary",
                 retry_after: float | None = None) -> None:
        self.reset_at = reset_at
        self.kind = kind
        self.retry_after = retry_after
        when = "it resets at" if kind == "primary" else "ask again after"
        super().__init__(
            f"GitHub {kind} rate limit reached on {path!r}; {when} {reset_at.isoformat()}",
            "wait until then (schedule the next tick then); do not retry sooner",
            reset_at=reset_at.isoformat(), kind=kind,
        )


class GitHubUnavailable(GitHubError):
    """Server errors or timeouts persisted through every retry."""

    code = "github_unavailable"

    def __init__(self, path: str, attempts: int, last: str) -> None:
        super().__init__(
            f"GitHub did not answer {path!r} after {attempts} attempts (last: {last})",
            "check https://www.githubstatus.com and the API URL setting, then re-run the tick",
            attempts=attempts,
        )


class GitHubRequestFailed(GitHubError):
    """A 4xx other than rate limiting, or an unexpected answer. `reason` is GitHub's message."""

    code = "github_request_failed"

    def __init__(self, path: str, status: int, message: str, hint: str = "") -> None:
        self.status = status
        self.path = path
        self.reason = message
        super().__init__(
            f"GitHub answered {status} to {path!r}: {message}",
            hint or _HINTS.get(status, "check the token's scopes and the repository name"),
            status=status,
        )

    @property
    def kind(self) -> str:
        """auth (401), permission (403), not_found (404), invalid (422) or other."""
        return {401: "auth", 403: "permission", 404: "not_found", 422: "invalid"}.get(self.status, "other")


_HINTS = {
    401: "the token was refused (expired or revoked): export a valid GITHUB_TOKEN (or GH_TOKEN), or "
         "update the file named by ORCHESTRATOR_GITHUB_TOKEN_FILE",
    403: "the token lacks the permission for this: use a token with write access to the "
         "repository (a classic token with repo and workflow scopes, or a fine-grained token with "
         "Actions, Issues and Pull requests write), or ask a maintainer to do it",
    404: "check the owner/repo and the number, and that the token can read the repository "
         "(GitHub answers 404 to a token that may not see a private repository)",
    422: "GitHub refused the request as invalid (e.g. a run that cannot be re-run any more)",
}


class LinkExpired(GitHubError):
    """A signed download URL (job log, artifact) had expired before it was fetched."""

    code = "github_link_expired"

    def __init__(self, what: str) -> None:
        super().__init__(
            f"the signed download URL for {what} had expired",
            "fetch the download right after asking for its URL; re-run to get a fresh one",
        )


def utc_from_epoch(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=timezone.utc)
