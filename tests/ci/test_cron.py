"""Cron jobs a harness can follow literally: one named job per flow, interval changes flagged,
Claude's 7-day expiry renewed in time, a crontab line that works under a minimal environment,
and cron prompts that name only skills the project ships."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from flow.core.render import CLAUDE_EXPIRY_DAYS, shipped_skill
from tests.contract.driver import Driver
from tests.fakegithub import FakeGitHub, Repo

HEAD, BASE = "a" * 40, "b" * 40
START = ["--ci-check", "--repo", "o/r", "--pr-number", "1"]
ROOT = Path(__file__).resolve().parents[2]
SKILLS = ROOT / "agents" / "skills"


def _pending(fake: FakeGitHub) -> Repo:
    repo = fake.repo("o/r")
    repo.add_pull(1, "feature", HEAD, merge_base_sha=BASE)
    wf = repo.add_workflow("pull", ".github/workflows/pull.yml")
    repo.add_run(wf, HEAD, jobs=[("test", None)])
    return repo


def _resume(drv: Driver, spec: dict[str, Any], env: dict[str, str] | None = None) -> dict[str, Any]:
    call = drv.shell(spec["resume_command"], env)
    assert call.spec is not None, call.stderr
    return call.spec


def test_every_tick_names_the_same_job_and_flags_interval_changes(fake_github: FakeGitHub, drv: Driver) -> None:
    """Same cron_job_id on every schedule_cron; interval_changed only when the interval moved; the
    rule says create once, update, delete when done; done names the job to delete."""
    repo = _pending(fake_github)
    first = drv.call(START).spec
    same = _resume(drv, first)
    fake_github.secondary_limit(r"/pulls/1$")
    limited = _resume(drv, first)
    state = Path(first["workspace"]) / "flow_state.json"
    raw = json.loads(state.read_text())
    raw["data"]["github"]["until"] = "2000-01-01T00:00:00+00:00"
    state.write_text(json.dumps(raw))
    back = _resume(drv, first)
    repo.jobs_of(repo.runs[-1])[0].complete("success")
    done = _resume(drv, first)
    ids = {s["cron_job_id"] for s in (first, same, limited, back)}
    assert ({"orchestrator:ci/o/r/pr-1"}, [False, False, True, True]) == (
        ids, [s["interval_changed"] for s in (first, same, limited, back)])
    rule = first["on_complete"]["rule"]
    assert all(w in rule for w in ("Create it once", "interval_changed", "delete it", "Never create a second"))
    assert first["on_complete"]["prompt"].startswith("[orchestrator:ci/o/r/pr-1] Run `")
    assert ("done", "orchestrator:ci/o/r/pr-1", "delete") == (done["status"], done["cron_job_id"],
                                                             done["cron_job"]["action"])


def test_claude_job_expiry_is_known_and_renewed_in_time(fake_github: FakeGitHub, drv: Driver) -> None:
    """The spec says when Claude Code will expire the job (7 days after creation); after 6 days
    it asks for a renewal once, which restarts the clock."""
    _pending(fake_github)
    first = drv.call(START).spec
    oc = first["on_complete"]
    created = datetime.fromisoformat(oc["created_at"])
    assert (timedelta(days=CLAUDE_EXPIRY_DAYS), False) == (
        datetime.fromisoformat(oc["expires_at"]) - created, oc["renew"])
    record = Path(first["workspace"]) / "cron_job.json"
    data = json.loads(record.read_text())
    data["created_at"] = (datetime.now(timezone.utc) - timedelta(days=6, hours=1)).isoformat()
    record.write_text(json.dumps(data))
    renewal = _resume(drv, first)["on_complete"]
    after = _resume(drv, first)["on_complete"]
    assert (True, False) == (renewal["renew"], after["renew"])
    assert "CronDelete" in renewal["note"] and "7 days" in renewal["note"]


def test_codex_crontab_line_runs_under_env_i(fake_github: FakeGitHub, drv: Driver, tmp_path: Path) -> None:
    """The user_cron_line's command, run under `env -i` (no token, no API URL in the environment),
    ticks the flow: the API URL comes from the state, the token from the file named at the start."""
    _pending(fake_github)
    token_file = tmp_path / "gh.env"
    token_file.write_text(f"export GITHUB_TOKEN='{fake_github.token}'\n")
    spec = drv.call([*START, "--harness", "codex"], {"ORCHESTRATOR_GITHUB_TOKEN_FILE": str(token_file),
                                                     "GITHUB_TOKEN": ""}).spec
    line = spec["on_complete"]["user_cron_line"]
    assert fake_github.token not in json.dumps(json.loads((Path(spec["workspace"]) / "flow_state.json").read_text()))
    fields = line.split(" ", 5)
    command = fields[5].rsplit(" # ", 1)[0].replace("\\%", "%")
    fake_github.reset_log()
    proc = subprocess.run(["env", "-i", "/bin/sh", "-c", command], capture_output=True, text=True, timeout=120)
    log = Path(shlex.split(command.split(">>", 1)[1])[0])
    tick = _last_json(log.read_text())
    assert (0, "schedule_cron", "waiting_for_ci", True) == (
        proc.returncode, tick["status"], tick["ci_phase"], fake_github.count(r"/pulls/1$") >= 1)
    assert line.endswith(" # orchestrator:ci/o/r/pr-1") and line.split()[5].startswith("cd")


def _last_json(text: str) -> dict[str, Any]:
    """The last JSON object in an appended log of pretty-printed objects."""
    starts = [m.start() for m in re.finditer(r"(?m)^\{", text)]
    return json.loads(text[starts[-1]:])


def test_codex_note_says_when_the_crontab_line_has_no_token_source(fake_github: FakeGitHub, drv: Driver) -> None:
    """A flow started with the token only in the environment prints no crontab line that would
    fail under cron; the start says plainly that cron needs ORCHESTRATOR_GITHUB_TOKEN_FILE."""
    _pending(fake_github)
    spec = drv.call([*START, "--harness", "codex"]).spec
    oc = spec["on_complete"]
    assert (None, True, True, True) == (
        oc["user_cron_line"], "ORCHESTRATOR_GITHUB_TOKEN_FILE" in oc["note"],
        "ORCHESTRATOR_GITHUB_TOKEN_FILE" in oc["user_cron_line_missing"],
        "ORCHESTRATOR_GITHUB_TOKEN_FILE" in spec["cron_warning"])


def test_a_later_tick_keeps_the_api_url_of_the_start(fake_github: FakeGitHub, drv: Driver) -> None:
    """A firing without ORCHESTRATOR_GITHUB_API still talks to the server the flow started with."""
    _pending(fake_github)
    spec = drv.call(START).spec
    fake_github.reset_log()
    tick = _resume(drv, spec, {"ORCHESTRATOR_GITHUB_API": ""})
    assert ("schedule_cron", True) == (tick["status"], fake_github.count(r"/pulls/1$") == 1)


_SKILL_NAME = re.compile(r"(?:skill `([A-Za-z0-9_.-]+)`|`([A-Za-z0-9_.-]+)` skill|skill ([a-z0-9-]+)\))")


def _skills_named(text: str) -> set[str]:
    return {a or b or c for a, b, c in _SKILL_NAME.findall(text)}


def test_every_skill_named_in_a_prompt_is_shipped() -> None:
    """Cron prompts of every workflow, and every agent prompt template, name only skills that
    exist under agents/skills."""
    from agents import claude
    from flow.workflows.registry import BUILTIN as WORKFLOWS

    import importlib

    job = {"cron_job_id": "j", "interval_changed": False, "created_at": "2026-01-01T00:00:00+00:00",
           "rule": "r"}
    texts = []
    for module in WORKFLOWS.values():
        wf = importlib.import_module(module).WORKFLOW
        texts.append(claude.cron_on_complete("cmd", "*/7 * * * *", 420, shipped_skill(wf.skill), "/l", job)["prompt"])
    texts += [p.read_text() for p in (ROOT / "agents" / "templates").glob("*.md")]
    named = set().union(*(_skills_named(t) for t in texts))
    shipped = {p.parent.name for p in SKILLS.glob("*/SKILL.md")}
    assert ({"skill-orchestrator"} <= named, set()) == (True, named - shipped)


def test_no_secret_reaches_the_crontab_line_its_log_or_the_workspace(
        fake_github: FakeGitHub, drv: Driver, tmp_path: Path) -> None:
    """Secrets planted in the environment of the start (a ``*_SECRET``, ``PGPASSWORD``) and the
    GitHub token in the file the crontab line names: none of them is in the printed spec, the
    crontab line, any file of the workspace, or the log the line's tick appends to."""
    _pending(fake_github)
    token_file = tmp_path / "gh.env"
    token_file.write_text(f"export GITHUB_TOKEN='{fake_github.token}'\n")
    planted = {"DEPLOY_API_SECRET": "s3cr3t-Deploy-7Qx9wLm2", "PGPASSWORD": "pg-Pw-4hT8zK1q"}
    call = drv.call([*START, "--harness", "codex"],
                    {"ORCHESTRATOR_GITHUB_TOKEN_FILE": str(token_file), "GITHUB_TOKEN": "",
                     **planted})
    line = call.spec["on_complete"]["user_cron_line"]
    command = line.split(" ", 5)[5].rsplit(" # ", 1)[0].replace("\\%", "%")
    subprocess.run(["env", "-i", *[f"{k}={v}" for k, v in planted.items()], "/bin/sh", "-c",
                    command], capture_output=True, text=True, timeout=120)
    log = Path(shlex.split(command.split(">>", 1)[1])[0])
    written = b"".join(p.read_bytes() for p in Path(call.spec["workspace"]).parent.rglob("*")
                       if p.is_file())
    seen = (json.dumps(call.spec) + call.stderr + line + log.read_text()
            + written.decode(errors="replace"))
    assert "schedule_cron" in _last_json(log.read_text())["status"]
    assert [] == [s for s in [fake_github.token, *planted.values()] if s in seen]
