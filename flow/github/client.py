"""connect(): a PyGithub client with bounded retries and typed errors.

Settings come from arguments first, then the environment: the token from
GITHUB_TOKEN / GH_TOKEN, the API base URL from ORCHESTRATOR_GITHUB_API (default
https://api.github.com; a GitHub Enterprise URL or a test server works the same), the
first retry wait from ORCHESTRATOR_GITHUB_BACKOFF (seconds; default 1).
The token is handed to PyGithub's auth object and never logged, stored or quoted.

PyGithub's own retry (which sleeps until a rate-limit reset, possibly an hour) is
switched off; `GitHubClient.call` retries server errors and timeouts a bounded number
of times with exponential backoff and turns a spent budget into `RateLimited` at once,
so a cron tick can reschedule itself instead of hanging.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import github
import requests
from github import Auth, Github
from pydantic import BaseModel, ConfigDict

from flow.github.checks import api_url as checked_api_url
from flow.github.checks import bad_answer, from_pygithub, header_seconds
from flow.github.errors import (
    BadSetting, GitHubRequestFailed, GitHubUnavailable, LinkExpired, MissingToken, RateLimited, UnknownRepo,
    utc_from_epoch,
)

DEFAULT_API = "https://api.github.com"
API_ENV = "ORCHESTRATOR_GITHUB_API"
BACKOFF_ENV = "ORCHESTRATOR_GITHUB_BACKOFF"
TOKEN_ENVS = ("GITHUB_TOKEN", "GH_TOKEN")
T = TypeVar("T")


class ClientSettings(BaseModel):
    """Transport knobs. Defaults suit a cron tick; tests shrink the waits."""

    model_config = ConfigDict(extra="forbid")
    timeout: int = 30
    attempts: int = 3
    backoff: float = 1.0  # first wait; doubles per retry
    max_backoff: float = 30.0
    per_page: int = 100
    seconds_between_writes: float | None = 1.0  # GitHub's advice against secondary limits


class GitHubClient:
    """One authenticated connection. Use `call` around every PyGithub call that hits the network."""

    def __init__(self, gh: Github, api_url: str, settings: ClientSettings, token: str,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.gh = gh
        self.api_url = api_url
        self.settings = settings
        self.sleep = sleep
        self._token = token  # kept only to redact it from any text that might echo it
        self.http = requests.Session()  # for signed blob URLs: no auth header is ever sent there
        self.request_count = 0  # requests made by get_json, location and fetch_signed (retries included)

    @property
    def requester(self) -> Any:
        return self.gh.requester

    def redact(self, text: str) -> str:
        return text.replace(self._token, "***") if self._token else text

    def call(self, fn: Callable[[], T], *, what: str, write: bool = False) -> T:
        """Run `fn` with bounded retries; translate failures into flow.github.errors.

        Retries 5xx answers and, for reads only, timeouts and dropped connections (a write
        that timed out may have happened; repeating it could post twice). Raises
        RateLimited, GitHubUnavailable or GitHubRequestFailed; never a PyGithub type.
        """
        last = ""
        for attempt in range(1, self.settings.attempts + 1):
            try:
                return fn()
            except github.GithubException as e:
                limited = _rate_limit_reset(e)
                if limited is not None:
                    raise RateLimited(utc_from_epoch(limited), what) from None
                if e.status < 500:
                    raise self._failed(what, e) from None
                last = f"HTTP {e.status}"
            except (ValueError, OverflowError) as e:  # PyGithub reads headers with int(float())
                if not from_pygithub(e):
                    raise
                raise bad_answer(what, e) from None
            except (requests.Timeout, requests.ConnectionError) as e:
                if write:
                    raise GitHubUnavailable(what, attempt, type(e).__name__) from None
                last = type(e).__name__
            if attempt < self.settings.attempts:
                self.sleep(min(self.settings.backoff * 2 ** (attempt - 1), self.settings.max_backoff))
        raise GitHubUnavailable(what, self.settings.attempts, last)

    def _failed(self, what: str, e: github.GithubException) -> GitHubRequestFailed:
        message = self.redact(str((e.data or {}).get("message", "")) if isinstance(e.data, dict) else "")
        hint = ""
        if e.status == 401:
            hint = "the token was refused: export a valid GITHUB_TOKEN (or GH_TOKEN)"
        elif e.status == 404:
            hint = "check the owner/repo, the number and that the token can read the repository"
        return GitHubRequestFailed(what, e.status, message or "no message", hint)

    def repo(self, full_name: str) -> Any:
        """The PyGithub Repository; UnknownRepo when GitHub answers 404."""
        try:
            return self.call(lambda: self.gh.get_repo(full_name), what=f"repos/{full_name}")
        except GitHubRequestFailed as e:
            if e.status == 404:
                raise UnknownRepo(full_name, self.api_url) from None
            raise

    def lazy_repo(self, full_name: str) -> Any:
        """A Repository handle that makes no request until a method needs one."""
        return self.gh.withLazy(True).get_repo(full_name)

    def get_json(self, url: str, params: Mapping[str, Any] | None = None,
                 etag: str | None = None) -> tuple[int, dict[str, Any], Any]:
        """Raw GET through PyGithub's requester: (200 or 304, headers, JSON or None). Retried."""
        headers = {"If-None-Match": etag} if etag else {}

        def go() -> tuple[int, dict[str, Any], Any]:
            self.request_count += 1
            hdrs, data = self.requester.requestJsonAndCheck("GET", url, dict(params or {}), headers)
            return (304 if data is None else 200), hdrs, data

        return self.call(go, what=_short(url))

    def fetch_signed(self, url: str, what: str) -> bytes:
        """GET a pre-signed download URL (log, artifact) without credentials. Retried."""
        def go() -> bytes:
            self.request_count += 1
            resp = self.http.get(url, timeout=self.settings.timeout, allow_redirects=True)
            if resp.status_code in (401, 403, 410):
                raise LinkExpired(what)
            if resp.status_code >= 500:
                raise github.GithubException(resp.status_code, None, None)
            resp.raise_for_status()
            return resp.content

        return self.call(go, what=what)

    def location(self, path: str) -> str:
        """The Location of a 302 that GitHub answers for a download (job log, artifact zip)."""
        def go() -> str:
            self.request_count += 1
            status, hdrs, _ = self.requester.requestJson("GET", path)
            if status >= 400:
                raise self.requester.createException(status, hdrs, None)
            if "location" not in hdrs:
                raise GitHubRequestFailed(_short(path), status, "expected a 302 redirect with a Location")
            return hdrs["location"]

        return self.call(go, what=_short(path))


def _short(url: str) -> str:
    """A URL without scheme and host, for messages (never carries credentials)."""
    return "/" + url.split("://", 1)[-1].split("/", 1)[-1] if "://" in url else url


def _rate_limit_reset(e: github.GithubException) -> float | None:
    """Epoch seconds when the limit resets, or None if `e` is not a rate-limit answer."""
    headers = {k.lower(): v for k, v in (e.headers or {}).items()}
    limited = isinstance(e, github.RateLimitExceededException) or e.status == 429 or (
        e.status == 403 and headers.get("x-ratelimit-remaining") == "0"
    )
    if not limited:
        return None
    # Headers are data: a garbage value falls back to a minute, never raises.
    retry = header_seconds(headers.get("retry-after"))
    if retry is not None and retry <= 86400:
        return time.time() + retry
    reset = header_seconds(headers.get("x-ratelimit-reset"))
    if reset is not None and time.time() - 86400 < reset < time.time() + 86400:
        return reset
    return time.time() + 60.0


def _settings_from(env: Mapping[str, str]) -> ClientSettings:
    raw = env.get(BACKOFF_ENV, "").strip()
    if not raw:
        return ClientSettings()
    try:
        backoff = float(raw)
    except ValueError:
        backoff = math.nan
    if not (math.isfinite(backoff) and backoff >= 0):
        raise BadSetting(BACKOFF_ENV, raw, "a number of seconds, 0 or more (e.g. 1 or 0.5)")
    return ClientSettings(backoff=backoff)


def connect(api_url: str | None = None, token: str | None = None, *,
            settings: ClientSettings | None = None, env: Mapping[str, str] | None = None,
            sleep: Callable[[float], None] = time.sleep) -> GitHubClient:
    """A client for `api_url` (else $ORCHESTRATOR_GITHUB_API, else api.github.com).

    Without `settings`, the backoff comes from $ORCHESTRATOR_GITHUB_BACKOFF when set.
    Makes no request. Raises MissingToken when no token is given or found in
    GITHUB_TOKEN / GH_TOKEN, BadSetting when the backoff is not a number of seconds.
    """
    env = os.environ if env is None else env
    token = token or next((env[k] for k in TOKEN_ENVS if env.get(k)), None)
    if not token:
        raise MissingToken()
    url = checked_api_url(api_url or env.get(API_ENV) or DEFAULT_API, API_ENV)
    s = settings or _settings_from(env)
    gh = Github(
        base_url=url, auth=Auth.Token(token), timeout=s.timeout, per_page=s.per_page, retry=None,
        seconds_between_requests=None, seconds_between_writes=s.seconds_between_writes,
    )
    return GitHubClient(gh, url, s, token, sleep)
