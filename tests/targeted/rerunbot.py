"""Scripting the GitHub side of ``ci-targeted`` on the fake server.

``RerunBot`` scripts the fake's own miles gateway (``tests/fakegithub/gateway.py``,
``repo.enable_rerun_gateway``): each ``/rerun-test <file>`` comment the flow posts makes the
gateway dispatch a "Rerun Test" run **on main** (``head_sha`` main's tip, event
``workflow_dispatch``, ``display_title`` ``/rerun-test <file> (PR #<N>)``, jobs
``resolve-file-run``, ``run-cuda-file / run`` and a skipped ``run-cpu-file``) and reply
"Started `/rerun-test <file>`." with the run's link, as the bot. The runs stay going until
``react`` finishes each new one from a per-file script. ``foreign_run`` has another PR ask
for a file. ``with_step_times`` makes the fake's jobs API report the "Run tests" step's start
and end (the fake sends steps without times).

``ContractGitHub`` (the contract suite's server) keeps a hand-made dispatcher
(``_FixedIdBot``): the suite replays one scenario many times against one server and compares
final states, so its run, job and comment ids come from a fixed counter, which the fake's
gateway (global ids) does not offer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from tests.fakegithub import FakeGitHub, RerunGateway
from tests.fakegithub.state import Repo as GhRepo

REPO = "acme/widgets"
NUMBER = 7
MAIN_TIP = "f" * 40  # main's tip: the head_sha of every gateway-dispatched run
BOT = RerunGateway.BOT


class RerunBot:
    """The fake's gateway on PR ``NUMBER`` of ``REPO``; ``script[path]`` lists the (conclusion,
    log) of that file's successive runs (default: success); a conclusion of None leaves the
    run going."""

    def __init__(self, fake: FakeGitHub, head_sha: str, script: dict[str, list[tuple[str, str]]]) -> None:
        self.fake = fake
        self.gh: GhRepo = fake.repo(REPO)
        self.gh.add_pull(NUMBER, "pr", head_sha)
        self.gateway = self.gh.enable_rerun_gateway(MAIN_TIP)
        self.gh.add_workflow("PR Test", ".github/workflows/pr-test.yml")
        self.script = {k: list(v) for k, v in script.items()}
        self.done = 0  # gateway dispatches already finished (or left going) by `react`

    def comments(self) -> list[str]:
        """The flow's comments on the PR (not the gateway's replies)."""
        return [c["body"] for c in self.gh.comments.get(NUMBER, []) if c["login"] != BOT]

    def labels(self) -> list[str]:
        return list(self.gh.labels.get(NUMBER, []))

    @property
    def runs(self) -> list[Any]:
        """Every Rerun Test run the gateway dispatched, oldest first."""
        return [run for _, _, run in self.gateway.dispatched]

    def foreign_run(self, number: int, path: str, conclusion: str | None = "success") -> Any:
        """Another PR asks for the same file: its own run (and reply, on its own PR)."""
        with self.fake.lock:
            self.gh.add_comment(number, f"/rerun-test {path}", login="someone-else")
            number_, _, run = self.gateway.dispatched[-1]
            assert number_ == number
            if conclusion is not None:
                self.gateway.finish(self.gh, run, conclusion)
            return run  # `react` leaves other PRs' runs alone

    def react(self) -> list[str]:
        """CI runs what the gateway dispatched since the last call: each run of our PR ends
        as its file's script says. Returns the test files run."""
        with self.fake.lock:
            new = self.gateway.dispatched[self.done:]
            self.done = len(self.gateway.dispatched)
            for number, path, run in new:
                if number != NUMBER:
                    continue
                conclusion, log = self.script[path].pop(0) if self.script.get(path) else ("success", "")
                if conclusion is not None:
                    self.gateway.finish(self.gh, run, conclusion, log)
            return [path for number, path, _ in new if number == NUMBER]

    def finish(self, run: Any, conclusion: str, log: str = "") -> None:
        """Complete a run left going."""
        with self.fake.lock:
            self.gateway.finish(self.gh, run, conclusion, log)


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
            self.bot = _FixedIdBot(self, self.head_sha, self.initial, run_ids=self.ids)

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


class _FixedIdBot:
    """The contract suite's Rerun Test dispatcher: what the fake's gateway does, with run, job
    and reply ids from ``run_ids`` (a fixed counter) so replays end in identical states."""

    def __init__(self, fake: FakeGitHub, head_sha: str, script: dict[str, list[tuple[str, str]]],
                 run_ids: Callable[[], int]) -> None:
        self.fake = fake
        self.gh: GhRepo = fake.repo(REPO)
        self.gh.add_pull(NUMBER, "pr", head_sha)
        self.wf = self.gh.add_workflow(RerunGateway.WORKFLOW, RerunGateway.PATH)
        self.script = {k: list(v) for k, v in script.items()}
        self.seen = 0
        self.run_ids = run_ids

    def react(self) -> None:
        """Dispatch a run on main, and reply with its link, for each new ``/rerun-test``."""
        with self.fake.lock:
            mine = [c["body"] for c in self.gh.comments.get(NUMBER, []) if c["login"] != BOT]
            new = mine[self.seen:]
            self.seen += len(new)
            for body in new:
                if not body.startswith("/rerun-test "):
                    continue
                path = body.split(" ", 1)[1]
                conclusion, log = self.script[path].pop(0) if self.script.get(path) else ("success", "")
                run = self.gh.add_run(self.wf, MAIN_TIP, head_branch="main", event="workflow_dispatch")
                run.display_title = f"/rerun-test {path} (PR #{NUMBER})"
                run.id = self.run_ids()
                for name, concl, text in (("resolve-file-run", "success", ""),
                                          ("run-cuda-file / run", conclusion, log),
                                          ("run-cpu-file", "skipped", "")):
                    self.gh.add_job(run, name, concl, log=text).id = self.run_ids()
                reply = self.gh.add_comment(NUMBER, f"Started `/rerun-test {path}`.\n\n[View "
                                            f"workflow run](https://github.com/{REPO}/actions/"
                                            f"runs/{run.id})", login=BOT)
                reply["id"] = self.run_ids()
