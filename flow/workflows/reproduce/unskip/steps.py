"""The skip-marker re-run of the ``reproduce`` workflow (seed: "all skipped by
@skipIfXpu -> remove it, re-run once, revert"; issue 11: which markers, the pytest bypass,
restore safety).

``plan`` (called by ``stepsflow.act`` when a stage was all skipped by a profile marker)
chooses the bypass (``-p no:skipping``) or the file edit and records it; the ``unskip``
step runs the reproducer again and puts the file back, only over our own edit.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from flow.outcome import Go
from flow.reproduce import runner
from flow.reproduce.profiles import Profile
from flow.reproduce.stepsflow import (
    act, blocked, decide, entry_prefix, profile_of,
)
from flow.reproduce.verdict import CannotVerify, Reproduced, Stage


def plan(ctx: Any, profile: Profile, bypass: bool = True) -> str | None:
    """Prepare the skip-marker re-run; a blocker, or None. A pytest marker is bypassed with
    ``-p no:skipping`` (nothing edited; ``bypass=False`` after that did not work, e.g.
    under ``--strict-markers``); another marker is taken out of the file: the pending
    restore, with the hash of the edited bytes, is recorded (saved by the transition that
    follows) before the edit."""
    from flow.reproduce.errors import SkipMarkerNotFound
    from flow.reproduce.skipmarker import (
        PendingRestore, decorators, is_pytest_mark, marker_matches, remove_skip_marker,
    )

    found = runner.node_target(ctx.data.pytest_args, ctx.data.cwd)
    if found is None:
        return ("skipped by a skip marker, but no single test file::test target to remove it "
                "from; give the node id")
    path, node = found
    source = path.read_bytes()
    try:
        marks = [d for d in decorators(source, node)
                 if any(marker_matches(d.name, m) for m in profile.skip_markers)]
    except SkipMarkerNotFound as exc:
        return f"skipped, but the skip marker cannot be located: {exc}"
    first = marks[0] if marks else None
    if bypass and first is not None and all(is_pytest_mark(d.name) for d in marks):
        ctx.data.bypass = "-p no:skipping"
        ctx.data.unskipped = {"decorator": first.name, "file": str(path), "line": first.line,
                              "bypass": ctx.data.bypass}
        return None
    try:
        removal = remove_skip_marker(source, node, tuple(profile.skip_markers))
    except SkipMarkerNotFound as exc:
        return f"skipped, but the skip marker cannot be removed: {exc}"
    ctx.data.pending_restore = PendingRestore.of(path, source, removal.modified)
    ctx.data.unskipped = {"decorator": first.name if first else removal.removed[0],
                          "file": str(path), "line": first.line if first else 0, "bypass": None}
    return None


def _ours(pending: Any) -> bool:
    """The file still holds the original bytes or exactly our edit (nobody else's)."""
    import hashlib

    try:
        now = Path(pending.path).read_bytes()
    except OSError:
        return False
    return now == pending.original() or (
        pending.edited_sha256 is not None
        and hashlib.sha256(now).hexdigest() == pending.edited_sha256)


def unskip(ctx: Any) -> Any:
    """The skip-marker re-run. A bypassed pytest marker: run again with the bypass flag
    (the refined command carries it). Another marker: take it off the target test, run,
    put the file back (only over our own edit), then run refined_command once more in a
    clean shell: with the marker back it does not fail, which ``self_check`` records."""
    from flow.reproduce.errors import SkipMarkerNotFound
    from flow.reproduce.skipmarker import remove_skip_marker, restore
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
    from flow.jobs import Pending

    if not _ours(pending):  # changed by someone else since act() read it: not ours to edit
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
