"""Every way GitHub says no has an outcome on every GitHub step of ``ci-targeted`` (the PR lookup
at the start, dispatch's reads, the comment and label writes, polling runs and jobs, reading
logs for the debugger), through the real CLI against the fake GitHub playing miles' real
Rerun Test gateway: transient -> schedule_cron with the growing waits of
flow.github.trouble, permanent -> need_human (retry / stop) or, at the start, an error that
writes nothing. Never exit 1, never the same error on every tick."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.contract.driver import Call, Driver, InProcess
from tests.fakegithub import FakeGitHub, Fault, RerunGateway
from tests.fakegithub.server import NOT_ACCESSIBLE, SECONDARY_MESSAGE
from tests.fakegithub.state import Repo as GhRepo
from tests.targeted.conftest import Repo, cuda_test

REPO, NUMBER, MAIN_TIP = "acme/widgets", 7, "f" * 40
A = "tests/test_a.py"
FAIL_LOG = "collected 1 item\nE   AssertionError: expected 2, got 3\nFAILED tests/test_a.py::test_x\n"
PRIMARY = "API rate limit exceeded for user ID 1."


class Flow:
    """One PR changing pkg.core, reached by tests/test_a.py; the fake repo runs miles' gateway.
    ``broad`` also changes a Dockerfile, which makes the plan add labels instead."""

    def __init__(self, repo: Repo, fake: FakeGitHub, tmp: Path, broad: bool = False) -> None:
        self.repo, self.fake = repo, fake
        repo.commit({"pkg/__init__.py": "", "pkg/core.py": "X = 1\n",
                     A: cuda_test("from pkg import core")}, "base")
        repo.git("checkout", "-q", "-b", "pr")
        extra = {"Dockerfile": "FROM python\n"} if broad else {}
        self.head = repo.commit({"pkg/core.py": "X = 2\n", **extra}, "change core")
        self.gh: GhRepo = fake.repo(REPO)
        self.gh.add_pull(NUMBER, "pr", self.head)
        self.gateway: RerunGateway = self.gh.enable_rerun_gateway(MAIN_TIP)
        self.drv = InProcess(tmp / "ws", {"ORCHESTRATOR_GITHUB_BACKOFF": "0.01",
                                       "ORCHESTRATOR_GITHUB_TIMEOUT": "1"})

    def start(self, env: dict[str, str] | None = None) -> Call:
        return self.drv.call(["ci-targeted", "--base", "main", "--pr-number", str(NUMBER),
                              "--repo", REPO, "--repo-dir", str(self.repo.path), "--approved"],
                             env)

    def resume(self, spec: dict[str, Any], env: dict[str, str] | None = None) -> Call:
        call = self.drv.shell(spec["resume_command"], env)
        assert call.spec is not None and call.code != 1, call.stderr
        return call

    def answer(self, spec: dict[str, Any], value: str) -> Call:
        return self.drv.shell(next(o["command"] for o in spec["options"] if o["value"] == value))

    def ours(self) -> list[str]:
        """The comments the flow posted (not the gateway's replies)."""
        return [c["body"] for c in self.gh.comments.get(NUMBER, []) if c["login"] != RerunGateway.BOT]

    def finish_runs(self, conclusion: str, log: str = "") -> None:
        with self.fake.lock:
            for _, _, run in self.gateway.dispatched:
                self.gateway.finish(self.gh, run, conclusion, log)

    def pass_wait(self, spec: dict[str, Any]) -> None:
        """Stand in for time passing: the recorded GitHub wait is over."""
        path = Path(spec["workspace"]) / "flow_state.json"
        raw = json.loads(path.read_text())
        raw["data"]["github"]["until"] = "2000-01-01T00:00:00+00:00"
        path.write_text(json.dumps(raw))


@dataclass(frozen=True)
class Step:
    """Where a step's requests go, how to bring the flow to it, and what it does once GitHub
    answers again (the phase the next call prints)."""

    path: str
    method: str
    before: Callable[[Flow], dict[str, Any] | None]  # None: the fault is there at the start
    broad: bool = False


def _posted(f: Flow) -> dict[str, Any]:
    spec = f.start().spec
    assert ("schedule_cron", "waiting_for_runs") == (spec["status"], spec["targeted_phase"]), spec
    return spec


def _failed(f: Flow) -> dict[str, Any]:
    spec = _posted(f)
    f.finish_runs("failure", FAIL_LOG)
    return spec


STEPS = {
    "dispatch": Step(r"/issues/7/comments$", "GET", lambda f: None),
    "post_comment": Step(r"/issues/7/comments$", "POST", lambda f: None),
    "post_labels": Step(r"/issues/7/labels$", "POST", lambda f: None, broad=True),
    "poll_run": Step(r"/actions/runs/\d+$", "GET", _posted),
    "poll_jobs": Step(r"/actions/runs/\d+/jobs$", "GET", _posted),
    "debug_logs": Step(r"/actions/jobs/\d+/logs$", "GET", _failed),
}


def _fault(fake: FakeGitHub, kind: str, step: Step) -> Fault:
    rx, m = step.path, step.method
    if kind == "primary":
        reset = str(int(time.time()) + 600)
        return fake.fault(rx, 403, times=None, method=m, message=PRIMARY,
                          headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset})
    if kind == "secondary":
        return fake.fault(rx, 403, times=None, method=m, message=SECONDARY_MESSAGE)
    if kind == "5xx":
        return fake.fault(rx, 502, times=None, method=m)
    if kind == "timeout":
        return fake.timeout(rx, 1.5, times=None, method=m)
    status, message = {"401": (401, "Bad credentials"), "403": (403, NOT_ACCESSIBLE),
                       "404": (404, "Not Found"), "422": (422, "Validation Failed")}[kind]
    return fake.fault(rx, status, times=None, method=m, message=message)


# kind -> (targeted_phase, cron intervals accepted)
TRANSIENT = {"primary": ("rate_limited", {"*/10 * * * *", "*/11 * * * *"}),
             "secondary": ("rate_limited", {"*/1 * * * *"}),
             "5xx": ("github_unavailable", {"*/2 * * * *"}),
             "timeout": ("github_unavailable", {"*/2 * * * *"})}
PERMANENT = ["401", "403", "404", "422"]


def _meet(f: Flow, fake: FakeGitHub, kind: str, step: Step) -> tuple[dict[str, Any], Fault]:
    """Bring the flow to the step, inject the fault, make the call that meets it there."""
    spec = step.before(f)
    fault = _fault(fake, kind, step)
    call = f.start() if spec is None else f.resume(spec)
    assert call.spec is not None and call.code != 1, call.stderr
    return call.spec, fault


def _went_on(f: Flow, name: str, spec: dict[str, Any]) -> None:
    """The step did its work once GitHub answered again."""
    if name == "debug_logs":
        assert ("need_agent", [A]) == (spec["status"], spec["failures"])
        assert "expected 2, got 3" in json.dumps(spec["tasks"][0])
    elif name == "post_labels":
        assert ("done", "labels_added", ["run-ci-rollout"]) == (
            spec["status"], spec["outcome"], f.gh.labels.get(NUMBER))
    else:
        assert ("schedule_cron", "waiting_for_runs") == (spec["status"], spec["targeted_phase"])
    assert [f"/rerun-test {A}"] == f.ours() or name == "post_labels"


@pytest.fixture
def flow_of(repo: Repo, fake_github: FakeGitHub, tmp_path: Path) -> Callable[..., Flow]:
    return lambda **kw: Flow(repo, fake_github, tmp_path, **kw)


@pytest.mark.parametrize("kind", list(TRANSIENT))
@pytest.mark.parametrize("name", list(STEPS))
def test_transient_failures_sleep_then_go_on(flow_of: Callable[..., Flow], fake_github: FakeGitHub,
                                             name: str, kind: str) -> None:
    """Limits, 5xx and timeouts on a step: schedule_cron with trouble.py's wait; an early tick
    asks GitHub nothing; once the wait is over and GitHub answers, the step does its work once."""
    step = STEPS[name]
    f = flow_of(broad=step.broad)
    spec, fault = _meet(f, fake_github, kind, step)
    phase, crons = TRANSIENT[kind]
    assert ("schedule_cron", phase) == (spec["status"], spec["targeted_phase"]), spec
    assert spec["on_complete"]["cron_interval"] in crons and spec["github_wait"]["strikes"] == 1
    if kind == "timeout":
        fake_github.wait_landed(fault)  # the fake answers the request the client gave up on, and logs it
    fake_github.reset_log()
    early = f.resume(spec).spec
    assert ("schedule_cron", 0) == (early["status"], len(fake_github.requests))
    fault.times = 0
    f.pass_wait(spec)
    _went_on(f, name, f.resume(spec).spec)


@pytest.mark.parametrize(("name", "kind"), [
    (n, k) for n in STEPS for k in PERMANENT if (n, k) != ("debug_logs", "404")])
def test_permanent_refusals_ask_a_person_who_can_retry(flow_of: Callable[..., Flow],
                                                       fake_github: FakeGitHub, name: str,
                                                       kind: str) -> None:
    """401/403/404/422 on a step: need_human quoting GitHub and how to mend it; the next tick
    asks the same question without a request; 'retry' once mended does the step's work."""
    step = STEPS[name]
    f = flow_of(broad=step.broad)
    asked, fault = _meet(f, fake_github, kind, step)
    assert ("need_human", ["retry", "stop"], int(kind)) == (
        asked["status"], [o["value"] for o in asked["options"]], asked["github_error"]["status"])
    assert fault.message in asked["question"] and asked["github_error"]["hint"] in asked["question"]
    fake_github.reset_log()
    same = f.resume(asked).spec
    assert (asked["question_key"], 0) == (same["question_key"], len(fake_github.requests))
    fault.times = 0
    _went_on(f, name, f.answer(asked, "retry").spec)


@pytest.mark.parametrize("status", [404, 410])
def test_a_log_github_no_longer_keeps_is_named_to_the_debugger(flow_of: Callable[..., Flow],
                                                               fake_github: FakeGitHub,
                                                               status: int) -> None:
    """A failed job's log answering 404/410 (logs expire): the debugger still gets the task,
    told the log is unavailable and given the run's link; no question, no loop."""
    f = flow_of()
    spec = _failed(f)
    fake_github.fault(STEPS["debug_logs"].path, status, times=None, message="Not Found")
    got = f.resume(spec).spec
    prompt = json.dumps(got["tasks"][0])
    assert ("need_agent", [A], True) == (got["status"], got["failures"], "log unavailable" in prompt)
    assert "/actions/runs/" in prompt


@pytest.mark.parametrize("name", ["post_comment", "poll_jobs", "debug_logs"])
def test_stop_after_a_refusal_ends_honestly(flow_of: Callable[..., Flow], fake_github: FakeGitHub,
                                            name: str) -> None:
    """'stop' to a refusal: done, outcome stopped, the refusal named in reason,
    github_problems and next_steps; nothing claims the files passed."""
    f = flow_of()
    asked, _ = _meet(f, fake_github, "403", STEPS[name])
    end = f.answer(asked, "stop")
    assert (0, "done", "stopped") == (end.code, end.spec["status"], end.spec["outcome"])
    assert NOT_ACCESSIBLE in end.spec["reason"] and NOT_ACCESSIBLE in end.spec["github_problems"][0]
    assert any("--restart" in s for s in end.spec["next_steps"])
    assert "passed" not in {x["result"] for x in end.spec["files"]}


@pytest.mark.parametrize("kind", PERMANENT)
def test_a_start_github_refuses_is_an_error_that_writes_nothing(flow_of: Callable[..., Flow],
                                                                fake_github: FakeGitHub,
                                                                kind: str) -> None:
    """The PR lookup at the start refused (401/403/404/422): a JSON error with a hint, exit 2,
    no flow written: the command itself must change."""
    f = flow_of()
    _fault(fake_github, kind, Step(r"/pulls/7$", "GET", lambda f: None))
    call = f.start()
    assert (2, "error") == (call.code, call.spec["status"]) and call.spec["error"]["hint"]
    assert [] == list(f.drv.workspace.rglob("flow_state.json"))


@pytest.mark.parametrize("kind", list(TRANSIENT))
def test_a_start_while_github_is_limited_or_down_sleeps(flow_of: Callable[..., Flow],
                                                        fake_github: FakeGitHub, kind: str) -> None:
    """The PR lookup at the start limited, failing or timing out: the flow starts and sleeps;
    once the wait is over it records the PR head and posts."""
    f = flow_of()
    fault = _fault(fake_github, kind, Step(r"/pulls/7$", "GET", lambda f: None))
    spec = f.start().spec
    assert ("schedule_cron", TRANSIENT[kind][0], []) == (spec["status"], spec["targeted_phase"],
                                                         f.ours())
    fault.times = 0
    f.pass_wait(spec)
    _went_on(f, "dispatch", f.resume(spec).spec)


def test_the_wait_grows_while_a_secondary_limit_repeats(flow_of: Callable[..., Flow],
                                                        fake_github: FakeGitHub) -> None:
    """A secondary limit without retry-after on every poll: 1 minute, then 2, then 4."""
    f = flow_of()
    spec = _posted(f)
    _fault(fake_github, "secondary", STEPS["poll_run"])
    crons = []
    for _ in range(3):
        got = f.resume(spec).spec
        crons.append(got["on_complete"]["cron_interval"])
        f.pass_wait(got)
    assert ["*/1 * * * *", "*/2 * * * *", "*/4 * * * *"] == crons


def test_a_comment_posted_by_a_write_that_timed_out_is_not_posted_again(
        flow_of: Callable[..., Flow], fake_github: FakeGitHub) -> None:
    """A comment POST that times out may have landed (here it did): the retry finds it on the
    PR and posts nothing more."""
    f = flow_of()
    fault = fake_github.timeout(r"/issues/7/comments$", 1.5, times=1, method="POST")
    spec = f.start().spec
    assert ("schedule_cron", "github_unavailable") == (spec["status"], spec["targeted_phase"])
    fake_github.wait_landed(fault)  # the slow answer lands after the client gave up
    assert 0 == fault.times
    f.pass_wait(spec)
    _went_on(f, "post_comment", f.resume(spec).spec)
    assert 1 == fake_github.count(r"/issues/7/comments$", "POST")


def test_api_url_and_token_file_are_kept_in_the_flow(flow_of: Callable[..., Flow],
                                                     fake_github: FakeGitHub, tmp_path: Path) -> None:
    """Started with ORCHESTRATOR_GITHUB_TOKEN_FILE, a tick under a bare environment (no API URL,
    no token) reaches the same fake with the file's token; a token file gone is a question."""
    f = flow_of()
    token_file = tmp_path / "gh.env"
    token_file.write_text(f"export GITHUB_TOKEN={fake_github.token}\n")
    spec = f.start({"ORCHESTRATOR_GITHUB_TOKEN_FILE": str(token_file)}).spec
    bare = {"GITHUB_TOKEN": "", "GH_TOKEN": "", "ORCHESTRATOR_GITHUB_API": "",
            "ORCHESTRATOR_GITHUB_TOKEN_FILE": ""}
    fake_github.reset_log()
    again = f.resume(spec, bare).spec
    assert ("schedule_cron", "waiting_for_runs") == (again["status"], again["targeted_phase"])
    assert fake_github.count(r"/actions/runs/\d+$") >= 1
    assert fake_github.token not in (Path(spec["workspace"]) / "flow_state.json").read_text()
    token_file.unlink()
    asked = f.resume(spec, bare).spec
    assert ("need_human", "github_bad_setting") == (asked["status"], asked["github_error"]["code"])
    token_file.write_text(f"{fake_github.token}\n")
    assert "waiting_for_runs" == f.answer(asked, "retry").spec["targeted_phase"]


def test_a_missing_token_mid_flow_asks_instead_of_failing(flow_of: Callable[..., Flow]) -> None:
    """A tick with no token anywhere: need_human saying what to export, not exit 1 each tick."""
    f = flow_of()
    spec = _posted(f)
    asked = f.resume(spec, {"GITHUB_TOKEN": "", "GH_TOKEN": ""}).spec
    assert ("need_human", "github_missing_token") == (asked["status"], asked["github_error"]["code"])
    assert "GITHUB_TOKEN" in asked["question"]


def test_finding_the_branch_pr_while_limited_is_an_error_with_the_wait(
        flow_of: Callable[..., Flow], fake_github: FakeGitHub) -> None:
    """Without --pr-number the flow's id needs the PR GitHub will not name yet: a JSON error
    (exit 2) saying when to ask again, and no flow written."""
    f = flow_of()
    f.repo.git("remote", "add", "origin", f"https://github.com/{REPO}.git")
    fake_github.rate_remaining = 0
    call = f.drv.call(["ci-targeted", "--base", "main", "--repo-dir", str(f.repo.path)])
    assert (2, "github_rate_limited") == (call.code, call.spec["error"]["code"])
    assert "wait until" in call.spec["error"]["hint"]
    assert [] == list(f.drv.workspace.rglob("flow_state.json"))
