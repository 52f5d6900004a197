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

import json
import math
import os
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import github
import requests
from github import Auth, Github
from github.Requester import Requester
from pydantic import BaseModel, ConfigDict

from flow.github.checks import api_url as checked_api_url
from flow.github.checks import bad_answer, from_pygithub, header_seconds
from flow.github.errors import (
    BadSetting, GitHubRequestFailed, GitHubUnavailable, LinkExpired, MissingToken, RateLimited,
    UnknownRepo, utc_from_epoch,
)
from flow.github.token import clean_token, read_token_file

DEFAULT_API = "https://api.github.com"
API_ENV = "ORCHESTRATOR_GITHUB_API"
BACKOFF_ENV = "ORCHESTRATOR_GITHUB_BACKOFF"
TIMEOUT_ENV = "ORCHESTRATOR_GITHUB_TIMEOUT"
TOKEN_ENVS = ("GITHUB_TOKEN", "GH_TOKEN")
T = TypeVar("T")


class ClientSettings(BaseModel):
    """Transport knobs. Defaults suit a cron tick; tests shrink the waits."""

    model_config = ConfigDict(extra="forbid")
    timeout: int = 30  # seconds per request (PyGithub takes whole seconds)
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
                limited = rate_limit_of(e.status, e.headers or {}, e.data)
                if limited is not None:
                    reset, kind, after = limited
                    raise RateLimited(utc_from_epoch(reset), what, kind, after) from None
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
        return GitHubRequestFailed(what, e.status, message or "no message")

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
            status, hdrs, out = self.requester.requestJson("GET", path)
            if status >= 400:  # GitHub's JSON body says which refusal (a secondary limit, ...)
                raise self.requester.createException(status, hdrs, _json_or_none(out))
            if "location" not in hdrs:
                raise GitHubRequestFailed(_short(path), status, "expected a 302 redirect with a Location")
            return hdrs["location"]

        return self.call(go, what=_short(path))


def _json_or_none(text: Any) -> Any:
    try:
        return json.loads(text) if text else None
    except (TypeError, ValueError):
        return None


def _short(url: str) -> str:
    """A URL without scheme and host, for messages (never carries credentials)."""
    return "/" + url.split("://", 1)[-1].split("/", 1)[-1] if "://" in url else url


SECONDARY_MIN_WAIT = 60.0  # GitHub: "wait for at least one minute before retrying"


def rate_limit_of(status: int, headers: Mapping[str, Any], data: Any,
                  now: float | None = None) -> tuple[float, str, float | None] | None:
    """(epoch seconds to wait until, "primary" | "secondary", retry-after) for a rate-limit
    answer, None for anything else (a 403 permission refusal included).

    GitHub's documented order: a `retry-after` header names the wait; else
    `x-ratelimit-remaining: 0` means the primary budget is spent until `x-ratelimit-reset`;
    else a 403/429 whose message is a secondary-limit one (`is_secondary_message`; budget
    left) means wait at least a minute.
    """
    if status not in (403, 429):
        return None
    now = time.time() if now is None else now
    h = {k.lower(): str(v) for k, v in headers.items()}
    message = str(data.get("message", "")) if isinstance(data, dict) else ""
    remaining = h.get("x-ratelimit-remaining")
    secondary = is_secondary_message(message)
    if "retry-after" in h:
        # Headers are data: garbage or an absurd wait falls back to a minute, never raises.
        after = header_seconds(h["retry-after"])
        if after is None or after > 86400:
            after = SECONDARY_MIN_WAIT
        return now + after, "primary" if remaining == "0" and not secondary else "secondary", after
    if remaining == "0" and not secondary:
        reset = header_seconds(h.get("x-ratelimit-reset"))
        if reset is not None and now - 86400 < reset < now + 86400:
            return reset, "primary", None
        return now + SECONDARY_MIN_WAIT, "primary", None
    if secondary or status == 429 or "rate limit" in message.lower():
        return now + SECONDARY_MIN_WAIT, "secondary", None
    return None


def is_secondary_message(message: str) -> bool:
    """Whether GitHub's error message is a secondary-limit one, by PyGithub's own test
    (`Requester.isSecondaryRateLimitError`: "You have exceeded a secondary rate limit...",
    "... Please wait a few minutes before you try again.", "... Please retry your request again
    later.", the old "abuse detection" wordings included), widened to those wordings followed by
    GitHub's "If you reach out to GitHub Support..." tail, which PyGithub's suffix test misses."""
    lower = message.lower()
    return (Requester.isSecondaryRateLimitError(message) or "secondary rate limit" in lower
            or "abuse detection mechanism" in lower)


def _seconds(env: Mapping[str, str], name: str, minimum: float) -> float | None:
    from flow.core.bounds import Range, number

    raw = env.get(name, "").strip()
    if not raw:
        return None
    value = number(raw, Range(minimum, 3600, whole=False))
    if value is None:
        raise BadSetting(name, raw, f"a number of seconds in ASCII digits, {minimum:g} to 3600 "
                                    "(e.g. 1 or 0.5)")
    return float(value)


def _settings_from(env: Mapping[str, str]) -> ClientSettings:
    """ORCHESTRATOR_GITHUB_BACKOFF (first retry wait) and ORCHESTRATOR_GITHUB_TIMEOUT (per
    request, default 30), in seconds."""
    backoff, timeout = _seconds(env, BACKOFF_ENV, 0), _seconds(env, TIMEOUT_ENV, 1)
    s = ClientSettings()
    if backoff is not None:
        s = s.model_copy(update={"backoff": backoff})
    if timeout is not None:
        s = s.model_copy(update={"timeout": math.ceil(timeout)})
    return s


def connect(api_url: str | None = None, token: str | None = None, *,
            settings: ClientSettings | None = None, env: Mapping[str, str] | None = None,
            sleep: Callable[[float], None] = time.sleep, token_file: str | None = None) -> GitHubClient:
    """A client for `api_url` (else $ORCHESTRATOR_GITHUB_API, else api.github.com).

    The token: `token`, else GITHUB_TOKEN / GH_TOKEN, else the file `token_file` (see
    flow.github.token.read_token_file). Without `settings`, the backoff comes from
    $ORCHESTRATOR_GITHUB_BACKOFF when set. Makes no request. Raises MissingToken when no
    token is found, BadSetting when the backoff is not a number of seconds or the token file
    cannot be read, BadToken (naming where the token came from, never its value) when the
    token holds a control character or a space inside; whitespace around it is stripped.
    """
    env = os.environ if env is None else env
    source = "the token argument" if token else ""
    if not token:
        source, token = next(((k, env[k]) for k in TOKEN_ENVS if env.get(k, "").strip()),
                             ("", None))
    if not token and token_file:
        source, token = f"the token file {token_file!r}", read_token_file(token_file)
    if not token:
        raise MissingToken(token_file)
    token = clean_token(token, source)  # before PyGithub or requests ever see it
    url = checked_api_url(api_url or env.get(API_ENV) or DEFAULT_API, API_ENV)
    s = settings or _settings_from(env)
    gh = Github(
        base_url=url, auth=Auth.Token(token), timeout=s.timeout, per_page=s.per_page, retry=None,
        seconds_between_requests=None, seconds_between_writes=s.seconds_between_writes,
    )
    return GitHubClient(gh, url, s, token, sleep)
