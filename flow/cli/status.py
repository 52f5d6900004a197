"""``orchestrator.py status``: every flow in a workspace, as a table or as JSON.

What it shows comes from the flows' files (states, errors, job logs), which may quote an
agent's or a command's text: every string is shown with secrets masked (``flow.core.redact``),
as the dashboard shows them, for the CLI and the MCP server's ``status`` tool alike.
"""

from __future__ import annotations

import calendar
import time
from pathlib import Path
from typing import Any

from flow.cli.inbox import human_age, refused, sleeping
from flow.core.naming import AHEAD_FILE
from workspace.jsonio import loads
from workspace.paths import STATE_FILE


def collect(root: Path) -> list[dict[str, Any]]:
    """One row per flow folder under ``root`` (unreadable states are listed, not hidden)."""
    rows: list[dict[str, Any]] = []
    if root.exists() and not root.is_dir():
        import errno

        from flow.core.errors import environment_fault

        fault = environment_fault(OSError(errno.ENOTDIR, "Not a directory", str(root)))
        assert fault is not None
        raise fault
    if not root.is_dir():
        return rows
    for path in sorted(root.rglob(STATE_FILE)):
        folder = path.parent
        if ".old-" in str(folder.relative_to(root)):
            continue
        row: dict[str, Any] = {"flow_id": str(folder.relative_to(root)), "path": str(folder)}
        try:
            row.update(describe(loads(path.read_bytes()), folder))
        except (OSError, ValueError, AttributeError) as exc:
            row.update(workflow=None, phase=None, unreadable=str(exc))
        row["sleeping"] = sleeping(folder)
        try:
            err = loads((folder / ".last_error.json").read_bytes())
            row["last_error"] = f"{err.get('code')}: {err.get('message')}"
        except (OSError, ValueError):
            row["last_error"] = None
        early = _ahead_job(folder)
        if early is not None and early["id"] not in {j["id"] for j in row.get("jobs") or []}:
            row["jobs"] = [*(row.get("jobs") or []), early]
        rows.append(row)
    for path in sorted(root.rglob(AHEAD_FILE)):
        folder = path.parent
        if (folder / STATE_FILE).exists() or ".old-" in str(folder.relative_to(root)):
            continue
        early = _ahead_job(folder)
        if early is None:
            continue
        start = early.pop("start", None) or {}
        rows.append({"flow_id": str(folder.relative_to(root)), "path": str(folder),
                     "workflow": start.get("workflow"), "phase": None, "revision": None,
                     "updated_at": None, "pending": [], "question": None, "finished": False,
                     "outcome": None, "age_seconds": None, "jobs": [early], "subject": None,
                     "last_error": None, "unsaved": True})
    return sorted(rows, key=lambda r: r["flow_id"])


def _ahead_job(folder: Path) -> dict[str, Any] | None:
    """The job a call started ahead for the flow in ``folder`` and no step recorded yet (the
    call ended first): as ``_jobs`` shows a job, ``started_ahead`` and ``finished`` added."""
    from flow.core.jobs import read_ahead

    raw = read_ahead(folder)
    if raw is None:
        return None
    from flow.core.proc import log_tail

    started = raw.get("started_at")
    last = log_tail(Path(str(raw.get("log_file"))), 1)
    done = (folder / "jobs" / f"{raw['job_id']}.result.json").exists()
    return {"id": raw["job_id"], "log_file": raw.get("log_file"),
            "elapsed_s": round(time.time() - started, 1) if isinstance(started, float)
            else None, "timeout_s": raw.get("timeout"), "last_line": last[0] if last else "",
            "started_ahead": True, "finished": done,
            **({"start": raw.get("start") or {}} if not (folder / STATE_FILE).exists() else {})}


def describe(raw: Any, folder: Path | None = None,
             allowed: Any = None) -> dict[str, Any]:
    """The status fields of one raw state (``AttributeError`` if it is no object). With the
    flow's ``folder``, a job whose own result file is there is finished, not running
    (``flow.cli.jobstate``); ``allowed(path)`` says which logs may be read (default: any the
    state names)."""
    from flow.cli.jobstate import anywhere, finished, job_views, progress, running

    pending = [t for t in raw.get("tasks", []) if t.get("status") == "pending"]
    views = job_views(raw.get("jobs"), folder, allowed or anywhere)
    return dict(
        workflow=raw.get("workflow"), phase=raw.get("phase"),
        revision=raw.get("revision"), updated_at=raw.get("updated_at"),
        pending=[t.get("task_id") for t in pending],
        question=(raw.get("question") or {}).get("question"),
        finished=raw.get("result") is not None,
        outcome=(raw.get("result") or {}).get("outcome"),
        age_seconds=_age(raw.get("updated_at")),
        jobs=[_brief(v) for v in running(views)],
        finished_jobs=[_brief(v) for v in finished(views)],
        progress=progress(raw, views),
        subject=subject(raw.get("workflow"), raw.get("data")),
    )


def _brief(view: dict[str, Any]) -> dict[str, Any]:
    """A job as ``status`` lists it: running (elapsed, last line) or finished (exit, end)."""
    keep = ("id", "phase", "log_file", "elapsed_s", "timeout_s", "last_line", "started_at",
            "code", "timed_out", "lost", "ended_at", "duration_s")
    return {k: view[k] for k in keep if k in view}

def subject(workflow: Any, data: Any) -> str | None:
    """What a flow works on, in a person's words: the test file, the command, the PR.

    Read from the raw ``data`` by the field names the built-in workflows use; a workflow
    without them (a plugin) shows no subject. The text is the flow's own input, shown as is
    (one line, cut at 100 characters).
    """
    if not isinstance(data, dict):
        return None
    text: str | None = None
    if data.get("rel") or (workflow == "refactor" and data.get("file")):
        text = f"file {data.get('rel') or data.get('file')}"
    elif data.get("repo") and isinstance(data.get("number"), int):
        text = f"PR {data['repo']}#{data['number']}"
    elif workflow == "reproduce" and data.get("command"):
        text = f"test {data['command']}"
    elif workflow == "reproduce" and data.get("batch_file"):
        text = f"batch {data['batch_file']}"
    elif workflow == "ingest" and data.get("repo"):
        pr = data.get("pr")
        text = f"{data.get('mode')} {data['repo']}" + (f"#{pr}" if pr else "")
    elif workflow == "review-queue" and data.get("day"):
        text = f"review batch of {data['day']}"
    if text is None:
        return None
    flat = " ".join(str(text).split())
    return flat if len(flat) <= 100 else flat[:97] + "..."


def _age(stamp: Any) -> int | None:
    try:
        return int(time.time() - calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")))
    except (TypeError, ValueError):
        return None


def steps(progress: Any) -> str:
    """`` (entry 3 of 10, shard 2 of 4 done)``: the step k of N of a flow's long work."""
    if not isinstance(progress, dict) or not progress:
        return ""
    parts = []
    if progress.get("batch"):
        parts.append(f"entry {progress['batch']['entry']} of {progress['batch']['of']}")
    if progress.get("jobs"):
        parts.append(f"{progress['jobs']['done']} of {progress['jobs']['of']} jobs done")
    return f" ({', '.join(parts)})"


HEAD = ("FLOW", "WORKS ON", "WORKFLOW", "PHASE", "PENDING", "AGE")
NOTE_HEAD = "STATE / LAST ERROR"
NOTE_ROOM = len(NOTE_HEAD)  # the least room the last column takes (a longer note goes below)
UNDER = "    "  # what a row's text too long for its line is indented by, on the lines below


def note(r: dict[str, Any]) -> str:
    """A flow's state in a few words: unreadable, its last error, done, who it waits on,
    its job, asleep until cron, stuck (``flow.cli.inbox``). A last error that only refused
    a call's input (a bad feed) leaves the state as it is and follows it, every word."""
    text = _state_note(r)
    if r.get("last_error") and refused(r) and not r.get("unreadable"):
        text = f"{text}; last call refused: {r['last_error']}"
    return text


def _state_note(r: dict[str, Any]) -> str:
    if r.get("unreadable"):
        return f"UNREADABLE: {r['unreadable']}"
    if r.get("last_error") and not refused(r):
        return f"error {r['last_error']}"
    if r.get("finished"):
        return f"done ({r.get('outcome') or 'finished'})"
    if r.get("question"):
        return "needs a person"
    if r.get("jobs"):  # a log's last line can be any length: two lines' worth at most
        from flow.cli.person import clip

        job = r["jobs"][0]
        state = "finished" if job.get("finished") else "running"
        text = (f"job {job['id']} {state} {human_age(int(job['elapsed_s'] or 0))}"
                f"{steps(r.get('progress'))}: {clip(job['last_line'], 160)}")
        if r.get("unsaved"):
            text = f"started ahead, not saved yet (--resume adopts it); {text}"
        return text
    if r.get("finished_jobs"):
        job = r["finished_jobs"][0]
        return (f"job {job['id']} finished (exit {job.get('code')}) at "
                f"{job.get('ended_at')}; --resume takes its result")
    if r.get("sleeping") and not r.get("pending"):
        return f"asleep until the next cron firing ({r['sleeping']})"
    if r.get("state") == "stuck":
        return f"stuck: nothing has moved it for {human_age(r.get('age_seconds'))}"
    return "waiting for tasks" if r.get("pending") else "ready to resume"


def table(rows: list[dict[str, Any]], root: Path | str, width: int = 100) -> str:
    """The flows as a table of at most ``width`` columns: one line per flow while it fits.

    A state or error too long for its row goes on the lines below it, wrapped between words
    (``flow.cli.person.wrap``), never cut; when the columns leave too little room for it,
    WORKS ON moves below the row too, and then every column but FLOW.
    """
    from flow.cli.person import wrap

    if not rows:
        return f"no flows in {root}\n"
    cells = [[r["flow_id"], r.get("subject") or "-", str(r.get("workflow")),
              str(r.get("phase")), str(len(r.get("pending") or [])),
              human_age(r.get("age_seconds"))] for r in rows]
    shown = list(range(len(HEAD)))
    for drop in ([1], [1, 2, 3, 4, 5]):  # WORKS ON below, then everything but FLOW
        if _span(HEAD, cells, shown) + NOTE_ROOM <= width:
            break
        shown = [i for i in range(len(HEAD)) if i not in drop]
    widths = {i: max(len(c[i]) for c in [list(HEAD), *cells]) for i in shown}
    lines = ["  ".join(HEAD[i].ljust(widths[i]) for i in shown) + "  " + NOTE_HEAD]
    for c, r in zip(cells, rows, strict=True):
        left = "  ".join(c[i].ljust(widths[i]) for i in shown) + "  "
        text = " ".join(note(r).split())
        below = [_moved(c, shown)] if len(shown) < len(HEAD) else []
        if len(left) + len(text) <= width:
            lines.append(left + text)
        else:
            lines.append(left.rstrip())
            below.append(text)
        for item in filter(None, below):
            lines.extend(wrap(item, width, UNDER))
    return "\n".join(lines) + "\n"


def _span(head: tuple[str, ...], cells: list[list[str]], shown: list[int]) -> int:
    return sum(max(len(c[i]) for c in [list(head), *cells]) + 2 for i in shown)


def _moved(c: list[str], shown: list[int]) -> str:
    """The columns of row ``c`` that did not fit beside FLOW, in words."""
    parts = [] if 2 in shown else [c[2], f"phase {c[3]}", f"{c[4]} pending", f"age {c[5]}"]
    if 1 not in shown and c[1] != "-":
        parts.append(f"works on {c[1]}")
    return ", ".join(parts)


def status(root: Path, harness: str, *, as_json: bool,
           rows: list[dict[str, Any]] | None = None,
           where: str | None = None, needs_me: bool = False,
           items: tuple[list[dict[str, Any]], dict[str, int]] | None = None
           ) -> dict[str, Any] | str:
    """Every flow of the file store under ``root`` (or the ``rows`` of another store), with
    secrets masked; ``needs_me``: only what needs a person, first things first
    (``flow.cli.inbox``), then the campaign ``items`` that do (the PostgreSQL store's
    expired leases and parked items, ``workspace.campaignstatus.attention``), counted too."""
    from flow.core.redact import redact_tree

    rows = redact_tree(collect(root) if rows is None else rows)
    counted: dict[str, int] | None = None
    listed: list[dict[str, Any]] = []
    if needs_me:
        from flow.cli.inbox import NEEDS_ME, counts, needs_me as inbox, shown

        counted = {k: v for k, v in counts(shown(rows)).items() if k in NEEDS_ME}
        rows = inbox(rows)
        if items is not None:
            listed = redact_tree(items[0])
            counted.update(items[1])
    if not as_json:
        from flow.cli.person import counted as n_of, width

        if counted is None:
            return table(rows, where or root, width())
        extra = counted.get("expired_lease", 0) + counted.get("parked", 0)
        leases = (f", {n_of(counted['expired_lease'], 'expired lease')}, "
                  f"{n_of(counted['parked'], 'parked item')}" if items is not None else "")
        needing = n_of(len(rows) + extra, "needs", "need")
        head = (f"{needing} a person: {counted['person']} asking, "
                f"{counted['error'] + counted['unreadable']} failed, {counted['stuck']} stuck"
                f"{leases}\n")
        return head + (table(rows, where or root, width()) if rows else "") + \
            item_lines(listed, extra, width())
    from flow.core.render import envelope

    return {**envelope(None, root, "done", harness), "flows": rows,
            **({"needs_me": counted} if counted is not None else {}),
            **({"campaign_items": listed} if items is not None and needs_me else {})}


def item_lines(items: list[dict[str, Any]], total: int, width: int) -> str:
    """The campaign items that need a person, one wrapped line each (``status --needs-me``
    on the PostgreSQL store), and how many more there are than listed."""
    from flow.cli.person import counted, wrap

    lines: list[str] = []
    for it in items:
        flow = f"flow {it['flow_id']}" if it.get("flow_id") else "no flow yet"
        if it["why"] == "lease expired":
            text = (f"campaign {it['campaign']} item {it['item']}: LEASE EXPIRED "
                    f"{it['expired_s_ago']:g} s ago (at {it['lease_until']}); held by "
                    f"{it['holder'] or '-'} on {it['host'] or '-'} (pid {it['pid'] or '-'}) "
                    f"since {it['since']}, {counted(it['claims'], 'claim')}, {flow}; the next "
                    "worker's campaign command takes it over")
        else:
            text = (f"campaign {it['campaign']} item {it['item']}: PARKED at {it['parked_at']} "
                    f"after {counted(it['claims'], 'claim')} (last holder {it['holder'] or '-'} on "
                    f"{it['host'] or '-'}), {flow}; a person looks at why before it runs "
                    "again")
        if it.get("last_error"):
            text += f"; last error: {it['last_error']}"
        lines.extend(wrap(text, width, "    ", ""))
    if total > len(items):
        more = counted(total - len(items), "more campaign item")
        lines.append(f"... and {more} (status --campaign NAME lists each)")
    return "".join(line + "\n" for line in lines)
