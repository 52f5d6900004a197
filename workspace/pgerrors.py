"""The PostgreSQL store's URL rules and errors: no password in the URL, masked messages.

A store URL is ``postgresql://user@host:port/db`` (psycopg 3). The password never travels in
the URL (the URL is repeated in every printed command): it comes from ``PGPASSWORD`` or a
``.pgpass``-style file (``PGPASSFILE``, default ``~/.pgpass``), which libpq reads itself.
Every message that shows the URL masks any password, and a connection failure is a
``StoreUnavailable`` (exit 4) with a hint, never a traceback. Nothing here imports psycopg.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

from flow.core.errors import OrchestratorError, UsageError

SCHEMES = ("postgresql://", "postgres://")
MASK = "***"


class StoreUnavailable(OrchestratorError):
    """The PostgreSQL store cannot be reached or refused the call (exit 4, nothing written)."""

    code = "store_unavailable"
    exit_code = 4


def is_url(value: str | None) -> bool:
    return bool(value) and str(value).startswith(SCHEMES)


def mask_url(url: str) -> str:
    """The URL with any password replaced by ``***`` (for messages)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable store URL>"
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = netloc[0].split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}:{MASK}@{netloc[1]}"))


def check_url(url: str) -> str:
    """Return ``url`` if it is a usable store URL; ``UsageError`` (exit 2) if not."""
    try:
        parts = urlsplit(url)
        _ = parts.port
    except ValueError as exc:
        raise UsageError(f"store URL {mask_url(url)!r} cannot be parsed: {exc}",
                         "give --store as postgresql://USER@HOST:PORT/DATABASE",
                         code="bad_store") from None
    if parts.password is not None:
        raise UsageError(
            f"store URL {mask_url(url)!r} carries a password",
            "remove the password from the URL (it is repeated in every printed command) and "
            "export PGPASSWORD, or put it in a .pgpass-style file (PGPASSFILE, default "
            "~/.pgpass: host:port:database:user:password, mode 0600)", code="bad_store")
    if not parts.hostname and "host=" not in parts.query:
        raise UsageError(f"store URL {mask_url(url)!r} names no host",
                         "give --store as postgresql://USER@HOST:PORT/DATABASE",
                         code="bad_store")
    return url


def scrub(text: str) -> str:
    """``text`` with the password from the environment masked (libpq never prints it; this
    is the second belt)."""
    secret = os.environ.get("PGPASSWORD")
    return text.replace(secret, MASK) if secret else text


class StoreTimeout(StoreUnavailable):
    """A statement ran past the call's foreground budget (another session held a row it
    needed, or the server was too slow): exit 3, like a busy flow, nothing written."""

    code = "store_timeout"
    exit_code = 3


class StoreDown(StoreUnavailable):
    """The server cannot be reached now (stopped, restarting, the network): exit 3 with
    ``poll_after_s``, like a busy flow; every caller carries on by itself once it is back."""

    code = "store_unavailable"
    exit_code = 3


POLL_DOWN_S = 5
# what a server that is down or restarting answers: no connection, or an admin shutdown,
# crash shutdown or start-up in progress (SQLSTATE 57P01-57P03), a connection failure (08...)
_DOWN_STATES = ("57P01", "57P02", "57P03")
_NOT_DOWN = ("authentication", "password", "does not exist", "permission denied", "role ",
             "ssl", "certificate", "no pg_hba.conf entry")


def is_down(exc: BaseException) -> bool:
    """True if ``exc`` says the server is unreachable or restarting (worth retrying), not
    that the URL, the user or the database is wrong."""
    state = str(getattr(exc, "sqlstate", None) or "")
    if state in _DOWN_STATES or state.startswith("08"):
        return True
    text = str(exc).lower()
    return type(exc).__name__ == "OperationalError" and not state and \
        not any(word in text for word in _NOT_DOWN)


def unavailable(url: str, exc: BaseException, doing: str,
                nothing_written: bool = False) -> StoreUnavailable:
    """The error for a failed ``doing`` on the store at ``url``. ``nothing_written``: the
    caller knows this call wrote nothing (it failed on its first connection)."""
    detail = scrub(" ".join(str(exc).split()))[:400]
    if is_down(exc):
        return StoreDown(
            f"the PostgreSQL store {mask_url(url)!r} cannot be reached while {doing} (down or "
            f"restarting): {detail}",
            f"run the same command again after poll_after_s ({POLL_DOWN_S} s) until the server "
            "is back (pg_isready -d URL): " + (
                "nothing was written" if nothing_written else
                "every write is one transaction, so what this call was writing then is either "
                "whole or not there, and the same command carries on from what was saved"),
            store=mask_url(url), poll_after_s=POLL_DOWN_S)
    if getattr(exc, "sqlstate", None) == "57014":  # query_canceled: the statement timeout
        return StoreTimeout(
            f"the PostgreSQL store {mask_url(url)!r} did not finish {doing} within this "
            f"call's foreground budget: {detail}",
            "another session holds a row this call needs (a long transaction: see "
            "pg_stat_activity on the server) or the server is overloaded; run the same "
            "command again later: nothing was written (ORCHESTRATOR_FOREGROUND_S sets the "
            "budget)", store=mask_url(url))
    return StoreUnavailable(
        f"the PostgreSQL store {mask_url(url)!r} failed while {doing}: {detail}",
        "check that the server runs and is reachable (pg_isready -d URL), that the user and "
        "database exist and the password is in PGPASSWORD or a .pgpass file; then run the same "
        "command again: nothing was written", store=mask_url(url))
