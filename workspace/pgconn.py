"""One connection per process to the PostgreSQL store, the schema checked when it opens.

psycopg 3 is imported here only, and only when a ``postgresql://`` store is used (the file
store and its ``--resume`` fast path never load it). A failure to connect is a
``StoreUnavailable`` (exit 4) naming the masked URL, with a hint. Every statement runs under
a ``statement_timeout`` of what is left of the call's foreground budget (``statement_s``): a
statement stuck behind another session's lock ends as ``store_timeout`` (exit 3), not after
the harness gave up on the call.

A machine that vanishes (powered off, cut from the network: no FIN ever comes) must not keep
its sessions, and the row locks of a transaction it was in, for as long as the kernel's TCP
keepalive defaults allow (about 2 h 11 min). Every session asks the server to probe its
client (``tcp_keepalives_idle``/``_interval``/``_count``, ``tcp_user_timeout``) and to end a
transaction left idle (``idle_in_transaction_session_timeout``), and libpq probes the server
the same way: a dead peer is found within ``DEAD_PEER_S``. A process that is alive but
stopped (paused, swapped out) answers TCP probes from its kernel: its flow locks end by the
lock's own heartbeat instead (``workspace.pgbeat``).
"""

from __future__ import annotations

import os
import weakref
from typing import TYPE_CHECKING, Any

from workspace.pgerrors import unavailable
from workspace.pgschema import ensure_schema

if TYPE_CHECKING:
    import psycopg

ENV_CONNECT_TIMEOUT = "ORCHESTRATOR_STORE_CONNECT_TIMEOUT"

_CONNECTIONS: dict[tuple[int, str], Any] = {}  # (pid, url): a forked child opens its own
_OPENED: set[str] = set()  # a connection opened in this process: a write may have happened


KEEPALIVE_IDLE_S = 10  # a silent connection is probed after this long,
KEEPALIVE_INTERVAL_S = 5  # then every this long,
KEEPALIVE_COUNT = 3  # and given up after this many unanswered probes
DEAD_PEER_S = KEEPALIVE_IDLE_S + KEEPALIVE_INTERVAL_S * KEEPALIVE_COUNT  # 25 s
IDLE_IN_TRANSACTION_S = 30  # a transaction is a few statements; one left idle this long is lost
SESSION = ("SELECT set_config('tcp_keepalives_idle', %s, false), "
           "set_config('tcp_keepalives_interval', %s, false), "
           "set_config('tcp_keepalives_count', %s, false), "
           "set_config('tcp_user_timeout', %s, false), "
           "set_config('idle_in_transaction_session_timeout', %s, false), "
           "set_config('statement_timeout', %s, false)")

FLOOR_S = 1.0  # a save after a step that spent the budget still gets this long to commit
SLACK_S = 0.5  # how far the set timeout may run past what is left before it is set again
_TIMEOUTS: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()
# connection -> the statement_timeout it has now, in seconds


def statement_s() -> float:
    """The statement timeout for now: what is left of this call's foreground budget
    (``flow.core.proc``), never under ``FLOOR_S``."""
    from flow.core import proc

    try:
        left = proc.remaining()
    except ValueError:  # a bad budget setting is the CLI's error to report, not ours
        left = proc.DEFAULT_FOREGROUND_S
    return max(FLOOR_S, left)


def _bound(conn: Any, url: str) -> None:
    """Keep the session's ``statement_timeout`` within what is left of the budget, so a
    statement stuck behind another session's row lock ends (``store_timeout``) in time."""
    import psycopg

    want = statement_s()
    have = _TIMEOUTS.get(conn)
    if have is not None and want <= have <= want + SLACK_S:
        return
    try:
        conn.execute(f"SET statement_timeout = {int(want * 1000)}")
    except psycopg.Error as exc:
        raise unavailable(url, exc, "setting the statement timeout") from None
    _TIMEOUTS[conn] = want


def connect(url: str, fresh: bool = False) -> psycopg.Connection[Any]:
    """This process's connection to ``url`` (autocommit; transactions are explicit), its
    statement timeout bounded by the foreground budget."""
    key = (os.getpid(), url)
    conn = None if fresh else _CONNECTIONS.get(key)
    if conn is not None and not conn.closed and not conn.broken:
        if not conn.info.transaction_status:  # idle: not inside a transaction block
            _bound(conn, url)
        return conn
    import psycopg

    want = statement_s()
    try:
        conn = session(url, want)
    except (psycopg.Error, ValueError) as exc:
        raise unavailable(url, exc, "connecting", nothing_written=not _OPENED) from None
    _TIMEOUTS[conn] = want
    ensure_schema(conn, url)
    _CONNECTIONS[key] = conn
    _OPENED.add(url)
    return conn


#: ``application_name`` of every session (``pg_stat_activity`` shows it; the store URL's own
#: ``application_name`` instead, when it gives one): a call's, and with a word after it, the
#: sessions of a part that keeps one of its own: ``beat`` (a lock holder's heartbeat,
#: ``workspace.pgbeat``) and ``dashboard`` (the flow version the dashboard reads on its
#: event loop, ``flow.web.source``)
APPLICATION = "skill-orchestrator"


def _session_args(url: str, statement_timeout_s: float,
                  part: str = "") -> tuple[dict[str, Any], tuple[str, ...]]:
    """The connect arguments of a session to ``url`` (of ``part``, see ``APPLICATION``) and
    the values its ``SESSION`` sets."""
    from psycopg.conninfo import conninfo_to_dict

    from flow.core.bounds import Range, setting

    timeout = setting(os.environ, ENV_CONNECT_TIMEOUT, Range(1, 3600, unit="of seconds"), 10)
    given = conninfo_to_dict(url)
    probes = {k: v for k, v in (("keepalives", 1), ("keepalives_idle", KEEPALIVE_IDLE_S),
                                ("keepalives_interval", KEEPALIVE_INTERVAL_S),
                                ("keepalives_count", KEEPALIVE_COUNT),
                                ("tcp_user_timeout", DEAD_PEER_S * 1000)) if k not in given}
    values = (str(KEEPALIVE_IDLE_S), str(KEEPALIVE_INTERVAL_S), str(KEEPALIVE_COUNT),
              str(DEAD_PEER_S * 1000), str(IDLE_IN_TRANSACTION_S * 1000),
              str(int(statement_timeout_s * 1000)))
    return dict(autocommit=True, connect_timeout=int(timeout),
                application_name=f"{given.get('application_name') or APPLICATION} {part}".strip(),
                **probes), values


#: ``SESSION`` for a server before 12, which has no tcp_user_timeout (its value left out)
SESSION_BEFORE_12 = SESSION.replace("set_config('tcp_user_timeout', %s, false), ", "")


def session(url: str, statement_timeout_s: float = 0.0, part: str = "") -> psycopg.Connection[Any]:
    """A new autocommit session to ``url`` whose dead peer, either side, is found within
    ``DEAD_PEER_S`` (keepalive settings the URL itself gives win on the client side), its
    ``statement_timeout`` set in the same round trip (0: the server's), named for ``part``
    (``APPLICATION``); a ``psycopg.Error`` or ``ValueError`` if it cannot be had."""
    import psycopg

    kwargs, values = _session_args(url, statement_timeout_s, part)
    conn = psycopg.connect(url, **kwargs)
    try:
        try:
            conn.execute(SESSION, values)
        except psycopg.errors.UndefinedObject:
            conn.execute(SESSION_BEFORE_12, values[:3] + values[4:])
    except psycopg.Error:
        conn.close()
        raise
    return conn


async def asession(url: str, statement_timeout_s: float = 0.0,
                   part: str = "") -> psycopg.AsyncConnection[Any]:
    """``session`` for an asyncio caller (the dashboard reads a flow's version on its event
    loop): the same settings, the same errors."""
    import psycopg

    kwargs, values = _session_args(url, statement_timeout_s, part)
    conn = await psycopg.AsyncConnection.connect(url, **kwargs)
    try:
        try:
            await conn.execute(SESSION, values)
        except psycopg.errors.UndefinedObject:
            await conn.execute(SESSION_BEFORE_12, values[:3] + values[4:])
    except psycopg.Error:
        await conn.close()
        raise
    return conn


def drop(url: str) -> None:
    """Forget (and close) this process's connection to ``url``."""
    conn = _CONNECTIONS.pop((os.getpid(), url), None)
    if conn is not None:
        try:
            conn.close()
        except Exception:  # noqa: BLE001 - a broken connection may fail to close; it is gone
            pass


def close_all() -> None:
    """Close every connection this process opened (a call that ends without the
    interpreter's teardown ends its sessions cleanly first)."""
    for url in [u for pid, u in _CONNECTIONS if pid == os.getpid()]:
        drop(url)
