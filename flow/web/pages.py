"""What the dashboard shows, read from a workspace (or the PostgreSQL store the call names,
``flow.web.source``) without changing it.

The list's rows come from the index (``flow.web.index``, ``flow.cli.inbox``).
``flow_page`` is one flow's page, read from that flow alone: its row (``flow_row``: the
fields ``status`` lists, with its state word), its phase and the path its history took, the
audit trail as a timeline, the pending tasks with their prompts and feed commands, its jobs
(running with elapsed time, step k of N and the log's tail; finished with exit and end time,
their logs still served by ``job_log_text``), and its outputs (``flow.web.outputs``). Files are read only when they resolve inside the
workspace (``inside``); nothing here writes, locks or runs anything.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

TIMELINE_MAX = 300
LOG_LINES = 20
LOG_MAX = 512 * 1024  # bytes of a job log shown by /log (its end)


def inside(root: Path, path: Path | str) -> Path | None:
    """``path`` resolved (links followed) if it lies inside ``root``, else None."""
    try:
        real = Path(path).resolve()
        real.relative_to(root.resolve())
    except (OSError, ValueError, RuntimeError):
        return None
    return real


def flow_row(root: Path, flow_id: str, raw: dict[str, Any] | None, src: Any
             ) -> dict[str, Any]:
    """The list's row of one flow, read from its own state (not from the index, so the
    page is exact), with ``state`` and ``age`` (``flow.cli.inbox``)."""
    from flow.cli.status import describe
    from flow.cli.inbox import shown, sleeping

    folder = src.folder(flow_id)
    row: dict[str, Any] = {"flow_id": flow_id, "path": str(folder) if folder else None}
    if raw is None:
        row.update(workflow=None, phase=None, unreadable="the state cannot be read")
    else:
        try:
            row.update(describe(raw, folder, lambda p: inside(root, p) if p else None))
        except (AttributeError, TypeError) as exc:
            row.update(workflow=raw.get("workflow"), phase=raw.get("phase"),
                       unreadable=str(exc))
    row["last_error"] = src.last_error(flow_id)
    row["sleeping"] = sleeping(folder)
    return shown([row])[0]


def flow_page(root: Path, flow_id: str, src: Any = None) -> dict[str, Any] | None:
    """Everything one flow's page shows, or None when there is no such flow."""
    from flow.cli.graph import states_taken
    from flow.web.outputs import outputs
    from flow.web.source import FolderSource

    src = src or FolderSource(root)
    if not src.exists(flow_id):
        return None
    raw = src.state(flow_id)
    row = flow_row(root, flow_id, raw, src)
    records = src.audit(flow_id, TIMELINE_MAX)
    if raw is None:
        return {"row": row, "raw": None, "timeline": timeline(records), "tasks": [],
                "jobs": [], "outputs": {}, "path": []}
    history = [h for h in raw.get("history") or [] if isinstance(h, dict)]
    return {"row": row, "raw": raw, "timeline": timeline(records),
            "path": states_taken(history, str(raw.get("phase"))),
            "question": raw.get("question"),
            "answer_command": _answer_command(root, raw, flow_id, getattr(src, "url", None)),
            "resume_command": _commands(root, raw, flow_id, getattr(src, "url", None)).resume()
            if raw.get("result") is None else None,
            "tasks": pending_tasks(src.last_spec(flow_id), raw, _feeder(root, raw, flow_id,
                                                                          src)),
            "jobs": jobs_of(root, raw, src.folder(flow_id)),
            "progress": row.get("progress") or {},
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
    return _commands(root, raw, flow_id, store).answer("VALUE")


def _commands(root: Path, raw: dict[str, Any], flow_id: str, store: str | None) -> Any:
    """The flow's command maker (``flow.core.commands``): absolute, runnable from anywhere."""
    from flow.core.commands import Commands

    script = Path(__file__).resolve().parents[2] / "orchestrator.py"
    return Commands(script, root.resolve(), str(raw.get("harness") or "claude"),
                    flow_id, store=store)


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


def jobs_of(root: Path, raw: dict[str, Any], folder: Path | None) -> list[dict[str, Any]]:
    """Every job of the flow (``flow.cli.jobstate``): running ones with elapsed time and the
    log's last ``LOG_LINES`` lines, finished and taken ones with exit and end; a log outside
    the workspace is not read."""
    from flow.cli.jobstate import job_views

    return job_views(raw.get("jobs"), folder, lambda p: inside(root, p) if p else None,
                     LOG_LINES)


def job_log_text(root: Path, src: Any, flow_id: str, job_id: str) -> str | None:
    """The end of job ``job_id``'s log (``LOG_MAX`` bytes, secrets masked), while it runs
    and after; None when the flow, the job or a log inside the workspace is missing."""
    from flow.core.redact import redact

    raw = src.state(flow_id) if src.exists(flow_id) else None
    job = ((raw or {}).get("jobs") or {}).get(job_id)
    log = inside(root, str(job.get("log_file") or "")) if isinstance(job, dict) else None
    if log is None or not log.is_file():
        return None
    try:
        with log.open("rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(max(0, size - LOG_MAX))
            data = fh.read()
    except OSError:
        return None
    cut = f"[the first {size - LOG_MAX} bytes are not shown]\n" if size > LOG_MAX else ""
    return cut + redact(data.decode("utf-8", errors="replace"))
