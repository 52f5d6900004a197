"""The persisted state of one flow (``flow_state.json``) as pydantic models."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = 1

Method = Literal["spawn", "send_message", "inline", "run"]


class TaskRecord(BaseModel):
    """One task emitted to the harness, and its result once fed."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    key: str
    wave: int
    phase: str
    visit: int
    role: str
    feed: str
    method: Method
    prompt: str = ""
    attempt: int
    max_attempts: int
    feed_file: str
    follow_up: bool = False
    command: list[str] | None = None
    cwd: str | None = None
    log_file: str | None = None
    mode: str | None = None
    timeout_ms: int | None = None
    inline_for_codex: bool = False
    extra: dict[str, Any] = Field(default_factory=dict)
    status: Literal["pending", "applied"] = "pending"
    result: dict[str, Any] | None = None
    result_digest: str | None = None


class Question(BaseModel):
    """An open question only a person may answer (``need_human``)."""

    model_config = ConfigDict(extra="forbid")

    key: str
    question: str
    options: list[tuple[str, str]]  # (value, description), in the order the step gave them
    extra: dict[str, Any] = Field(default_factory=dict)


    def values(self) -> list[str]:
        return [v for v, _ in self.options]


class JobRecord(BaseModel):
    """One background job the flow owns (``flow.core.jobs``): what runs, where its log is, its
    clock, and its result once read."""

    model_config = ConfigDict(extra="forbid")

    job_id: str
    key: str
    phase: str
    visit: int
    argv: list[str]
    cwd: str | None = None
    log_file: str
    timeout_s: float
    started_at: float  # epoch seconds of the current start
    deadline_at: float
    starts: int = 1
    pid: int | None = None
    result: dict[str, Any] | None = None
    history: list[dict[str, Any]] = Field(default_factory=list)


class FlowState(BaseModel):
    """Everything needed to carry a flow on from where the last caller stopped."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    revision: int = 0
    workflow: str
    flow_id: str
    phase: str
    visits: dict[str, int] = Field(default_factory=dict)
    harness: str
    created_at: str
    updated_at: str
    tasks: list[TaskRecord] = Field(default_factory=list)
    waves: int = 0
    wave_extra: dict[str, Any] = Field(default_factory=dict)
    agents: dict[str, str] = Field(default_factory=dict)
    question: Question | None = None
    answers: dict[str, str] = Field(default_factory=dict)
    grants: dict[str, int] = Field(default_factory=dict)
    history: list[dict[str, Any]] = Field(default_factory=list)
    aborted: bool = False
    result: dict[str, Any] | None = None
    last_error: dict[str, Any] | None = None
    jobs: dict[str, JobRecord] = Field(default_factory=dict)
    # The audit record of this revision; appended to audit.jsonl after the save, and again
    # on load if a kill came between the two (FlowStore.save / replay_audit).
    audit_record: dict[str, Any] | None = None
    data: dict[str, Any] = Field(default_factory=dict)

    @property
    def visit(self) -> int:
        return self.visits.get(self.phase, 0)

    def current_tasks(self) -> list[TaskRecord]:
        """Tasks emitted in the current visit of the current phase."""
        return [t for t in self.tasks if t.phase == self.phase and t.visit == self.visit]

    def pending(self) -> list[TaskRecord]:
        return [t for t in self.tasks if t.status == "pending"]


