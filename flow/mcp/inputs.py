"""The MCP tools' inputs as pydantic models, and how each maps onto the CLI's own arguments.

Every tool is a thin wrapper over one command line of ``orchestrator.py``: a model here is
validated (strict types, unknown fields refused), then turned into the argument list a person
would type (``argv()``), so the MCP tools and the CLI share one parser, one library path and
one contract. Start arguments are typed per workflow (a union told apart by ``workflow``); the
``feed`` tool's ``result`` shows every feed model's schema (the same models as
``orchestrator.py schema``) while the engine, not this module, validates it against the
model of the task being fed.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from flow.core.bounds import RANGES

Harness = Literal["claude", "codex"]
FlowId = Annotated[str, Field(min_length=1, max_length=300,
                              description="the flow_id printed by start or status, e.g. "
                                          "'reproduce/3ee29ae339d4' or 'refactor/core/test_ops'")]
HARNESS_FIELD = Field(None, description="sticky harness of the flow (claude or codex): how "
                                        "tasks are rendered; omit to keep the flow's own")
LEASE_FIELD = Field(None, **RANGES["lease"].json_schema(),
                    description="the campaign lease token this call acts under: the --lease "
                                "TOKEN of the flow's printed commands (a campaign's flow on the "
                                "PostgreSQL store); a stale one is refused (lease_lost), a "
                                "current one renews the lease; omit for a flow of no campaign")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class StartArgs(Strict):
    """Base of the per-workflow start arguments: ``COMMAND`` words, then one flag per field."""

    COMMAND: ClassVar[tuple[str, ...]] = ()
    FLAGS: ClassVar[dict[str, str]] = {}  # field name -> the CLI flag it becomes

    def argv(self) -> list[str]:
        out = list(self.COMMAND)
        for name, flag in self.FLAGS.items():
            value = getattr(self, name)
            if value is None or value is False:
                continue
            # --flag=value: a value starting with '-' (a pytest -k filter) stays a value
            if isinstance(value, float) and "e" in repr(value):
                value = f"{value:.9f}"  # the CLI takes seconds without an exponent
            out.append(flag if value is True else f"{flag}={value}")
        return out


class ReproduceStart(StartArgs):
    """fix-reproduce: run a failing test's reproducer through the stages to a verdict."""

    COMMAND = ("reproduce",)
    FLAGS = {"command": "--command", "command_file": "--command-file", "batch": "--batch",
             "stage": "--stage", "ci_commit": "--ci-commit", "source_dir": "--source-dir",
             "ci_repo": "--ci-repo", "failure_pattern": "--failure-pattern",
             "profile": "--profile", "repeat": "--repeat", "timeout": "--timeout",
             "test_extras": "--test-extras"}
    workflow: Literal["reproduce"]
    command: str | None = Field(None, description="the reproducer: a pytest command or a block "
                                                  "of shell lines ending in one")
    command_file: str | None = Field(None, description="a file holding the reproducer block")
    batch: str | None = Field(None, description="a JSON, JSON-lines or one-command-per-line "
                                                "file of many reproducers")
    stage: Literal["auto", "nightly"] | None = Field(None, description="auto (default) or "
                                                     "nightly only")
    ci_commit: str | None = Field(None, description="the CI run's commit sha (7-40 hex)")
    source_dir: str | None = Field(None, description="the source checkout (PyTorch or the "
                                                     "example project)")
    ci_repo: str | None = Field(None, description="owner/name whose CI logs to read")
    failure_pattern: str | None = Field(None, description="text the failure must show")
    profile: str | None = Field(None, description="local or pytorch-xpu (default local)")
    repeat: int | None = Field(None, **RANGES["repeat"].json_schema(),
                               description="run each stage's reproducer up to N times "
                                           "(flakiness)")
    timeout: float | None = Field(None, **RANGES["timeout"].json_schema(),
                                  description="seconds per reproducer run")
    test_extras: str | None = Field(None, description="the project's test extras for the "
                                                      "Stage 2 venv, comma-separated")


class RefactorStart(StartArgs):
    """PyTorch test refactoring (phases 1 to 7) of one test file."""

    FLAGS = {"pytorch_dir": "--pytorch-dir"}
    workflow: Literal["refactor"]
    file: str = Field(min_length=1, pattern=r"^[^-]",
                      description="the test file, relative to pytorch_dir or absolute")
    pytorch_dir: str | None = Field(None, description="the PyTorch checkout (default: the "
                                                      "server's working directory)")

    def argv(self) -> list[str]:
        # The seed's form: the bare FILE is the refactor command.
        return [self.file, *super().argv()]


class CiCheckStart(StartArgs):
    """Phase 8: babysit a PR's CI until green, a debugger per regression, bounded rounds."""

    COMMAND = ("--ci-check",)
    FLAGS = {"pr_number": "--pr-number", "repo": "--repo", "mark_ready": "--mark-ready",
             "repo_dir": "--repo-dir"}
    workflow: Literal["ci"]
    pr_number: int | None = Field(None, **RANGES["pr-number"].json_schema(),
                                  description="the PR number (default: the open PR of the "
                                              "current branch of repo_dir)")
    repo: str | None = Field(None, description="owner/name (default: the origin remote)")
    mark_ready: bool = Field(False, description="mark the draft PR ready when all is green")
    repo_dir: str | None = Field(None, description="the git checkout to read the branch from")


class TargetedStart(StartArgs):
    """Targeted CI: run only the registered tests a diff reaches, via /rerun-test comments."""

    COMMAND = ("ci-targeted",)
    FLAGS = {"base": "--base", "pr_number": "--pr-number", "repo": "--repo",
             "depth": "--depth", "hub_limit": "--hub-limit", "repo_dir": "--repo-dir",
             "profile": "--profile", "approved": "--approved"}
    workflow: Literal["ci-targeted"]
    base: str = Field(min_length=1, description="the base revision of the diff")
    pr_number: int | None = Field(None, **RANGES["pr-number"].json_schema())
    repo: str | None = Field(None, description="owner/name")
    depth: int | None = Field(None, **RANGES["depth"].json_schema(),
                              description="import hops to follow from a changed file")
    hub_limit: int | None = Field(None, **RANGES["hub-limit"].json_schema(),
                                  description="tests a file may reach before it is a hub")
    repo_dir: str | None = None
    profile: str | None = None
    approved: bool = Field(False, description="spending CI runners is already approved")


class IngestStart(StartArgs):
    """Sidecar: harvest review feedback into findings, or apply ticked findings (apply)."""

    COMMAND = ("--ingest-feedback",)
    FLAGS = {"repo": "--repo"}
    workflow: Literal["ingest"]
    repo: str | None = Field(None, description="owner/name")
    apply: str | None = Field(None, description="a findings file whose ticked findings to "
                                                "apply to the ruleset")

    def argv(self) -> list[str]:
        if self.apply is None:
            return super().argv()
        return [f"--apply-ingest={self.apply}", *super().argv()[1:]]


class ReviewQueueStart(StartArgs):
    """Sidecar: review the PRs listed in <workspace>/pr_needs_review.txt."""

    COMMAND = ("--review-queue",)
    FLAGS = {"limit": "--limit", "repo": "--repo"}
    workflow: Literal["review-queue"]
    limit: int | None = Field(None, **RANGES["limit"].json_schema(), description="review at most "
                                                                            "N PRs")
    repo: str | None = Field(None, description="owner/name")


AnyStart = Annotated[ReproduceStart | RefactorStart | CiCheckStart | TargetedStart
                     | IngestStart | ReviewQueueStart, Field(discriminator="workflow")]


class StartInput(Strict):
    """Start a workflow (or carry on the flow these arguments name, as the CLI does)."""

    args: AnyStart = Field(description="the workflow and its arguments; 'workflow' picks which")
    restart: bool = Field(False, description="move an existing flow for these arguments aside "
                                             "and start anew")
    harness: Harness | None = HARNESS_FIELD


class ResumeInput(Strict):
    """Carry on where the flow stopped (what a cron firing runs)."""

    flow_id: FlowId
    wait: bool = Field(False, description="if the flow answers 'waiting' on a background job, "
                                          "poll it inside the foreground budget "
                                          "(ORCHESTRATOR_FOREGROUND_S), sending progress "
                                          "notifications, instead of returning at once")
    lease: int | None = LEASE_FIELD
    harness: Harness | None = HARNESS_FIELD


class FeedInput(Strict):
    """Feed one task's result; the server writes it to the task's feed_file and feeds that."""

    flow_id: FlowId
    task_id: str = Field(min_length=1, max_length=300, description="the task's task_id")
    result: dict[str, Any] = Field(description="the result object; its shape is the task's "
                                               "feed_schema (one of the models below)")
    lease: int | None = LEASE_FIELD
    harness: Harness | None = HARNESS_FIELD


class AnswerInput(Strict):
    """Answer the flow's open need_human question with one of its option values."""

    flow_id: FlowId
    value: str = Field(min_length=1, description="the chosen option's value")
    lease: int | None = LEASE_FIELD
    harness: Harness | None = HARNESS_FIELD


class StatusInput(Strict):
    """Every flow in the workspace: workflow, phase, pending tasks, age, last error."""


class SchemaInput(Strict):
    """JSON Schemas: no name lists them; a name (spec, task, state, WORKFLOW.FEED) prints one."""

    name: str | None = Field(None, description="e.g. 'refactor.coder'; omit to list the names")


TOOLS: dict[str, type[Strict]] = {
    "start": StartInput, "resume": ResumeInput, "feed": FeedInput, "answer": AnswerInput,
    "status": StatusInput, "schema": SchemaInput,
}


def input_schema(tool: str) -> dict[str, Any]:
    """The JSON Schema of a tool's input; for ``feed``, ``result`` lists every feed model."""
    schema = TOOLS[tool].model_json_schema()
    if tool == "feed":
        from pydantic.json_schema import models_json_schema

        from flow.cli.schemas import all_models

        feeds = sorted((n, m) for n, m in all_models().items() if "." in n)  # WORKFLOW.FEED
        refs, shared = models_json_schema([(m, "validation") for _, m in feeds],
                                          ref_template="#/$defs/{model}")
        schema.setdefault("$defs", {}).update(shared.get("$defs", {}))
        schema["properties"]["result"]["anyOf"] = [
            {**refs[(m, "validation")], "description": f"feed_schema {n}"} for n, m in feeds]
    _type_properties(schema, schema.get("$defs", {}))
    return schema


def _type_properties(node: Any, defs: dict[str, Any]) -> None:
    """Give every property schema a ``type`` of its own (pydantic leaves it off a union of
    models or a ``$ref``): a client that reads only ``type`` (the MCP Inspector sends an
    untyped argument as a string) then sends ``args`` as an object."""
    if isinstance(node, list):
        for item in node:
            _type_properties(item, defs)
        return
    if not isinstance(node, dict):
        return
    for prop in (node.get("properties") or {}).values():
        if isinstance(prop, dict) and "type" not in prop:
            types = _types_of(prop, defs, 0)
            if types:
                prop["type"] = types[0] if len(types) == 1 else types
    for key, value in node.items():
        if key != "properties":
            _type_properties(value, defs)
        else:
            for prop in value.values():
                _type_properties(prop, defs)


def _types_of(schema: Any, defs: dict[str, Any], depth: int) -> list[str]:
    """The JSON types ``schema`` admits, through ``$ref`` / ``anyOf`` / ``oneOf`` / ``enum``
    (empty when unknown: then no ``type`` is claimed)."""
    if not isinstance(schema, dict) or depth > 8:
        return []
    if isinstance(schema.get("type"), str):
        return [schema["type"]]
    if isinstance(schema.get("type"), list):
        return list(schema["type"])
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _types_of(defs.get(ref.rsplit("/", 1)[1]), defs, depth + 1)
    alternatives = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(alternatives, list):
        found: list[str] = []
        for alt in alternatives:
            kinds = _types_of(alt, defs, depth + 1)
            if not kinds:
                return []
            found += [k for k in kinds if k not in found]
        return found
    return []
