"""How the re-run without the skip marker is set up (seed: Stage 1, "all skipped by
@skipIfXpu -> remove it, re-run once, revert"): the pytest bypass (``-p no:skipping``) when
it is enough, else the file edit, recorded as a pending restore before anything is written.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from flow.workflows.reproduce.profiles import Profile
from flow.workflows.reproduce.run import runner


def plan(ctx: Any, profile: Profile, bypass: bool = True) -> str | None:
    """Prepare the skip-marker re-run; a blocker, or None. A pytest marker is bypassed with
    ``-p no:skipping`` (nothing edited; ``bypass=False`` after that did not work, e.g.
    under ``--strict-markers``); another marker is taken out of the file: the pending
    restore, with the hash of the edited bytes, is recorded (saved by the transition that
    follows) before the edit."""
    from flow.workflows.reproduce.errors import SkipMarkerNotFound
    from flow.workflows.reproduce.unskip.marker import (
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


def still_ours(pending: Any) -> bool:
    """The file still holds the original bytes or exactly our edit (nobody else's)."""
    import hashlib

    try:
        now = Path(pending.path).read_bytes()
    except OSError:
        return False
    return now == pending.original() or (
        pending.edited_sha256 is not None
        and hashlib.sha256(now).hexdigest() == pending.edited_sha256)
