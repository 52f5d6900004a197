"""Finding the PR from a local clone: origin URL forms, branch, fork parents."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from flow.github.client import GitHubClient
from flow.github.errors import NoOriginRemote, NoPullRequest
from flow.github.reads import locate_pr
from flow.github.remote import parse_remote_url
from tests.fakegithub import FakeGitHub


@pytest.mark.parametrize("url, expected", [
    ("https://github.com/octo/proj.git", "octo/proj"),
    ("https://github.com/octo/proj", "octo/proj"),
    ("https://user@ghe.example.com/octo/proj.git/", "octo/proj"),
    ("git@github.com:octo/proj.git", "octo/proj"),
    ("git@github.com:octo/proj", "octo/proj"),
    ("ssh://git@github.com:22/octo/proj.git", "octo/proj"),
    ("git://github.com/octo/proj.git", "octo/proj"),
])
def test_parse_remote_url(url: str, expected: str) -> None:
    """https, scp-like ssh and ssh:// remotes all give owner/repo."""
    assert expected == parse_remote_url(url)


@pytest.mark.parametrize("url", ["/srv/git/proj.git", "https://github.com/justone", ""])
def test_parse_remote_url_rejects(url: str) -> None:
    """A path or a URL without owner/repo is refused with the URL quoted."""
    with pytest.raises(ValueError) as err:
        parse_remote_url(url)
    assert repr(url) in str(err.value)


def git_clone_dir(tmp_path: Path, origin: str | None, branch: str = "feature") -> Path:
    """A real git repository on `branch` with `origin` set (no network needed)."""
    d = tmp_path / "clone"
    d.mkdir()
    run = lambda *a: subprocess.run(["git", "-C", str(d), *a], check=True, capture_output=True)  # noqa: E731
    run("init", "-q", "-b", "main")
    run("-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m", "init")
    run("checkout", "-q", "-b", branch)
    if origin:
        run("remote", "add", "origin", origin)
    return d


def test_pr_found_from_branch_and_origin(tmp_path: Path, client: GitHubClient, fake_github: FakeGitHub) -> None:
    """The current branch's open PR is found in the origin repository."""
    fake_github.repo("octo/proj").add_pull(12, "feature", "c" * 40)
    d = git_clone_dir(tmp_path, "git@github.com:octo/proj.git")
    assert (12, "c" * 40) == (lambda p: (p.number, p.head_sha))(locate_pr(client, d))


def test_pr_found_in_fork_parent(tmp_path: Path, client: GitHubClient, fake_github: FakeGitHub) -> None:
    """With origin a fork, the PR (head me:feature) is found in the fork's parent."""
    fake_github.repo("me/proj").parent = "octo/proj"
    fake_github.repo("octo/proj").add_pull(5, "feature", "d" * 40, head_repo="me/proj")
    d = git_clone_dir(tmp_path, "https://github.com/me/proj.git")
    pull = locate_pr(client, d)
    assert ("octo/proj", 5, "me/proj") == (pull.repo, pull.number, pull.head_repo)


def test_no_pr_for_branch(tmp_path: Path, client: GitHubClient, fake_github: FakeGitHub) -> None:
    """A branch without an open PR raises NoPullRequest naming owner:branch, with a hint."""
    fake_github.repo("octo/proj")
    d = git_clone_dir(tmp_path, "https://github.com/octo/proj", branch="lonely")
    with pytest.raises(NoPullRequest) as err:
        locate_pr(client, d)
    assert ("'octo:lonely'" in err.value.message, "--pr-number" in err.value.hint) == (True, True)


def test_no_origin_remote(tmp_path: Path, client: GitHubClient) -> None:
    """A clone without `origin` raises NoOriginRemote quoting the directory."""
    d = git_clone_dir(tmp_path, None)
    with pytest.raises(NoOriginRemote) as err:
        locate_pr(client, d)
    assert repr(str(d)) in err.value.message


def test_pr_by_number_missing(client: GitHubClient, fake_github: FakeGitHub, tmp_path: Path) -> None:
    """--pr-number of a PR that does not exist raises NoPullRequest, not a raw 404."""
    fake_github.repo("octo/proj")
    d = git_clone_dir(tmp_path, "https://github.com/octo/proj")
    with pytest.raises(NoPullRequest):
        locate_pr(client, d, pr_number=99)
