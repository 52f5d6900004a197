"""The fleet at a glance: every flow of a PostgreSQL store, and ``status --campaign NAME``
(items by state, who holds which lease and whether it is alive, parked items, each done
item's outcome, last errors, throughput, what is left, a reproduce campaign's report;
``--campaign all`` for every campaign of the store), as a table or as JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flow.core.errors import UsageError
from workspace.jsonio import loads


def collect_store(url: str) -> list[dict[str, Any]]:
    """One row per flow in the store (the same fields as the file store's ``status``)."""
    from flow.cli.campaigns import guard
    from flow.cli.status import describe
    from workspace.pgconn import connect

    conn = connect(url)
    rows = guard(url, "listing the flows", lambda: conn.execute(
        "SELECT flow_id, state, last_error FROM flows WHERE flow_id NOT LIKE %s "
        "ORDER BY flow_id", ("%.old-%",)).fetchall())
    out: list[dict[str, Any]] = []
    for flow_id, state, last_error in rows:
        row: dict[str, Any] = {"flow_id": flow_id, "path": None}
        try:
            row.update(describe(loads(bytes(state))))
        except (ValueError, AttributeError) as exc:
            row.update(workflow=None, phase=None, unreadable=str(exc))
        err = loads(bytes(last_error)) if last_error is not None else None
        row["last_error"] = f"{err.get('code')}: {err.get('message')}" if err else None
        out.append(row)
    return out


def store_status(url: str, root: Path, harness: str, *, as_json: bool,
                 needs_me: bool = False) -> dict[str, Any] | str:
    """``status`` on the PostgreSQL store: the file store's table and JSON, rows from the DB;
    ``needs_me`` adds the campaign items that need a person (expired leases, parked items)."""
    from flow.cli.status import status
    from workspace.pgerrors import mask_url

    items = None
    if needs_me:
        from flow.cli.campaigns import guard
        from workspace.campaignstatus import attention
        from workspace.pgconn import connect

        items = guard(url, "reading the campaigns' expired leases", attention, connect(url))
    return status(root, harness, as_json=as_json, rows=collect_store(url), where=mask_url(url),
                  needs_me=needs_me, items=items)


def campaign_status(name: str, url: str | None, root: Path, harness: str, *,
                    as_json: bool) -> dict[str, Any] | str:
    from flow.cli.campaigns import guard
    from workspace import campaignstatus as camp
    from workspace.pgconn import connect

    if url is None:
        raise UsageError("status --campaign needs the PostgreSQL store",
                         "add --store postgresql://USER@HOST:PORT/DB (or export "
                         "ORCHESTRATOR_STORE)")
    conn = connect(url)
    wanted = guard(url, "listing campaigns", camp.names, conn) if name == "all" else [name]
    infos = []
    for n in wanted:
        info = guard(url, "reading the campaign", camp.summary, conn, n)
        if info is None:
            raise UsageError(f"no campaign {n!r} in the store",
                             "run 'status --campaign all' to list the campaigns")
        if info["kind"] == "reproduce":  # a fleet-wide batch: report.md's buckets
            from flow.cli.campaignreport import write_report

            info["report"] = guard(url, "reading the campaign's verdicts", write_report, conn,
                                   n, root)
        infos.append(info)
    if as_json:
        from flow.core.render import envelope

        return {**envelope(None, root, "done", harness), "campaigns": infos}
    from flow.cli.person import width

    return "".join(table(i, width()) for i in infos) or "no campaigns in the store\n"


def table(info: dict[str, Any], width: int = 100) -> str:
    """One campaign in lines of at most ``width`` columns, wrapped between words."""
    from flow.cli.person import counted, wrap

    s = info["by_state"]
    rate = info["throughput_per_hour"]
    lines = wrap(f"campaign {info['campaign']} ({info['kind']}): "
                 f"{counted(info['items'], 'item')}, "
                 f"{s['done']} done, {s['leased']} leased ({info['expired_leases']} expired), "
                 f"{s['free']} free, {s.get('parked', 0)} parked"
                 f"{', ' + str(s['dropped']) + ' dropped' if s.get('dropped') else ''}; "
                 f"{info['left']} left; "
                 + (f"{rate} items/hour" if rate is not None else "no rate yet (done items span "
                    f"under a minute)" if s["done"] else "no item done yet"), width, "    ", "")
    for lease in info["leases"]:
        alive = ("alive" if lease["alive"] else "NOT ALIVE (lease expired)") + \
            f", last seen {lease['last_seen_s_ago']:g} s ago"
        lines.extend(wrap(f"{lease['item']}: {lease['holder']} on {lease['host']}, {alive}; "
                          f"since {lease['since']}, until {lease['lease_until']}, claims "
                          f"{lease['claims']}, token {lease.get('token', '-')}, flow "
                          f"{lease['flow_id'] or '-'}",
                          width, "      ", "  "))
    for item in info.get("done", []):
        verdict = (item.get("verdict") or {}).get("verdict")
        shown = item.get("outcome") if verdict in (None, item.get("outcome")) else \
            f"{item.get('outcome')} ({verdict})"
        lines.extend(wrap(f"done {item['item']}: {shown or '-'} by {item['by'] or '-'} at "
                          f"{item['done_at']}, flow {item['flow_id'] or '-'}",
                          width, "      ", "  "))
    for item in info.get("parked", []):
        lines.extend(wrap(f"PARKED {item['item']}: claimed {counted(item['claims'], 'time')} "
                          f"without finishing (last holder {item['last_holder'] or '-'} on "
                          f"{item['host'] or '-'}, flow {item['flow_id'] or '-'}, token "
                          f"{item.get('token', '-')}); a person looks at why, then runs "
                          f"campaign {info['campaign']} --requeue {item['item']} --lease "
                          f"{item.get('token', '-')} (or --drop)", width, "      ", "  "))
    for item in info.get("dropped", []):
        lines.extend(wrap(f"dropped {item['item']}: flow {item['flow_id'] or '-'}", width,
                          "      ", "  "))
    for err in info["errors"]:
        lines.extend(wrap(f"last error of {err['item']}: {err['error']}", width, "      ", "  "))
    report = info.get("report")
    if report:
        counts = ", ".join(f"{k}: {v}" for k, v in report["counts"].items())
        lines.extend(wrap(f"report ({counts}): {report['report_path']}", width, "      ", "  "))
    return "\n".join(lines) + "\n"
