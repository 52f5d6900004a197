"""Green means every check the base branch requires passed: branch protection and the
repository rules decide, optional failures are reported and not babysat, and a token that may
not read protection falls back to "every check" visibly. Against the fake GitHub over HTTP."""

from __future__ import annotations

from typing import Any

from tests.contract.driver import Driver
from tests.fakegithub import FakeGitHub, Repo
from tests.fakegithub.render import app_id

HEAD, BASE = "a" * 40, "b" * 40
FAIL_LOG = "FAILED test_x.py::test_y - AssertionError: boom\n##[error]Process completed with exit code 1.\n"
START = ["--ci-check", "--repo", "o/r", "--pr-number", "1"]


def _pr(fake: FakeGitHub, jobs: list[tuple[str, str | None]]) -> Repo:
    repo = fake.repo("o/r")
    repo.add_pull(1, "feature", HEAD, merge_base_sha=BASE)
    wf = repo.add_workflow("pull", ".github/workflows/pull.yml")
    repo.add_run(wf, BASE, jobs=[(name, "success") for name, _ in jobs])
    run = repo.add_run(wf, HEAD, jobs=jobs)
    for job in repo.jobs_of(run):
        if job.conclusion == "failure":
            job.log = FAIL_LOG
    return repo


def _resume(drv: Driver, spec: dict[str, Any]) -> dict[str, Any]:
    call = drv.shell(spec["resume_command"])
    assert call.spec is not None, call.stderr
    return call.spec


def test_a_required_status_that_has_not_reported_keeps_the_watch_going(fake_github: FakeGitHub,
                                                                       drv: Driver) -> None:
    """Protection requires the status `ci/lint`: every job green but no such status yet is not
    green (and the PR is not marked ready); once it reports success the flow ends green."""
    repo = _pr(fake_github, [("test", "success")])
    repo.protect("main", ["test", "ci/lint"])
    first = drv.call([*START, "--mark-ready"]).spec
    assert ("schedule_cron", "waiting_for_ci", True, ["ci/lint", "test"], "branch_rules") == (
        first["status"], first["ci_phase"], repo.pulls[1].draft,
        first["required_checks"]["contexts"], first["required_checks"]["source"])
    repo.add_status(HEAD, "ci/lint", "success")
    done = _resume(drv, first)
    assert ("done", "all_green", False) == (done["status"], done["outcome"], repo.pulls[1].draft)


def test_a_required_check_tied_to_an_app_counts_only_from_that_app(fake_github: FakeGitHub,
                                                                    drv: Driver) -> None:
    """A ruleset requires `test` from GitHub Actions (its integration_id): a passing `test`
    check run from another app does not make the PR green; once the Actions job fails, it
    goes to the debugger."""
    repo = _pr(fake_github, [("lint", "success")])
    repo.add_check_run(HEAD, "test", "success", app="lookalike-bot")
    repo.add_ruleset(["main"], ["test"], apps={"test": app_id("github-actions")})
    first = drv.call(START).spec
    assert ("schedule_cron", {"test": [app_id("github-actions")]}) == (
        first["status"], first["required_checks"]["apps"])
    wf = repo.workflows[0]
    run = repo.add_run(wf, HEAD, jobs=[("test", "failure")])
    for job in repo.jobs_of(run):
        job.log = FAIL_LOG
    spec = _resume(drv, first)
    assert ("need_agent", ["test"]) == (spec["status"], [f["check_name"] for f in spec["failures"]])


def test_an_app_tied_check_not_yet_set_by_its_app_keeps_the_watch_going(fake_github: FakeGitHub,
                                                                         drv: Driver) -> None:
    """Protection requires `ci/build` set by one app (checks[].app_id); the same name from
    another app, green, is not it: the flow waits, naming the app, until that app reports."""
    repo = _pr(fake_github, [("test", "success")])
    repo.add_check_run(HEAD, "ci/build", "success", app="lookalike-bot")
    repo.protect("main", ["test", "ci/build"], apps={"ci/build": app_id("build-app")})
    first = drv.call(START).spec
    assert ("schedule_cron", "waiting_for_ci") == (first["status"], first["ci_phase"])
    repo.add_check_run(HEAD, "ci/build", "success", app="build-app")
    done = _resume(drv, first)
    assert ("done", "all_green") == (done["status"], done["outcome"])


def test_a_failing_optional_check_is_reported_not_debugged(fake_github: FakeGitHub, drv: Driver) -> None:
    """A ruleset requires `test` only: `docs` failing ends green at once, naming `docs` as an
    optional failure; no debugger task, no re-run."""
    repo = _pr(fake_github, [("test", "success"), ("docs", "failure")])
    repo.add_ruleset(["main"], ["test"])
    spec = drv.call(START).spec
    assert ("done", "all_green", ["docs"], 0) == (
        spec["status"], spec["outcome"], [f["check_name"] for f in spec["optional_failing"]],
        fake_github.count(r"/rerun-failed-jobs$", "POST"))
    assert any("optional checks fail" in s and "docs" in s for s in spec["next_steps"])


def test_a_failing_required_check_still_goes_to_the_debugger(fake_github: FakeGitHub, drv: Driver) -> None:
    """Required `test` fails while optional `docs` passes: a debugger round, as before."""
    repo = _pr(fake_github, [("test", "failure"), ("docs", "success")])
    repo.protect("main", ["test"])
    spec = drv.call(START).spec
    assert ("need_agent", ["test"]) == (spec["status"], [f["check_name"] for f in spec["failures"]])


def test_protection_the_token_may_not_read_falls_back_to_every_check_visibly(fake_github: FakeGitHub,
                                                                            drv: Driver) -> None:
    """403 on branch protection: every check counts (the failing `docs` goes to the debugger) and
    the printed spec says so, naming the refusal."""
    repo = _pr(fake_github, [("test", "success"), ("docs", "failure")])
    repo.add_ruleset(["main"], ["test"])
    fake_github.refuse(r"/protection/required_status_checks$", method="GET")
    spec = drv.call(START).spec
    note = spec["required_checks"]["note"]
    assert ("need_agent", ["docs"], "every_check") == (
        spec["status"], [f["check_name"] for f in spec["failures"]], spec["required_checks"]["source"])
    assert "branch protection: 403" in note and "every check counts" in note


def test_babysit_setting_treats_optional_checks_as_required(fake_github: FakeGitHub, drv: Driver) -> None:
    """ORCHESTRATOR_CI_OPTIONAL_CHECKS=babysit: the optional `docs` failure is debugged."""
    repo = _pr(fake_github, [("test", "success"), ("docs", "failure")])
    repo.protect("main", ["test"])
    spec = drv.call(START, {"ORCHESTRATOR_CI_OPTIONAL_CHECKS": "babysit"}).spec
    assert ("need_agent", ["docs"]) == (spec["status"], [f["check_name"] for f in spec["failures"]])


def test_a_bad_optional_checks_setting_is_refused(fake_github: FakeGitHub, drv: Driver) -> None:
    """An unknown ORCHESTRATOR_CI_OPTIONAL_CHECKS value is a clear error naming both values."""
    _pr(fake_github, [("test", "success")])
    call = drv.call(START, {"ORCHESTRATOR_CI_OPTIONAL_CHECKS": "maybe"})
    assert ("error", True) == (call.spec["status"], "babysit" in call.spec["error"]["hint"])


def test_a_kept_reading_is_read_again_before_the_flow_acts(fake_github: FakeGitHub, drv: Driver) -> None:
    """The required checks are read once per head, then kept; when protection gains a check
    while `test` finishes, the tick that would end green reads them again and waits instead."""
    repo = _pr(fake_github, [("test", None)])
    repo.protect("main", ["test"])
    first = drv.call(START).spec
    repo.protect("main", ["test", "ci/lint"])
    repo.jobs_of(repo.runs[-1])[0].complete("success")
    fake_github.reset_log()
    second = _resume(drv, first)
    assert ("schedule_cron", ["ci/lint", "test"], 1) == (
        second["status"], second["required_checks"]["contexts"],
        fake_github.count(r"/protection/required_status_checks$"))


def test_protection_without_required_checks_is_no_refusal(fake_github: FakeGitHub, drv: Driver) -> None:
    """404 "Required status checks not enabled" (protected, nothing required there): the rules'
    checks decide, and no fallback is announced."""
    repo = _pr(fake_github, [("test", "success"), ("docs", "failure")])
    repo.add_ruleset(["main"], ["test"])
    fake_github.fault(r"/protection/required_status_checks$", 404, times=None, method="GET",
                      message="Required status checks not enabled")
    spec = drv.call(START).spec
    assert ("done", "all_green", "branch_rules", None) == (
        spec["status"], spec["outcome"], spec["required_checks"]["source"], spec["required_checks"]["note"])
