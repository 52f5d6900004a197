"""connect(), retries, rate limits and typed errors, against the fake server over HTTP."""

from __future__ import annotations

import pytest

from flow.github.client import DEFAULT_API, ClientSettings, GitHubClient, connect, rate_limit_of
from flow.github.errors import (
    BadSetting, GitHubRequestFailed, GitHubUnavailable, MissingToken, RateLimited, UnknownRepo,
)
from flow.github.reads import get_pull
from tests.fakegithub import FakeGitHub
from tests.fakegithub.server import ADMIN_RIGHTS, SECONDARY_WORDINGS


@pytest.mark.parametrize("env, expected", [
    ({"GITHUB_TOKEN": "t1"}, "t1"),
    ({"GH_TOKEN": "t2"}, "t2"),
    ({"GITHUB_TOKEN": "t1", "GH_TOKEN": "t2"}, "t1"),
])
def test_token_read_from_environment(env: dict[str, str], expected: str) -> None:
    """GITHUB_TOKEN wins over GH_TOKEN; either one is enough."""
    client = connect(env=env)
    assert expected == client.gh.requester.auth.token


def test_missing_token_is_a_typed_error_with_a_fix() -> None:
    """No token anywhere raises MissingToken whose hint says what to export."""
    with pytest.raises(MissingToken) as err:
        connect(env={})
    assert "GITHUB_TOKEN" in err.value.hint


@pytest.mark.parametrize("arg, env, expected", [
    (None, {}, DEFAULT_API),
    (None, {"ORCHESTRATOR_GITHUB_API": "https://ghe.example/api/v3/"}, "https://ghe.example/api/v3"),
    ("http://127.0.0.1:9", {"ORCHESTRATOR_GITHUB_API": "https://ghe.example/api/v3"}, "http://127.0.0.1:9"),
])
def test_api_url_setting(arg: str | None, env: dict[str, str], expected: str) -> None:
    """The API base URL comes from the argument, then ORCHESTRATOR_GITHUB_API, then api.github.com."""
    assert expected == connect(arg, "tok", env=env).api_url


@pytest.mark.parametrize("value, expected", [("", 1.0), ("0.01", 0.01), (" 2 ", 2.0), ("0", 0.0)])
def test_backoff_setting(value: str, expected: float) -> None:
    """ORCHESTRATOR_GITHUB_BACKOFF sets the first retry wait; empty means the default."""
    assert expected == connect("http://127.0.0.1:9", "tok", env={"ORCHESTRATOR_GITHUB_BACKOFF": value}).settings.backoff


@pytest.mark.parametrize("value", ["fast", "-1", "nan", "inf"])
def test_bad_backoff_setting_is_a_typed_error_with_a_fix(value: str) -> None:
    """A backoff that is not a finite number of seconds >= 0 raises BadSetting quoting it, not ValueError."""
    with pytest.raises(BadSetting) as err:
        connect("http://127.0.0.1:9", "tok", env={"ORCHESTRATOR_GITHUB_BACKOFF": value})
    assert (f"ORCHESTRATOR_GITHUB_BACKOFF={value!r}", "unset ORCHESTRATOR_GITHUB_BACKOFF") == (
        err.value.message.split(" is ")[0], err.value.hint.split(" for ")[0])


def test_unknown_repo(client: GitHubClient) -> None:
    """A repository the server does not know raises UnknownRepo naming it."""
    with pytest.raises(UnknownRepo) as err:
        client.repo("nobody/nothing")
    assert "'nobody/nothing'" in err.value.message


def test_bad_token_is_refused_without_echoing_it(fake_github: FakeGitHub) -> None:
    """A refused token gives a 401 error whose text never contains the token."""
    client = connect(fake_github.base_url, "s3cret-token-value", env={})
    fake_github.repo("octo/proj")
    with pytest.raises(GitHubRequestFailed) as err:
        client.repo("octo/proj")
    text = f"{err.value.message} {err.value.hint} {err.value.to_json()}"
    assert (401, False) == (err.value.status, "s3cret-token-value" in text)


@pytest.mark.parametrize("status", [403, 429])
def test_rate_limit_is_typed_with_reset_time(client: GitHubClient, fake_github: FakeGitHub, status: int) -> None:
    """A spent budget (403 primary or 429 secondary) raises RateLimited at once, without retrying."""
    fake_github.repo("octo/proj").add_pull(1, "f", "a" * 40)
    fake_github.rate_remaining = 0
    fake_github.rate_limit_status = status
    with pytest.raises(RateLimited) as err:
        get_pull(client, "octo/proj", 1)
    assert (1, abs(err.value.reset_at.timestamp() - fake_github.rate_reset) < 5) == (fake_github.count("pulls"), True)


def test_server_errors_are_retried_with_backoff(client: GitHubClient, fake_github: FakeGitHub, sleeps: list[float]) -> None:
    """Two 502s then a good answer: the read succeeds after waits of 0.5 s and 1 s."""
    fake_github.repo("octo/proj").add_pull(1, "f", "a" * 40)
    fake_github.fault(r"/pulls/1$", 502, times=2)
    assert ("a" * 40, [0.5, 1.0]) == (get_pull(client, "octo/proj", 1).head_sha, sleeps)


def test_persistent_server_errors_give_up(client: GitHubClient, fake_github: FakeGitHub) -> None:
    """Five 503s exhaust the three attempts and raise GitHubUnavailable."""
    fake_github.repo("octo/proj").add_pull(1, "f", "a" * 40)
    fake_github.fault(r"/pulls/1$", 503, times=5)
    with pytest.raises(GitHubUnavailable) as err:
        get_pull(client, "octo/proj", 1)
    assert (3, 3) == (err.value.details["attempts"], fake_github.count("/pulls/1$"))


def test_timeouts_are_retried(fake_github: FakeGitHub) -> None:
    """A read that times out once is retried and then succeeds."""
    fake_github.repo("octo/proj").add_pull(1, "f", "a" * 40)
    fake_github.fault(r"/pulls/1$", None, delay=1.6)
    client = connect(settings=ClientSettings(timeout=1, backoff=0.0, seconds_between_writes=None), sleep=lambda s: None)
    assert "a" * 40 == get_pull(client, "octo/proj", 1).head_sha


def test_tick_on_unknown_repo_names_the_repo(client: GitHubClient, fake_github: FakeGitHub) -> None:
    """A PR read in a repository that does not exist says the repo is unknown, not that the PR is."""
    from flow.github.reads import read_tick
    with pytest.raises(UnknownRepo):
        read_tick(client, "octo/missing", 1)


@pytest.mark.parametrize(("message", "kind"), [
    (SECONDARY_WORDINGS["current"], "secondary"), (SECONDARY_WORDINGS["abuse"], "secondary"),
    (SECONDARY_WORDINGS["content"], "secondary"),
    ("Resource not accessible by personal access token", None), (ADMIN_RIGHTS, None)])
def test_secondary_wordings_are_limits_and_refusals_are_not(message: str, kind: str | None) -> None:
    """Every wording PyGithub reads as a secondary limit waits a minute; a permission 403 is no limit."""
    got = rate_limit_of(403, {"X-RateLimit-Remaining": "4999"}, {"message": message}, now=1000.0)
    assert ((1060.0, kind, None) if kind else None) == got
