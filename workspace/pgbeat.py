"""The heartbeat of a call that holds a flow's lock in the PostgreSQL store, and of the
campaign lease it works under: a thread of the call itself that, while the call works (a
test run of minutes in the foreground included), says so in the database, on the database's
clock.

- The lock: the ``locks`` row's ``alive_at`` is set to ``now()`` every beat. A caller that
  finds the flow locked by a holder silent for ``ORCHESTRATOR_LOCK_STALE_S`` (default 30 s;
  the same on every machine of a fleet) ends that holder's session
  (``pg_terminate_backend``) and takes the lock: a machine that vanished or a process that
  was stopped mid-call no longer keeps a flow for as long as TCP keepalive allows. A holder
  that was only slow and comes back is refused (``fenced``) by its save: the fence counter
  moved.
- The lease: the item's ``lease_until`` is set to ``now()`` plus the lease's length every
  beat, under the call's token (``workspace.campaign``): a call whose own run outlasts its
  lease keeps its item.

The beats run every third of the shorter of the two lengths (at least every 0.5 s), on a
session of the thread's own, opened at the first beat: a call shorter than that opens none.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any

from flow.core.errors import SettingError

ENV_STALE = "ORCHESTRATOR_LOCK_STALE_S"
DEFAULT_STALE_S = 30.0
MIN_PERIOD_S = 0.5


def stale_seconds(env: Mapping[str, str] | None = None) -> float:
    """``ORCHESTRATOR_LOCK_STALE_S``: how long a lock holder may stay silent before a caller
    that wants the flow ends its session (default 30 s); ``SettingError`` if unusable."""
    raw = (env if env is not None else os.environ).get(ENV_STALE, "").strip()
    if not raw:
        return DEFAULT_STALE_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 2.0 <= value <= 86400.0:
        raise SettingError(ENV_STALE, raw, "a number of seconds from 2 to 86400")
    return value


class Beat:
    """The heartbeat thread of one held lock (and, once ``lease`` is given, of one lease)."""

    def __init__(self, url: str, flow_id: str, fence: int, stale_s: float) -> None:
        self.url, self.flow_id, self.fence = url, flow_id, fence
        self.period = max(MIN_PERIOD_S, stale_s / 3)
        self.leased: tuple[str, str, int] | None = None
        self.beats = 0  # beats that reached the database
        self.lease_lost = False  # a beat found the token no longer the item's
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._conn: Any = None
        self._thread = threading.Thread(target=self._run, name=f"beat {flow_id}", daemon=True)

    def start(self) -> Beat:
        self._thread.start()
        return self

    def lease(self, campaign: str, item: str, token: int, lease_s: float) -> None:
        """Renew the lease of ``item`` under ``token`` too, at least every third of
        ``lease_s``."""
        self.leased = (campaign, item, token)
        self.period = min(self.period, max(MIN_PERIOD_S, lease_s / 3))
        self._wake.set()  # the wait under way may be longer than the new period

    def stop(self) -> None:
        """End the beats (the call is letting go of the lock); never waits on the database."""
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=0.2)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self._wake.wait(self.period)
                if self._wake.is_set():
                    self._wake.clear()
                    continue  # the period changed: wait the new one
                if self._stop.is_set():
                    break
                self._beat()
        finally:
            if self._conn is not None:
                try:
                    self._conn.close()
                except Exception:  # noqa: BLE001 - a broken session may fail to close
                    pass

    def _beat(self) -> None:
        import psycopg

        from workspace.pgconn import session

        try:
            if self._conn is None or self._conn.closed or self._conn.broken:
                self._conn = session(self.url, self.period * 2, part="beat")
            conn = self._conn
            conn.execute("UPDATE locks SET alive_at = now() WHERE flow_id = %s AND fence = %s",
                         (self.flow_id, self.fence))
            if self.leased is not None and not self.lease_lost:
                name, item, token = self.leased
                cur = conn.execute(
                    "UPDATE campaign_items c SET lease_until = greatest(c.lease_until, now() + "
                    "coalesce(c.lease_s, m.lease_s) * interval '1 second') FROM campaigns m "
                    "WHERE m.name = c.campaign AND c.campaign = %s AND c.item_id = %s AND "
                    "c.token = %s AND c.state = 'leased'", (name, item, token))
                self.lease_lost = cur.rowcount != 1  # the save refuses, naming the holder
            self.beats += 1
        except (psycopg.Error, ValueError):
            # The store is away: the next beat tries again on a new session. The call's own
            # statements meet the same outage and answer it (store_unavailable).
            try:
                if self._conn is not None:
                    self._conn.close()
            except Exception:  # noqa: BLE001
                pass
            self._conn = None


def end_stale(conn: Any, flow_id: str, key: int, stale_s: float) -> dict[str, Any] | None:
    """End the session holding ``flow_id``'s lock (advisory ``key``) when its holder has been
    silent for ``stale_s``: the ``locks`` row must name that very session (its backend) and
    its last beat be older than that. Returns who was ended (host, pid, command, silent_s)
    or None (the holder is alive, or the row names another session)."""
    hi, lo = (key >> 32) & 0xFFFFFFFF, key & 0xFFFFFFFF
    row = conn.execute(
        "SELECT k.host, k.pid, k.command, extract(epoch FROM now() - "
        "coalesce(k.alive_at, k.since)), pg_terminate_backend(l.pid) FROM pg_locks l "
        "JOIN locks k ON k.flow_id = %s AND k.backend = l.pid "
        "WHERE l.locktype = 'advisory' AND l.granted AND l.classid = %s::bigint::oid AND "
        "l.objid = %s::bigint::oid AND l.objsubid = 1 AND l.database = (SELECT oid FROM "
        "pg_database WHERE datname = current_database()) AND coalesce(k.alive_at, k.since) < "
        "now() - %s * interval '1 second'", (flow_id, hi, lo, stale_s)).fetchone()
    if row is None or not row[4]:
        return None
    return {"host": row[0], "pid": row[1], "command": row[2], "silent_s": round(float(row[3]), 1)}
