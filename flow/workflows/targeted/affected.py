"""``orchestrator.py affected-tests``: the tracer on the command line.

``affected-tests --base REV [--depth 3] [--hub-limit 40] [--json] [--profile NAME]
[--repo-dir DIR] [--include-worktree]`` traces ``git diff <merge base of REV>...HEAD`` of
DIR (default: the current directory; with ``--include-worktree`` the uncommitted changes
too, which are otherwise only warned about) and prints the plan and the seed's step-1
report: as text by default (profile on the first line, the plan first), or as one JSON
object (the usual envelope plus ``report`` and ``plan``) with ``--json``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from flow.core.errors import WorkflowInputError

DEFAULT_DEPTH = 3
DEFAULT_HUB_LIMIT = 40


def repo_dir_of(value: str | None) -> Path:
    """The repository to trace: ``value`` or the current directory. Raises WorkflowInputError
    when it is not a directory inside a git work tree."""
    path = Path(value).expanduser().resolve() if value else Path.cwd()
    if not path.is_dir():
        raise WorkflowInputError(f"--repo-dir {str(path)!r} is not a directory",
                                 "pass the checkout of the PR branch (or run from inside it)")
    from flow.core import proc

    probe = proc.capture(["git", "-C", str(path), "rev-parse", "--show-toplevel"])
    if not probe.ok:
        raise WorkflowInputError(f"{str(path)!r} is not inside a git repository",
                                 "pass --repo-dir DIR with the PR branch checked out")
    return Path(probe.text.strip())


def check_bounds(depth: int, hub_limit: int) -> None:
    """Refuse a depth or hub limit outside its range (``flow.core.bounds.RANGES``): below 1
    the trace lists nothing meaningful, past the top it would walk for ever."""
    from flow.core.bounds import RANGES

    for flag, value, default in (("depth", depth, DEFAULT_DEPTH),
                                 ("hub-limit", hub_limit, DEFAULT_HUB_LIMIT)):
        rng = RANGES[flag]
        if not rng.low <= value <= rng.high:
            raise WorkflowInputError(f"--{flag} {value} is not {rng.says()}",
                                     f"use --{flag} {default} (the default)",
                                     allowed=rng.schema())


def load(repo_dir: Path, profile: str | None) -> Any:
    """The TargetedConfig of ``repo_dir`` (``profile``, else its pyproject table, else the
    defaults). An unknown profile or an invalid table is a WorkflowInputError with the
    config's own message and hint."""
    from flow.workflows.targeted.config import load_config
    from flow.workflows.targeted.errors import TargetedError

    try:
        return load_config(repo_dir, profile)
    except TargetedError as err:
        raise WorkflowInputError(err.message, err.hint, code=err.code) from err


def cache_dir_for(root: Path, repo_dir: Path) -> Path:
    """Where traces of ``repo_dir`` keep their facts: one folder per checkout under the
    workspace (``<workspace>/.cache/targeted/<hash of the checkout's path>``), shared by the
    ``affected-tests`` command and every ``ci-targeted`` flow on that checkout."""
    from flow.workflows.targeted.facts import sha1

    return root / ".cache" / "targeted" / sha1(str(Path(repo_dir).resolve()).encode())[:16]


def trace(repo_dir: Path, base: str | None, depth: int, hub_limit: int, cfg: Any,
          cache_dir: Path | None = None, worktree: bool = False) -> Any:
    """Run the tracer with config ``cfg`` (see ``load``); every tracer error (bad base, not a
    repository) becomes a WorkflowInputError with the tracer's own message and hint. Returns
    an AffectedReport."""
    from flow.workflows.targeted.errors import TargetedError
    from flow.workflows.targeted.trace import affected_tests

    if not base:
        raise WorkflowInputError("--base is required",
                                 "pass the revision the PR branches from, e.g. --base origin/main")
    check_bounds(depth, hub_limit)
    try:
        return affected_tests(repo_dir, base, depth, hub_limit, cfg, cache_dir=cache_dir,
                              worktree=worktree)
    except TargetedError as err:
        raise WorkflowInputError(err.message, err.hint, code=err.code) from err


def affected_tests_command(args: argparse.Namespace, root: Path,
                           harness: str) -> dict[str, Any] | str:
    """Back ``orchestrator.py affected-tests``: the text report, or with ``--json`` the
    envelope plus ``report`` (``AffectedReport.model_dump(mode="json")``).

    Raises WorkflowInputError for a missing or unknown base, a directory that is not a git
    repository, a bad depth/hub limit or an invalid config. Writes nothing but its cache
    (``cache_dir_for``), which only ever saves work.
    """
    from flow.core.render import envelope
    from flow.workflows.targeted.report import render_text
    from flow.workflows.targeted.select import choose

    depth = DEFAULT_DEPTH if args.depth is None else args.depth
    hub_limit = DEFAULT_HUB_LIMIT if args.hub_limit is None else args.hub_limit
    repo_dir = repo_dir_of(args.repo_dir)
    cfg = load(repo_dir, args.profile)
    report = trace(repo_dir, args.base, depth, hub_limit, cfg,
                   cache_dir=cache_dir_for(root, repo_dir),
                   worktree=bool(getattr(args, "include_worktree", False)))
    plan = choose(report, cfg)
    if not args.json:
        return render_text(report, plan)
    return {**envelope(None, root, "done", harness), "report": report.model_dump(mode="json"),
            "plan": plan.model_dump(mode="json")}
