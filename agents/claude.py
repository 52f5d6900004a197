"""Claude Code adapter: renders abstract tasks into the Agent / SendMessage / CronCreate shapes."""

from __future__ import annotations

from typing import Any

from flow.core.state import TaskRecord

MODES = {
    "analyst": "acceptEdits",
    "coder": "acceptEdits",
    "checker": "acceptEdits",
    "ruleset_editor": "acceptEdits",
    "ruleset-editor": "acceptEdits",
    "debugger": "bypassPermissions",
}


def render_task(task: TaskRecord, agents: dict[str, str]) -> dict[str, Any]:
    """The harness-specific part of one task (common fields are added by the caller)."""
    spawn = {
        "method": "spawn",
        "agent_name": task.role,
        "agent_type": "general-purpose",
        "run_in_background": True,
        "mode": task.mode or MODES.get(task.role, "default"),
        "prompt": task.prompt,
    }
    target = agents.get(task.role)
    if task.follow_up and target:
        return {
            "method": "send_message",
            "agent_name": task.role,
            "send_to": target,
            "prompt": task.prompt,
            "fallback": spawn,
        }
    return spawn


def cron_on_complete(resume: str, cron_interval: str, poll_seconds: int, skill: str,
                     log_file: str, job: dict[str, Any], env_note: str = "") -> dict[str, Any]:
    """CronCreate for the flow's one job. The prompt starts with the job id in brackets, so
    CronList shows which job is this flow's; `job` carries the rule, the interval change and
    the expiry (Claude Code's recurring jobs expire 7 days after creation: renew in time)."""
    using = f" using the skill `{skill}`" if skill else ""
    jid = job["cron_job_id"]
    if job.get("renew"):
        todo = (f"Renew now: this job was created at {job['created_at']} and Claude Code deletes "
                f"recurring jobs at expires_at ({job.get('expires_at')}; 7 days after creation "
                f"in current releases). CronDelete the job whose prompt starts with [{jid}], "
                f"then CronCreate it anew with these fields.")
    elif job.get("interval_changed"):
        todo = (f"The interval changed from {job.get('previous_interval')} to {cron_interval}: "
                f"CronDelete the job whose prompt starts with [{jid}], then CronCreate it with "
                f"these fields.")
    else:
        todo = (f"CronList first: if a job whose prompt starts with [{jid}] exists, leave it "
                f"as it is; else CronCreate it with these fields.")
    return {
        "action": "CronCreate",
        "cron_interval": cron_interval,
        "durable": True,
        "recurring": True,
        "cron_job_id": jid,
        "interval_changed": job["interval_changed"],
        "renew": job.get("renew", False),
        "created_at": job["created_at"],
        "expires_at": job.get("expires_at"),
        "renew_by": job.get("renew_by"),
        "rule": job["rule"],
        "prompt": f"[{jid}] Run `{resume}` and follow the JSON it prints{using}.",
        "note": todo + " Then end this session; each firing resumes the flow. Delete the job "
                       "(CronDelete) when a later call prints status done.",
    }
