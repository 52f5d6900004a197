"""Scripting the GitHub side of ``ci-targeted`` on the fake server.

``RerunBot`` plays radixark/miles' comment gateway and "Rerun Test" workflow as they really
behave (``comment-ci-command.yml``, ``run-ci-file.yml``): for each new ``/rerun-test
<file>`` comment it dispatches one run **on main** (``head_sha`` is main's tip, never the PR
head; event ``workflow_dispatch``; no job name holds the path), with the run-name
``/rerun-test <file> (PR #<N>)`` as ``display_title``, jobs ``resolve-file-run``,
``run-cuda-file / run`` (its conclusion and log from a per-file script) and a skipped
``run-cpu-file``, and replies "Started `/rerun-test <file>`." with the run's link as the
bot. ``foreign_run`` adds another PR's run of a file. ``with_step_times`` makes the fake's
jobs API report the "Run tests" step's start and end.

What the shared fake should do (so this helper can shrink to a script): carry
``display_title`` on workflow runs (``patch_display_title`` adds it here) and provide the
gateway itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from tests.fakegithub import FakeGitHub
from tests.fakegithub.state import Repo as GhRepo

REPO = "acme/widgets"
NUMBER = 7
MAIN_TIP = "f" * 40  # main's tip: the head_sha of every gateway-dispatched run
BOT = "miles-ci[bot]"


def patch_display_title() -> None:
    """Make the fake render a run's ``display_title`` (its run-name), as GitHub does."""
    from tests.fakegithub import render

    if getattr(render.workflow_run, "_with_title", False):
        return
    original = render.workflow_run

    def workflow_run(base: str, r: Any, run: Any, status: str, conclusion: Any) -> dict[str, Any]:
        out = original(base, r, run, status, conclusion)
        out.setdefault("display_title", getattr(run, "display_title", "") or "commit")
        return out

    workflow_run._with_title = True  # type: ignore[attr-defined]
    render.workflow_run = workflow_run


class RerunBot:
    """Reacts to ``/rerun-test`` comments; ``script[path]`` lists (conclusion, log) per run;
    a conclusion of None leaves the run going."""

    def __init__(self, fake: FakeGitHub, head_sha: str, script: dict[str, list[tuple[str, str]]],
                 run_ids: Callable[[], int] | None = None) -> None:
        patch_display_title()
        self.fake = fake
        self.gh: GhRepo = fake.repo(REPO)
        self.gh.add_pull(NUMBER, "pr", head_sha)
        self.wf = self.gh.add_workflow("Rerun Test", ".github/workflows/run-ci-file.yml")
        self.gh.add_workflow("PR Test", ".github/workflows/pr-test.yml")
        self.script = {k: list(v) for k, v in script.items()}
        self.seen = 0
        self.run_ids = run_ids
        self.runs: list[Any] = []

    def comments(self) -> list[str]:
        return [c["body"] for c in self.gh.comments.get(NUMBER, []) if c["login"] != BOT]

    def labels(self) -> list[str]:
        return list(self.gh.labels.get(NUMBER, []))

    def dispatch(self, number: int, path: str, conclusion: str | None, log: str = "") -> Any:
        """One gateway dispatch: a Rerun Test run on main for PR ``number``'s ``path``."""
        run = self.gh.add_run(self.wf, MAIN_TIP, head_branch="main", event="workflow_dispatch")
        run.display_title = f"/rerun-test {path} (PR #{number})"
        if self.run_ids is not None:  # deterministic ids for the contract suite
            run.id = self.run_ids()
        for name, concl, text in (("resolve-file-run", "success", ""),
                                  ("run-cuda-file / run", conclusion, log),
                                  ("run-cpu-file", "skipped", "")):
            job = self.gh.add_job(run, name, concl, log=text)
            if self.run_ids is not None:
                job.id = self.run_ids()
        self.runs.append(run)
        return run

    def foreign_run(self, number: int, path: str, conclusion: str | None = "success") -> Any:
        """Another PR's run of the same file (no reply on our PR)."""
        with self.fake.lock:
            return self.dispatch(number, path, conclusion)

    def react(self) -> list[str]:
        """Dispatch a run, and reply with its link, for each comment posted since the last
        call."""
        with self.fake.lock:
            new = self.comments()[self.seen:]
            self.seen += len(new)
            for body in new:
                if not body.startswith("/rerun-test "):
                    continue
                path = body.split(" ", 1)[1]
                conclusion, log = self.script[path].pop(0) if self.script.get(path) else ("success", "")
                run = self.dispatch(NUMBER, path, conclusion, log)
                reply = self.gh.add_comment(NUMBER, f"Started `/rerun-test {path}`.\n\n[View "
                                            f"workflow run](https://github.com/{REPO}/actions/"
                                            f"runs/{run.id})", login=BOT)
                if self.run_ids is not None:
                    reply["id"] = self.run_ids()
            return new

    def finish(self, run: Any, conclusion: str, log: str = "") -> None:
        """Complete a run left going."""
        with self.fake.lock:
            for job in self.gh.check_runs:
                if job.run_id == run.id and job.status != "completed":
                    job.complete(conclusion)
                    job.steps[-1].conclusion = conclusion


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
            self.ids = lambda: next(counter)
            self.bot = RerunBot(self, self.head_sha, self.initial, run_ids=self.ids)

    def handle(self, method: str, raw_path: str, headers: dict[str, str],
               body: bytes) -> tuple[int, dict[str, str], bytes]:
        path = raw_path.split("?", 1)[0]
        if method == "GET" and path == f"/repos/{REPO}":
            self.reset_pr()
        out = super().handle(method, raw_path, headers, body)
        if method == "POST" and path.endswith(f"/issues/{NUMBER}/comments"):
            with self.lock:  # comment ids from the fixed counter too: the flow records them
                self.bot.gh.comments[NUMBER][-1]["id"] = self.ids()
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
