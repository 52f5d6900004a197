"""The skip-marker re-run step of the ``reproduce`` workflow (seed: Stage 1, "all skipped
by @skipIfXpu -> remove it, re-run once, revert": which markers, the pytest bypass,
restore safety).

``unskip.plan`` (called by ``run.attempts.act`` when a stage was all skipped by a
profile marker) has chosen the bypass (``-p no:skipping``) or the file edit and recorded
it; this step runs the reproducer again and puts the file back, only over our own edit.
"""
from __future__ import annotations

from typing import Any

from flow.core.outcome import Go
from flow.workflows.reproduce.context import blocked, entry_prefix, profile_of
from flow.workflows.reproduce.run import runner
from flow.workflows.reproduce.run.attempts import act, decide
from flow.workflows.reproduce.unskip.plan import plan, still_ours
from flow.workflows.reproduce.verdict.models import CannotVerify, Reproduced, Stage


def unskip(ctx: Any) -> Any:
    """The skip-marker re-run. A bypassed pytest marker: run again with the bypass flag
    (the refined command carries it). Another marker: take it off the target test, run,
    put the file back (only over our own edit), then run refined_command once more in a
    clean shell: with the marker back it does not fail, which ``self_check`` records."""
    from flow.workflows.reproduce.errors import SkipMarkerNotFound
    from flow.workflows.reproduce.unskip.marker import remove_skip_marker, restore
    from workspace.atomic import write_atomic

    profile, pending = profile_of(ctx), ctx.data.pending_restore
    stage = ctx.data.current_stage
    if ctx.data.bypass:
        decision = decide(ctx, profile, stage, f"{entry_prefix(ctx)}{stage}-unskipped")
        if isinstance(decision, CannotVerify):  # the bypass does not work for this project
            ctx.data.notes.append(f"{stage}: {ctx.data.bypass} did not work ({decision.blocker[:200]}); "
                                  "taking the marker out of the file instead")
            ctx.data.bypass = None
            problem = plan(ctx, profile, bypass=False)
            if problem:
                return blocked(ctx, Stage(stage), problem)
            return Go("retry")  # saves the pending restore before the edit
        ctx.data.rerun_done = True
        ctx.data.notes.append(f"{stage}: re-ran with {ctx.data.bypass} (bypasses "
                              f"{ctx.data.unskipped and ctx.data.unskipped['decorator']}); "
                              "no file edited")
        return act(ctx, decision, from_unskip=True)
    if ctx.data.restore_kept:
        kept, ctx.data.restore_kept = ctx.data.restore_kept, None
        return blocked(ctx, Stage(stage), f"{kept} was changed by someone else while the "
                       "skip-marker re-run was interrupted; it is kept as it is (check whether "
                       "the marker is still off), then run again with --restart")
    found = runner.node_target(ctx.data.pytest_args, ctx.data.cwd)
    try:
        if pending is None or found is None:  # the test file went away since act() saw it
            raise SkipMarkerNotFound(f"no test file for {ctx.data.pytest_args} under "
                                     f"{ctx.data.cwd} any more", target=str(ctx.data.pytest_args))
        removal = remove_skip_marker(pending.original(), found[1], tuple(profile.skip_markers))
    except SkipMarkerNotFound as exc:
        ctx.data.pending_restore = None
        return blocked(ctx, Stage(stage), f"skipped, but the skip marker cannot be removed: {exc}")
    from flow.core.jobs import Pending

    if not still_ours(pending):  # changed by someone else since act() read it: not ours to edit
        ctx.data.pending_restore = None
        ctx.data.notes.append(f"{pending.path} changed after the skip-marker edit was planned; "
                              "kept as the user left it")
        return blocked(ctx, Stage(stage), f"{pending.path} was changed by someone else while "
                       "the skip-marker re-run was pending; it is kept as it is, then run "
                       "again with --restart")
    write_atomic(pending.path, removal.modified)
    try:
        decision = decide(ctx, profile, stage, f"{entry_prefix(ctx)}{stage}-unskipped")
    except Pending:
        raise  # the run goes on in the background on the edited file; resumed, not undone
    except BaseException:
        restore(pending)
        raise
    restored = restore(pending)
    counts, ran_exit = ctx.data.attempt_counts, ctx.data.last_exit
    ctx.data.pending_restore = None
    ctx.data.rerun_done = True
    ctx.data.notes.append(f"{stage}: re-ran without {removal.removed} on {removal.function}; "
                          f"file {'kept as the user changed it' if restored == 'kept' else 'restored'}")
    if isinstance(decision, Reproduced):  # the self-check: with the marker back, the
        # refined command is the one the stage ran first, which was all skipped
        ctx.data.last_exit = ctx.data.skipped_exit if ctx.data.skipped_exit is not None else 0
        ctx.data.notes.append(f"{stage}: with {removal.removed} back, refined_command exits "
                              f"{ctx.data.last_exit} by itself (the test is skipped); take "
                              "the marker off first (unskipped names it)")
        ctx.data.attempt_counts = counts
    else:
        ctx.data.last_exit = ran_exit
    return act(ctx, decision, from_unskip=True)
