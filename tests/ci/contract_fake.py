"""A static fake GitHub for the contract suite's `ci` scenario (started once per process).

The contract suite replays its scenario many times (kill at each write, resume), so the
server state must not change while it runs: PR 1 of contract/ci has one job that always
fails, and the scripted debugger never pushes. The flow therefore uses its three fix
rounds and ends `gave_up`, which exercises need_agent, feeds and the honest end.
"""

from __future__ import annotations

from functools import cache

from tests.fakegithub import FakeGitHub

REPO = "contract/ci"
FAIL_LOG = "FAILED test_x.py::test_y - AssertionError: boom\n##[error]Process completed with exit code 1.\n"


@cache
def shared_fake() -> FakeGitHub:
    """The started server (a daemon thread; it lives as long as the test process)."""
    fake = FakeGitHub().start()
    fake.rate_remaining = fake.rate_limit = 10**9  # replays make thousands of requests
    repo = fake.repo(REPO)
    repo.add_pull(1, "feature", "a" * 40, merge_base_sha="b" * 40)
    wf = repo.add_workflow("pull", ".github/workflows/pull.yml")
    run = repo.add_run(wf, "a" * 40, jobs=[("lint", "success"), ("test", "failure")])
    repo.jobs_of(run)[1].log = FAIL_LOG
    repo.add_run(wf, "b" * 40, jobs=[("lint", "success"), ("test", "success")])
    return fake


def env() -> dict[str, str]:
    fake = shared_fake()
    return {"ORCHESTRATOR_GITHUB_API": fake.base_url, "GITHUB_TOKEN": fake.token,
            "GH_TOKEN": "", "ORCHESTRATOR_GITHUB_BACKOFF": "0.01"}


def answer(task: dict[str, object]) -> dict[str, object]:
    """The debugger looked, fixed nothing it could push."""
    return {"agent_id": "/root/debugger", "agent_name": "debugger", "pushed_commit": None,
            "fixes_applied": [{"check_name": "test", "failure": "test_y fails",
                               "verdict": "not_fixed", "rationale": "could not reproduce",
                               "change": ""}], "unrelated": []}
