"""The review queue's GitHub calls: read a PR's metadata, find or post the batch comment.

A thin adapter over ``flow.github.client`` (PyGithub objects through ``client.call``, which
retries and translates errors); it makes no decisions. PyGithub is imported only by
``flow.github.client``, when a step connects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from flow.github.errors import (
    BadSetting, GitHubError, GitHubRequestFailed, GitHubUnavailable, MissingToken, RateLimited,
)
from flow.github.merged import is_merged
from flow.workflows.review_queue.queue import FetchFailed, PRMeta, PRRef


class PostedComment(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: int
    url: str


def connect(settings: Mapping[str, str], access: Any = None) -> Any:
    """A GitHub client for the batch's recorded access (API URL, token file; see
    flow.github.access), the token from GITHUB_TOKEN / GH_TOKEN else the file; no request.

    Raises ``flow.github.errors.MissingToken`` without a token.
    """
    from flow.github.access import Access, connect_with

    return connect_with(access or Access(), settings)


def fetcher(client: Any) -> Any:
    """``fetch(ref) -> PRMeta`` for ``review_core.select``.

    Merged is ``flow.github.merged.is_merged`` (``merged_at``, or a merge bot's ``Merged``
    label on the closed PR), the rule ingest harvests by.

    A failure that concerns one PR (404: gone or unreadable; 422) raises ``FetchFailed``: that
    PR is skipped and stays pending. A failure that concerns every PR (rate limit, outage,
    refused token or permission) propagates as the flow.github error, so the step sleeps or
    asks a person and the whole queue stays as it is, instead of a batch of skips.
    """
    def fetch(ref: PRRef) -> PRMeta:
        try:
            pull = client.call(lambda: client.repo(ref.repo).get_pull(ref.number),
                               what=f"repos/{ref.repo}/pulls/{ref.number}")
            files = client.call(lambda: [f.filename for f in pull.get_files()],
                                what=f"repos/{ref.repo}/pulls/{ref.number}/files")
            user = pull.user
            labels = [lb.name for lb in pull.labels or []]  # in the PR's own answer: no request
            return PRMeta(repo=ref.repo, number=ref.number, url=pull.html_url or "",
                          title=pull.title or "", body=pull.body or "",
                          author=(user.login if user is not None else "") or "ghost",
                          state="closed" if pull.state == "closed" else "open",
                          merged=is_merged(pull.state, pull.merged_at, labels), files=files)
        except (RateLimited, GitHubUnavailable, MissingToken, BadSetting):
            raise
        except GitHubRequestFailed as exc:
            if exc.status in (404, 410, 422):
                raise FetchFailed(exc.message) from None
            raise
        except GitHubError as exc:  # UnknownRepo: that PR's repository is gone or hidden
            raise FetchFailed(exc.message) from None

    return fetch


def find_comment(client: Any, repo: str, number: int, marker: str) -> PostedComment | None:
    """The comment on issue ``number`` whose body carries ``marker``, or None."""
    from flow.github.reads import list_all

    found = [c for c in list_all(client, f"/repos/{repo}/issues/{number}/comments")
             if marker in (c.get("body") or "")]
    return PostedComment(id=found[0]["id"], url=found[0].get("html_url") or "") if found else None


def post_comment(client: Any, repo: str, number: int, body: str) -> PostedComment:
    """Post ``body`` on issue ``number``. Not retried on a timeout (it may have been posted)."""
    path = f"/repos/{repo}/issues/{number}/comments"
    _, c = client.call(lambda: client.requester.requestJsonAndCheck("POST", path, input={"body": body}),
                       what=path[1:], write=True)
    return PostedComment(id=c["id"], url=c.get("html_url") or "")
