"""JSON Schemas for harness authors: the printed spec, one task, the state, every feed model.

``orchestrator.py schema`` lists the names; ``schema NAME`` prints one schema (under
``schema`` in the usual envelope). Feed models are named ``WORKFLOW.FEED``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from flow.core.errors import NotBuilt, UsageError
from flow.workflows import registry

Status = Literal["need_agent", "schedule_cron", "waiting", "need_human", "done", "error"]


class ErrorInfo(BaseModel):
    model_config = ConfigDict(extra="allow")
    code: str
    message: str
    hint: str


class OnComplete(BaseModel):
    """Feeding a single task, or (for ``schedule_cron``) how to come back later."""

    model_config = ConfigDict(extra="allow")
    feed_as: str | None = None
    command: str | None = None
    feed_file: str | None = None
    note: str | None = None
    action: Literal["CronCreate", "poll"] | None = None


class TaskSpec(BaseModel):
    """One entry of ``tasks[]``; harness-specific fields (prompt, message, tool...) are extra."""

    model_config = ConfigDict(extra="allow")
    task_id: str
    attempt: int = Field(ge=1)
    max_attempts: int = Field(ge=1)
    method: Literal["spawn", "send_message", "inline", "run"]
    agent_name: str
    feed_as: str
    feed_file: str
    feed_command: str
    feed_schema: str  # the feed model's schema name (WORKFLOW.FEED): what the result must be


class HumanOption(BaseModel):
    model_config = ConfigDict(extra="forbid")
    value: str
    description: str
    command: str


class Spec(BaseModel):
    """The one JSON object every call prints."""

    model_config = ConfigDict(extra="allow")
    schema_version: int
    status: Status
    workflow: str | None
    flow_id: str | None
    phase: str | None
    harness: Literal["claude", "codex"]
    workspace: str
    tasks: list[TaskSpec] | None = None
    on_complete: OnComplete | None = None
    options: list[HumanOption] | None = None
    error: ErrorInfo | None = None
    next_steps: list[str] | str | None = None


def _builtin() -> dict[str, type[BaseModel]]:
    from flow.core.state import FlowState

    return {"spec": Spec, "task": TaskSpec, "state": FlowState}


def feed_models() -> dict[str, type[BaseModel]]:
    """Every feed model as ``WORKFLOW.FEED``, skipping workflows this installation lacks."""
    models: dict[str, type[BaseModel]] = {}
    for name in registry.names():
        try:
            wf = registry.load(name).WORKFLOW
        except NotBuilt:
            continue
        for feed, model in wf.feeds.items():
            models[f"{wf.name}.{feed}"] = model
    return models


def all_models() -> dict[str, type[BaseModel]]:
    """Every schema name and its model.

    A feed's schema is the model's own validation schema: the engine validates feeds with
    that same model in strict JSON mode, so the types shown are the types accepted; rules a
    validator adds beyond the field types are declared in the model's ``json_schema_extra``
    (tests/contract/test_feed_schemas.py probes both and requires the same verdicts).
    """
    return {**_builtin(), **feed_models()}


def schema_command(name: str | None, root: Path, harness: str) -> dict[str, Any]:
    from flow.core.render import envelope

    models = all_models()
    if name is None:
        return {**envelope(None, root, "done", harness), "schemas": sorted(models)}
    if name not in models:
        raise UsageError(f"no schema named {name!r}",
                         f"run 'orchestrator.py schema' to list them: {', '.join(sorted(models))}")
    return {**envelope(None, root, "done", harness), "name": name,
            "schema": models[name].model_json_schema()}
