"""The `ci` workflow driven through the CLI (`--ci-check`) against the fake GitHub over HTTP."""

from __future__ import annotations

import json
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from tests.contract.driver import CRASH_HOOK, Driver, InProcess
from tests.fakegithub import FakeGitHub, Repo

HEAD, BASE, FIX, FIX2 = "a" * 40, "b" * 40, "c" * 40, "d" * 40
FAIL_LOG = "FAILED test_x.py::test_y - AssertionError: boom\n##[error]Process completed with exit code 1.\n"
LOST_LOG = "Running tests...\n##[error]The runner has received a shutdown signal.\n"
START = ["--ci-check", "--repo", "o/r", "--pr-number", "1"]


def _pr(fake: FakeGitHub, name: str = "o/r") -> tuple[Repo, Any]:
    repo = fake.repo(name)
    repo.add_pull(1, "feature", HEAD, merge_base_sha=BASE)
    wf = repo.add_workflow("pull", ".github/workflows/pull.yml")
    repo.add_run(wf, BASE, jobs=[("test", "success"), ("lint", "success")])
    return repo, wf


def _regression(fake: FakeGitHub, sha: str = HEAD, name: str = "o/r") -> Repo:
    repo = fake.repos.get(name) or _pr(fake, name)[0]
    wf = repo.workflows[0]
    run = repo.add_run(wf, sha, jobs=[("lint", "success"), ("test", "failure")])
    repo.jobs_of(run)[1].log = FAIL_LOG
    return repo


def _green(repo: Repo, sha: str) -> None:
    repo.add_run(repo.workflows[0], sha, jobs=[("lint", "success"), ("test", "success")])


def _feed(drv: Driver, spec: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    task = spec["tasks"][0]
    Path(task["feed_file"]).write_text(json.dumps(result))
    call = drv.shell(task["feed_command"])
    assert call.spec is not None, call.stderr
    return call.spec


def _debugged(pushed: str | None, unrelated: list[Any] | None = None) -> dict[str, Any]:
    return {"agent_id": "/root/debugger", "agent_name": "debugger", "pushed_commit": pushed,
            "fixes_applied": [{"check_name": "test", "failure": "test_y fails",
                               "verdict": "fixed", "rationale": "off by one", "change": "x.py"}],
            "unrelated": unrelated or []}


def _resume(drv: Driver, spec: dict[str, Any]) -> dict[str, Any]:
    call = drv.shell(spec["resume_command"])
    assert call.spec is not None, call.stderr
    return call.spec


def test_pending_checks_schedule_a_cron_tick_in_phase_ci_monitor(fake_github: FakeGitHub,
                                                                 drv: Driver) -> None:
    """A running check: schedule_cron with the CI waiting shape (Claude CronCreate)."""
    repo, wf = _pr(fake_github)
    repo.add_run(wf, HEAD, jobs=[("lint", "success"), ("test", None)])
    spec = drv.call(START).spec
    assert ("schedule_cron", "ci_monitor", "waiting_for_ci") == (spec["status"], spec["phase"],
                                                                 spec["ci_phase"])
    assert (1, HEAD, 0) == (spec["pr_number"], spec["head_sha"], spec["fix_round"])
    assert "https://github.example/o/r/pull/1" == spec["pr_url"]
    assert {"action": "CronCreate", "cron_interval": "*/7 * * * *", "durable": True} == {
        k: spec["on_complete"][k] for k in ("action", "cron_interval", "durable")}
    assert spec["resume_command"] in spec["on_complete"]["prompt"]


def test_each_tick_keeps_the_checks_it_read_and_an_unchanged_tick_saves_nothing(
        fake_github: FakeGitHub, drv: Driver) -> None:
    """data.checks holds every check of the head as read (status, conclusion, verdict,
    link), for the dashboard; a tick that sees the same checks leaves the state's bytes and
    revision as they were; one that sees a check move records the move."""
    repo, wf = _pr(fake_github)
    run = repo.add_run(wf, HEAD, jobs=[("lint", "success"), ("test", None)])
    spec = drv.call(START).spec
    state = Path(spec["workspace"]) / "flow_state.json"
    first = state.read_bytes()
    raw = json.loads(first)
    assert (HEAD, [("lint", "completed", "success", "green"), ("test", "queued", None, "pending")]
            ) == (raw["data"]["checks_sha"], [(c["name"], c["status"], c["conclusion"],
                                              c["category"]) for c in raw["data"]["checks"]])
    assert all(c["details_url"].startswith("https://github.example/o/r/actions/runs/")
               for c in raw["data"]["checks"])
    spec = _resume(drv, spec)
    assert ("schedule_cron", first) == (spec["status"], state.read_bytes())
    repo.jobs_of(run)[1].start()
    _resume(drv, spec)
    moved = json.loads(state.read_bytes())
    assert (raw["revision"] + 1, "in_progress") == (
        moved["revision"], moved["data"]["checks"][1]["status"])


def test_codex_gets_a_poll_interval_and_a_crontab_line(fake_github: FakeGitHub,
                                                       drv: Driver) -> None:
    """The same wait under --harness codex: action poll with poll_command and a cron line."""
    repo, wf = _pr(fake_github)
    repo.add_run(wf, HEAD, jobs=[("test", None)])
    spec = drv.call([*START, "--harness", "codex"]).spec
    assert ("schedule_cron", "poll", 420) == (spec["status"], spec["on_complete"]["action"],
                                              spec["on_complete"]["poll_interval_seconds"])
    assert "--resume" in spec["on_complete"]["poll_command"]


def test_regression_asks_one_debugger_with_log_lines_fenced_as_untrusted(
        fake_github: FakeGitHub, drv: Driver) -> None:
    """A red job: need_agent in ci_debug, bypassPermissions, failing lines only inside the fence."""
    _regression(fake_github)
    spec = drv.call(START).spec
    assert ("need_agent", "ci_debug", "debugging", 1) == (
        spec["status"], spec["phase"], spec["ci_phase"], spec["fix_round"])
    [failure] = spec["failures"]
    assert ("test", "pull / test") == (failure["check_name"], failure["job"])
    assert FAIL_LOG.splitlines() == failure["failing_lines"]
    [task] = spec["tasks"]
    assert ("debugger", "bypassPermissions", True) == (task["agent_name"], task["mode"],
                                                      task["run_in_background"])
    prompt = task["prompt"]
    fenced = prompt.index("<untrusted CI failures")
    assert prompt.index("FAILED test_x.py") > fenced
    assert prompt.index("FAILED test_x.py") < prompt.index("</untrusted>", fenced)
    assert 1 == prompt.count("FAILED test_x.py")


def test_a_pushed_fix_waits_for_the_new_head_then_ends_all_green_and_marks_ready(
        fake_github: FakeGitHub, drv: Driver) -> None:
    """Debugger pushes: wait while the head is unchanged; green on the new head: done, ready."""
    repo = _regression(fake_github)
    spec = drv.call([*START, "--mark-ready"]).spec
    spec = _feed(drv, spec, _debugged(FIX))
    assert ("schedule_cron", "waiting_for_push", 1) == (spec["status"], spec["ci_phase"],
                                                       spec["fix_round"])
    repo.push(1, FIX)
    repo.add_run(repo.workflows[0], FIX, jobs=[("lint", "success"), ("test", None)])
    spec = _resume(drv, spec)
    assert ("schedule_cron", "waiting_for_ci", FIX) == (spec["status"], spec["ci_phase"],
                                                       spec["head_sha"])
    repo.jobs_of(repo.runs[-1])[1].complete("success")
    spec = _resume(drv, spec)
    assert ("done", "ci_done", "all_green", True) == (
        spec["status"], spec["phase"], spec["outcome"], spec["marked_ready"])
    assert [FIX] == [r["pushed_commit"] for r in spec["fix_history"]]
    assert repo.pulls[1].draft is False
    assert any("CronDelete" in s for s in spec["next_steps"])


def test_green_without_mark_ready_leaves_the_draft_and_says_how(fake_github: FakeGitHub,
                                                                drv: Driver) -> None:
    """All green without --mark-ready: done, PR still draft, next_steps name gh pr ready."""
    repo, _ = _pr(fake_github)
    _green(repo, HEAD)
    spec = drv.call(START).spec
    assert ("done", "ci_done", "all_green", False) == (
        spec["status"], spec["phase"], spec["outcome"], spec["marked_ready"])
    assert repo.pulls[1].draft is True
    assert any("gh pr ready 1" in s for s in spec["next_steps"])
    assert 0 == fake_github.count("/graphql")


def test_a_second_regression_on_the_new_head_starts_round_two(fake_github: FakeGitHub,
                                                              drv: Driver) -> None:
    """The fix's head fails again: a new debugger round (fix_round 2) on the new head."""
    repo = _regression(fake_github)
    spec = _feed(drv, drv.call(START).spec, _debugged(FIX))
    repo.push(1, FIX)
    _regression(fake_github, FIX)
    spec = _resume(drv, spec)
    assert ("need_agent", "ci_debug", 2, FIX) == (spec["status"], spec["phase"],
                                                 spec["fix_round"], spec["head_sha"])
    assert "ci_debug-v2-debugger-a1" == spec["tasks"][0]["task_id"]
    assert "round 1 on aaaaaaaaaaaa" in spec["tasks"][0]["prompt"]


@pytest.mark.parametrize("comment", [False, True])
def test_the_fix_round_bound_gives_up_honestly(fake_github: FakeGitHub, drv: Driver,
                                               comment: bool) -> None:
    """Rounds exhausted: done gave_up in ci_stopped with what fails; optional one PR comment."""
    repo = _regression(fake_github)
    env = {"ORCHESTRATOR_CI_MAX_ROUNDS": "2", "ORCHESTRATOR_CI_COMMENT": "1" if comment else ""}
    spec = drv.call(START, env).spec
    for _ in range(2):
        spec = _feed(drv, spec, _debugged(None))
    assert ("done", "ci_stopped", "gave_up", 2) == (spec["status"], spec["phase"],
                                                   spec["outcome"], spec["fix_rounds"])
    assert ["test"] == [f["check_name"] for f in spec["still_failing"]]
    text = json.dumps(spec).lower()
    assert "all checks passed" not in text and "all_green" not in text
    assert any("NOT green" in s for s in spec["next_steps"])
    posted = repo.comments.get(1, [])
    assert (1 if comment else 0) == len(posted)
    assert (spec["comment_url"] is not None) == comment
    again = drv.call(["--flow", spec["flow_id"], "--resume"]).spec
    assert spec == again
    assert (1 if comment else 0) == len(repo.comments.get(1, []))


def test_unrelated_failures_with_no_push_end_in_needs_attention(fake_github: FakeGitHub,
                                                                drv: Driver) -> None:
    """The debugger calls every failure unrelated and pushes nothing: stop, do not loop."""
    _regression(fake_github)
    spec = _feed(drv, drv.call(START).spec, _debugged(None, ["test"]))
    assert ("done", "ci_stopped", "needs_attention") == (spec["status"], spec["phase"],
                                                         spec["outcome"])
    assert 1 == spec["fix_rounds"]


def test_broken_trunk_is_reported_not_debugged(fake_github: FakeGitHub, drv: Driver) -> None:
    """The same check fails at the merge base: needs_attention naming the broken trunk."""
    repo = fake_github.repo("o/r")
    repo.add_pull(1, "feature", HEAD, merge_base_sha=BASE)
    wf = repo.add_workflow("pull", ".github/workflows/pull.yml")
    run = repo.add_run(wf, HEAD, jobs=[("test", "failure")])
    repo.jobs_of(run)[0].log = FAIL_LOG
    repo.add_run(wf, BASE, jobs=[("test", "failure")])
    spec = drv.call(START).spec
    assert ("done", "ci_stopped", "needs_attention") == (spec["status"], spec["phase"],
                                                         spec["outcome"])
    assert "broken trunk" in spec["reason"]


def _infra(fake: FakeGitHub, name: str = "o/r") -> tuple[Repo, Any]:
    repo, wf = _pr(fake, name)
    run = repo.add_run(wf, HEAD, jobs=[("lint", "success"), ("test", "failure")])
    repo.jobs_of(run)[1].log = FAIL_LOG + LOST_LOG
    return repo, run


@pytest.mark.parametrize("second", ["success", "failure"])
def test_infra_failure_is_rerun_once_then_reported_if_it_fails_again(
        fake_github: FakeGitHub, drv: Driver, second: str) -> None:
    """Runner lost: one re-run of the failed jobs; green -> all_green; red again -> report."""
    repo, run = _infra(fake_github)
    spec = drv.call(START).spec
    assert ("schedule_cron", "waiting_for_ci") == (spec["status"], spec["ci_phase"])
    assert 2 == run.run_attempt
    job = repo.jobs_of(run)[-1]
    job.complete(second, FAIL_LOG + LOST_LOG)
    spec = _resume(drv, spec)
    expected = ("ci_done", "all_green") if second == "success" else ("ci_stopped",
                                                                    "needs_attention")
    assert ("done", *expected) == (spec["status"], spec["phase"], spec["outcome"])
    assert 1 == fake_github.count(r"/rerun-failed-jobs$", "POST")
    if second == "failure":
        assert "after its one re-run" in spec["reason"]
    else:
        assert ["test"] == spec["recovered_flaky"]


def test_a_cancelled_job_in_a_running_workflow_waits_before_any_rerun(
        fake_github: FakeGitHub, drv: Driver) -> None:
    """Infra in a run that is still going: wait (GitHub refuses re-runs of running runs)."""
    repo, wf = _pr(fake_github)
    repo.add_run(wf, HEAD, jobs=[("lint", None), ("test", "cancelled")])
    spec = drv.call(START).spec
    assert ("schedule_cron", "waiting_for_ci") == (spec["status"], spec["ci_phase"])
    assert 0 == fake_github.count(r"/rerun-failed-jobs$", "POST")


@pytest.mark.parametrize("when", ["before", "after"])
def test_rerun_is_never_repeated_when_killed_at_any_write(fake_github: FakeGitHub,
                                                          tmp_path: Path, when: str) -> None:
    """SIGKILL at every atomic write of the re-run tick, then resume (in this process): exactly
    one re-run POST."""
    counter = tmp_path / "count"
    _infra(fake_github, "o/count")
    Driver(tmp_path / "count-ws", {"PYTHONPATH": str(CRASH_HOOK),
                                   "ORCHESTRATOR_TEST_CRASH_AT": "999999",
                                   "ORCHESTRATOR_TEST_CRASH_COUNTER": str(counter)}).call(
        ["--ci-check", "--repo", "o/count", "--pr-number", "1"])
    points = int(counter.read_text())
    assert points >= 4
    for n in range(1, points + 1):
        name = f"o/kill-{when}-{n}"
        _infra(fake_github, name)
        env = {"PYTHONPATH": str(CRASH_HOOK), "ORCHESTRATOR_TEST_CRASH_AT": str(n),
               "ORCHESTRATOR_TEST_CRASH_COUNTER": str(tmp_path / f"c{n}"),
               "ORCHESTRATOR_TEST_CRASH_WHEN": when}
        drv = Driver(tmp_path / f"ws{n}", env)
        argv = ["--ci-check", "--repo", name, "--pr-number", "1"]
        first = drv.call(argv)
        assert first.code in (-9, 137), f"point {n}: not killed"
        spec = InProcess(tmp_path / f"ws{n}", {"ORCHESTRATOR_GITHUB_BACKOFF": "0.01"}).call(argv).spec
        assert "schedule_cron" == spec["status"], (n, spec)
        assert 1 == fake_github.count(rf"/repos/{name}/actions/runs/\d+/rerun-failed-jobs$",
                                      "POST"), f"point {n}"


def test_rate_limit_schedules_the_next_tick_at_the_reset(fake_github: FakeGitHub,
                                                         drv: Driver) -> None:
    """Budget spent mid-flow: schedule_cron (ci_phase rate_limited) within the minutes left."""
    repo, wf = _pr(fake_github)
    repo.add_run(wf, HEAD, jobs=[("test", None)])
    spec = drv.call(START).spec
    fake_github.rate_remaining = 0
    fake_github.rate_reset = int((datetime.now(timezone.utc) + timedelta(minutes=20)).timestamp())
    spec = _resume(drv, spec)
    assert ("schedule_cron", "ci_monitor", "rate_limited") == (spec["status"], spec["phase"],
                                                               spec["ci_phase"])
    assert spec["on_complete"]["cron_interval"] in {"*/20 * * * *", "*/21 * * * *"}
    assert "rate limit" in spec["reason"] and "resets at" in spec["reason"]


def test_server_errors_after_retries_sleep_and_grow_then_recover(
        fake_github: FakeGitHub, drv: Driver) -> None:
    """5xx on every retry: schedule_cron (github_unavailable) every 2, then 4 minutes; never an
    error; once GitHub answers, the watch goes on at its usual pace."""
    repo, wf = _pr(fake_github)
    repo.add_run(wf, HEAD, jobs=[("test", None)])
    spec = drv.call(START).spec
    fault = fake_github.fault(r"/check-runs$", 502, times=None)
    first = drv.shell(spec["resume_command"])
    _age_wait(first.spec)
    second = drv.shell(spec["resume_command"])
    fault.times = 0
    _age_wait(second.spec)
    third = _resume(drv, spec)
    assert [(0, "schedule_cron", "github_unavailable", "*/2 * * * *", True),
            (0, "schedule_cron", "github_unavailable", "*/4 * * * *", True),
            (0, "schedule_cron", "waiting_for_ci", "*/7 * * * *", True)] == [
        (c.code, c.spec["status"], c.spec["ci_phase"], c.spec["on_complete"]["cron_interval"],
         c.spec["interval_changed"]) for c in (first, second,
                                               type(first)([], 0, third, ""))]


def _age_wait(spec: dict[str, Any]) -> None:
    """Let the recorded GitHub wait pass (as the cron interval would)."""
    state = Path(spec["workspace"]) / "flow_state.json"
    raw = json.loads(state.read_text())
    raw["data"]["github"]["until"] = "2000-01-01T00:00:00+00:00"
    state.write_text(json.dumps(raw))


@pytest.mark.parametrize(("with_pr", "env", "argv", "code"), [
    (True, {"GITHUB_TOKEN": "", "GH_TOKEN": ""}, START, "github_missing_token"),
    (False, {}, ["--ci-check", "--repo", "o/missing", "--pr-number", "1"], "github_unknown_repo"),
    (True, {}, ["--ci-check", "--repo", "o/r", "--pr-number", "7"], "github_no_pull_request"),
    (False, {}, ["--ci-check", "--repo", "not a repo", "--pr-number", "1"], "bad_input"),
    (True, {"ORCHESTRATOR_CI_MAX_ROUNDS": "0"}, START, "bad_input"),
    (True, {"ORCHESTRATOR_CI_MAX_ROUNDS": "three"}, START, "bad_input"),
    (True, {"ORCHESTRATOR_CI_COMMENT": "maybe"}, START, "bad_input"),
    (True, {"ORCHESTRATOR_GITHUB_BACKOFF": "fast"}, START, "github_bad_setting"),
])
def test_bad_starts_are_clear_errors_that_write_no_flow(fake_github: FakeGitHub, drv: Driver,
                                                        with_pr: bool, env: dict[str, str],
                                                        argv: list[str], code: str) -> None:
    """Missing token, unknown repo, no such PR, bad --repo or setting: an error with a hint."""
    if with_pr:
        _pr(fake_github)
    call = drv.call(argv, env)
    assert (2, "error", code) == (call.code, call.spec["status"], call.spec["error"]["code"])
    assert call.spec["error"]["hint"]
    assert [] == list(drv.workspace.rglob("flow_state.json"))


def _end_pr(repo: Repo, how: str) -> None:
    if how == "merged":
        repo.pulls[1].merge()
    else:
        repo.pulls[1].close()


@pytest.mark.parametrize("how", ["merged", "closed"])
def test_a_pr_merged_or_closed_while_ci_runs_ends_the_watch(fake_github: FakeGitHub, drv: Driver,
                                                            how: str) -> None:
    """Pending CI, then the PR is merged or closed: the next tick ends done in ci_closed with
    that outcome and a CronDelete step, reading only the PR."""
    repo, wf = _pr(fake_github)
    repo.add_run(wf, HEAD, jobs=[("lint", "success"), ("test", None)])
    spec = drv.call(START).spec
    assert "schedule_cron" == spec["status"]
    _end_pr(repo, how)
    fake_github.reset_log()
    spec = _resume(drv, spec)
    assert ("done", "ci_closed", how, HEAD) == (spec["status"], spec["phase"], spec["outcome"],
                                                spec["head_sha"])
    assert any("CronDelete" in s for s in spec["next_steps"])
    assert (1, 0) == (fake_github.count(r"/pulls/1$"), fake_github.count(r"/(check-runs|runs)$"))
    again = drv.call(["--flow", spec["flow_id"], "--resume"]).spec
    assert spec == again


@pytest.mark.parametrize(("how", "red"), [("merged", "regression"), ("closed", "regression"),
                                          ("merged", "infra"), ("closed", "infra")])
def test_a_closed_pr_with_red_checks_is_never_debugged_or_rerun(
        fake_github: FakeGitHub, drv: Driver, how: str, red: str) -> None:
    """Red checks on a merged or closed PR: no debugger task, no re-run, no log read."""
    repo = _regression(fake_github) if red == "regression" else _infra(fake_github)[0]
    _end_pr(repo, how)
    spec = drv.call(START).spec
    assert ("done", "ci_closed", how, 0) == (spec["status"], spec["phase"], spec["outcome"],
                                             spec["fix_rounds"])
    assert (0, 0) == (fake_github.count(r"/rerun-failed-jobs$"), fake_github.count(r"/logs$"))


def test_a_pr_merged_while_the_debugger_waits_for_its_push_ends_merged(
        fake_github: FakeGitHub, drv: Driver) -> None:
    """The debugger pushed, the head has not moved, and the PR is merged: done merged, not wait."""
    repo = _regression(fake_github)
    spec = _feed(drv, drv.call(START).spec, _debugged(FIX))
    assert ("schedule_cron", "waiting_for_push") == (spec["status"], spec["ci_phase"])
    _end_pr(repo, "merged")
    spec = _resume(drv, spec)
    assert ("done", "ci_closed", "merged", 1) == (spec["status"], spec["phase"], spec["outcome"],
                                                  spec["fix_rounds"])
    assert [FIX] == [r["pushed_commit"] for r in spec["fix_history"]]


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True)


@pytest.mark.parametrize("branch", ["feature", "other"])
def test_without_a_number_the_current_branch_finds_its_pr(fake_github: FakeGitHub, drv: Driver,
                                                          tmp_path: Path, branch: str) -> None:
    """No --pr-number: origin + current branch locate the PR; a branch with none is an error."""
    repo, wf = _pr(fake_github)
    repo.add_run(wf, HEAD, jobs=[("test", None)])
    clone = tmp_path / "clone"
    clone.mkdir()
    _git(clone, "init", "-q", "-b", branch)
    _git(clone, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty",
         "-m", "x")
    _git(clone, "remote", "add", "origin", "https://github.com/o/r.git")
    call = drv.call(["--ci-check", "--repo-dir", str(clone)])
    if branch == "feature":
        assert ("schedule_cron", "ci/o/r/pr-1") == (call.spec["status"], call.spec["flow_id"])
    else:
        assert ("error", "github_no_pull_request") == (call.spec["status"],
                                                       call.spec["error"]["code"])
        assert "--pr-number" in call.spec["error"]["hint"]


def test_a_tick_while_the_debugger_works_spawns_nothing_and_asks_github_nothing(
        fake_github: FakeGitHub, drv: Driver) -> None:
    """Cron firing mid-debug: `waiting` with the same task (same id), no new task, no request."""
    _regression(fake_github)
    spec = drv.call(START).spec
    fake_github.reset_log()
    again = _resume(drv, spec)
    direct = drv.call(START).spec
    assert ("need_agent", "waiting") == (spec["status"], again["status"])
    assert again == direct
    assert spec["tasks"] == again["tasks"]
    assert [t["task_id"] for t in spec["tasks"]] == [t["task_id"] for t in again["in_flight"]]
    assert 0 == len(fake_github.requests)
    audit = (Path(spec["workspace"]) / "audit.jsonl").read_text().splitlines()
    assert 1 == sum(1 for line in audit if json.loads(line)["event"] == "emitted")


def test_a_tick_while_another_holds_the_lock_is_busy_and_does_nothing(
        fake_github: FakeGitHub, drv: Driver) -> None:
    """Two ticks at once: the second waits, then answers busy without touching GitHub."""
    from workspace.lock import FlowLock

    repo, wf = _pr(fake_github)
    repo.add_run(wf, HEAD, jobs=[("test", None)])
    spec = drv.call(START).spec
    fake_github.reset_log()
    with FlowLock(Path(spec["workspace"])):
        call = drv.shell(spec["resume_command"], {"ORCHESTRATOR_LOCK_TIMEOUT": "0.3"})
    assert (3, "busy") == (call.code, call.spec["error"]["code"])
    assert 0 == len(fake_github.requests)


def test_the_ci_phase_survives_resume_and_a_restart(fake_github: FakeGitHub, drv: Driver) -> None:
    """Waiting for a pushed fix is kept across new processes; --restart starts at round 0."""
    _regression(fake_github)
    spec = _feed(drv, drv.call(START).spec, _debugged(FIX))
    for _ in range(2):
        spec = _resume(drv, spec)
        assert ("schedule_cron", "ci_monitor", "waiting_for_push", 1) == (
            spec["status"], spec["phase"], spec["ci_phase"], spec["fix_round"])
    spec = drv.call([*START, "--restart"]).spec
    assert ("need_agent", "ci_debug", 1) == (spec["status"], spec["phase"], spec["fix_round"])


@pytest.mark.parametrize(("result", "field"), [
    ({"fixes_applied": [], "pushed_commit": "HEAD"}, "pushed_commit"),
    ({"fixes_applied": [{"check_name": "test"}], "pushed_commit": None}, "fixes_applied.0.failure"),
    ({"fixes_applied": [], "unrelated": [], "pushed_commit": None, "all_clear": True}, "all_clear"),
    ({"unrelated": []}, "fixes_applied"),
])
def test_malformed_debugger_results_are_refused(fake_github: FakeGitHub, drv: Driver,
                                                result: dict[str, Any], field: str) -> None:
    """Feeds missing fields, with a non-sha commit or unknown keys are refused; state untouched."""
    _regression(fake_github)
    spec = drv.call(START).spec
    task = spec["tasks"][0]
    Path(task["feed_file"]).write_text(json.dumps(result))
    call = drv.shell(task["feed_command"])
    assert (2, "invalid_feed") == (call.code, call.spec["error"]["code"])
    assert field in [e["field"] for e in call.spec["error"]["field_errors"]]
    after = _resume(drv, spec)
    assert ("waiting", spec["tasks"]) == (after["status"], after["tasks"])


def test_the_tick_awaiting_the_debuggers_push_asks_only_for_the_pr(fake_github: FakeGitHub,
                                                                   drv: Driver) -> None:
    """Debugger pushed, head not moved yet: each cron tick is one request (the PR), same answer."""
    _regression(fake_github)
    spec = _feed(drv, drv.call(START).spec, _debugged(FIX))
    fake_github.reset_log()
    spec = _resume(drv, spec)
    assert ("schedule_cron", "ci_monitor", "waiting_for_push", 1, HEAD) == (
        spec["status"], spec["phase"], spec["ci_phase"], spec["fix_round"], spec["head_sha"])
    assert [("GET", "/repos/o/r/pulls/1")] == [(r.method, r.path) for r in fake_github.requests]


def test_the_tick_after_the_flows_rerun_waits_on_a_stale_runs_listing(
        fake_github: FakeGitHub, drv: Driver, monkeypatch: pytest.MonkeyPatch) -> None:
    """Right after the re-run POST GitHub may list the run's new attempt before any of its jobs:
    check runs and statuses unchanged (304) while another job still runs, so the next tick
    reuses the cached runs listing, which still shows the run completed. That reading cannot
    mislead: the run is among the flow's re-runs and a job is pending, so the flow waits."""
    repo, run = _infra(fake_github)
    repo.add_run(repo.add_workflow("slow", ".github/workflows/slow.yml"), HEAD, jobs=[("gpu", None)])

    def new_attempt_without_jobs(r: Any, *, all_jobs: bool = False) -> None:
        r.run_attempt += 1
        r.status, r.conclusion = "queued", None

    monkeypatch.setattr(repo, "rerun_failed", new_attempt_without_jobs)
    spec = drv.call(START).spec
    assert ("schedule_cron", "waiting_for_ci", 2) == (spec["status"], spec["ci_phase"],
                                                      run.run_attempt)
    seen = [(r.method, r.path.rsplit("/", 1)[-1], r.status) for r in fake_github.requests
            if r.path.endswith(("/check-runs", "/actions/runs", "/rerun-failed-jobs"))
            and HEAD in r.query.get("head_sha", HEAD) and BASE not in r.path]
    after = seen[seen.index(("POST", "rerun-failed-jobs", 201)) + 1:]
    assert [("GET", "check-runs", 304)] == after  # the runs listing came from the cache
    again = drv.call(["--flow", spec["flow_id"], "--resume"]).spec
    assert ("schedule_cron", "waiting_for_ci") == (again["status"], again["ci_phase"])


@pytest.mark.parametrize("context", ["codecov/patch", "EasyCLA"])
def test_a_red_status_without_a_workflow_run_stops_with_needs_attention(fake_github: FakeGitHub,
                                                                       drv: Driver, context: str) -> None:
    """Every job green, a failing commit status from outside Actions: needs_attention naming it,
    no debugger round (nothing here can read its log or re-run it)."""
    repo, _ = _pr(fake_github)
    _green(repo, HEAD)
    repo.add_status(HEAD, context, "failure", "coverage dropped")
    spec = drv.call(START).spec
    assert ("done", "needs_attention", [context], 0) == (
        spec["status"], spec["outcome"], [f["check_name"] for f in spec["still_failing"]], spec["fix_rounds"])
    assert "no workflow run" in spec["reason"]
