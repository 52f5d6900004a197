"""Turns engine state into the one JSON object a call prints (the harness contract)."""

from __future__ import annotations

import shlex
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from flow.core.commands import Commands
from flow.core.state import FlowState, TaskRecord

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


def _adapter(cmds: Commands) -> Any:
    """The harness's adapter (``render_task``, ``cron_on_complete``: ``agents.claude`` or
    ``agents.codex``), handed to the engine with its commands by the command line: the
    engine knows no harness of its own."""
    if cmds.adapter is None:
        from flow.core.errors import WorkflowBug

        raise WorkflowBug(f"no adapter for harness {cmds.harness!r} came with the commands",
                          "build Commands with adapter=agents.claude or agents.codex")
    return cmds.adapter


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
        body = _adapter(cmds).render_task(task, agents)
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
    from flow.core.jobs import poll_after, progress

    return envelope(state, root, "waiting", cmds.harness, workspace, job=progress(job),
                    poll_after_s=poll_after(job), in_flight=[], tasks=[],
                    waiting_on="job", resume_command=cmds.resume(), note=JOB_NOTE)


BUDGET_NOTE = ("A check ran out of this call's foreground budget before it answered; nothing "
               "was recorded from it. Wait poll_after_s seconds, then run resume_command: the "
               "check runs again with a fresh budget.")


def budget_spec(state: FlowState, root: Path, workspace: Path, cmds: Commands,
                what: str) -> dict[str, Any]:
    """``waiting`` after a query the foreground budget cut short (``proc.BudgetSpent``):
    the step asks again in the next call (never cached: the state did not move)."""
    return envelope(state, root, "waiting", cmds.harness, workspace, poll_after_s=1,
                    in_flight=[], tasks=[], waiting_on="budget", cut_short=what,
                    resume_command=cmds.resume(), note=BUDGET_NOTE)


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


CRON_FILE = "cron_job.json"  # the flow's cron job as last printed: id, interval, created_at
CLAUDE_EXPIRY_DAYS = 7  # Claude Code: a recurring task expires 7 days after it was created
EXPIRY_ENV = "ORCHESTRATOR_CRON_EXPIRY_DAYS"  # early Claude Code releases used 3 days


def _expiry() -> tuple[timedelta, timedelta]:
    """(when Claude Code deletes a recurring job, when to ask for its renewal: a day before,
    or halfway for an expiry of two days or less)."""
    import os

    try:
        days = float(os.environ.get(EXPIRY_ENV) or CLAUDE_EXPIRY_DAYS)
    except ValueError:
        days = CLAUDE_EXPIRY_DAYS
    days = days if days > 0 else CLAUDE_EXPIRY_DAYS
    return timedelta(days=days), timedelta(days=max(days - 1, days / 2))


CRON_RULE = ("One cron job per flow, named by cron_job_id. Create it once. If a job with this "
             "id exists already, keep it; when interval_changed is true, change its interval "
             "to the one given (delete it and create it anew with the same id). When a later "
             "call prints status done, delete it. Never create a second job for this id.")


def cron_job_id(flow_id: str) -> str:
    """The stable name of a flow's one cron job."""
    return f"orchestrator:{flow_id}"


def shipped_skill(skill: str) -> str:
    """`skill` if the project ships it (agents/skills/<name>/SKILL.md), else the shipped driver
    skill, else "": a cron prompt never names a skill the harness cannot load."""
    skills = Path(__file__).resolve().parents[2] / "agents" / "skills"
    for name in (skill, "skill-orchestrator"):
        if name and (skills / name / "SKILL.md").is_file():
            return name
    return ""


def _cron_job(workspace: Path, flow_id: str, interval: str, harness: str,
              now: datetime) -> dict[str, Any]:
    """Read and update the flow's cron record: whether the interval changed since the last
    printed spec, when the job was created, and whether it must be renewed now (Claude's
    recurring jobs expire; the renewal resets the creation time)."""
    from flow.core.atomic import write_atomic
    from flow.core.jsonio import dumps, loads

    path = workspace / CRON_FILE
    try:
        prev = loads(path.read_bytes())
        if not isinstance(prev, dict):
            prev = {}
    except (OSError, ValueError):
        prev = {}
    created = prev.get("created_at") if prev.get("harness") == harness else None
    renew = False
    expiry, renew_after = _expiry()
    if created and harness == "claude" and now - datetime.fromisoformat(created) >= renew_after:
        renew, created = True, None
    changed = bool(prev) and prev.get("interval") != interval
    if changed and harness == "claude":
        created = None  # the harness deletes and re-creates the job: its expiry clock restarts
    record = {"cron_job_id": cron_job_id(flow_id), "harness": harness, "interval": interval,
              "created_at": created or now.isoformat()}
    if prev != record:
        write_atomic(path, dumps(record))
    job = {"cron_job_id": record["cron_job_id"], "interval_changed": changed,
           "previous_interval": prev.get("interval") if changed else None,
           "created_at": record["created_at"], "renew": renew, "rule": CRON_RULE}
    if harness == "claude":
        job["expires_at"] = (datetime.fromisoformat(record["created_at"]) + expiry).isoformat()
        job["renew_by"] = (datetime.fromisoformat(record["created_at"]) + renew_after).isoformat()
    return job


def cron_spec(state: FlowState, root: Path, workspace: Path, cmds: Commands, reason: str,
              cron_interval: str, poll_seconds: int, skill: str,
              extra: dict[str, Any]) -> dict[str, Any]:
    """`schedule_cron`: the harness's way back plus the flow's one cron job (id, interval
    change, expiry). See CRON_RULE and docs on the flow's `cron_job.json`."""
    log_file = shlex.quote(str(workspace / "logs" / "cron.log"))
    job = _cron_job(workspace, state.flow_id, cron_interval, cmds.harness, datetime.now(timezone.utc))
    access = (state.data or {}).get("access")
    env_note = ""
    if isinstance(access, dict) and not access.get("token_file"):
        env_note = ("This flow found its GitHub token in the environment; a crontab line runs "
                    "without it, so no user_cron_line is printed (it would fail with 'no GitHub "
                    "token' on every firing). Polling from this session works as it is. For a "
                    "crontab line, restart the flow with "
                    "ORCHESTRATOR_GITHUB_TOKEN_FILE=/abs/path/to/a/file/holding/the/token.")
    oc = _adapter(cmds).cron_on_complete(cmds.resume(), cron_interval, poll_seconds,
                                                  shipped_skill(skill), log_file, job, env_note)
    if env_note and oc.get("user_cron_line"):
        # A line that can only fail ("no GitHub token" in cron.log on every firing) is not
        # printed: the spec says plainly what cron needs instead.
        oc["user_cron_line"] = None
        oc["user_cron_line_missing"] = env_note
        extra = {**extra, "cron_warning": env_note}
    return envelope(state, root, "schedule_cron", cmds.harness, workspace, reason=reason,
                    cron_job_id=job["cron_job_id"], interval_changed=job["interval_changed"],
                    on_complete=oc, resume_command=cmds.resume(), **extra)


def _done_cron(workspace: Path) -> dict[str, Any]:
    """On `done`: which cron job to delete (when the flow ever scheduled one)."""
    from flow.core.jsonio import loads

    try:
        record = loads((workspace / CRON_FILE).read_bytes())
    except (OSError, ValueError):
        return {}
    if not isinstance(record, dict) or "cron_job_id" not in record:
        return {}
    return {"cron_job_id": record["cron_job_id"],
            "cron_job": {"action": "delete", "cron_job_id": record["cron_job_id"],
                         "note": "The flow is done: delete its cron job (Claude: CronDelete the "
                                 "job whose prompt starts with this id; Codex: stop polling and "
                                 "remove the crontab line ending with this id)."}}


def done_spec(state: FlowState, root: Path, workspace: Path, cmds: Commands) -> dict[str, Any]:
    result = dict(state.result or {})
    next_steps = result.pop("next_steps", [])
    if state.aborted:
        result.setdefault("outcome", "aborted")
    cron = {k: v for k, v in _done_cron(workspace).items() if k not in result}
    return envelope(state, root, "done", cmds.harness, workspace, next_steps=next_steps,
                    **cron, **result)


def error_spec(err: Any, root: Path, harness: str, state: FlowState | None = None,
               workspace: Path | None = None) -> dict[str, Any]:
    body = err.to_json()
    retry = {"poll_after_s": body["poll_after_s"]} if "poll_after_s" in body else {}
    return envelope(state, root, "error", harness, workspace, error=body,
                    message=body["message"], **retry)
