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
            row.update(describe(loads(path.read_bytes())))
        except (OSError, ValueError, AttributeError) as exc:
            row.update(workflow=None, phase=None, unreadable=str(exc))
        try:
            err = loads((folder / ".last_error.json").read_bytes())
            row["last_error"] = f"{err.get('code')}: {err.get('message')}"
        except (OSError, ValueError):
            row["last_error"] = None
        rows.append(row)
    return rows


def describe(raw: Any) -> dict[str, Any]:
    """The status fields of one raw state (``AttributeError`` if it is no object)."""
    pending = [t for t in raw.get("tasks", []) if t.get("status") == "pending"]
    return dict(
        workflow=raw.get("workflow"), phase=raw.get("phase"),
        revision=raw.get("revision"), updated_at=raw.get("updated_at"),
        pending=[t.get("task_id") for t in pending],
        question=(raw.get("question") or {}).get("question"),
        finished=raw.get("result") is not None,
        outcome=(raw.get("result") or {}).get("outcome"),
        age_seconds=_age(raw.get("updated_at")),
        jobs=_jobs(raw.get("jobs") or {}),
        subject=subject(raw.get("workflow"), raw.get("data")),
    )


def _jobs(jobs: dict[str, Any]) -> list[dict[str, Any]]:
    """The running background jobs of a flow: elapsed time and the log's last line."""
    from flow.core.proc import log_tail

    out = []
    now = time.time()
    for job in jobs.values():
        if not isinstance(job, dict) or job.get("result") is not None:
            continue
        started = job.get("started_at")
        last = log_tail(Path(str(job.get("log_file"))), 1)
        out.append({"id": job.get("job_id"), "log_file": job.get("log_file"),
                    "elapsed_s": round(now - started, 1) if isinstance(started, float) else None,
                    "timeout_s": job.get("timeout_s"), "last_line": last[0] if last else ""})
    return out
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


def human_age(seconds: int | None) -> str:
    if seconds is None:
        return "?"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def table(rows: list[dict[str, Any]], root: Path | str) -> str:
    if not rows:
        return f"no flows in {root}\n"
    head = ("FLOW", "WORKS ON", "WORKFLOW", "PHASE", "PENDING", "AGE", "STATE / LAST ERROR")
    lines = [head]
    for r in rows:
        if r.get("unreadable"):
            note = f"UNREADABLE: {r['unreadable']}"
        elif r.get("last_error"):
            note = f"error {r['last_error']}"
        elif r.get("finished"):
            note = f"done ({r.get('outcome') or 'finished'})"
        elif r.get("question"):
            note = "needs a person"
        elif r.get("jobs"):
            job = r["jobs"][0]
            note = (f"job {job['id']} running {human_age(int(job['elapsed_s'] or 0))}: "
                    f"{job['last_line']}")
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
           where: str | None = None) -> dict[str, Any] | str:
    """Every flow of the file store under ``root`` (or the ``rows`` of another store), with
    secrets masked."""
    from flow.core.redact import redact_tree

    rows = redact_tree(collect(root) if rows is None else rows)
    if not as_json:
        return table(rows, where or root)
    from flow.core.render import envelope

    return {**envelope(None, root, "done", harness), "flows": rows}
