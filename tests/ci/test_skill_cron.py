"""The shipped skill's cron rules, played literally against the printed specs: a harness that
does exactly what SKILL.md's "Cron jobs: one per flow" table says keeps one job per flow
through waits, interval changes and Claude's renewal, and none once the flow is done; what
each printed note tells the harness to do agrees with the table's row."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from tests.contract.driver import Driver
from tests.fakegithub import FakeGitHub

HEAD, BASE = "a" * 40, "b" * 40
START = ["--ci-check", "--repo", "o/r", "--pr-number", "1"]
SKILL = Path(__file__).resolve().parents[2] / "agents" / "skills" / "skill-orchestrator" / "SKILL.md"
ACTIONS = {"create", "delete", "nothing"}


def skill_table() -> list[tuple[str, str, str, list[str]]]:
    """(printed, flag, the job, actions) rows of the skill's cron table, in order."""
    text = SKILL.read_text()
    section = text.split("## Cron jobs: one per flow", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[0] in ("printed", "") or set(cells[0]) <= {"-"}:
            continue
        actions = [a.strip() for a in re.split(r",\s*then\s*", cells[3])]
        assert set(actions) <= ACTIONS, f"a row says something the harness cannot do: {line}"
        rows.append((cells[0], cells[1], cells[2], actions))
    return rows


class Harness:
    """Claude's cron tools as a dict: job id -> interval; it does only what a row says."""

    def __init__(self, rows: list[tuple[str, str, str, list[str]]]) -> None:
        self.rows = rows
        self.jobs: dict[str, str] = {}
        self.created = 0

    def _flag(self, spec: dict[str, Any], flag: str) -> bool:
        return {"-": True, "renew": bool(spec.get("on_complete", {}).get("renew")),
                "interval_changed": bool(spec.get("interval_changed")),
                "cron_job": "cron_job" in spec}[flag]

    def follow(self, spec: dict[str, Any]) -> list[str]:
        """Apply the first matching row; the actions it took."""
        jid = spec.get("cron_job_id", "")
        exists = jid in self.jobs
        for printed, flag, job, actions in self.rows:
            if printed != spec["status"] or not self._flag(spec, flag):
                continue
            if job != "-" and (job == "exists") != exists:
                continue
            for action in actions:
                if action == "delete":
                    del self.jobs[jid]
                elif action == "create":
                    assert jid not in self.jobs, "the table created a second job for one id"
                    self.jobs[jid] = spec["on_complete"]["cron_interval"]
                    self.created += 1
            return actions
        raise AssertionError(f"no row of the skill's table matches status {spec['status']!r}")


def _resume(drv: Driver, spec: dict[str, Any]) -> dict[str, Any]:
    call = drv.shell(spec["resume_command"])
    assert call.spec is not None, call.stderr
    return call.spec


def _told(spec: dict[str, Any], exists: bool) -> list[str]:
    """What the printed Claude note tells the harness to do now (the part before "Then end
    this session"), for a job that `exists` or not."""
    todo = spec["on_complete"]["note"].split(" Then end this session", 1)[0]
    if "leave it as it is; else CronCreate" in todo:
        return ["nothing"] if exists else ["create"]
    if "CronDelete" in todo and "CronCreate" in todo:
        return ["delete", "create"]
    raise AssertionError(f"a note the skill's table has no row for: {todo}")


def test_the_skill_table_played_literally_keeps_one_job_per_flow(fake_github: FakeGitHub, drv: Driver) -> None:
    """First tick, an unchanged tick, a secondary limit (interval grows), the wait over
    (interval back), a renewal after 6 days, done: one job at every step, none at the end."""
    repo = fake_github.repo("o/r")
    repo.add_pull(1, "feature", HEAD, merge_base_sha=BASE)
    run = repo.add_run(repo.add_workflow("pull", ".github/workflows/pull.yml"), HEAD, jobs=[("test", None)])
    harness = Harness(skill_table())
    first = drv.call(START).spec
    specs = [first, _resume(drv, first)]
    fake_github.secondary_limit(r"/pulls/1$")
    specs.append(_resume(drv, first))
    state = Path(first["workspace"]) / "flow_state.json"
    raw = json.loads(state.read_text())
    raw["data"]["github"]["until"] = "2000-01-01T00:00:00+00:00"
    state.write_text(json.dumps(raw))
    specs.append(_resume(drv, first))
    record = Path(first["workspace"]) / "cron_job.json"
    data = json.loads(record.read_text())
    data["created_at"] = (datetime.now(timezone.utc) - timedelta(days=6, hours=1)).isoformat()
    record.write_text(json.dumps(data))
    specs.append(_resume(drv, first))
    counts, did, told = [], [], []
    for spec in specs:
        told.append(_told(spec, spec["cron_job_id"] in harness.jobs))
        did.append(harness.follow(spec))
        counts.append(len(harness.jobs))
    assert ([1] * 5, specs[-1]["on_complete"]["cron_interval"]) == (
        counts, harness.jobs[first["cron_job_id"]])
    assert did == told  # the note printed on each tick says what the table's row says
    repo.jobs_of(run)[0].complete("success")
    done = _resume(drv, first)
    assert (["delete"], {}, 4) == (harness.follow(done), harness.jobs, harness.created)


def test_every_printed_rule_says_what_the_table_says() -> None:
    """The printed on_complete.rule names the same ideas as the skill's rows: create once,
    interval_changed, delete when done, never a second job."""
    from flow.core.render import CRON_RULE

    rows = skill_table()
    assert [("schedule_cron", "renew", "exists", ["delete", "create"]),
            ("schedule_cron", "interval_changed", "exists", ["delete", "create"]),
            ("schedule_cron", "-", "exists", ["nothing"]), ("schedule_cron", "-", "missing", ["create"]),
            ("done", "cron_job", "exists", ["delete"]), ("done", "-", "-", ["nothing"])] == rows
    assert all(w in CRON_RULE for w in ("Create it once", "interval_changed", "delete it", "Never create a second"))
