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
from typing import Any

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


def define(conn: Any, name: str, kind: str, items: list[tuple[str, dict[str, Any]]],
           lease_s: float = DEFAULT_LEASE_S) -> int:
    """Create campaign ``name`` with ``items`` (id, payload) if new; add missing items.

    Defining the same campaign again (every worker runs the same command) adds nothing twice.
    A campaign of another kind under the same name, or an item id it has with other start
    words, is refused (nothing added), and so is a name outside ``flow.core.bounds``'s rule
    (``bad_campaign_name``: no slash, space or quote). Returns the number of items.
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
        start = conn.execute("SELECT coalesce(max(position), -1) + 1 FROM campaign_items "
                             "WHERE campaign = %s", (name,)).fetchone()[0]
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO campaign_items (campaign, item_id, position, payload) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT (campaign, item_id) DO NOTHING",
                [(name, item_id, start + i, dumps(payload, indent=False).decode())
                 for i, (item_id, payload) in enumerate(items)])
        return int(conn.execute("SELECT count(*) FROM campaign_items WHERE campaign = %s",
                                (name,)).fetchone()[0])


def claim(conn: Any, name: str, worker: str, host: str, pid: int,
          lease_s: float | None = None, max_claims: int = DEFAULT_MAX_CLAIMS) -> Lease | None:
    """The item ``worker`` holds (lease renewed), else the next free or expired one; None
    when nothing is left to take (every item done or parked, or held by a live lease).

    ``lease_s`` is this worker's lease length (None: the campaign's). An expired item that
    was claimed ``max_claims`` times already is parked for a person instead of claimed again
    (a poison item that kills every worker that takes it must not loop forever)."""
    until = _UTC.format("c.lease_until")
    length = "coalesce(%s::float8, m.lease_s) * interval '1 second'"
    with conn.transaction():
        row = conn.execute(
            f"UPDATE campaign_items c SET lease_until = now() + {length}, lease_s = %s, "
            "holder_host = %s, holder_pid = %s FROM campaigns m WHERE m.name = c.campaign AND "
            "c.campaign = %s AND c.state = 'leased' AND c.holder = %s AND c.lease_until > now() "
            f"RETURNING c.item_id, c.token, c.payload, c.flow_id, c.claims, {until}, "
            "coalesce(c.lease_s, m.lease_s), m.lease_s",
            (lease_s, lease_s, host, pid, name, worker)).fetchone()
        if row is None:
            conn.execute("UPDATE campaign_items SET state = 'parked', parked_at = now(), "
                         "lease_until = NULL WHERE campaign = %s AND state = 'leased' AND "
                         "lease_until <= now() AND claims >= %s", (name, max_claims))
            row = conn.execute(
                "WITH next AS (SELECT campaign, item_id FROM campaign_items WHERE campaign = %s "
                "AND (state = 'free' OR (state = 'leased' AND lease_until <= now())) "
                "AND NOT (refused_by IS NOT DISTINCT FROM %s AND refused_until > now()) "
                "ORDER BY position LIMIT 1 FOR UPDATE SKIP LOCKED) "
                "UPDATE campaign_items c SET state = 'leased', token = c.token + 1, "
                "holder = %s, holder_host = %s, holder_pid = %s, leased_at = now(), "
                f"lease_until = now() + {length}, lease_s = %s, claims = c.claims + 1 "
                "FROM next, campaigns m WHERE c.campaign = next.campaign AND "
                "c.item_id = next.item_id AND m.name = c.campaign "
                f"RETURNING c.item_id, c.token, c.payload, c.flow_id, c.claims, {until}, "
                "coalesce(c.lease_s, m.lease_s), m.lease_s",
                (name, worker, worker, host, pid, lease_s, lease_s)).fetchone()
    if row is None:
        return None
    item_id, token, payload, flow_id, claims, lease_until, length, defined = row
    return Lease(name, item_id, int(token), list(payload["argv"]), flow_id, int(claims),
                 lease_until, float(length), float(defined))


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


def hold(conn: Any, flow_id: str, token: int, campaign: str | None = None,
         item_id: str | None = None) -> tuple[str, str, int, str]:
    """Check that ``token`` is the current lease of the item ``flow_id`` works on (or of
    ``campaign``/``item_id``, for a flow not yet begun) and renew it from now: the fencing
    check of every call that carries a token, and its heartbeat. Returns (campaign, item,
    token, state); ``state`` is ``done`` when the holder itself finished the item. Raises
    ``LeaseLost`` naming the current holder when another claim took the item (or it was
    given back or parked): nothing is renewed then."""
    where = ("c.campaign = %s AND c.item_id = %s", (campaign, item_id)) if item_id else \
        ("c.flow_id = %s", (flow_id,))
    row = conn.execute(
        "UPDATE campaign_items c SET lease_until = now() + "
        "coalesce(c.lease_s, m.lease_s) * interval '1 second' FROM campaigns m "
        f"WHERE m.name = c.campaign AND {where[0]} AND c.token = %s AND c.state = 'leased' "
        "RETURNING c.campaign, c.item_id", (*where[1], token)).fetchone()
    if row is not None:
        return row[0], row[1], token, "leased"
    rows = conn.execute(
        f"SELECT c.campaign, c.item_id, c.token, c.state, c.holder, c.holder_host, "
        f"c.holder_pid, {_UTC.format('c.leased_at')}, {_UTC.format('c.lease_until')} "
        f"FROM campaign_items c WHERE {where[0]} ORDER BY c.state = 'leased' DESC",
        where[1]).fetchall()
    for r in rows:
        if int(r[2]) == token and r[3] == "done":
            return r[0], r[1], token, "done"
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
