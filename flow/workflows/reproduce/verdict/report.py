"""The verdict step (seed: "Output"): write ``verdict.json`` and ``report.json`` and end
the flow with the outcome, the verdict and what the caller does next.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from flow.core.outcome import Done
from flow.workflows.reproduce.verdict.models import VERDICT_ADAPTER, VerdictReport


def _reproduced_steps(verdict: Any) -> list[str]:
    """What the caller does with a REPRODUCED verdict, including what it must know first
    (a marker to take off, a rebuild after the fix)."""
    if getattr(verdict, "verdict", "") != "REPRODUCED":
        return []
    steps = []
    check, unskipped = verdict.self_check, verdict.unskipped
    if check is not None and not check.fails and unskipped is not None:
        steps.append(f"refined_command alone does not fail: {unskipped.decorator} at "
                     f"{unskipped.file}:{unskipped.line} skips the test; take it off before "
                     "running refined_command")
    elif check is not None and not check.fails:
        steps.append("refined_command alone did not fail in a clean shell; do not rely on it")
    if verdict.flaky:
        steps.append(f"flaky: {verdict.failures} of {verdict.attempts} attempts failed; a "
                     "fix-verifier should run refined_command several times")
    if verdict.rerun_after_fix:
        steps.append(f"after applying a fix, run first: {verdict.rerun_after_fix}")
    steps.append("hand refined_command to the fix workflow; it re-triggers the failure: "
                 "bash -c \"$refined_command\"")
    return steps


def _cannot_verify_steps(ctx: Any, verdict: Any) -> list[str]:
    """What the caller does with CANNOT_VERIFY: what already passed when Stage 3 could not
    run (it is reached only when Stages 1 and 2 passed), and the verdict's ``hint`` (a
    missing import: the module and how to add it where the run needs it)."""
    if getattr(verdict, "verdict", "") != "CANNOT_VERIFY":
        return []
    steps = []
    if verdict.stage == "ci_env":
        steps.append("stages nightly and source_build ran and the test passed in both; only "
                     "the CI-environment alignment (stage 3) could not run: " + verdict.blocker)
    if verdict.hint:
        steps.append(verdict.hint)
    return steps + ["fix the blocker, then re-run with --restart"]


def remember_tree_as_left(ctx: Any) -> None:
    """The flow stays found by the tree its own runs left (a data file the test wrote):
    when the tree's environment key differs now from the one in the flow id, an alias
    ``<prefix>-<key now>.alias`` beside the flow folder names the flow (``identity.locate``
    follows it). A tree changed afterwards by anyone else has yet another key: a new flow."""
    from flow.workflows.reproduce.verdict.reuse import environment_key, write_alias

    folder = Path(ctx.dir)
    prefix, _, key = folder.name.rpartition("-")
    if not prefix:
        return
    now = environment_key(ctx.data.source_dir, ctx.settings, ctx.root)
    if now != key:
        write_alias(folder.with_name(f"{prefix}-{now}"), folder.name)


def finish(ctx: Any) -> Any:
    """Write verdict.json and report.json; Done with outcome, verdict and report."""
    from flow.workflows.reproduce.verdict.finalize import with_environment

    ctx.data.verdict = with_environment(ctx, ctx.data.verdict)
    verdict = VERDICT_ADAPTER.validate_python(ctx.data.verdict)
    if getattr(verdict, "verdict", "") == "CANNOT_VERIFY" and verdict.stage == "ci_env":
        passed = "stages nightly and source_build passed (the test did not fail there)"
        if passed not in ctx.data.notes:
            ctx.data.notes.append(passed)
    report = VerdictReport(verdict=verdict, installed_versions=ctx.data.installed_versions,
                           ci_image=ctx.data.ci_image, notes=ctx.data.notes)
    from datetime import datetime, timezone

    dumped = report.model_dump(mode="json")
    ctx.write_json("verdict.json", dumped["verdict"])
    # when the verdict was reached: in the file only (the state stays the same whatever
    # the clock, so a resumed flow ends exactly as an uninterrupted one)
    ctx.write_json("report.json", {**dumped, "decided_at": datetime.now(timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")})
    remember_tree_as_left(ctx)
    steps = {
        "REPRODUCED": _reproduced_steps(verdict),
        "NOT_REPRODUCED": ["report to the user (or triage) that the failure no longer reproduces"],
        "NO_REPRODUCER": ["ask the reporter for a runnable reproducer command"],
        "CANNOT_VERIFY": _cannot_verify_steps(ctx, verdict),
    }[verdict.verdict]
    other = (getattr(verdict, "environment", None) or {}).get("other_code")
    if other:
        steps = [f"this verdict ran other code than the tree: {other}", *steps]
    return Done({"outcome": verdict.verdict, "verdict": dumped["verdict"], "report": dumped,
                 "verdict_path": str(ctx.path("verdict.json")), "reuse_key": ctx.flow_id},
                steps)
