"""The ``reproduce`` workflow (seed: fix-reproduce.md) wired into the engine.

begin -> preflight -> prepare -> collect -> stage1 [-> unskip] -> stage2 [-> unskip]
-> stage3 [-> unskip] -> verdict (Done), any stage jumping to verdict when it decides;
begin -> batch_setup -> batch_entry (Stage 1, one entry per visit) [-> batch_build ->
batch_stage2 (one entry per visit) [-> batch_ci -> batch_stage3]] -> batch_report (Done)
for ``--batch FILE`` (see ``batch.steps``).

Deterministic work (git, pip, collect-only, the reproducer runs, GitHub lookups) runs
inside the steps; the long source build is a ``run`` task (local profile) or an agent
task loading the build skill (pytorch-xpu). The skip-marker re-run records the pending
restore in the state *before* the test file is edited (stage step returns Go to save
it), and every step first restores a pending file, so a crash in between is undone on
resume before anything else runs.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from flow.core.errors import WorkflowInputError
from flow.core.feeds import Feed, RunResult
from flow.core.outcome import Go
from flow.core.workflow import Workflow
from flow.workflows.reproduce import context
from flow.workflows.reproduce.identity import inputs as _inputs, locate
from flow.workflows.reproduce.unskip.marker import PendingRestore


class ReproData(BaseModel):
    """``ctx.data`` of a reproduce flow."""

    model_config = ConfigDict(extra="forbid")
    command: str | None = None
    stage: Literal["auto", "nightly"] = "auto"
    ci_commit: str | None = None
    source_dir: str | None = None
    ci_repo: str | None = None
    failure_pattern: str | None = None
    profile: str = "local"
    # progress
    current_stage: str = "nightly"
    tree: str | None = None
    cwd: str | None = None
    cwd_rule: str | None = None        # which working-directory rule chose ``cwd``
    # the project probe of the Stage 1 interpreter (verdict.probe's output), read
    # by prepare's unbuilt-install check and reused by the verdict's environment
    project_probe: dict[str, str] | None = None
    # the source tree's state as prepare found it, before any run (a Stage 1 verdict's tree)
    tree_found: dict[str, Any] | None = None
    pytest_args: list[str] | None = None
    # where a shell block's setup starts: the tree for a cd/export/source prefix typed
    # there (forms.prefix_only), else None (the flow's scratch folder)
    setup_cwd: str | None = None
    # what a shell block's setup left for its reproduce step (run.block.BlockState)
    block: dict[str, Any] | None = None
    # ORCHESTRATOR_REPRODUCE_PYTHON resolved once at start (None in a state saved before
    # it was recorded: ``context.interpreter`` resolves it from the settings then)
    reproduce_python: str | None = None
    python: str | None = None          # the interpreter of the stage being run
    path_head: str | None = None       # its bin dir, put first on PATH
    base: str = "origin/main"
    trunk_ok: bool | None = None
    fallback_ok: bool | None = None
    pending_restore: PendingRestore | None = None
    rerun_done: bool = False
    ci_env: dict[str, Any] = {}        # env/timeout/exitfirst folded from the CI job log
    # beyond the seed: what a fix-verifier needs
    repeat: int = 1                    # --repeat N: runs of each stage's reproducer
    test_extras: list[str] = []        # --test-extras: the project's test extras (Stage 2)
    bypass: str | None = None          # "-p no:skipping" while a pytest skip mark is bypassed
    unskipped: dict[str, Any] | None = None   # verdict.Unskipped of the marker taken off
    restore_kept: str | None = None    # a file the user changed during an interrupted re-run
    attempt_counts: dict[str, int] | None = None
    last_exit: int | None = None       # exit code of the deciding run (the self-check)
    # {top-level module: [files]} the deciding run imported (run.imports); None: no record
    imported: dict[str, list[str]] | None = None
    skipped_exit: int | None = None    # exit code of the run that was all skipped
    timeout: float | None = None       # --timeout: seconds per reproducer run
    verdict: dict[str, Any] | None = None
    installed_versions: dict[str, str] = {}
    ci_image: str | None = None
    notes: list[str] = []
    # batch
    batch_file: str | None = None
    batch_entries: list[dict[str, Any]] = []
    batch_index: int = 0
    batch_verdicts: dict[str, dict[str, Any]] = {}
    batch_notes: dict[str, str] = {}
    batch_unskip: bool = False
    batch_ci_repo: str | None = None   # --ci-repo of the batch (an entry's own wins)
    entry_id: str | None = None        # the batch entry being run (names its log folder)
    batch_repeat: int = 1              # --repeat / --timeout of the batch (an entry's own win)
    batch_timeout: float | None = None
    batch_stage: str = "auto"          # --stage / --failure-pattern of the batch (ditto)
    batch_pattern: str | None = None
    batch_to_stage2: list[str] = []    # ids that passed Stage 1 under auto
    batch_to_stage3: list[str] = []    # ids that passed Stage 2 too
    batch_tree: str | None = None      # the tree the batch's CI alignment and re-runs use
    # the tree each entry going to Stage 2 ran in (its own clone when it cd'd into one)
    batch_entry_trees: dict[str, str] = {}
    # the local profile's Stage 2 build of each of those trees: {"work", "trunk_ok",
    # "fallback_ok", then "python", "path_head", "base", "tree" once built}
    batch_builds: dict[str, dict[str, Any]] = {}
    # the ids going to Stage 3 grouped by the CI repository each is aligned against, and
    # the group aligned now (one CI environment at a time)
    batch_ci_groups: list[list[str]] = []
    batch_ci_group: int = 0
    batch_python: str | None = None    # the interpreter of the batch's build / CI env
    batch_path_head: str | None = None


class BuildResult(Feed):
    """An agent's Stage 2 build (pytorch-xpu: the xpu-build-pytorch skill)."""

    ok: bool
    detail: str = ""


def start(opts: dict[str, Any], root: Path, settings: Any) -> ReproData:
    """Initial data; WorkflowInputError for an unknown profile, a bad --ci-commit, a
    reproducer that cannot be split, or an ORCHESTRATOR_REPRODUCE_PYTHON that is not an
    executable file (nothing is written then)."""
    from flow.workflows.reproduce.errors import ProfileError, ReproducerParseError
    from flow.workflows.reproduce.reproducer.forms import parse_reproducer
    from flow.workflows.reproduce.profiles import load_profile

    given = _inputs(opts)
    inputs = dict(given)
    context.check_python(settings)
    try:
        load_profile(inputs["profile"])
    except ProfileError as exc:
        raise WorkflowInputError(str(exc), "pass --profile local or --profile pytorch-xpu") from None
    sha = inputs["ci_commit"]
    if sha and not all(c in "0123456789abcdefABCDEF" for c in sha) or sha and not 7 <= len(sha) <= 40:
        raise WorkflowInputError(f"--ci-commit {sha!r} is not a commit sha", "pass 7-40 hex digits")
    if inputs["command"] and not inputs["batch_file"]:
        try:
            parse_reproducer(inputs["command"])
        except ReproducerParseError as exc:
            raise WorkflowInputError(f"the reproducer cannot be split into commands: {exc}",
                                     "mend the block where the message says (bash -n reports the "
                                     "same), then run again") from None
    batch_text = inputs.pop("batch_text")
    if batch_text is not None:
        from flow.workflows.reproduce.batch.entries import BatchRefused, parse_batch

        try:
            parse_batch(batch_text)
        except BatchRefused as exc:
            raise WorkflowInputError(str(exc), "split the batch into smaller files") from None
    data = ReproData(**inputs, reproduce_python=context.reproduce_python(settings))
    from flow.workflows.reproduce.verdict.reuse import earlier_runs

    earlier = earlier_runs(root, locate(opts, root, given))
    if earlier:
        data.notes.append("earlier runs of this command on another tree, interpreter or "
                          f"installed set (kept): {'; '.join(earlier[:5])}")
    return data


def _restore_first(step: Any) -> Any:
    """Wrap a step: a file left edited by a crashed skip-marker re-run is restored first,
    only when it still holds exactly our edit; a file the user changed since is kept (the
    pending restore is dropped and the re-run ends CANNOT_VERIFY saying so)."""
    def guarded(ctx: Any) -> Any:
        pending = ctx.data.pending_restore
        if pending is not None and not _job_running(ctx):
            from flow.workflows.reproduce.unskip.marker import restore

            result = restore(pending)
            if result == "restored":
                ctx.log(f"restored {pending.path} left edited by an interrupted re-run")
            elif result == "kept":
                ctx.log(f"kept {pending.path}: changed since our edit, not ours to undo")
                ctx.data.notes.append(f"{pending.path} changed after the skip-marker edit of an "
                                      "interrupted re-run; kept as the user left it")
                ctx.data.restore_kept = pending.path
                ctx.data.pending_restore = None
        return step(ctx)
    guarded.__name__ = getattr(step, "__name__", "step")
    guarded.__doc__ = step.__doc__
    return guarded


def _job_running(ctx: Any) -> bool:
    """A background job of this phase has no result yet: a re-run may be running on the
    edited file right now, so it is not restored under it (the step restores it after)."""
    state = getattr(ctx, "_state", None)
    jobs = getattr(state, "jobs", {}) or {}
    return any(j.result is None and j.phase == state.phase for j in jobs.values())


def begin(ctx: Any) -> Any:
    return Go("batch" if ctx.data.batch_file else "single")


def _lazy(module: str, name: str) -> Any:
    """The step ``name`` of ``flow.workflows.reproduce.<module>``, imported when it first
    runs: a call imports only the stages it reaches (a single nightly run never loads the
    batch, source-build, CI or skip-marker steps)."""
    def step(ctx: Any) -> Any:
        from importlib import import_module

        return getattr(import_module(f"flow.workflows.reproduce.{module}"), name)(ctx)
    step.__name__ = name
    return step


STEPS = {
    "begin": begin, "preflight": _lazy("preflight", "step"),
    "prepare": _lazy("prepare.steps", "prepare"), "collect": _lazy("prepare.steps", "collect"),
    "stage1": _lazy("stage1.steps", "stage1"), "stage2": _lazy("stage2.steps", "stage2"),
    "stage3": _lazy("stage3.steps", "stage3"), "unskip": _lazy("unskip.steps", "unskip"),
    "verdict": _lazy("verdict.report", "finish"),
    "batch_setup": _lazy("batch.steps", "setup"), "batch_entry": _lazy("batch.steps", "entry"),
    "batch_build": _lazy("batch.steps", "build"),
    "batch_stage2": _lazy("batch.steps", "stage2_entry"),
    "batch_ci": _lazy("batch.steps", "align"), "batch_stage3": _lazy("batch.steps", "stage3_entry"),
    "batch_report": _lazy("batch.steps", "report"),
}

WORKFLOW = Workflow(
    name="reproduce",
    states=tuple(STEPS),
    transitions=(
        ("single", "begin", "preflight"), ("batch", "begin", "batch_setup"),
        ("ok", "preflight", "prepare"), ("decided", "preflight", "verdict"),
        ("prepared", "prepare", "collect"), ("decided", "prepare", "verdict"),
        ("collected", "collect", "stage1"), ("decided", "collect", "verdict"),
        ("decided", "stage1", "verdict"), ("unskip", "stage1", "unskip"),
        ("next", "stage1", "stage2"),
        ("decided", "stage2", "verdict"), ("unskip", "stage2", "unskip"),
        ("next", "stage2", "stage3"),
        ("decided", "stage3", "verdict"), ("unskip", "stage3", "unskip"),
        ("decided", "unskip", "verdict"), ("to_stage2", "unskip", "stage2"),
        ("retry", "unskip", "unskip"),
        ("to_stage3", "unskip", "stage3"),
        ("ready", "batch_setup", "batch_entry"), ("next", "batch_entry", "batch_entry"),
        ("finished", "batch_entry", "batch_report"), ("build", "batch_entry", "batch_build"),
        ("built", "batch_build", "batch_stage2"), ("decided", "batch_build", "batch_report"),
        ("next", "batch_stage2", "batch_stage2"), ("finished", "batch_stage2", "batch_report"),
        ("align", "batch_stage2", "batch_ci"),
        ("aligned", "batch_ci", "batch_stage3"), ("decided", "batch_ci", "batch_report"),
        ("next", "batch_ci", "batch_ci"),
        ("next", "batch_stage3", "batch_stage3"), ("finished", "batch_stage3", "batch_report"),
        ("align", "batch_stage3", "batch_ci"),
    ),
    initial="begin",
    terminal=frozenset({"verdict", "batch_report"}),
    steps={name: _restore_first(step) for name, step in STEPS.items()},
    feeds={"run": RunResult, "build": BuildResult},
    data_model=ReproData,
    skill="fix-reproduce",
    description="Does a bug still reproduce? nightly -> source build -> CI environment; "
                "a typed verdict (REPRODUCED / NOT_REPRODUCED / NO_REPRODUCER / CANNOT_VERIFY).",
)
