"""Claude Code adapter: renders abstract tasks into the Agent / SendMessage / CronCreate shapes."""

from __future__ import annotations

from typing import Any

from flow.state import TaskRecord

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
                     log_file: str) -> dict[str, Any]:
    using = f" (skill {skill})" if skill else ""
    return {
        "action": "CronCreate",
        "cron_interval": cron_interval,
        "durable": True,
        "prompt": f"Run `{resume}` and follow the JSON it prints{using}.",
        "note": "Create the cron job, then end this session; each firing resumes the flow. "
                "Delete the job (CronDelete) when a later call prints status done.",
    }
