"""``orchestrator.py status``: every flow in a workspace, as a table or as JSON."""

from __future__ import annotations

import calendar
import time
from pathlib import Path
from typing import Any

from flow.cli.inbox import human_age, refused, sleeping
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
        rows.append(row)
    return rows


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


def table(rows: list[dict[str, Any]], root: Path | str) -> str:
    if not rows:
        return f"no flows in {root}\n"
    head = ("FLOW", "WORKS ON", "WORKFLOW", "PHASE", "PENDING", "AGE", "STATE / LAST ERROR")
    lines = [head]
    for r in rows:
        if r.get("unreadable"):
            note = f"UNREADABLE: {r['unreadable']}"
        elif r.get("last_error") and not refused(r):
            note = f"error {r['last_error']}"
        elif r.get("finished"):
            note = f"done ({r.get('outcome') or 'finished'})"
        elif r.get("question"):
            note = "needs a person"
        elif r.get("jobs"):
            job = r["jobs"][0]
            note = (f"job {job['id']} running {human_age(int(job['elapsed_s'] or 0))}"
                    f"{steps(r.get('progress'))}: {job['last_line']}")
        elif r.get("finished_jobs"):
            job = r["finished_jobs"][0]
            note = (f"job {job['id']} finished (exit {job.get('code')}) at "
                    f"{job.get('ended_at')}; --resume takes its result")
        elif r.get("sleeping") and not r.get("pending"):
            note = f"asleep until the next cron firing ({r['sleeping']})"
        elif r.get("state") == "stuck":
            note = f"stuck: nothing has moved it for {human_age(r.get('age_seconds'))}"
        else:
            note = "waiting for tasks" if r.get("pending") else "ready to resume"
        lines.append((r["flow_id"], r.get("subject") or "-", str(r.get("workflow")),
                      str(r.get("phase")),
                      str(len(r.get("pending") or [])), human_age(r.get("age_seconds")),
                      note[:100]))
    widths = [max(len(row[i]) for row in lines) for i in range(len(head) - 1)]
    out = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)) + "  " + row[-1]
           for row in lines]
    return "\n".join(out) + "\n"


def status(root: Path, harness: str, *, as_json: bool,
           rows: list[dict[str, Any]] | None = None,
           where: str | None = None, needs_me: bool = False) -> dict[str, Any] | str:
    """Every flow of the file store under ``root`` (or the ``rows`` of another store);
    ``needs_me``: only what needs a person, first things first (``flow.cli.inbox``)."""
    if rows is None:
        rows = collect(root)
    counted: dict[str, int] | None = None
    if needs_me:
        from flow.cli.inbox import NEEDS_ME, counts, needs_me as inbox, shown

        counted = {k: v for k, v in counts(shown(rows)).items() if k in NEEDS_ME}
        rows = inbox(rows)
    if not as_json:
        if counted is None:
            return table(rows, where or root)
        head = (f"{len(rows)} need a person: {counted['person']} asking, "
                f"{counted['error'] + counted['unreadable']} failed, {counted['stuck']} stuck\n")
        return head + (table(rows, where or root) if rows else "")
    from flow.core.render import envelope

    return {**envelope(None, root, "done", harness), "flows": rows,
            **({"needs_me": counted} if counted is not None else {})}
