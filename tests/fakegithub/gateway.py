"""miles' "Rerun Test" comment gateway, played by the fake GitHub (see RerunGateway)."""

from __future__ import annotations

from tests.fakegithub.state import FIXED_TIME, Repo, WorkflowRun, next_id


class RerunGateway:
    """radixark/miles' "Rerun Test" path, as its workflows do it (read from the repository):

    1. A `/rerun-test <file>` comment by a user starts the "Comment command gateway" workflow
       (`comment-ci-command.yml`, event `issue_comment`, on the default branch at its tip).
    2. That gateway dispatches `run-ci-file.yml` ("Rerun Test") with `ref: main`: the run's
       `event` is `workflow_dispatch`, `head_branch` is `main` and `head_sha` is main's tip,
       never the PR head, which travels only as the `head_sha` input (invisible in the runs
       API). Its `display_title` is the run-name `/rerun-test <file> (PR #<N>)`, and it
       carries no `pull_requests`.
    3. Its jobs: `resolve-file-run`, then either `run-cuda-file / run` (the reusable
       `_run-ci.yml` job `run`) or `run-cpu-file / run-cpu` (`_run-cpu-ci.yml` job
       `run-cpu`); the call whose `if` is false shows as one skipped job named by the caller
       alone (`run-cpu-file` or `run-cuda-file`). No job name contains the file path.
    4. The gateway replies "Started `/rerun-test <file>`." plus a link to the run, as the
       bot `miles-ci[bot]`.

    `hardware[file]` is "cuda" (default) or "cpu". Tests finish jobs with `finish`.

    A commenter in `refused` lacks write permission: as `comment_ci_command.py` does, the
    gateway's `handle-command` job fails at "Validate and authorize the command" with
    `::error::comment author is not authorized for the requested operation`; nothing is
    dispatched, no reaction, no reply.
    """

    REFUSAL = "::error::comment author is not authorized for the requested operation"

    WORKFLOW, PATH = "Rerun Test", ".github/workflows/run-ci-file.yml"
    GATEWAY, GATEWAY_PATH = "Comment command gateway", ".github/workflows/comment-ci-command.yml"
    BOT = "miles-ci[bot]"

    def __init__(self, repo: Repo, hardware: dict[str, str]) -> None:
        self.hardware = hardware
        self.workflow = repo.add_workflow(self.WORKFLOW, self.PATH)
        self.gateway = repo.add_workflow(self.GATEWAY, self.GATEWAY_PATH)
        self.dispatched: list[tuple[int, str, WorkflowRun]] = []  # (PR, file, run)
        self.refused: set[str] = set()  # commenters without write permission

    def on_comment(self, repo: Repo, number: int, body: str, login: str) -> None:
        text = body.strip()
        if login == self.BOT or not text.startswith("/rerun-test "):
            return
        main = repo.branches[repo.default_branch]
        gate = repo.add_run(self.gateway, main, head_branch=repo.default_branch, event="issue_comment")
        gate.display_title = f"Comment command by {login}"
        if login in self.refused:
            repo.add_job(gate, "handle-command", "failure", log=self.REFUSAL + "\n")
            return
        repo.add_job(gate, "handle-command", "success")
        test_file = text.split(None, 1)[1]
        run = repo.add_run(self.workflow, main, head_branch=repo.default_branch, event="workflow_dispatch")
        run.display_title = f"/rerun-test {test_file} (PR #{number})"
        repo.add_job(run, "resolve-file-run", "success")
        if self.hardware.get(test_file, "cuda") == "cpu":
            repo.add_job(run, "run-cpu-file / run-cpu")
            repo.add_job(run, "run-cuda-file", "skipped")
        else:
            repo.add_job(run, "run-cuda-file / run")
            repo.add_job(run, "run-cpu-file", "skipped")
        self.dispatched.append((number, test_file, run))
        repo.comments.setdefault(number, []).append({
            "id": next_id(), "login": self.BOT, "created_at": FIXED_TIME, "updated_at": FIXED_TIME,
            "body": f"Started `/rerun-test {test_file}`.\n\n[View workflow run]"
                    f"(https://github.com/{repo.full_name}/actions/runs/{run.id})"})

    def finish(self, repo: Repo, run: WorkflowRun, conclusion: str, log: str = "") -> None:
        """Complete the run's test job (the one not skipped) with `conclusion` and `log`."""
        for job in repo.jobs_of(run):
            if job.status != "completed":
                job.complete(conclusion, log)
                job.steps[-1].conclusion = conclusion
