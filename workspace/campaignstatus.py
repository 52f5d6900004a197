"""What an operator reads about a campaign (``status --campaign``): items by state, who holds
which lease and whether that holder is alive (it renewed its lease within the lease's
length: a poll of its flow, and a call's own heartbeat, renew it), the items parked for a
person (with the token that requeues or drops them) and the items dropped, each done item's
outcome (a reproduce verdict, refactored or unchanged) and who finished it, the last errors
of items not done, throughput and what is left. Every time is the database's."""

from __future__ import annotations

from typing import Any

_UTC = "to_char({} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"


def summary(conn: Any, name: str) -> dict[str, Any] | None:
    """The campaign at a glance (see the module docstring); None if there is no such
    campaign."""
    meta = conn.execute(f"SELECT kind, lease_s, {_UTC.format('created_at')} FROM campaigns "
                        "WHERE name = %s", (name,)).fetchone()
    if meta is None:
        return None
    counts = dict(conn.execute("SELECT state, count(*) FROM campaign_items WHERE campaign = %s "
                               "GROUP BY state", (name,)).fetchall())
    leases = [
        {"item": r[0], "holder": r[1], "host": r[2], "pid": r[3], "since": r[4],
         "lease_until": r[5], "expired": r[6], "alive": not r[6], "flow_id": r[7],
         "claims": r[8], "lease_s": r[9], "last_seen_s_ago": round(float(r[10]), 1),
         "token": int(r[11])}
        for r in conn.execute(
            f"SELECT c.item_id, c.holder, c.holder_host, c.holder_pid, "
            f"{_UTC.format('c.leased_at')}, {_UTC.format('c.lease_until')}, "
            "c.lease_until <= now(), c.flow_id, c.claims, coalesce(c.lease_s, m.lease_s), "
            "greatest(0, extract(epoch FROM now() - (c.lease_until - coalesce(c.lease_s, "
            "m.lease_s) * interval '1 second'))), c.token FROM campaign_items c JOIN "
            "campaigns m ON "
            "m.name = c.campaign WHERE c.campaign = %s AND c.state = 'leased' "
            "ORDER BY c.position", (name,)).fetchall()]
    parked = [
        {"item": r[0], "claims": r[1], "last_holder": r[2], "host": r[3], "flow_id": r[4],
         "parked_at": r[5], "last_error": r[6], "token": int(r[7])}
        for r in conn.execute(
            f"SELECT item_id, claims, holder, holder_host, flow_id, {_UTC.format('parked_at')}, "
            "last_error, token FROM campaign_items WHERE campaign = %s AND state = 'parked' "
            "ORDER BY position", (name,)).fetchall()]
    dropped = [{"item": r[0], "flow_id": r[1], "token": int(r[2])} for r in conn.execute(
        "SELECT item_id, flow_id, token FROM campaign_items WHERE campaign = %s AND "
        "state = 'dropped' ORDER BY position", (name,)).fetchall()]
    done = [
        {"item": r[0], "by": r[1], "done_at": r[2], "flow_id": r[3], "claims": r[4],
         **outcome(r[5] or {})}
        for r in conn.execute(
            f"SELECT item_id, holder, {_UTC.format('done_at')}, flow_id, claims, result "
            "FROM campaign_items WHERE campaign = %s AND state = 'done' ORDER BY position",
            (name,)).fetchall()]
    soonest = conn.execute("SELECT extract(epoch FROM min(lease_until) - now()) FROM "
                           "campaign_items WHERE campaign = %s AND state = 'leased'",
                           (name,)).fetchone()[0]
    errors = [{"item": r[0], "error": r[1]} for r in conn.execute(
        "SELECT item_id, last_error FROM campaign_items WHERE campaign = %s AND "
        "last_error IS NOT NULL AND state NOT IN ('done', 'dropped') ORDER BY position",
        (name,)).fetchall()]
    span = conn.execute(
        "SELECT extract(epoch FROM max(done_at) - min(leased_at)) FROM campaign_items "
        "WHERE campaign = %s AND state = 'done'", (name,)).fetchone()
    seconds = float(span[0] or 0.0)
    total = sum(counts.values())
    return {
        "campaign": name, "kind": meta[0], "lease_s": meta[1], "created_at": meta[2],
        "items": total,
        "by_state": {k: int(counts.get(k, 0)) for k in ("free", "leased", "done", "parked",
                                                         "dropped")},
        "expired_leases": sum(1 for lease in leases if lease["expired"]), "leases": leases,
        "parked": parked, "dropped": dropped, "done": done, "errors": errors,
        "left": total - len(done) - len(dropped),
        "next_lease_end_s": None if soonest is None else max(0.0, round(float(soonest), 1)),
        # a rate over a span shorter than a minute says nothing (ten items done in 0.1 s
        # would read as 360,000 an hour): None until the done items span RATE_SPAN_S
        "throughput_per_hour": round(len(done) * 3600.0 / seconds, 1)
        if seconds >= RATE_SPAN_S else None,
        "done_span_s": round(seconds, 1),
    }


RATE_SPAN_S = 60.0


def outcome(result: dict[str, Any]) -> dict[str, Any]:
    """A done item's outcome as recorded when it was finished: the flow's ``outcome``
    (``REPRODUCED``..., ``refactored``, ``unchanged``) and a reproduce flow's verdict."""
    out: dict[str, Any] = {"outcome": result.get("outcome")}
    if isinstance(result.get("verdict"), dict):
        out["verdict"] = result["verdict"]
    return out


def names(conn: Any) -> list[str]:
    return [r[0] for r in conn.execute("SELECT name FROM campaigns ORDER BY name").fetchall()]


def items(conn: Any, name: str) -> list[tuple[str, list[str], str, dict[str, Any] | None]]:
    """Every item of the campaign in its order: (id, start words, state, result)."""
    return [(r[0], list((r[1] or {}).get("argv") or []), r[2], r[3]) for r in conn.execute(
        "SELECT item_id, payload, state, result FROM campaign_items WHERE campaign = %s "
        "ORDER BY position", (name,)).fetchall()]


ATTENTION_MAX = 200


def attention(conn: Any, limit: int = ATTENTION_MAX) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The campaign items of every campaign that need a person (the inbox of ``status
    --needs-me`` and the dashboard's list): a lease that expired (its holder stopped renewing
    it: the harness died or was cut off, and no worker has taken the item over since) and an
    item parked after too many claims. Returns the first ``limit`` of them (expired leases
    first, the longest expired first, then parked ones by campaign and position) and the
    counts of both (``expired_lease``, ``parked``)."""
    rows = conn.execute(
        "SELECT c.campaign, c.item_id, c.state, c.holder, c.holder_host, c.holder_pid, "
        f"{_UTC.format('c.leased_at')}, {_UTC.format('c.lease_until')}, "
        f"{_UTC.format('c.parked_at')}, "
        "greatest(0, extract(epoch FROM now() - c.lease_until)), c.flow_id, c.claims, "
        "c.last_error, count(*) FILTER (WHERE c.state = 'leased') OVER (), "
        "count(*) FILTER (WHERE c.state = 'parked') OVER () "
        "FROM campaign_items c WHERE (c.state = 'leased' AND c.lease_until <= now()) "
        "OR c.state = 'parked' "
        "ORDER BY c.state = 'parked', c.lease_until, c.campaign, c.position LIMIT %s",
        (limit,)).fetchall()
    items = [{"campaign": r[0], "item": r[1],
              "why": "lease expired" if r[2] == "leased" else "parked",
              "holder": r[3], "host": r[4], "pid": r[5], "since": r[6], "lease_until": r[7],
              "parked_at": r[8], "expired_s_ago": None if r[2] != "leased" else
              round(float(r[9] or 0), 1), "flow_id": r[10], "claims": r[11],
              "last_error": (r[12] or "")[:300] or None} for r in rows]
    counted = {"expired_lease": int(rows[0][13]) if rows else 0,
               "parked": int(rows[0][14]) if rows else 0}
    return items, counted
