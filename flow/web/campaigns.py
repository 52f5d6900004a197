"""The campaigns of the PostgreSQL store as the dashboard shows them (``serve --store``).

A campaign's page: its items by state, who holds which lease since when and until when
(expired ones marked), each item's outcome (the state, the flow it drove, the result its
last holder recorded, when it was done, its last error), throughput and what is left, and
the campaign's report: the counts of the outcomes its done items recorded. The figures are
``workspace.campaignstatus.summary``'s (the same ``status --campaign`` prints); the item rows are
read here, read-only, by one query each. psycopg is imported for a URL only.

The item table is filtered like the list of flows: by state (``ITEM_STATES``: ``expired`` is
a leased item whose lease ran out) and by a search whose words must all be found in the
item's id, flow id, holder, outcome or last error (``choose``), and cut into pages of
``flow.cli.inbox.PAGE``.
"""

from __future__ import annotations

import json
from typing import Any

ITEM_STATES = ("free", "leased", "expired", "done", "parked")


def names(url: str) -> list[str]:
    from flow.cli.campaigns import guard
    from workspace import campaignstatus as camp
    from workspace.pgconn import connect

    return list(guard(url, "listing campaigns", camp.names, connect(url)))


def campaign_view(url: str, name: str) -> dict[str, Any] | None:
    """Everything the campaign's page shows, or None when there is no such campaign."""
    from flow.cli.campaigns import guard
    from workspace import campaignstatus as camp
    from workspace.pgconn import connect

    conn = connect(url)
    info = guard(url, "reading the campaign", camp.summary, conn, name)
    if info is None:
        return None
    rows = guard(url, "reading the campaign's items", lambda: conn.execute(
        "SELECT item_id, state, flow_id, result, "
        "to_char(done_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), last_error, "
        "claims, holder, state = 'leased' AND lease_until <= now() FROM campaign_items "
        "WHERE campaign = %s ORDER BY position", (name,)).fetchall())
    items = []
    outcomes: dict[str, int] = {}
    for item_id, state, flow_id, result, done_at, last_error, claims, holder, expired in rows:
        outcome = _outcome(result)
        if state == "done":
            outcomes[outcome or "done"] = outcomes.get(outcome or "done", 0) + 1
        items.append({"item": item_id, "state": state, "flow_id": flow_id, "outcome": outcome,
                      "result": json.dumps(result, sort_keys=True, default=str)[:300]
                      if result is not None else "", "done_at": done_at,
                      "last_error": (last_error or "")[:300], "claims": claims,
                      "holder": holder, "expired": bool(expired)})
    return {**info, "item_rows": items, "report": sorted(outcomes.items())}


def choose(items: list[dict[str, Any]], state: str = "", q: str = "") -> list[dict[str, Any]]:
    """The item rows a filter keeps: ``state`` one of ``ITEM_STATES`` (``leased`` keeps the
    expired ones too), ``q`` words all found in the item's id, flow id, holder, outcome or
    last error (any case)."""
    words = q.lower().split()
    out = []
    for it in items:
        if state == "expired" and not it["expired"] or \
                state and state != "expired" and it["state"] != state:
            continue
        hay = " ".join(str(it.get(k) or "") for k in ("item", "flow_id", "holder", "outcome",
                                                        "last_error")).lower()
        if all(w in hay for w in words):
            out.append(it)
    return out


def _outcome(result: Any) -> str | None:
    if isinstance(result, dict):
        for key in ("outcome", "verdict", "status"):
            if isinstance(result.get(key), str):
                return str(result[key])
    return None
