"""The review queue's GitHub calls: read a PR's metadata, find or post the batch comment.

A thin adapter over ``flow.github.client`` (PyGithub objects through ``client.call``, which
retries and translates errors); it makes no decisions. PyGithub is imported only by
``flow.github.client``, when a step connects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from flow.github.errors import GitHubError, RateLimited
from flow.sidecars.review_core import FetchFailed, PRMeta, PRRef, StopFetching


class PostedComment(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: int
    url: str


def connect(settings: Mapping[str, str]) -> Any:
    """A GitHub client from GITHUB_TOKEN / GH_TOKEN and ORCHESTRATOR_GITHUB_API; no request.

    Raises ``flow.github.errors.MissingToken`` without a token.
    """
    from flow.github.client import connect as _connect

    return _connect(env=settings)


def fetcher(client: Any) -> Any:
    """``fetch(ref) -> PRMeta`` for ``review_core.select``.

    Raises ``StopFetching`` on a rate limit (asking again now would fail too) and
    ``FetchFailed`` on any other GitHub error (not found, server errors after retries).
    """
    def fetch(ref: PRRef) -> PRMeta:
        try:
            pull = client.call(lambda: client.repo(ref.repo).get_pull(ref.number),
                               what=f"repos/{ref.repo}/pulls/{ref.number}")
            files = client.call(lambda: [f.filename for f in pull.get_files()],
                                what=f"repos/{ref.repo}/pulls/{ref.number}/files")
            user = pull.user
            return PRMeta(repo=ref.repo, number=ref.number, url=pull.html_url or "",
                          title=pull.title or "", body=pull.body or "",
                          author=(user.login if user is not None else "") or "ghost",
                          state="closed" if pull.state == "closed" else "open",
                          merged=bool(pull.merged), files=files)
        except RateLimited as exc:
            raise StopFetching(f"rate limited until {exc.reset_at.isoformat()}") from None
        except GitHubError as exc:
            raise FetchFailed(exc.message) from None

    return fetch


def find_comment(client: Any, repo: str, number: int, marker: str) -> PostedComment | None:
    """The comment on issue ``number`` whose body carries ``marker``, or None."""
    issue = client.lazy_repo(repo).get_issue(number)
    found = client.call(lambda: [(c.id, c.html_url) for c in issue.get_comments()
                                 if marker in (c.body or "")],
                        what=f"repos/{repo}/issues/{number}/comments")
    return PostedComment(id=found[0][0], url=found[0][1]) if found else None


def post_comment(client: Any, repo: str, number: int, body: str) -> PostedComment:
    """Post ``body`` on issue ``number``. Not retried on a timeout (it may have been posted)."""
    issue = client.lazy_repo(repo).get_issue(number)
    c = client.call(lambda: issue.create_comment(body),
                    what=f"repos/{repo}/issues/{number}/comments", write=True)
    return PostedComment(id=c.id, url=c.html_url)
