"""Every way GitHub says no has an outcome on every GitHub step of `--ci-check` (through the CLI,
against the fake GitHub): transient -> schedule_cron with a sensible wait, permanent -> a
decision, a question for a person, or an honest end. Never exit 1, never the same error each tick."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from tests.contract.driver import Call, Driver
from tests.fakegithub import FakeGitHub, Repo
from tests.fakegithub.server import ADMIN_RIGHTS

HEAD, BASE, FIX = "a" * 40, "b" * 40, "c" * 40
START = ["--ci-check", "--repo", "o/r", "--pr-number", "1"]
LOST_LOG = "Running tests...\n##[error]The runner has received a shutdown signal.\n"
FAIL_LOG = "FAILED test_x.py::test_y - AssertionError: boom\n##[error]Process completed with exit code 1.\n"


def _pr(fake: FakeGitHub) -> Repo:
    repo = fake.repo("o/r")
    repo.add_pull(1, "feature", HEAD, merge_base_sha=BASE)
    wf = repo.add_workflow("pull", ".github/workflows/pull.yml")
    repo.add_run(wf, BASE, jobs=[("test", "success"), ("lint", "success")])
    return repo


def _infra(repo: Repo) -> Any:
    run = repo.add_run(repo.workflows[0], HEAD, jobs=[("lint", "success"), ("test", "failure")])
    repo.jobs_of(run)[1].log = LOST_LOG
    return run


def _state(spec: dict[str, Any]) -> tuple[Path, dict[str, Any]]:
    path = Path(spec["workspace"]) / "flow_state.json"
    return path, json.loads(path.read_text())


def _edit(spec: dict[str, Any], fn: Any) -> None:
    """Stand in for time passing: change the recorded times in the flow's state."""
    path, raw = _state(spec)
    fn(raw["data"])
    path.write_text(json.dumps(raw))


def _pass_wait(spec: dict[str, Any]) -> None:
    _edit(spec, lambda d: d["github"].update(until="2000-01-01T00:00:00+00:00"))


def _resume(drv: Driver, spec: dict[str, Any], env: dict[str, str] | None = None) -> Call:
    call = drv.shell(spec["resume_command"], env)
    assert call.spec is not None and call.code in (0, 2), call.stderr
    return call


def test_a_refused_rerun_is_recorded_never_repeated_and_reported(fake_github: FakeGitHub, drv: Driver) -> None:
    """403 "Must have admin rights" on the re-run: one POST, then done (needs_attention) naming the
    refusal; later ticks send nothing."""
    repo = _pr(fake_github)
    _infra(repo)
    fake_github.refuse(r"/rerun-failed-jobs$", message=ADMIN_RIGHTS)
    spec = drv.call(START).spec
    again = drv.call(START).spec  # a later firing of the same flow
    assert ("done", "ci_stopped", "needs_attention") == (spec["status"], spec["phase"], spec["outcome"])
    assert ADMIN_RIGHTS in spec["reason"] and ADMIN_RIGHTS in " ".join(spec["next_steps"])
    assert [f"403 {ADMIN_RIGHTS}"] == [r["refused"] for r in spec["refused_reruns"]]
    assert spec["flow_id"] == again.pop("reused_from")["flow_id"]  # the same finished flow
    assert "--restart" in again["next_steps"].pop()
    assert (1, again) == (fake_github.count(r"/rerun-failed-jobs$", "POST"), spec)


@pytest.mark.parametrize("status", [404, 422])
def test_a_rerun_github_cannot_do_is_a_decision_too(fake_github: FakeGitHub, drv: Driver, status: int) -> None:
    """404 or 422 on the re-run: recorded as refused, the flow goes on to a person."""
    repo = _pr(fake_github)
    _infra(repo)
    fake_github.fault(r"/rerun-failed-jobs$", status, times=None, message="Unprocessable")
    spec = drv.call(START).spec
    assert ("done", "needs_attention", 1) == (spec["status"], spec["outcome"],
                                              fake_github.count(r"/rerun-failed-jobs$", "POST"))


def test_secondary_limit_without_retry_after_waits_a_minute_then_longer(fake_github: FakeGitHub,
                                                                        drv: Driver) -> None:
    """A secondary limit with budget left and no retry-after: 1 minute, then 2, never the hourly reset."""
    repo = _pr(fake_github)
    repo.add_run(repo.workflows[0], HEAD, jobs=[("test", None)])
    spec = drv.call(START).spec
    fake_github.secondary_limit(r"/pulls/1$", times=None)
    first = _resume(drv, spec).spec
    _pass_wait(first)
    second = _resume(drv, spec).spec
    assert [("rate_limited", "*/1 * * * *", 60), ("rate_limited", "*/2 * * * *", 120)] == [
        (s["ci_phase"], s["on_complete"]["cron_interval"], s["github_wait"]["strikes"] * 60)
        for s in (first, second)]
    assert "secondary" in first["reason"]


def test_secondary_limit_with_retry_after_waits_that_long(fake_github: FakeGitHub, drv: Driver) -> None:
    """retry-after: 170 -> the next tick in 3 minutes (170 s + 5 s margin)."""
    repo = _pr(fake_github)
    repo.add_run(repo.workflows[0], HEAD, jobs=[("test", None)])
    spec = drv.call(START).spec
    fake_github.secondary_limit(r"/pulls/1$", retry_after=170)
    assert "*/3 * * * *" == _resume(drv, spec).spec["on_complete"]["cron_interval"]


def test_a_tick_before_the_wait_is_over_asks_github_nothing(fake_github: FakeGitHub, drv: Driver) -> None:
    """After a rate limit, a cron firing that comes early sleeps again without a request."""
    repo = _pr(fake_github)
    repo.add_run(repo.workflows[0], HEAD, jobs=[("test", None)])
    spec = drv.call(START).spec
    fake_github.rate_remaining = 0
    fake_github.rate_reset = int(time.time()) + 900
    _resume(drv, spec)
    fake_github.reset_log()
    early = _resume(drv, spec).spec
    assert ("schedule_cron", "rate_limited", 0) == (early["status"], early["ci_phase"], len(fake_github.requests))


def test_starting_while_rate_limited_schedules_instead_of_failing(fake_github: FakeGitHub, drv: Driver) -> None:
    """Budget spent at the start: the flow starts and sleeps until the reset; no error."""
    _pr(fake_github)
    fake_github.rate_remaining = 0
    fake_github.rate_reset = int(time.time()) + 600
    call = drv.call(START)
    assert (0, "schedule_cron", "rate_limited") == (call.code, call.spec["status"], call.spec["ci_phase"])
    assert call.spec["on_complete"]["cron_interval"] in {"*/10 * * * *", "*/11 * * * *"}


@pytest.mark.parametrize(("status", "message"), [
    (401, "Bad credentials"), (403, "Resource not accessible by personal access token"), (404, "Not Found"),
    (422, "Validation Failed")])
def test_permanent_refusals_mid_flow_ask_a_person_and_retry_or_stop(fake_github: FakeGitHub, drv: Driver,
                                                                     status: int, message: str) -> None:
    """401/403/404/422 on a tick: need_human with how to mend it; 'retry' goes on, 'stop' ends honestly."""
    repo = _pr(fake_github)
    repo.add_run(repo.workflows[0], HEAD, jobs=[("test", None)])
    spec = drv.call(START).spec
    fault = fake_github.fault(r"/check-runs$", status, times=None, message=message)
    asked = _resume(drv, spec).spec
    same = _resume(drv, spec).spec  # the next cron firing: the same question, no new request
    assert ("need_human", ["retry", "stop"], status) == (
        asked["status"], [o["value"] for o in asked["options"]], asked["github_error"]["status"])
    assert message in asked["question"] and asked["github_error"]["hint"] in asked["question"]
    assert asked["question_key"] == same["question_key"]
    fault.times = 0
    retried = drv.shell([o for o in asked["options"] if o["value"] == "retry"][0]["command"]).spec
    assert ("schedule_cron", "waiting_for_ci") == (retried["status"], retried["ci_phase"])
    fault.times = None
    again = _resume(drv, spec).spec
    stopped = drv.shell([o for o in again["options"] if o["value"] == "stop"][0]["command"])
    assert (0, "done", "ci_stopped", "stopped") == (stopped.code, stopped.spec["status"],
                                                     stopped.spec["phase"], stopped.spec["outcome"])
    assert message in stopped.spec["reason"]


def test_timeouts_are_transient(fake_github: FakeGitHub, drv: Driver) -> None:
    """A GitHub that does not answer within the timeout on every retry: sleep, not error."""
    repo = _pr(fake_github)
    repo.add_run(repo.workflows[0], HEAD, jobs=[("test", None)])
    spec = drv.call(START).spec
    fake_github.timeout(r"/check-runs$", 1.5, times=3)
    call = _resume(drv, spec, {"ORCHESTRATOR_GITHUB_TIMEOUT": "1"})
    assert ("schedule_cron", "github_unavailable") == (call.spec["status"], call.spec["ci_phase"])


def test_a_push_that_never_arrives_ends_at_the_deadline(fake_github: FakeGitHub, drv: Driver) -> None:
    """The debugger says it pushed, the PR head never moves: after the push deadline, a person."""
    repo = _pr(fake_github)
    run = repo.add_run(repo.workflows[0], HEAD, jobs=[("lint", "success"), ("test", "failure")])
    repo.jobs_of(run)[1].log = FAIL_LOG
    spec = drv.call(START, {"ORCHESTRATOR_CI_PUSH_DEADLINE_MINUTES": "30"}).spec
    task = spec["tasks"][0]
    Path(task["feed_file"]).write_text(json.dumps({
        "agent_id": "d", "agent_name": "debugger", "pushed_commit": FIX, "unrelated": [],
        "fixes_applied": [{"check_name": "test", "failure": "f", "verdict": "fixed", "rationale": "r"}]}))
    waiting = drv.shell(task["feed_command"]).spec
    past = (datetime.now(timezone.utc) - timedelta(minutes=31)).isoformat()
    _edit(waiting, lambda d: d["awaiting"].update(since=past))
    end = _resume(drv, waiting).spec
    assert ("waiting_for_push", "done", "needs_attention") == (waiting["ci_phase"], end["status"], end["outcome"])
    assert FIX[:12] in end["reason"]
    assert "deadline 30" in end["reason"]


def test_ci_running_past_its_deadline_ends_timed_out(fake_github: FakeGitHub, drv: Driver) -> None:
    """A head whose checks stay pending past the run deadline: done, timed_out, naming them."""
    repo = _pr(fake_github)
    repo.add_run(repo.workflows[0], HEAD, jobs=[("test", None)])
    spec = drv.call(START, {"ORCHESTRATOR_CI_RUN_DEADLINE_MINUTES": "60"}).spec
    past = (datetime.now(timezone.utc) - timedelta(minutes=61)).isoformat()
    _edit(spec, lambda d: d.update(waiting_since=past))
    end = _resume(drv, spec).spec
    assert ("done", "ci_stopped", "timed_out") == (end["status"], end["phase"], end["outcome"])
    assert "test" in end["reason"] and ["test"] == [f["check_name"] for f in end["still_failing"]]


def test_a_refused_mark_ready_is_named_not_hidden(fake_github: FakeGitHub, drv: Driver) -> None:
    """Green, --mark-ready, but GitHub refuses the mutation's PR read: done all_green, not marked,
    the refusal in the next steps."""
    repo = _pr(fake_github)
    repo.add_run(repo.workflows[0], HEAD, jobs=[("lint", "success"), ("test", "success")])
    fake_github.refuse(r"/graphql$")
    spec = drv.call([*START, "--mark-ready"]).spec
    assert ("done", "all_green", False) == (spec["status"], spec["outcome"], spec["marked_ready"])
    assert any("refused" in s for s in spec["next_steps"])


def test_statuses_past_one_page_are_all_read(fake_github: FakeGitHub, drv: Driver) -> None:
    """150 commit statuses, one of them red on the last page: the flow sees it."""
    repo = _pr(fake_github)
    repo.add_run(repo.workflows[0], HEAD, jobs=[("lint", "success"), ("test", "success")])
    for i in range(149):
        repo.add_status(HEAD, f"ctx-{i:03}", "success")
    repo.add_status(HEAD, "ctx-last", "pending")
    spec = drv.call(START).spec
    assert ("schedule_cron", "waiting_for_ci") == (spec["status"], spec["ci_phase"])


@pytest.mark.parametrize("wording", ["abuse", "content"])
def test_older_secondary_limit_wordings_wait_instead_of_asking(fake_github: FakeGitHub, drv: Driver,
                                                              wording: str) -> None:
    """A 403 "abuse detection ... Please wait a few minutes" / "... Please retry your request again
    later." without retry-after is a secondary limit (PyGithub's reading): sleep a minute, ask no one."""
    repo = _pr(fake_github)
    repo.add_run(repo.workflows[0], HEAD, jobs=[("test", None)])
    spec = drv.call(START).spec
    fake_github.secondary_limit(r"/pulls/1$", wording=wording)
    limited = _resume(drv, spec).spec
    assert ("schedule_cron", "rate_limited", "*/1 * * * *") == (
        limited["status"], limited["ci_phase"], limited["on_complete"]["cron_interval"])
