"""The list of flows as the dashboard and ``status --needs-me`` show it: one word of state per
flow, what needs a person first, search, filters and pages.

``state_of`` names what a flow waits on (error, done, person, job, cron: asleep until the
next cron firing, agent, ready, stuck, unreadable). The inbox is what needs a person: a question (``need_human``), a last error or
a state that cannot be read (a refused feed or answer is no error: the flow keeps waiting on
what it waited on, and the list notes the refusal in one line), and a stuck flow (not finished, no job running, no question,
untouched for ``ORCHESTRATOR_STUCK_S`` seconds, default an hour: nobody drives it). The list
puts those first (in that order, then the rest by flow id), counts them, filters by state,
workflow and a search over the flow id and what it works on, and cuts pages of ``PAGE``.
Pure functions over the index's summaries (``flow.web.index``); nothing is read here. On the
PostgreSQL store the campaign items that need a person (expired leases, parked items) join
the inbox beside these flows (``workspace.campaignstatus.attention``), under the same
filters (``choose_items``).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

STATES = ("person", "error", "unreadable", "stuck", "job", "cron", "agent", "ready", "done")
NEEDS_ME = ("person", "error", "unreadable", "stuck")
RANK = {s: i for i, s in enumerate(STATES)}
PAGE = 100
STUCK_S = 3600.0
# a call refused for its input (a feed or an answer that did not validate, a busy lock): the
# flow itself is as healthy as before and keeps waiting on what it waited on
# (every ``feed_*`` code, and these)
REFUSED = frozenset({"answer_rejected", "usage", "busy", "bad_input", "bad_task_id",
                     "already_applied", "foreign_feed", "invalid_feed", "bad_name"})


def refused(row: dict[str, Any]) -> str | None:
    """The first line of the row's last error when it only refused a call's input, else
    None (a real error, or none)."""
    err = row.get("last_error")
    code = str(err).split(":", 1)[0] if err else ""
    if not code or not (code in REFUSED or code.startswith("feed_")):
        return None
    first = str(err).splitlines()[0]
    return first if len(first) <= 160 else first[:157] + "..."


def stuck_after() -> float:
    from flow.core.bounds import Range, setting

    return float(setting(os.environ, "ORCHESTRATOR_STUCK_S",
                         Range(1, 365 * 86400, whole=False, unit="of seconds"), STUCK_S))


def state_of(row: dict[str, Any], age: float | None = None, stuck_s: float = STUCK_S) -> str:
    """One word for what a flow waits on."""
    if row.get("unreadable"):
        return "unreadable"
    if row.get("last_error") and not refused(row):
        return "error"
    if row.get("finished"):
        return "done"
    if row.get("question"):
        return "person"
    if row.get("jobs"):
        return "job"
    if age is not None and age > stuck_s:
        return "stuck"
    if row.get("sleeping") and not row.get("pending"):
        return "cron"
    return "agent" if row.get("pending") else "ready"


def _age(row: dict[str, Any], now: float) -> int | None:
    import calendar

    if isinstance(row.get("updated_ts"), int):  # parsed once by the index
        return int(now - row["updated_ts"])
    try:
        stamp = calendar.timegm(time.strptime(str(row.get("updated_at")), "%Y-%m-%dT%H:%M:%SZ"))
    except ValueError:
        return None
    return int(now - stamp)


def shown(rows: list[dict[str, Any]], now: float | None = None) -> list[dict[str, Any]]:
    """Each summary copied with its ``state``, ``age_seconds``, ``age``, ``updated_epoch``
    and running jobs' ``elapsed_s`` as of ``now``, what needs a person first."""
    now = time.time() if now is None else now
    stuck_s = stuck_after()
    out = []
    for row in rows:
        age = _age(row, now)
        jobs = [{**j, "elapsed_s": round(now - j["started_at"], 1)
                 if isinstance(j.get("started_at"), float) else j.get("elapsed_s")}
                for j in row.get("jobs") or []]
        item = {**row, "jobs": jobs, "age_seconds": age, "age": human_age(age),
                "updated_epoch": None if age is None else int(now) - age}
        item["state"] = state_of(item, age, stuck_s)
        item["refused"] = refused(item)
        out.append(item)
    out.sort(key=lambda r: (RANK.get(r["state"], len(RANK)), r["flow_id"]))
    return out


def counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    """How many flows are in each state (every state named, zeros included)."""
    out = dict.fromkeys(STATES, 0)
    for row in rows:
        out[row["state"]] = out.get(row["state"], 0) + 1
    return out


def choose(rows: list[dict[str, Any]], *, state: str = "", workflow: str = "", q: str = "",
           needs_me: bool = False) -> list[dict[str, Any]]:
    """The rows a filter keeps (``q``: words all found in the flow id or the subject)."""
    words = q.lower().split()
    out = []
    for r in rows:
        if needs_me and r["state"] not in NEEDS_ME:
            continue
        if state and r["state"] != state or workflow and r.get("workflow") != workflow:
            continue
        hay = f"{r['flow_id']} {r.get('subject') or ''}".lower()
        if all(w in hay for w in words):
            out.append(r)
    return out


def choose_items(items: list[dict[str, Any]], *, state: str = "", workflow: str = "",
                 q: str = "") -> list[dict[str, Any]]:
    """The campaign items (``workspace.campaignstatus.attention``) the list's filter keeps:
    each needs a person, so a filter on any other state leaves none (``person``, ``error``
    and the rest name a flow's state, which an item has not); ``workflow`` is its flow's
    (the flow id's first part: an item that has no flow yet has none); ``q``: words all found
    in the campaign, the item id, the flow id or the last error."""
    words = q.lower().split()
    out = []
    for it in items:
        flow_id = str(it.get("flow_id") or "")
        if state or workflow and flow_id.split("/", 1)[0] != workflow:
            continue
        hay = f"{it.get('campaign')} {it.get('item')} {flow_id} {it.get('last_error') or ''}"
        if all(w in hay.lower() for w in words):
            out.append(it)
    return out


def page_of(rows: list[dict[str, Any]], page: int, size: int = PAGE
            ) -> tuple[list[dict[str, Any]], int, int]:
    """Rows of page ``page`` (from 1, clamped), that page and the number of pages."""
    pages = max(1, -(-len(rows) // size))
    page = min(max(1, page), pages)
    return rows[(page - 1) * size: page * size], page, pages


def stamp_of(updated_at: Any) -> int | None:
    """Epoch seconds of a state's ``updated_at`` (None when it is missing or malformed)."""
    import calendar

    try:
        return calendar.timegm(time.strptime(str(updated_at), "%Y-%m-%dT%H:%M:%SZ"))
    except ValueError:
        return None


def sleeping(folder: Path | None) -> str | None:
    """How a flow sleeps on cron (``every */7 * * * *``), when the call that printed its
    ``cron_job.json`` came after the state's last save (the flow answered schedule_cron and
    nothing moved it since); else None."""
    from workspace.jsonio import loads

    if folder is None:
        return None
    try:
        cron = folder / "cron_job.json"
        if cron.stat().st_mtime_ns < (folder / "flow_state.json").stat().st_mtime_ns:
            return None
        job = loads(cron.read_bytes())
    except (OSError, ValueError):
        return None
    interval = job.get("interval") if isinstance(job, dict) else None
    return f"every {interval}" if interval else "on its cron job"


def human_age(seconds: int | None) -> str:
    if seconds is None:
        return "?"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def needs_me(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The inbox: what needs a person, first things first, with why."""
    why = {"person": "asks a person", "error": "failed", "unreadable": "state unreadable",
           "stuck": "stuck"}
    return [{**r, "why": why[r["state"]]} for r in shown(rows) if r["state"] in NEEDS_ME]
