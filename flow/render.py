"""Turns engine state into the one JSON object a call prints (the harness contract)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from flow.commands import Commands
from flow.state import FlowState, TaskRecord

SPEC_VERSION = 1
HARNESSES = ("claude", "codex")


RESERVED = frozenset({"schema_version", "status", "workflow", "flow_id", "phase", "harness",
                      "workspace"})


def envelope(state: FlowState | None, root: Path, status: str, harness: str,
             workspace: Path | None = None, **fields: Any) -> dict[str, Any]:
    """The fields every printed object carries, plus ``fields`` (never one of ``RESERVED``)."""
    out: dict[str, Any] = {
        "schema_version": SPEC_VERSION,
        "status": status,
        "workflow": state.workflow if state else None,
        "flow_id": state.flow_id if state else None,
        "phase": state.phase if state else None,
        "harness": harness,
        "workspace": str(workspace or root),
    }
    out.update(fields)
    return out


def _adapter(harness: str) -> Any:
    if harness == "codex":
        from agents import codex
        return codex
    from agents import claude
    return claude


def task_spec(task: TaskRecord, cmds: Commands, agents: dict[str, str],
              workflow: str) -> dict[str, Any]:
    """One entry of ``tasks[]``: common fields plus the harness's own shape."""
    feed_command = cmds.feed(task.role, task.feed_file)
    common: dict[str, Any] = {
        "task_id": task.task_id,
        "attempt": task.attempt,
        "max_attempts": task.max_attempts,
        "feed_as": task.role,
        "feed_file": task.feed_file,
        "feed_command": feed_command,
        "feed_schema": f"{workflow}.{task.feed}",
        "feed_schema_command": cmds.schema(f"{workflow}.{task.feed}"),
    }
    if task.method == "run":
        argv = task.command or []
        shown = shlex.join(argv)
        if task.cwd:
            shown = f"cd {shlex.quote(task.cwd)} && {shown}"
        body: dict[str, Any] = {
            "method": "run",
            "agent_name": task.role,
            "command": shown,
            "argv": argv,
            "cwd": task.cwd,
            "log_file": task.log_file,
            "run_in_background": True,
            "note": (f"Run the command in the background with its output going to log_file; "
                     f"when it exits write {{\"exit_code\": N, \"log_path\": \"{task.log_file}\"}} "
                     f"to feed_file, then run feed_command."),
        }
    else:
        body = _adapter(cmds.harness).render_task(task, agents)
    spec = {**common, **body}
    spec.update(task.extra)
    return spec


def on_complete(task: TaskRecord, cmds: Commands, count: int) -> dict[str, Any]:
    note = ("Write the result JSON to feed_file, then run command (as is, from any directory)."
            if count == 1 else
            f"{count} tasks are pending; each has its own feed_file and feed_command. "
            f"Feed each as it finishes, in any order; this one is the first.")
    return {"feed_as": task.role, "command": cmds.feed(task.role, task.feed_file),
            "feed_file": task.feed_file, "note": note}


IN_FLIGHT_NOTE = ("These tasks were handed out by an earlier call: do not start them again. "
                  "Wait for their agents and feed each result. Only if an agent is gone (or "
                  "was never started) start it from tasks[]: same task_id and feed_file.")


def agent_spec(state: FlowState, root: Path, workspace: Path, cmds: Commands,
               extra: dict[str, Any], *, fresh: bool) -> dict[str, Any]:
    """``need_agent`` when this call handed out the wave; ``waiting`` on every later print.

    A cron firing or a second harness must never take a re-print for new work: only the call
    that emitted a wave says ``need_agent``. Both carry the same ``tasks[]`` (same ids), so a
    harness that lost its agents can still start them.
    """
    pending = state.pending()
    tasks = [task_spec(t, cmds, state.agents, state.workflow) for t in pending]
    status = "need_agent" if fresh else "waiting"
    fields: dict[str, Any] = {
        "retry_count": max(t.attempt for t in pending) - 1,
        "tasks": tasks,
        "on_complete": on_complete(pending[0], cmds, len(pending)),
        "resume_command": cmds.resume(),
    }
    if not fresh:
        fields["in_flight"] = [{"task_id": t.task_id, "agent_name": t.role,
                                "feed_file": t.feed_file} for t in pending]
        fields["note"] = IN_FLIGHT_NOTE
    if cmds.harness == "codex" and all(t["method"] == "inline" for t in tasks):
        fields["method"] = "inline"
        fields["instruction"] = "\n\n---\n\n".join(t["instruction"] for t in tasks)
    fields.update(extra)
    return envelope(state, root, status, cmds.harness, workspace, **fields)


JOB_NOTE = ("A background job this flow owns is running; do not start anything and do not "
            "run its command yourself. Wait poll_after_s seconds (sleep, or schedule yourself), "
            "then run resume_command: it reports the job again while it runs, and carries on "
            "once it has finished. Killing this call or the harness does not stop the job.")


def job_spec(state: FlowState, root: Path, workspace: Path, cmds: Commands,
             job: Any) -> dict[str, Any]:
    """``waiting`` on a background job the flow owns (never cached: the job moves on while
    the state does not)."""
    from flow.jobs import poll_after, progress

    return envelope(state, root, "waiting", cmds.harness, workspace, job=progress(job),
                    poll_after_s=poll_after(job), in_flight=[], tasks=[],
                    waiting_on="job", resume_command=cmds.resume(), note=JOB_NOTE)


def human_spec(state: FlowState, root: Path, workspace: Path, cmds: Commands) -> dict[str, Any]:
    q = state.question
    assert q is not None
    options = [{"value": v, "description": d, "command": cmds.answer(v)}
               for v, d in q.options]
    return envelope(state, root, "need_human", cmds.harness, workspace,
                    question=q.question, question_key=q.key, options=options,
                    resume_command=cmds.resume(),
                    note="Ask a person; record the answer with the command of the chosen "
                         "option. Nothing proceeds until then.", **q.extra)


def cron_spec(state: FlowState, root: Path, workspace: Path, cmds: Commands, reason: str,
              cron_interval: str, poll_seconds: int, skill: str,
              extra: dict[str, Any]) -> dict[str, Any]:
    log_file = shlex.quote(str(workspace / "logs" / "cron.log"))
    oc = _adapter(cmds.harness).cron_on_complete(cmds.resume(), cron_interval, poll_seconds,
                                                  skill, log_file)
    return envelope(state, root, "schedule_cron", cmds.harness, workspace, reason=reason,
                    on_complete=oc, resume_command=cmds.resume(), **extra)


def done_spec(state: FlowState, root: Path, workspace: Path, cmds: Commands) -> dict[str, Any]:
    result = dict(state.result or {})
    next_steps = result.pop("next_steps", [])
    if state.aborted:
        result.setdefault("outcome", "aborted")
    return envelope(state, root, "done", cmds.harness, workspace, next_steps=next_steps,
                    **result)


def error_spec(err: Any, root: Path, harness: str, state: FlowState | None = None,
               workspace: Path | None = None) -> dict[str, Any]:
    body = err.to_json()
    return envelope(state, root, "error", harness, workspace, error=body,
                    message=body["message"])
