"""Snapshots the adapter produces: plain pydantic data, no PyGithub types.

`flow.workflows.ci.classify` reads only these, so classification is testable without HTTP.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

CheckKind = Literal["check_run", "status", "workflow_run"]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PullInfo(_Frozen):
    """The PR as one tick sees it. `state` is GitHub's open / closed; a merged PR is closed
    with `merged` set (GitHub's `merged_at` is not null)."""

    repo: str
    number: int
    head_sha: str
    head_ref: str
    head_repo: str
    base_ref: str
    draft: bool
    node_id: str
    html_url: str = ""
    state: Literal["open", "closed"]
    merged: bool


class CheckState(_Frozen):
    """One check on a commit: a check run, a commit status, or a workflow run with no jobs yet.

    `status` is queued / in_progress / completed for check runs and workflow runs
    (also waiting, requested, pending); commit statuses map pending -> in_progress and
    anything else -> completed with `conclusion` = the status state.
    """

    kind: CheckKind
    name: str
    status: str
    conclusion: str | None = None
    id: int | None = None
    run_id: int | None = None
    run_attempt: int | None = None
    workflow: str | None = None
    app: str | None = None
    app_id: int | None = None  # the GitHub App that set a check run (statuses name none)
    details_url: str | None = None
    summary: str = ""  # check-run output title/summary or status description

    @property
    def key(self) -> str:
        """What identifies 'the same check' across attempts and commits."""
        return f"{self.kind}:{self.workflow or self.app or ''}:{self.name}"


class WorkflowRunState(_Frozen):
    id: int
    name: str
    path: str
    head_sha: str
    status: str
    conclusion: str | None = None
    run_attempt: int = 1
    event: str = ""


class CommitChecks(_Frozen):
    """Everything CI reports for one commit: latest checks plus earlier attempts."""

    sha: str
    checks: list[CheckState] = Field(default_factory=list)  # latest attempt per check
    history: list[CheckState] = Field(default_factory=list)  # superseded attempts, same sha
    runs: list[WorkflowRunState] = Field(default_factory=list)
    requests: int = 0  # HTTP requests this read cost (304s included)


class RequiredChecks(_Frozen):
    """The checks the base branch requires; `source` "every_check" is the fallback."""

    branch: str
    sha: str = ""  # the head commit this reading was made for
    source: Literal["branch_rules", "every_check"]
    contexts: list[str] = Field(default_factory=list)  # sorted; empty for every_check
    # context -> the apps a rule ties it to (protection's checks[].app_id, a rule's
    # integration_id); a context not here may be set by any app.
    apps: dict[str, list[int]] = Field(default_factory=dict)
    note: str = ""  # why every check counts (a refusal, or nothing configured)
    requests: int = 0

    def requires(self, name: str, app_id: int | None = None) -> bool:
        """Whether a check of this name (check run name or status context) set by `app_id`
        is one that must pass: a context tied to apps counts only from one of them. A
        commit status names no app (`app_id` None), so its context alone decides."""
        if self.source == "every_check":
            return True
        if name not in self.contexts:
            return False
        apps = self.apps.get(name)
        return not apps or app_id is None or app_id in apps
