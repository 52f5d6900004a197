"""Scripting the GitHub side of ``ci-targeted`` on the fake server.

``RerunBot`` plays miles' "Rerun Test" workflow: for each new ``/rerun-test <file>`` comment
on the PR it dispatches one run at the PR head, with one job named after the file whose
conclusion (and log) come from a per-file script. ``with_step_times`` makes the fake's jobs
API report the "Run tests" step's start and end (the fake has no step times of its own).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from tests.fakegithub import FakeGitHub
from tests.fakegithub.state import Repo as GhRepo

REPO = "acme/widgets"
NUMBER = 7


class RerunBot:
    """Reacts to ``/rerun-test`` comments; ``script[path]`` lists (conclusion, log) per run."""

    def __init__(self, fake: FakeGitHub, head_sha: str, script: dict[str, list[tuple[str, str]]],
                 run_ids: Callable[[], int] | None = None) -> None:
        self.fake = fake
        self.gh: GhRepo = fake.repo(REPO)
        self.gh.add_pull(NUMBER, "pr", head_sha)
        self.wf = self.gh.add_workflow("Rerun Test", ".github/workflows/rerun-test.yml")
        self.gh.add_workflow("PR Test", ".github/workflows/pr-test.yml")
        self.script = {k: list(v) for k, v in script.items()}
        self.seen = 0
        self.run_ids = run_ids

    def comments(self) -> list[str]:
        return [c["body"] for c in self.gh.comments.get(NUMBER, [])]

    def labels(self) -> list[str]:
        return list(self.gh.labels.get(NUMBER, []))

    def react(self) -> list[str]:
        """Dispatch a completed run for each comment posted since the last call."""
        with self.fake.lock:
            new = self.comments()[self.seen:]
            self.seen += len(new)
            for body in new:
                if not body.startswith("/rerun-test "):
                    continue
                path = body.split(" ", 1)[1]
                conclusion, log = self.script[path].pop(0) if self.script.get(path) else ("success", "")
                run = self.gh.add_run(self.wf, self.gh.pulls[NUMBER].head_sha,
                                      head_branch="main", event="workflow_dispatch")
                if self.run_ids is not None:  # deterministic ids for the contract suite
                    run.id = self.run_ids()
                job = self.gh.add_job(run, f"rerun {path}", conclusion, log=log)
                if self.run_ids is not None:
                    job.id = self.run_ids()
            return new


@contextmanager
def with_step_times(seconds: int) -> Iterator[None]:
    """Make every completed job's "Run tests" step take ``seconds`` in the jobs API."""
    from tests.fakegithub import render

    original = render.job

    def job(base: str, r: Any, c: Any, run: Any) -> dict[str, Any]:
        out = original(base, r, c, run)
        if c.status == "completed":
            for step in out["steps"]:
                if step["name"] == "Run tests":
                    step["started_at"] = "2026-01-01T00:00:00Z"
                    step["completed_at"] = f"2026-01-01T00:{seconds // 60:02d}:{seconds % 60:02d}Z"
        return out

    render.job = job
    try:
        yield
    finally:
        render.job = original


class ContractGitHub(FakeGitHub):
    """A fake whose "Rerun Test" bot reacts as soon as a comment is posted, and which starts
    the PR afresh whenever a flow starts (``start`` reads the repository first), with run and
    job ids counted from a fixed number: the contract suite replays one scenario many times
    against one server and compares the final states."""

    def __init__(self, head_sha: str, script: dict[str, list[tuple[str, str]]]) -> None:
        super().__init__()
        self.head_sha, self.initial = head_sha, script
        self.reset_pr()

    def reset_pr(self) -> None:
        with self.lock:
            self.repos.clear()
            counter = iter(range(50_000, 60_000))
            self.bot = RerunBot(self, self.head_sha, self.initial, run_ids=lambda: next(counter))

    def handle(self, method: str, raw_path: str, headers: dict[str, str],
               body: bytes) -> tuple[int, dict[str, str], bytes]:
        path = raw_path.split("?", 1)[0]
        if method == "GET" and path == f"/repos/{REPO}":
            self.reset_pr()
        out = super().handle(method, raw_path, headers, body)
        if method == "POST" and path.endswith(f"/issues/{NUMBER}/comments"):
            self.bot.react()
        return out


def contract_scenario() -> Any:
    """The ``ci-targeted`` contract Scenario: approve, a failure the debugger calls a flake,
    one re-run that passes, green. Builds its git repo and starts its fake GitHub now."""
    import atexit
    import shutil
    import tempfile
    from pathlib import Path

    from tests.contract.driver import Scenario
    from tests.targeted.conftest import Repo, cuda_test

    tmp = Path(tempfile.mkdtemp(prefix="targeted-contract-"))
    atexit.register(shutil.rmtree, tmp, True)
    repo = Repo(tmp / "repo")
    repo.commit({"pkg/__init__.py": "", "pkg/core.py": "X = 1\n",
                 "tests/test_a.py": cuda_test("from pkg import core")}, "base")
    repo.git("checkout", "-q", "-b", "pr")
    head = repo.commit({"pkg/core.py": "X = 2\n"}, "change core")
    fake = ContractGitHub(head, {"tests/test_a.py": [("failure", "ConnectionResetError\n")]})
    fake.start()
    atexit.register(fake.stop)

    def answer(task: dict[str, Any]) -> dict[str, Any]:
        return {"verdicts": [{"path": "tests/test_a.py", "cause": "flake", "why": "reset"}],
                "fixes": [], "pushed_commit": None, "agent_id": "dbg", "agent_name": "debugger"}

    return Scenario(name="ci-targeted",
                    start=["ci-targeted", "--base", "main", "--pr-number", str(NUMBER), "--repo",
                           REPO, "--repo-dir", str(repo.path)],
                    answer=answer,
                    env={"ORCHESTRATOR_GITHUB_API": fake.base_url, "GITHUB_TOKEN": fake.token})
