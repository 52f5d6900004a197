"""What a flow's background jobs are doing, as ``status`` and the dashboard show them.

A job the state records without a result is not necessarily running: its supervisor writes
``jobs/<job_id>.result.json`` when the command ends, and the state takes that result only at
the flow's next call. So each such job is looked up in its own result file first: finished
is finished, with its exit code, its end time (the result file's modification time) and its
duration; only a job without a result file is running, with its elapsed time and its log's
last lines. Jobs whose result the state already holds are listed as taken, their logs still
named, so a finished job's log stays reachable.

Progress of long work (the seed's "step k of N"): the flow's batch entry (``batch_index`` of
``batch_entries``) and, for a step that runs several jobs at once (the refactor's local test
gate, one job per shard), how many of the jobs of the current phase visit have ended.

Logs are read only when ``allowed(path)`` says so (the dashboard allows the workspace only);
every line read is masked by ``proc.log_tail``. Standard library only at import.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

Allowed = Callable[[str], "Path | None"]


def anywhere(path: str) -> Path | None:
    """The CLI's rule: a log the flow's own state names may be read wherever it lies."""
    return Path(path) if path else None


def result_file(folder: Path, job_id: str) -> Path | None:
    """``jobs/<job_id>.result.json`` of the flow folder (None for an id that is no safe file
    name: a state naming ``../x`` reads nothing)."""
    from workspace.paths import safe_name

    return folder / "jobs" / f"{job_id}.result.json" if safe_name(job_id) == job_id else None


def read_result(folder: Path | None, job_id: str) -> tuple[dict[str, Any], float] | None:
    """The job's own result object and its file's mtime, or None (no file, torn, no code)."""
    if folder is None or not job_id:
        return None
    path = result_file(folder, job_id)
    if path is None:
        return None
    try:
        with path.open("rb") as fh:
            raw = json.loads(fh.read(65536))
            ended = os.fstat(fh.fileno()).st_mtime
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("code"), int):
        return None
    return raw, ended


def iso(epoch: float | None) -> str | None:
    if not isinstance(epoch, (int, float)):
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def job_views(jobs: Any, folder: Path | None, allowed: Allowed = anywhere,
              lines: int = 1, now: float | None = None) -> list[dict[str, Any]]:
    """Every job of the state's ``jobs`` table as one dict: ``status`` running, finished (its
    result file is there, the state has not taken it yet) or taken (the state holds it)."""
    now = time.time() if now is None else now
    out: list[dict[str, Any]] = []
    for job in (jobs or {}).values() if isinstance(jobs, dict) else []:
        if not isinstance(job, dict):
            continue
        jid = str(job.get("job_id") or "")
        started = job.get("started_at") if isinstance(job.get("started_at"), float) else None
        log = allowed(str(job.get("log_file") or ""))
        view: dict[str, Any] = {"id": jid, "phase": job.get("phase"), "visit": job.get("visit"),
                                "key": job.get("key"), "log_file": job.get("log_file"),
                                "log_readable": log is not None, "started_at": started,
                                "timeout_s": job.get("timeout_s")}
        taken = job.get("result") if isinstance(job.get("result"), dict) else None
        found = None if taken is not None else read_result(folder, jid)
        if taken is not None or found is not None:
            result, ended = (taken, None) if taken is not None else found  # type: ignore[misc]
            duration = result.get("duration_s")
            if ended is None and started is not None and isinstance(duration, (int, float)):
                ended = started + float(duration)
            view.update(status="taken" if taken is not None else "finished",
                        code=result.get("code"), timed_out=bool(result.get("timed_out")),
                        lost=bool(result.get("lost")), duration_s=duration,
                        ended_at=iso(ended), ended_epoch=ended)
        else:
            view.update(status="running",
                        elapsed_s=round(now - started, 1) if started is not None else None)
        if view["status"] != "taken":
            from flow.core.proc import log_tail

            tail = log_tail(log, lines) if log is not None else []
            view["tail"] = tail
            view["last_line"] = tail[-1] if tail else ""
        out.append(view)
    return out


def progress(raw: dict[str, Any], views: list[dict[str, Any]]) -> dict[str, Any]:
    """Step k of N of the flow's long work: its batch entry, and the jobs of the visit now
    running (``{}`` when there is nothing to count)."""
    out: dict[str, Any] = {}
    data = raw.get("data") if isinstance(raw.get("data"), dict) else {}
    entries = data.get("batch_entries")
    if isinstance(entries, list) and entries and raw.get("result") is None:
        index = data.get("batch_index") if isinstance(data.get("batch_index"), int) else 0
        out["batch"] = {"entry": min(index + 1, len(entries)), "of": len(entries)}
    running = [v for v in views if v["status"] == "running"]
    if running:
        here = (running[0]["phase"], running[0]["visit"])
        group = [v for v in views if (v["phase"], v["visit"]) == here]
        if len(group) > 1:
            out["jobs"] = {"done": sum(v["status"] != "running" for v in group),
                           "of": len(group)}
    return out


def running(views: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [v for v in views if v["status"] == "running"]


def finished(views: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Jobs that ended but whose result the flow has not taken yet (a ``--resume`` will)."""
    return [v for v in views if v["status"] == "finished"]
