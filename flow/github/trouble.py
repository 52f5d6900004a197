"""What a GitHub-facing step does when GitHub says no: every failure gets an outcome.

`guarded(ctx, trouble, step, body, on_stop)` runs one step's GitHub work and turns each failure
into the next thing the flow does, never an error printed on every tick:

- transient (RateLimited, GitHubUnavailable: 5xx or timeouts after the client's retries):
  `Sleep` until GitHub may answer. Primary limit: until `x-ratelimit-reset`. Secondary limit:
  `retry-after` when GitHub sent it, else 1 minute, doubling on each consecutive one (2, 4,
  ... capped at 30), never the hourly reset. Outage: 2 minutes, doubling, capped at 30. The
  time is kept in `Trouble.until`, so a tick that fires earlier sleeps again without asking.
- permanent (401 token refused, 403 permission, 404, 422, a missing token or token file):
  `Human`: the question names what GitHub said and how to mend it, with the options
  `retry` (mended: ask GitHub again) and `stop` (end the flow; `on_stop` says how, honestly).
  The flow asks nothing of GitHub until a person answers.

Steps with a failure they understand better (a refused re-run is a decision, not a question)
catch it inside `body` first. Imports no PyGithub.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

from pydantic import BaseModel, ConfigDict

from flow.core.errors import OrchestratorError
from flow.core.outcome import Human, Sleep
from flow.github.errors import GitHubError, GitHubRequestFailed, GitHubUnavailable, RateLimited

MAX_MINUTES = 30
OUTAGE_FIRST_MINUTES = 2
RETRY, STOP = "retry", "stop"


class Trouble(BaseModel):
    """A flow's GitHub trouble, kept in its data (`ctx.data.github`)."""

    model_config = ConfigDict(extra="forbid")
    strikes: int = 0  # consecutive transient failures: the wait grows with them
    until: str | None = None  # ISO UTC: ask GitHub nothing before this
    asked: int = 0  # questions asked so far (each key is new)
    open_key: str | None = None  # the question awaiting a person's answer
    last: str | None = None  # the last failure, as said to the user
    history: list[str] = []  # every failure that needed a decision, for the summary


def _now(now: datetime | None) -> datetime:
    return now or datetime.now(timezone.utc)


def cron_every(minutes: int) -> str:
    """A 5-field cron for every `minutes` (1..59); 60 or more: hourly."""
    return f"*/{minutes} * * * *" if minutes < 60 else "0 * * * *"


def wait_seconds(err: GitHubError, strikes: int, now: datetime | None = None) -> float:
    """How long to wait after `err`, the `strikes`-th transient failure in a row (1-based)."""
    grow = 2 ** max(strikes - 1, 0)
    if isinstance(err, RateLimited):
        if err.kind == "secondary" and err.retry_after is None:
            return min(60.0 * grow, MAX_MINUTES * 60.0)
        return max((err.reset_at - _now(now)).total_seconds(), 0.0) + 5.0
    return min(OUTAGE_FIRST_MINUTES * 60.0 * grow, MAX_MINUTES * 60.0)


def _sleep(reason: str, seconds: float, extra: dict[str, Any]) -> Sleep:
    minutes = min(max(math.ceil(seconds / 60), 1), 59)
    return Sleep(reason, cron_interval=cron_every(minutes), poll_seconds=max(int(math.ceil(seconds)), 60),
                 extra=extra)


Extra = dict[str, Any] | Callable[[str], dict[str, Any]] | None


def _fields(extra: Extra, kind: str) -> dict[str, Any]:
    """The step's fields for the printed object; a callable gets the kind of wait or question
    (rate_limited, github_unavailable, github_refused)."""
    return dict(extra(kind)) if callable(extra) else dict(extra or {})


def transient(err: GitHubError, trouble: Trouble, extra: Extra,
              now: datetime | None = None) -> Sleep:
    """Record a transient failure and sleep until GitHub may answer."""
    now = _now(now)
    extra = _fields(extra, "rate_limited" if isinstance(err, RateLimited) else "github_unavailable")
    trouble.strikes += 1
    seconds = wait_seconds(err, trouble.strikes, now)
    trouble.until = (now + timedelta(seconds=seconds)).isoformat()
    trouble.last = err.message
    what = "rate limit" if isinstance(err, RateLimited) else "outage"
    return _sleep(f"GitHub {what}: {err.message}; next try after {trouble.until}", seconds,
                  {**extra, "github_wait": {"until": trouble.until, "strikes": trouble.strikes,
                                            "code": err.code}})


def ask(err: OrchestratorError, trouble: Trouble, step: str, extra: Extra) -> Human:
    """A permanent failure: ask a person to mend it (retry) or end the flow (stop)."""
    extra = _fields(extra, "github_refused")
    trouble.asked += 1
    trouble.open_key = f"github:{step}:{trouble.asked}"
    trouble.last = err.message
    trouble.history.append(f"{step}: {err.message}")
    question = (f"GitHub refused the flow's request in step {step!r}: {err.message}. "
                f"To mend it: {err.hint}. Answer 'retry' once it is mended, or 'stop' to end "
                f"the flow now (it reports what it could not do).")
    return Human(trouble.open_key, question,
                 {RETRY: "the cause is mended: ask GitHub again",
                  STOP: "end the flow now; the summary names this failure"},
                 extra={**extra, "github_error": err.to_json()})


def guarded(ctx: Any, trouble: Trouble, step: str, body: Callable[[], Any],
            on_stop: Callable[[str], Any], extra: Extra = None,
            now: datetime | None = None) -> Any:
    """Run `body` (one step's GitHub work) unless a wait or a question is open; map failures.

    `on_stop(reason)` is the outcome when a person answered `stop`; `extra` the step's fields
    for the printed object (or a function of the kind of wait).
    """
    if trouble.open_key is not None:
        answer = ctx.answer(trouble.open_key)
        if answer == STOP:
            return on_stop(trouble.last or "stopped by a person")
        trouble.open_key = None  # retry: ask GitHub again now
        trouble.until = None
    if trouble.until is not None:
        left = (datetime.fromisoformat(trouble.until) - _now(now)).total_seconds()
        if left > 0:
            kind = "rate_limited" if "rate limit" in (trouble.last or "") else "github_unavailable"
            return _sleep(f"waiting for GitHub until {trouble.until} ({trouble.last})", left,
                          {**_fields(extra, kind), "github_wait": {"until": trouble.until,
                                                                   "strikes": trouble.strikes}})
    try:
        out = body()
    except (RateLimited, GitHubUnavailable) as err:
        return transient(err, trouble, extra, now)
    except GitHubRequestFailed as err:
        if err.status >= 500:  # an unexpected answer the client did not retry
            return transient(GitHubUnavailable(err.path, 1, f"HTTP {err.status}"), trouble, extra, now)
        return ask(err, trouble, step, extra)
    except GitHubError as err:  # missing token, bad token file, unknown repo, no PR, expired link
        return ask(err, trouble, step, extra)
    trouble.strikes, trouble.until = 0, None
    return out
