"""One connection per process to the PostgreSQL store, the schema checked when it opens.

psycopg 3 is imported here only, and only when a ``postgresql://`` store is used (the file
store and its ``--resume`` fast path never load it). A failure to connect is a
``StoreUnavailable`` (exit 4) naming the masked URL, with a hint.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from workspace.pgerrors import unavailable
from workspace.pgschema import ensure_schema

if TYPE_CHECKING:
    import psycopg

ENV_CONNECT_TIMEOUT = "ORCHESTRATOR_STORE_CONNECT_TIMEOUT"

_CONNECTIONS: dict[tuple[int, str], Any] = {}  # (pid, url): a forked child opens its own


def connect(url: str, fresh: bool = False) -> psycopg.Connection[Any]:
    """This process's connection to ``url`` (autocommit; transactions are explicit)."""
    key = (os.getpid(), url)
    conn = None if fresh else _CONNECTIONS.get(key)
    if conn is not None and not conn.closed and not conn.broken:
        return conn
    import psycopg

    timeout = os.environ.get(ENV_CONNECT_TIMEOUT, "").strip() or "10"
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=int(float(timeout)),
                               application_name="skill-orchestrator")
    except (psycopg.Error, ValueError) as exc:
        raise unavailable(url, exc, "connecting") from None
    ensure_schema(conn, url)
    _CONNECTIONS[key] = conn
    return conn


def drop(url: str) -> None:
    """Forget (and close) this process's connection to ``url``."""
    conn = _CONNECTIONS.pop((os.getpid(), url), None)
    if conn is not None:
        try:
            conn.close()
        except Exception:  # noqa: BLE001 - a broken connection may fail to close; it is gone
            pass
