"""The PostgreSQL store's URL rules and errors: no credential in the URL, masked messages.

A store URL is ``postgresql://user@host:port/db`` (psycopg 3), other libpq settings in its
query (``?sslmode=require``). The scheme is read in any case (``POSTGRESQL://``), and
SQLAlchemy's ``postgresql+psycopg://`` (the same driver) is taken too; either is handed to
libpq as ``postgresql://``. Any other ``SCHEME://`` value (``postgresql+asyncpg://``,
``mysql://``, ``http://``) is refused, never taken for a folder. No secret travels in the URL (the URL is repeated in every
printed command, the Codex crontab line, ``serve``'s JSON and another caller's ``busy``
error): a password in the user part, a ``password`` or ``sslpassword`` query parameter, and a
libpq keyword string (``host=h dbname=d``, a connection string, never a folder name) are
refused (``bad_store``, exit 2), and so is a fragment (``#password=...``: libpq has no use
for one, and it is masked whole wherever the value is shown). The password comes from ``PGPASSWORD`` or a ``.pgpass``-style
file (``PGPASSFILE``, default ``~/.pgpass``), which libpq reads itself. Every message that
shows a store value masks any credential in it, and a connection failure is a
``StoreUnavailable`` (exit 4) with a hint, never a traceback. Nothing here imports psycopg.
"""

from __future__ import annotations

import os
import re
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from flow.core.errors import OrchestratorError, UsageError

SCHEMES = ("postgresql://", "postgres://")
DRIVERS = ("psycopg",)  # SQLAlchemy's driver suffixes that mean this store's own driver
_SCHEME = re.compile(r"\s*([A-Za-z][A-Za-z0-9+.\-]*)://")
_USERINFO = re.compile(r"(?i)([a-z][a-z0-9+.\-]*://[^\s/?#@:]*):[^\s/?#@]*@")
# a password holding an unencoded ``#``, ``?`` or ``/`` (which end the URL's authority for a
# parser, so it finds no password): everything from the user's ``:`` to the last ``@`` is
# masked (a query value with an ``@`` behind a port is masked too: shown, never leaked)
_RAW_USERINFO = re.compile(r"(?s)(\s*[A-Za-z][A-Za-z0-9+.\-]*://[^/?#@:]*):([^@]*[#?/][^@]*)@")
MASK = "***"
SECRET_KEYS = frozenset({"password", "sslpassword"})  # libpq settings that hold a secret
LIBPQ_KEYS = frozenset({  # the keywords of a libpq connection string (PostgreSQL 17)
    "host", "hostaddr", "port", "dbname", "user", "password", "passfile", "require_auth",
    "channel_binding", "connect_timeout", "client_encoding", "options", "application_name",
    "fallback_application_name", "keepalives", "keepalives_idle", "keepalives_interval",
    "keepalives_count", "tcp_user_timeout", "replication", "gssencmode", "sslmode",
    "sslnegotiation", "requiressl", "sslcompression", "sslcert", "sslkey", "sslpassword",
    "sslcertmode", "sslrootcert", "sslcrl", "sslcrldir", "sslsni", "requirepeer",
    "ssl_min_protocol_version", "ssl_max_protocol_version", "krbsrvname", "gsslib",
    "gssdelegation", "service", "target_session_attrs", "load_balance_hosts"})
_PAIR = re.compile(r"\s*([A-Za-z_]+)\s*=\s*('(?:[^'\\]|\\.)*'?|(?:[^\s\\]|\\.)*)")
HINT = ("give --store as postgresql://USER@HOST:PORT/DATABASE (other libpq settings as "
        "?key=value) and the password in PGPASSWORD or a .pgpass-style file (PGPASSFILE, "
        "default ~/.pgpass: host:port:database:user:password, mode 0600): the URL is repeated "
        "in every printed command")


class StoreUnavailable(OrchestratorError):
    """The PostgreSQL store cannot be reached or refused the call (exit 4, nothing written)."""

    code = "store_unavailable"
    exit_code = 4


def is_keywords(value: str | None) -> bool:
    """Whether ``value`` is a libpq keyword string (``host=h dbname=d``), not a folder."""
    match = re.match(r"\s*([A-Za-z_]+)\s*=", str(value or ""))
    return bool(match) and match.group(1).lower() in LIBPQ_KEYS


def scheme_of(value: str | None) -> str | None:
    """The scheme of a ``SCHEME://...`` value, lower-cased (None for anything else)."""
    match = _SCHEME.match(str(value or ""))
    return match.group(1).lower() if match else None


def _postgres(scheme: str | None) -> bool:
    """Whether ``scheme`` names this store: postgresql or postgres, bare or +psycopg."""
    base, _, driver = (scheme or "").partition("+")
    return base in ("postgresql", "postgres") and driver in ("", *DRIVERS)


def is_url(value: str | None) -> bool:
    """Whether ``value`` names a store by URL or keyword string, not a folder: any
    ``SCHEME://`` value is a URL (one that is not PostgreSQL's is refused by ``check_url``)."""
    return bool(value) and (scheme_of(value) is not None or is_keywords(value))


def normal(url: str) -> str:
    """``url`` as libpq takes it: ``postgresql://`` for a scheme in capitals or with a
    ``+psycopg`` suffix (libpq reads only the two lower-case ones); others as given."""
    match = _SCHEME.match(url)
    if match is None or not _postgres(match.group(1).lower()) or \
            match.group(1) in ("postgresql", "postgres"):
        return url
    return "postgresql://" + url[match.end():]


def keywords(text: str) -> list[tuple[str, str]]:
    """The ``(key, value)`` pairs of a libpq keyword string, quotes and escapes undone."""
    pairs = []
    for key, raw in _PAIR.findall(text):
        if raw.startswith("'"):
            raw = raw[1:-1] if raw.endswith("'") and len(raw) > 1 else raw[1:]
        pairs.append((key.lower(), re.sub(r"\\(.)", r"\1", raw)))
    return pairs


def mask_url(url: str) -> str:
    """The store value with every credential replaced by ``***`` (for messages): the
    password of the user part (of any ``SCHEME://`` value, in any case), ``password`` /
    ``sslpassword`` in the query or keywords, and the whole fragment."""
    url = _RAW_USERINFO.sub(rf"\1:{MASK}@", str(url))
    if scheme_of(url) is None:
        if not is_keywords(url):
            return _USERINFO.sub(rf"\1:{MASK}@", url)
        return _PAIR.sub(lambda m: f" {m.group(1)}={MASK}" if m.group(1).lower() in
                         SECRET_KEYS else m.group(0), url).strip()
    try:
        parts = urlsplit(url.strip())
        query = parse_qsl(parts.query, keep_blank_values=True)
    except ValueError:
        return "<unparsable store URL>"
    if "#" in url:
        url = url.split("#", 1)[0] + "#" + MASK
        parts = parts._replace(fragment=MASK)
    if parts.password is None and not any(k.lower() in SECRET_KEYS for k, _ in query):
        return _USERINFO.sub(rf"\1:{MASK}@", url)
    if parts.password is not None:
        netloc = parts.netloc.rsplit("@", 1)
        parts = parts._replace(netloc=f"{netloc[0].split(':', 1)[0]}:{MASK}@{netloc[1]}")
    if any(k.lower() in SECRET_KEYS for k, _ in query):
        masked = [(k, MASK if k.lower() in SECRET_KEYS else v) for k, v in query]
        parts = parts._replace(query=urlencode(masked, safe="*"))
    return urlunsplit(parts)


def as_url(pairs: list[tuple[str, str]]) -> str:
    """The ``postgresql://`` URL of keyword pairs, without their secrets (for a hint)."""
    given = {k: v for k, v in pairs if k not in SECRET_KEYS}
    user = f"{quote(given.pop('user'), safe='')}@" if "user" in given else ""
    host = given.pop("host", "HOST")
    port = f":{given.pop('port')}" if "port" in given else ""
    db = quote(given.pop("dbname", "DATABASE"), safe="")
    query = f"?{urlencode(list(given.items()))}" if given else ""
    return f"postgresql://{user}{host}{port}/{db}{query}"


def _refused(url: str, why: str, hint: str = HINT) -> UsageError:
    return UsageError(f"store URL {mask_url(url)!r} {why}", hint, code="bad_store")


def check_url(url: str) -> str:
    """Return ``url`` as libpq takes it (``normal``) if it is a usable store URL;
    ``UsageError`` (exit 2) if not: a keyword string, another scheme or driver, a URL that
    cannot be parsed, names no host, carries a credential or a fragment."""
    scheme = scheme_of(url)
    if scheme is not None and not _postgres(scheme):
        base, _, driver = scheme.partition("+")
        why = (f"names the driver {driver!r}; this store connects with psycopg 3 itself"
               if base in ("postgresql", "postgres") else
               f"is a {scheme}:// URL, not a PostgreSQL one (a folder store is a plain path)")
        raise _refused(url, why, f"give postgresql://... (postgresql+psycopg:// is taken "
                                 f"too); {HINT}")
    if scheme is not None:
        url = normal(url.strip())
    if not url.startswith(SCHEMES):
        pairs = keywords(url)
        secret = "carries a password and " if any(k in SECRET_KEYS for k, _ in pairs) else ""
        raise _refused(url, f"is a libpq keyword string; it {secret}is refused",
                       f"give it as a URL without the password, e.g. --store "
                       f"{as_url(pairs)!r}; {HINT}")
    try:
        parts = urlsplit(url)
        _ = parts.port
        query = parse_qsl(parts.query, keep_blank_values=True)
    except ValueError as exc:
        # the parser's own words may quote a piece of the password ("Port could not be
        # cast to integer value as 'pa'"), so they are not repeated
        raise _refused(url, f"cannot be parsed ({type(exc).__name__}): a port that is no "
                            "number, or a character of the password that must be "
                            "percent-encoded (# ? / @ :)") from None
    if parts.password is not None:
        raise _refused(url, "carries a password")
    if parts.fragment or "#" in url:
        raise _refused(url, "has a fragment (#...), which libpq has no use for")
    secret = sorted({k.lower() for k, _ in query} & SECRET_KEYS)
    if secret:
        raise _refused(url, f"carries a secret in its query ({', '.join(secret)})")
    if not parts.hostname and not any(k.lower() in ("host", "hostaddr") for k, _ in query):
        raise _refused(url, "names no host")
    return url


def scrub(text: str) -> str:
    """``text`` with the password from the environment masked (libpq never prints it; this
    is the second belt)."""
    secret = os.environ.get("PGPASSWORD")
    text = _USERINFO.sub(rf"\1:{MASK}@", text)
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
