"""Checks on values that come from settings or from GitHub before they are used.

``api_url`` vets ``ORCHESTRATOR_GITHUB_API``; ``header_seconds`` reads a rate-limit header
without trusting it; ``check_sha`` refuses a commit sha that is not one before it is put in a
request path (a sha from an API answer is data: ``../`` or ``?`` in it would change the URL).
"""

from __future__ import annotations

import math
import re
import urllib.parse

from flow.github.errors import BadSetting, GitHubRequestFailed

SHA = re.compile(r"[0-9a-fA-F]{7,64}")


def api_url(raw: str, name: str) -> str:
    """``raw`` without a trailing slash if it is an http(s) URL with a host; else BadSetting."""
    url = raw.strip().rstrip("/")
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        parts = None
    if (parts is None or parts.scheme not in ("http", "https") or not parts.hostname
            or parts.query or parts.fragment or any(c.isspace() for c in url)):
        raise BadSetting(name, raw, "an http(s) URL of the GitHub API (e.g. "
                                    "https://api.github.com or https://HOST/api/v3)")
    return url


def header_seconds(value: object) -> float | None:
    """A header holding a number of seconds (or epoch seconds), or None when it is garbage."""
    try:
        seconds = float(str(value).strip())
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def check_sha(value: object, what: str) -> str:
    """``value`` if it is a hex commit sha; a GitHubRequestFailed naming ``what`` otherwise."""
    if isinstance(value, str) and SHA.fullmatch(value):
        return value
    raise GitHubRequestFailed(what, 200, f"the answer's commit sha {str(value)[:80]!r} is not a "
                                         f"hex sha; refusing to build a request from it",
                              "check ORCHESTRATOR_GITHUB_API points at a GitHub API")


def from_pygithub(exc: BaseException) -> bool:
    """True if ``exc`` was raised inside PyGithub (e.g. parsing a response header)."""
    tb = exc.__traceback__
    module = ""
    while tb is not None:
        module = str(tb.tb_frame.f_globals.get("__name__", ""))
        tb = tb.tb_next
    return module.startswith("github.")


def bad_answer(what: str, exc: BaseException) -> GitHubRequestFailed:
    """The error for an answer PyGithub could not read (a garbage rate-limit header...)."""
    err = GitHubRequestFailed(what, 200, f"the answer could not be read ({exc}); a header such "
                                         f"as X-RateLimit-Reset holds garbage",
                              "check ORCHESTRATOR_GITHUB_API points at a GitHub API (or a "
                              "proxy that keeps GitHub's headers), then run the tick again")
    err.code = "github_bad_answer"
    return err
