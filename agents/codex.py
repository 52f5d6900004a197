"""Codex adapter: spawn_agent / followup_task / wait_agent shapes, inline work, polling."""

from __future__ import annotations

from typing import Any

from flow.core.state import TaskRecord
from workspace.paths import safe_name

MINUTE_MS = 60_000
TIMEOUTS_MS = {"checker": 15 * MINUTE_MS}
DEFAULT_TIMEOUT_MS = 30 * MINUTE_MS


def task_name(task: TaskRecord) -> str:
    return safe_name(f"{task.role}_{task.key}").lower().replace("-", "_").replace(".", "_")


def render_task(task: TaskRecord, agents: dict[str, str]) -> dict[str, Any]:
    """The harness-specific part of one task (common fields are added by the caller)."""
    if task.inline_for_codex or task.method == "inline":
        return {"method": "inline", "agent_name": task.role, "instruction": task.prompt}
    spawn = {
        "method": "spawn",
        "tool": "spawn_agent",
        "agent_name": task.role,
        "task_name": task_name(task),
        "message": task.prompt,
        "fork_turns": "all",
        "wait": {
            "tool": "wait_agent",
            "timeout_ms": task.timeout_ms or TIMEOUTS_MS.get(task.role, DEFAULT_TIMEOUT_MS),
        },
    }
    target = agents.get(task.role)
    if task.follow_up and target:
        return {
            "method": "send_message",
            "tool": "followup_task",
            "agent_name": task.role,
            "target": target,
            "message": task.prompt,
            "recovery": {
                "tool": "followup_task",
                "target": target,
                "note": "If the agent is busy, wait_agent on it first, then send once more; "
                        "if it is gone, use the fallback spawn.",
            },
            "fallback": spawn,
        }
    return spawn


def cron_escape(command: str) -> str:
    """``command`` as a crontab line's command: cron turns an unescaped ``%`` into a newline
    (and cuts the command there), so every ``%`` is written ``\\%``."""
    return command.replace("%", "\\%")


def cron_line(cron_interval: str, resume: str, log_file: str, job_id: str) -> str:
    """A crontab line that runs from a plain crontab: absolute interpreter and paths (in
    `resume`), `cd /`, output appended to the log, `%` escaped (cron turns a bare `%` into a
    newline), and the job id as a trailing comment so the line can be found and replaced."""
    command = f"cd / && {resume} >> {log_file} 2>&1"
    return f"{cron_interval} {cron_escape(command)} # {job_id}"


def cron_on_complete(resume: str, cron_interval: str, poll_seconds: int, skill: str,
                     log_file: str, job: dict[str, Any], env_note: str = "") -> dict[str, Any]:
    """Polling for Codex, plus a crontab line for a person; both name the flow's one job."""
    jid = job["cron_job_id"]
    line = cron_line(cron_interval, resume, log_file, jid)
    note = ("Codex has no cron: poll by running poll_command every poll_interval_seconds (one "
            f"poll loop per cron_job_id; if one runs for {jid}, change its interval when "
            "interval_changed is true instead of starting another), or ask a person to install "
            f"user_cron_line with crontab -e, replacing any line that ends with '# {jid}'. "
            "Stop polling and remove the line when a later call prints status done.")
    if env_note:
        note += " " + env_note
    return {
        "action": "poll",
        "poll_interval_seconds": poll_seconds,
        "poll_command": resume,
        "cron_job_id": jid,
        "interval_changed": job["interval_changed"],
        "rule": job["rule"],
        "user_cron_line": line,
        "note": note,
    }
