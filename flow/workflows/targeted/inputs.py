"""The inputs of ``ci-targeted``: which flow the CLI options mean, and its initial data.

``locate`` names the flow ``ci-targeted/<owner>/<repo>/pr-<N>``; ``start`` checks that the
base resolves in the checkout and that the PR exists before anything is written. Without
``--pr-number`` the PR of the checked-out branch is looked up on GitHub.

Where GitHub is (``ORCHESTRATOR_GITHUB_API``) and the token file
(``ORCHESTRATOR_GITHUB_TOKEN_FILE``) are read once here and kept in the flow
(``TargetedData.access``): a cron firing with a minimal environment reaches the same server
with the same token source. GitHub rate limited or down at the start is no error: the flow
starts and its first GitHub step sleeps until the recorded time. A refused token, a missing
repository or PR is an error before anything is written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flow.core.errors import WorkflowInputError
from flow.workflows.targeted.loop import TargetedData


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]", "-", text).strip(".") or "x"


def github(settings: Mapping[str, str]) -> Any:
    """The GitHub client the settings (env) point at, before a flow records its access."""
    from flow.github.access import access_from, connect_with

    return connect_with(access_from(settings), settings)


def client_of(data: TargetedData, settings: Mapping[str, str]) -> Any:
    """The client for the flow's recorded API URL; the token from the env or the token file."""
    from flow.github.access import connect_with

    return connect_with(data.access, settings)


def _repo_dir(opts: dict[str, Any]) -> Path:
    from flow.workflows.targeted.affected import repo_dir_of

    return repo_dir_of(opts.get("repo_dir"))


def _repo(opts: dict[str, Any], repo_dir: Path) -> str:
    from flow.github.remote import origin_repo

    repo = opts.get("repo") or origin_repo(repo_dir)
    if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", repo):
        raise WorkflowInputError(f"--repo {repo!r} is not owner/name", "pass --repo owner/name")
    return repo


def _number(opts: dict[str, Any], repo_dir: Path, repo: str, settings: Mapping[str, str]) -> int:
    if opts.get("pr_number") is not None:
        return int(opts["pr_number"])
    from flow.github.reads import locate_pr

    return locate_pr(github(settings), repo_dir, None, repo).number


def locate(opts: dict[str, Any], root: Path) -> str:
    """``ci-targeted/<owner>/<repo>/pr-<N>``; without --pr-number the current branch's PR is
    looked up on GitHub."""
    import os

    repo_dir = _repo_dir(opts)
    repo = _repo(opts, repo_dir)
    owner, name = repo.split("/")
    number = _number(opts, repo_dir, repo, os.environ)
    # Hand what was found to start(), which then asks GitHub nothing more to find the PR.
    opts["repo"], opts["pr_number"] = repo, number
    return f"ci-targeted/{_slug(owner)}/{_slug(name)}/pr-{number}"


def start(opts: dict[str, Any], root: Path, settings: Mapping[str, str]) -> TargetedData:
    """Check the inputs (base resolves in the checkout, the PR exists) and record them."""
    from flow.github.access import access_from, connect_with
    from flow.github.errors import GitHubUnavailable, RateLimited
    from flow.github.reads import get_pull
    from flow.github.trouble import Trouble, transient
    from flow.workflows.targeted.affected import check_bounds

    base = opts.get("base")
    if not base or base.startswith("-"):
        raise WorkflowInputError(f"--base {base!r} is missing or not a revision",
                                 "pass the revision the PR branches from, e.g. --base origin/main")
    repo_dir = _repo_dir(opts)
    from flow.core import proc

    probe = proc.capture(["git", "-C", str(repo_dir), "rev-parse", "--verify", "--quiet",
                          f"{base}^{{commit}}"])
    if not probe.ok:
        raise WorkflowInputError(f"--base {base!r} is not a commit in {str(repo_dir)!r}",
                                 "fetch it first (git fetch origin) or pass a SHA")
    depth = opts.get("depth") or 3
    hub_limit = opts.get("hub_limit") or 40
    check_bounds(depth, hub_limit)
    repo = _repo(opts, repo_dir)
    number = _number(opts, repo_dir, repo, settings)
    access = access_from(settings)
    data = TargetedData(repo=repo, number=number, repo_dir=str(repo_dir), base=base,
                        depth=depth, hub_limit=hub_limit, profile=opts.get("profile"),
                        approved=bool(opts.get("approved")), head_sha="", access=access)
    try:
        client = connect_with(access, settings)
        client.repo(repo)  # UnknownRepo names the repository before any PR lookup
        pull = get_pull(client, repo, number)
    except (RateLimited, GitHubUnavailable) as err:
        # Start anyway: dispatch (the first GitHub step) sleeps until GitHub may answer, and
        # records the PR head then.
        trouble = Trouble()
        transient(err, trouble, {})
        return data.model_copy(update={"github": trouble})
    return data.model_copy(update={"head_sha": pull.head_sha})
