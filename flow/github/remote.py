"""owner/repo and the current branch from a local git checkout (no network, no PyGithub)."""

from __future__ import annotations

import re
from pathlib import Path

from flow.github.errors import NoOriginRemote

# https://host/owner/repo(.git), ssh://git@host(:port)/owner/repo(.git), git@host:owner/repo(.git)
_URL_FORMS = (
    re.compile(r"^(?:https?|ssh|git)://(?:[^@/]+@)?[^/]+/(?P<owner>[^/]+)/(?P<repo>[^/]+?)(?:\.git)?/?$"),
    re.compile(r"^[^@/:]+@[^:/]+:(?P<owner>[^/]+)/(?P<repo>[^/]+?)(?:\.git)?/?$"),
)


def parse_remote_url(url: str) -> str:
    """'owner/repo' from an https or ssh remote URL; ValueError quoting the URL otherwise."""
    for rx in _URL_FORMS:
        m = rx.match(url.strip())
        if m:
            return f"{m['owner']}/{m['repo']}"
    raise ValueError(f"not a GitHub remote URL: {url!r}")


def _git(repo_dir: Path, *args: str) -> str:
    from flow.core import proc

    out = proc.capture(["git", "-C", str(repo_dir), *args])
    if not out.ok:
        raise NoOriginRemote(str(repo_dir), out.problem or f"git {' '.join(args)} failed")
    return out.text.strip()


def origin_repo(repo_dir: Path) -> str:
    """'owner/repo' of the `origin` remote; NoOriginRemote with a hint otherwise."""
    url = _git(repo_dir, "remote", "get-url", "origin")
    try:
        return parse_remote_url(url)
    except ValueError as e:
        raise NoOriginRemote(str(repo_dir), str(e)) from None


def current_branch(repo_dir: Path) -> str:
    """The checked-out branch; NoOriginRemote when HEAD is detached (no branch to look up)."""
    branch = _git(repo_dir, "rev-parse", "--abbrev-ref", "HEAD")
    if branch == "HEAD":
        raise NoOriginRemote(str(repo_dir), "HEAD is detached, so there is no branch to find a PR for")
    return branch
