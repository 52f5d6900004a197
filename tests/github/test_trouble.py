"""How long to wait after each kind of GitHub refusal, and which answers are rate limits at all
(pure: flow.github.client.rate_limit_of, flow.github.trouble), and the token file and API URL a
flow records (flow.github.access)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from flow.github.access import access_from, read_token_file
from flow.github.client import connect, rate_limit_of
from flow.github.errors import BadSetting, GitHubUnavailable, RateLimited
from flow.github.trouble import wait_seconds

NOW = 1_000_000.0
SECONDARY = {"message": "You have exceeded a secondary rate limit. Please wait a few minutes."}
LIMIT_CASES = [  # (status, headers, body, expected (wait seconds from NOW, kind) or None)
    (403, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(NOW) + 900)},
     {"message": "API rate limit exceeded for user ID 1."}, (900, "primary")),
    (429, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(NOW) + 60)},
     {"message": "API rate limit exceeded"}, (60, "primary")),
    (403, {"X-RateLimit-Remaining": "4000", "Retry-After": "120"}, SECONDARY, (120, "secondary")),
    (403, {"X-RateLimit-Remaining": "4000", "X-RateLimit-Reset": str(int(NOW) + 3300)}, SECONDARY,
     (60, "secondary")),
    (429, {"X-RateLimit-Remaining": "4000"}, SECONDARY, (60, "secondary")),
    (403, {"X-RateLimit-Remaining": "4000"}, {"message": "Must have admin rights to Repository."}, None),
    (403, {"X-RateLimit-Remaining": "4000"}, {"message": "Resource not accessible by integration"}, None),
    (404, {"X-RateLimit-Remaining": "0"}, {"message": "Not Found"}, None),
]


@pytest.mark.parametrize(("status", "headers", "body", "expected"), LIMIT_CASES)
def test_rate_limit_answers_are_told_apart(status: int, headers: dict[str, str], body: dict[str, str],
                                           expected: tuple[int, str] | None) -> None:
    """Primary (remaining 0: until reset), secondary (retry-after, else one minute, never the
    hourly reset), and permission refusals that are no limit at all."""
    got = rate_limit_of(status, headers, body, NOW)
    assert expected == (None if got is None else (round(got[0] - NOW), got[1]))


def _limited(kind: str, after: float | None, reset_in: float) -> RateLimited:
    now = datetime.now(timezone.utc)
    return RateLimited(now + timedelta(seconds=reset_in), "/x", kind, after)


WAIT_CASES = [  # (error as (kind, retry-after, reset in s), strikes, expected seconds, tolerance)
    (("secondary", None, 60), 1, 60, 0), (("secondary", None, 60), 2, 120, 0),
    (("secondary", None, 60), 4, 480, 0), (("secondary", None, 60), 9, 1800, 0),
    (("secondary", 170, 170), 1, 175, 2), (("primary", None, 1200), 1, 1205, 2),
    ("HTTP 502", 1, 120, 0), ("HTTP 502", 3, 480, 0), ("ReadTimeout", 8, 1800, 0),
]


@pytest.mark.parametrize(("err", "strikes", "expected", "tol"), WAIT_CASES)
def test_waits_grow_and_stay_bounded(err: object, strikes: int, expected: float, tol: float) -> None:
    """Secondary limits without retry-after and outages double from 1 and 2 minutes up to 30;
    named waits (retry-after, primary reset) are kept with a 5 s margin."""
    error = _limited(*err) if isinstance(err, tuple) else GitHubUnavailable("/x", 3, str(err))
    assert abs(wait_seconds(error, strikes) - expected) <= tol


@pytest.mark.parametrize(("text", "token"), [
    ("tok123\n", "tok123"), ("# mine\nGITHUB_TOKEN=abc\n", "abc"), ("export GH_TOKEN='q w'\n", "q w"),
    ('OTHER=1\nGITHUB_TOKEN="z"\n', "z"), ("\n# nothing\n", None),
])
def test_token_file_forms(tmp_path: Path, text: str, token: str | None) -> None:
    """A bare token line or env-file lines (export, quotes) give the token; comments do not."""
    path = tmp_path / "t"
    path.write_text(text)
    assert token == read_token_file(str(path))


def test_token_file_is_used_when_the_environment_has_none(tmp_path: Path) -> None:
    """connect() falls back to the named file; the environment's token wins when both are there."""
    path = tmp_path / "t"
    path.write_text("GITHUB_TOKEN=from-file\n")
    got = (connect(env={}, token_file=str(path)).gh.requester.auth.token,
           connect(env={"GITHUB_TOKEN": "from-env"}, token_file=str(path)).gh.requester.auth.token)
    assert ("from-file", "from-env") == got


@pytest.mark.parametrize(("env", "setting"), [
    ({"ORCHESTRATOR_GITHUB_TOKEN_FILE": "relative/path"}, "ORCHESTRATOR_GITHUB_TOKEN_FILE"),
    ({"ORCHESTRATOR_GITHUB_TOKEN_FILE": "/no/such/file"}, "ORCHESTRATOR_GITHUB_TOKEN_FILE"),
    ({"ORCHESTRATOR_GITHUB_API": "api.github.com"}, "ORCHESTRATOR_GITHUB_API"),
])
def test_bad_access_settings_are_refused_at_the_start(env: dict[str, str], setting: str) -> None:
    """A token file a cron job could not read, or an API URL without scheme, is refused at once."""
    with pytest.raises(BadSetting) as err:
        access_from(env)
    assert setting == err.value.details["setting"]
