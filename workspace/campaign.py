"""Campaigns: a named list of items that many harnesses work on, split by leases in the
PostgreSQL store.

An item is the start command of one flow (``argv``: ``reproduce --command ...``, ``refactor
FILE --pytorch-dir ...``, any workflow's start words). ``claim`` gives a worker the item it
already leases (renewed), else the next free one or one whose lease ran out (its harness died),
taken with ``SELECT ... FOR UPDATE SKIP LOCKED`` so two workers never get the same item. Each
claim bumps the item's ``token``: ``renew`` and ``complete`` only act with the current token,
so a worker whose lease expired cannot finish an item another worker took over: no item is
done twice, none is lost. Every time is the database's (``now()``), never a machine's clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from flow.core.errors import OrchestratorError, UsageError
from workspace.jsonio import dumps

DEFAULT_LEASE_S = 600.0
DEFAULT_MAX_CLAIMS = 3
_UTC = "to_char({} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"


class LeaseLost(OrchestratorError):
    """The worker's lease on a campaign item ran out and another worker took the item."""

    code = "lease_lost"
    exit_code = 3


@dataclass(frozen=True)
class Lease:
    """A worker's hold on one item: ``token`` fences every later write about it."""

    campaign: str
    item_id: str
    token: int
    argv: list[str]
    flow_id: str | None
    claims: int
    lease_until: str
    lease_s: float = DEFAULT_LEASE_S  # this holder's lease length
    campaign_lease_s: float = DEFAULT_LEASE_S  # the length the campaign was defined with
    asked_s: float = DEFAULT_LEASE_S  # what the worker asked for, before the floor


@dataclass(frozen=True)
class Defined:
    """What a definition did: the campaign's items now, how many it added, and whether the
    campaign had items and every one of them was finished (done, dropped or parked) before."""

    items: int
    added: int
    was_finished: bool


def define(conn: Any, name: str, kind: str, items: list[tuple[str, dict[str, Any]]],
           lease_s: float = DEFAULT_LEASE_S) -> Defined:
    """Create campaign ``name`` with ``items`` (id, payload) if new; add missing items.

    Defining the same campaign again (every worker runs the same command) adds nothing twice.
    A campaign of another kind under the same name, or an item id it has with other start
    words, is refused (nothing added), and so is a name outside ``flow.core.bounds``'s rule
    (``bad_campaign_name``: no slash, space or quote). Returns what it did (``Defined``): a
    later definition that adds new ids, to a finished campaign too, says how many.
    """
    from flow.core.bounds import campaign_name

    campaign_name(name)
    with conn.transaction():
        conn.execute("INSERT INTO campaigns (name, kind, lease_s) VALUES (%s, %s, %s) "
                     "ON CONFLICT (name) DO NOTHING", (name, kind, lease_s))
        row = conn.execute("SELECT kind FROM campaigns WHERE name = %s", (name,)).fetchone()
        if row[0] != kind:
            raise UsageError(f"campaign {name!r} exists and is a {row[0]} campaign, not {kind}",
                             "pick another --campaign name, or run the command it was made "
                             "with", code="campaign_kind")
        known = dict(conn.execute("SELECT item_id, payload FROM campaign_items WHERE "
                                  "campaign = %s AND item_id = ANY(%s)",
                                  (name, [i for i, _ in items])).fetchall())
        differ = [i for i, payload in items if i in known and known[i] != payload]
        if differ:
            shown = ", ".join(repr(i) for i in differ[:10])
            more = f" and {len(differ) - 10} more" if len(differ) > 10 else ""
            raise UsageError(
                f"campaign {name!r} already has item(s) {shown}{more} with other start words "
                "than this definition gives them; nothing was added",
                "a campaign's items never change: give the new items other ids, or define "
                "another campaign (another NAME) for the new list", code="campaign_conflict",
                items=differ[:50])
        start, before, open_ = conn.execute(
            "SELECT coalesce(max(position), -1) + 1, count(*), count(*) FILTER (WHERE state "
            "IN ('free', 'leased')) FROM campaign_items WHERE campaign = %s",
            (name,)).fetchone()
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO campaign_items (campaign, item_id, position, payload) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT (campaign, item_id) DO NOTHING",
                [(name, item_id, start + i, dumps(payload, indent=False).decode())
                 for i, (item_id, payload) in enumerate(items)
                 if item_id not in known])
        total = int(conn.execute("SELECT count(*) FROM campaign_items WHERE campaign = %s",
                                 (name,)).fetchone()[0])
        return Defined(total, total - int(before), int(before) > 0 and int(open_) == 0)


def claim(conn: Any, name: str, worker: str, host: str, pid: int,
          lease_s: float | None = None, max_claims: int = DEFAULT_MAX_CLAIMS,
          floor_s: float = 0.0) -> Lease | None:
    """The item ``worker`` holds (lease renewed), else the next free or expired one; None
    when nothing is left to take (every item done, dropped or parked, or held by a live
    lease).

    ``lease_s`` is this worker's lease length (None: the campaign's), never shorter than
    ``floor_s`` (the call's foreground budget: one call never outlasts its lease, even where
    its heartbeat cannot reach the database). An expired item that was claimed
    ``max_claims`` times already is parked for a person instead of claimed again (a poison
    item that kills every worker that takes it must not loop forever), its last error saying
    so (the error before it kept after it)."""
    until = _UTC.format("c.lease_until")
    asked = "coalesce(%(lease)s::float8, m.lease_s)"
    length = f"greatest({asked}, %(floor)s::float8)"
    params = {"lease": lease_s, "floor": floor_s, "name": name, "worker": worker,
              "host": host, "pid": pid, "max": max_claims}
    back = (f"RETURNING c.item_id, c.token, c.payload, c.flow_id, c.claims, {until}, "
            f"c.lease_s, m.lease_s, {asked}")
    with conn.transaction():
        row = conn.execute(
            f"UPDATE campaign_items c SET lease_until = now() + {length} * interval '1 second', "
            f"lease_s = {length}, holder_host = %(host)s, holder_pid = %(pid)s FROM campaigns m "
            "WHERE m.name = c.campaign AND c.campaign = %(name)s AND c.state = 'leased' AND "
            f"c.holder = %(worker)s AND c.lease_until > now() {back}", params).fetchone()
        if row is None:
            conn.execute(
                "UPDATE campaign_items SET state = 'parked', parked_at = now(), "
                "last_error = left(format('parked: claimed %%s without being finished; '"
                "'the lease of the last holder %%s (host %%s, pid %%s) ran out at %%s', "
                "CASE WHEN claims = 1 THEN 'once' ELSE claims || ' times' END, "
                "holder, holder_host, holder_pid, "
                f"{_UTC.format('lease_until')}) || coalesce('; its last error: ' || "
                "last_error, ''), 500), lease_until = NULL WHERE campaign = %(name)s AND "
                "state = 'leased' AND lease_until <= now() AND claims >= %(max)s", params)
            row = conn.execute(
                "WITH next AS (SELECT campaign, item_id FROM campaign_items WHERE "
                "campaign = %(name)s AND state IN ('free', 'leased') AND (state = 'free' OR "
                "lease_until <= now()) AND NOT (refused_by IS NOT DISTINCT FROM %(worker)s "
                "AND refused_until > now()) ORDER BY position LIMIT 1 FOR UPDATE SKIP LOCKED) "
                "UPDATE campaign_items c SET state = 'leased', token = c.token + 1, "
                "holder = %(worker)s, holder_host = %(host)s, holder_pid = %(pid)s, "
                f"leased_at = now(), lease_until = now() + {length} * interval '1 second', "
                f"lease_s = {length}, claims = c.claims + 1 "
                "FROM next, campaigns m WHERE c.campaign = next.campaign AND "
                f"c.item_id = next.item_id AND m.name = c.campaign {back}", params).fetchone()
    if row is None:
        return None
    item_id, token, payload, flow_id, claims, lease_until, length_s, defined, wanted = row
    return Lease(name, item_id, int(token), list(payload["argv"]), flow_id, int(claims),
                 lease_until, float(length_s), float(defined), float(wanted))


def bind(conn: Any, lease: Lease, flow_id: str) -> None:
    """Record which flow works on the item (so calls on that flow renew its lease)."""
    conn.execute("UPDATE campaign_items SET flow_id = %s WHERE campaign = %s AND item_id = %s "
                 "AND token = %s", (flow_id, lease.campaign, lease.item_id, lease.token))


def renew(conn: Any, campaign: str, item_id: str, token: int) -> bool:
    """Extend the lease from now; False if the token is no longer the item's (lost)."""
    cur = conn.execute(
        "UPDATE campaign_items c SET lease_until = now() + "
        "coalesce(c.lease_s, m.lease_s) * interval '1 second' "
        "FROM campaigns m WHERE m.name = c.campaign AND c.campaign = %s AND c.item_id = %s "
        "AND c.token = %s AND c.state = 'leased'", (campaign, item_id, token))
    return cur.rowcount == 1


def complete(conn: Any, campaign: str, item_id: str, token: int,
             result: dict[str, Any]) -> bool:
    """Mark the item done with ``result``, only under the current token; False if lost. The
    holder stays named (who finished it) and the item's last error goes (it is done). Done
    again under the same token (the holder's repeated last call) is True and changes
    nothing: an item is marked done exactly once."""
    cur = conn.execute(
        "UPDATE campaign_items SET state = 'done', done_count = done_count + 1, result = %s, "
        "done_at = now(), lease_until = NULL, last_error = NULL WHERE campaign = %s AND "
        "item_id = %s AND token = %s AND state = 'leased'",
        (dumps(result, indent=False).decode(), campaign, item_id, token))
    if cur.rowcount == 1:
        return True
    row = conn.execute("SELECT state = 'done' FROM campaign_items WHERE campaign = %s AND "
                       "item_id = %s AND token = %s", (campaign, item_id, token)).fetchone()
    return bool(row and row[0])


class Held(NamedTuple):
    """A lease ``hold`` found current: its item, token, state and length in seconds."""

    campaign: str
    item: str
    token: int
    state: str
    lease_s: float


def hold(conn: Any, flow_id: str, token: int, campaign: str | None = None,
         item_id: str | None = None) -> Held:
    """Check that ``token`` is the current lease of the item ``flow_id`` works on (or of
    ``campaign``/``item_id``, for a flow not yet begun) and renew it from now: the fencing
    check of every call that carries a token, and its heartbeat. Returns the ``Held`` lease;
    its ``state`` is ``done`` when the holder itself finished the item. Raises
    ``LeaseLost`` naming the current holder when another claim took the item (or it was
    given back or parked): nothing is renewed then."""
    where = ("c.campaign = %s AND c.item_id = %s", (campaign, item_id)) if item_id else \
        ("c.flow_id = %s", (flow_id,))
    row = conn.execute(
        "UPDATE campaign_items c SET lease_until = now() + "
        "coalesce(c.lease_s, m.lease_s) * interval '1 second' FROM campaigns m "
        f"WHERE m.name = c.campaign AND {where[0]} AND c.token = %s AND c.state = 'leased' "
        "RETURNING c.campaign, c.item_id, coalesce(c.lease_s, m.lease_s)",
        (*where[1], token)).fetchone()
    if row is not None:
        return Held(row[0], row[1], token, "leased", float(row[2]))
    rows = conn.execute(
        f"SELECT c.campaign, c.item_id, c.token, c.state, c.holder, c.holder_host, "
        f"c.holder_pid, {_UTC.format('c.leased_at')}, {_UTC.format('c.lease_until')} "
        f"FROM campaign_items c WHERE {where[0]} ORDER BY c.state = 'leased' DESC",
        where[1]).fetchall()
    for r in rows:
        if int(r[2]) == token and r[3] == "done":
            return Held(r[0], r[1], token, "done", 0.0)
    raise lost(flow_id, token, rows[0] if rows else None)


def lost(flow_id: str, token: int, row: Any) -> LeaseLost:
    """The error of a call whose token ``token`` is not the item's current lease."""
    if row is None:
        return LeaseLost(f"lease {token} names no campaign item of flow {flow_id!r}",
                         "drop this flow's work; run the campaign command for the next item",
                         campaign=None, holder=None)
    name, item, current, state, holder, host, pid, since, until = row
    who = {"worker": holder, "host": host, "pid": pid, "since": since, "lease_until": until}
    now = {"leased": f"worker {holder!r} (host {host}, pid {pid}) holds it since {since}, "
                     f"until {until}",
           "done": f"it was done by worker {holder!r} (host {host})",
           "parked": "it is parked for a person (claimed too many times)",
           "dropped": "a person dropped it from the campaign",
           "free": "it went back to the pool"}.get(str(state), f"it is {state}")
    return LeaseLost(
        f"campaign {name!r} item {item!r}: this call's lease (token {token}) is no longer the "
        f"item's (token {current}): {now}; nothing was done",
        "stop working on this item (drop its tasks and results: the holder does them); run "
        "the campaign command for your next item",
        campaign={"name": name, "item": item, "token": token, "current_token": int(current),
                  "state": state}, holder=who if state in ("leased", "done") else None)


def give_back(conn: Any, lease: Lease, worker: str, error: str) -> bool:
    """Put the item back in the pool (free, neither lost nor done) because this worker's
    machine lacks what its flow needs; that worker is not offered it again for one lease
    length (so its next call takes another item), every other worker is. False if the
    lease was no longer this worker's."""
    cur = conn.execute(
        "UPDATE campaign_items c SET state = 'free', holder = NULL, holder_host = NULL, "
        "holder_pid = NULL, lease_until = NULL, last_error = %s, refused_by = %s, "
        "refused_until = now() + m.lease_s * interval '1 second' FROM campaigns m "
        "WHERE m.name = c.campaign AND c.campaign = %s AND c.item_id = %s AND c.token = %s "
        "AND c.state = 'leased'",
        (error[:500], worker, lease.campaign, lease.item_id, lease.token))
    return cur.rowcount == 1


def note_error(conn: Any, campaign: str, item_id: str, token: int, error: str) -> None:
    """Keep the last error of a call on the item (the lease stays)."""
    conn.execute("UPDATE campaign_items SET last_error = %s WHERE campaign = %s AND "
                 "item_id = %s AND token = %s", (error[:500], campaign, item_id, token))


def requeue(conn: Any, name: str, item_id: str, token: int) -> dict[str, Any]:
    """A person puts item ``item_id`` back in the pool (free, its claims counted from 0, its
    flow kept: the next holder resumes it), fenced by ``token``: the item's token when the
    person looked (``status --campaign`` shows it). A parked, dropped, free or leased item
    can be requeued (a holder's lease ends: its later writes are refused, ``lease_lost``); a
    done one cannot. The token is bumped. Returns the item's new state."""
    return _by_person(conn, name, item_id, token, "requeue",
                      "state = 'free', claims = 0, holder = NULL, holder_host = NULL, "
                      "holder_pid = NULL, lease_until = NULL, parked_at = NULL, "
                      "refused_by = NULL, refused_until = NULL")


def drop(conn: Any, name: str, item_id: str, token: int) -> dict[str, Any]:
    """A person drops item ``item_id`` from the campaign: no worker takes it again and the
    campaign no longer waits for it (it ends without it); fenced by ``token`` as ``requeue``,
    a holder's lease ends with it. A done item cannot be dropped."""
    return _by_person(conn, name, item_id, token, "drop",
                      "state = 'dropped', lease_until = NULL")


def _by_person(conn: Any, name: str, item_id: str, token: int, what: str,
               change: str) -> dict[str, Any]:
    with conn.transaction():
        row = conn.execute("SELECT token, state, holder, claims FROM campaign_items WHERE "
                           "campaign = %s AND item_id = %s FOR UPDATE",
                           (name, item_id)).fetchone()
        if row is None:
            raise UsageError(f"campaign {name!r} has no item {item_id!r}",
                             f"run 'status --campaign {name}' to list its items",
                             code="no_such_item")
        current, state, holder, claims = int(row[0]), str(row[1]), row[2], int(row[3])
        if current != token:
            raise UsageError(
                f"campaign {name!r} item {item_id!r}: token {token} is stale (the item's is "
                f"{current}, it is {state} now"
                f"{f', held by {holder!r}' if state == 'leased' else ''}); nothing was changed",
                f"run 'status --campaign {name}' to see the item as it is now, then run "
                f"--{what} again with the token it shows", code="stale_token",
                campaign={"name": name, "item": item_id, "token": token,
                          "current_token": current, "state": state})
        if state == "done":
            raise UsageError(f"campaign {name!r} item {item_id!r} is done; a done item is "
                             f"never {'requeued' if what == 'requeue' else 'dropped'}",
                             "define another campaign to run its flow again", code="item_done")
        conn.execute(f"UPDATE campaign_items SET {change}, token = token + 1, last_error = "
                     "left(%s || coalesce('; before: ' || last_error, ''), 500) WHERE "
                     "campaign = %s AND item_id = %s",
                     (f"{'dropped' if what == 'drop' else 'requeued'} by a person (it was "
                      f"{state}, claimed {'once' if claims == 1 else f'{claims} times'})", name, item_id))
        after = conn.execute("SELECT token, state FROM campaign_items WHERE campaign = %s AND "
                             "item_id = %s", (name, item_id)).fetchone()
    return {"item": item_id, "was": state, "state": after[1], "token": int(after[0])}
