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


def unavailable(url: str, exc: BaseException, doing: str) -> StoreUnavailable:
    """The error for a failed ``doing`` on the store at ``url``."""
    detail = scrub(" ".join(str(exc).split()))[:400]
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
