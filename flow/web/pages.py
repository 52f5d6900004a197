"""What the dashboard shows, read from a workspace (or the PostgreSQL store the call names,
``flow.web.source``) without changing it.

``flow_rows`` is the list page: one row per flow, the same fields ``orchestrator.py status``
lists (``flow.cli.status.collect``) plus a one-word ``state`` to filter on. ``flow_page`` is
one flow's page: its phase and the path its history took, the audit trail as a timeline, the
pending tasks with their prompts and feed commands, running jobs with the log's tail, and
its outputs (``flow.web.outputs``). Files are read only when they resolve inside the
workspace (``inside``); nothing here writes, locks or runs anything.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from workspace.jsonio import loads
from workspace.paths import STATE_FILE

STATES = ("error", "done", "person", "job", "agent", "ready", "unreadable")
TIMELINE_MAX = 300
LOG_LINES = 20


def inside(root: Path, path: Path | str) -> Path | None:
    """``path`` resolved (links followed) if it lies inside ``root``, else None."""
    try:
        real = Path(path).resolve()
        real.relative_to(root.resolve())
    except (OSError, ValueError, RuntimeError):
        return None
    return real


def state_of(row: dict[str, Any]) -> str:
    """One word for what a flow waits on: error, done, person, job, agent, ready, unreadable."""
    if row.get("unreadable"):
        return "unreadable"
    if row.get("last_error"):
        return "error"
    if row.get("finished"):
        return "done"
    if row.get("question"):
        return "person"
    if row.get("jobs"):
        return "job"
    return "agent" if row.get("pending") else "ready"


def flow_rows(root: Path, src: Any = None) -> list[dict[str, Any]]:
    """Every flow of the workspace (or of ``src``, a ``flow.web.source``), as ``status``
    lists them, with ``state`` and ``age``."""
    from flow.cli.status import human_age
    from flow.web.source import FolderSource

    rows = (src or FolderSource(root)).rows()
    for row in rows:
        row["state"] = state_of(row)
        row["age"] = human_age(row.get("age_seconds"))
    return rows


def flow_dir(root: Path, flow_id: str) -> Path | None:
    """The folder of flow ``flow_id`` if it is a safe id naming a flow inside ``root``."""
    from flow.web.source import FolderSource

    return FolderSource(root)._folder(flow_id)


def read_state(folder: Path) -> dict[str, Any] | None:
    try:
        raw = loads((folder / STATE_FILE).read_bytes())
    except (OSError, ValueError):
        return None
    return raw if isinstance(raw, dict) else None


def flow_page(root: Path, flow_id: str, src: Any = None) -> dict[str, Any] | None:
    """Everything one flow's page shows, or None when there is no such flow."""
    from flow.cli.graph import states_taken
    from flow.web.outputs import outputs
    from flow.web.source import FolderSource

    src = src or FolderSource(root)
    if not src.exists(flow_id):
        return None
    raw = src.state(flow_id)
    row = next((r for r in flow_rows(root, src) if r["flow_id"] == flow_id),
               {"flow_id": flow_id, "state": "unreadable"})
    records = src.audit(flow_id, TIMELINE_MAX)
    if raw is None:
        return {"row": row, "raw": None, "timeline": timeline(records), "tasks": [],
                "jobs": [], "outputs": {}, "path": []}
    history = [h for h in raw.get("history") or [] if isinstance(h, dict)]
    return {"row": row, "raw": raw, "timeline": timeline(records),
            "path": states_taken(history, str(raw.get("phase"))),
            "question": raw.get("question"),
            "answer_command": _answer_command(root, raw, flow_id, getattr(src, "url", None)),
            "tasks": pending_tasks(src.last_spec(flow_id), raw, _feeder(root, raw, flow_id,
                                                                          src)),
            "jobs": running_jobs(root, raw),
            "outputs": outputs(root, root / flow_id, raw,
                               lambda name: src.output(flow_id, name))}


def _feeder(root: Path, raw: dict[str, Any], flow_id: str, src: Any) -> Any:
    """The feed command maker of a PostgreSQL store's flow (None for the file store)."""
    url = getattr(src, "url", None)
    if url is None:
        return None
    from flow.core.commands import Commands

    script = Path(__file__).resolve().parents[2] / "orchestrator.py"
    return Commands(script, root.resolve(), str(raw.get("harness") or "claude"), flow_id,
                    store=url).feed


def _answer_command(root: Path, raw: dict[str, Any], flow_id: str,
                    store: str | None = None) -> str:
    """The absolute command that records a person's answer (interpreter, script, workspace,
    store, harness: it runs from a fresh shell), the same one the flow's need_human spec
    prints."""
    from flow.core.commands import Commands

    script = Path(__file__).resolve().parents[2] / "orchestrator.py"
    return Commands(script, root.resolve(), str(raw.get("harness") or "claude"),
                    flow_id, store=store).answer("VALUE")


def timeline(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The audit trail, oldest first (the last ``TIMELINE_MAX`` records, torn lines skipped
    by the source)."""
    out: list[dict[str, Any]] = []
    for rec in records:
        known = {"at", "event", "phase", "to", "trigger", "revision"}
        out.append({"at": rec.get("at"), "event": rec.get("event"),
                    "phase": rec.get("to") or rec.get("phase"), "trigger": rec.get("trigger"),
                    "details": ", ".join(f"{k}={v}" for k, v in rec.items()
                                         if k not in known)})
    return out


def pending_tasks(spec: dict[str, Any] | None, raw: dict[str, Any],
                  feed_command: Any = None) -> list[dict[str, Any]]:
    """Pending tasks with their prompt; the feed command is the one last printed for them
    (``spec``, from the spec cache), since the page never renders a spec itself, else (a
    flow of the PostgreSQL store last printed in another workspace) ``feed_command(role,
    feed_file)``, the command the flow's spec would print here."""
    printed: dict[str, dict[str, Any]] = {}
    for t in (spec or {}).get("tasks") or []:
        if isinstance(t, dict) and t.get("task_id"):
            printed[str(t["task_id"])] = t
    out = []
    for task in raw.get("tasks") or []:
        if not isinstance(task, dict) or task.get("status") != "pending":
            continue
        shown = printed.get(str(task.get("task_id")), {})
        out.append({"task_id": task.get("task_id"), "role": task.get("role"),
                    "method": task.get("method"), "phase": task.get("phase"),
                    "prompt": task.get("prompt") or shown.get("command") or "",
                    "feed_file": task.get("feed_file"),
                    "feed_command": shown.get("feed_command") or (
                        feed_command(str(task.get("role")), str(task.get("feed_file")))
                        if feed_command is not None and task.get("feed_file") else None)})
    return out


def running_jobs(root: Path, raw: dict[str, Any]) -> list[dict[str, Any]]:
    """Background jobs without a result: elapsed seconds and the log's last lines (secrets
    masked by ``log_tail``; a log outside the workspace is not read)."""
    from flow.core.proc import log_tail

    out = []
    now = time.time()
    for job in (raw.get("jobs") or {}).values():
        if not isinstance(job, dict) or job.get("result") is not None:
            continue
        log = inside(root, str(job.get("log_file") or ""))
        started = job.get("started_at")
        out.append({"id": job.get("job_id"), "phase": job.get("phase"),
                    "elapsed_s": round(now - started) if isinstance(started, float) else None,
                    "timeout_s": job.get("timeout_s"),
                    "tail": log_tail(log, LOG_LINES) if log is not None else [],
                    "log_inside": log is not None})
    return out
