"""Bad GitHub settings and unreadable answers are input errors with a hint, never bugs."""

from __future__ import annotations

from pathlib import Path

import pytest

from flow.github.checks import check_sha, header_seconds
from flow.github.errors import GitHubRequestFailed
from tests.contract.inproc import call
from tests.fakegithub import FakeGitHub


def _ci_check(ws: Path) -> tuple[int, dict]:
    return call(["--workspace", str(ws), "--ci-check", "--repo", "octo/proj", "--pr-number", "1"])


@pytest.mark.parametrize("url", ["not a url", "ftp://host/api", "http://[::1", "http://h:port/",
                                 "https://api.github.com?x=1"])
def test_bad_api_url_setting_is_an_input_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               url: str) -> None:
    """ORCHESTRATOR_GITHUB_API that is no http(s) URL: exit 2, github_bad_setting, a hint."""
    monkeypatch.setenv("GITHUB_TOKEN", "t")
    monkeypatch.setenv("ORCHESTRATOR_GITHUB_API", url)
    code, out = _ci_check(tmp_path / "ws")
    assert (2, "github_bad_setting", "ORCHESTRATOR_GITHUB_API") == (
        code, out["error"]["code"], out["error"]["setting"])
    assert not (tmp_path / "ws" / "ci").exists() or not any((tmp_path / "ws" / "ci").rglob("*.json"))


@pytest.mark.parametrize("garbage", ["soon", "", "1e999"])
def test_garbage_rate_limit_header_is_an_answer_error(tmp_path: Path, fake_github: FakeGitHub,
                                                      garbage: str) -> None:
    """An X-RateLimit-Reset header PyGithub cannot read: exit 2, github_bad_answer, a hint."""
    fake_github.repo("octo/proj").add_pull(1, "feature", "a" * 40)
    fake_github.rate_reset = garbage  # type: ignore[assignment]
    code, out = _ci_check(tmp_path / "ws")
    assert (2, "github_bad_answer") == (code, out["error"]["code"]), out
    assert "X-RateLimit-Reset" in out["error"]["message"] and out["error"]["hint"]


@pytest.mark.parametrize(("value", "expected"), [
    ("30", 30.0), ("soon", None), ("-1", None), ("nan", None), ("inf", None), (None, None)])
def test_header_seconds_never_raises(value: object, expected: float | None) -> None:
    """Rate-limit header values are read without trusting them."""
    assert expected == header_seconds(value)


@pytest.mark.parametrize("sha", ["../../x", "abc?x=1", "", "a" * 40 + "\n", None, 12345678])
def test_sha_from_an_answer_is_checked_before_it_reaches_a_url(sha: object) -> None:
    """A head sha that is not hex is refused before a request path is built from it."""
    with pytest.raises(GitHubRequestFailed):
        check_sha(sha, "repos/o/r/commits")
    assert "a" * 40 == check_sha("a" * 40, "x")
