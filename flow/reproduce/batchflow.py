"""``reproduce --batch FILE``: one flow sweeping many reproducers (issue 3, item 8).

batch_setup parses the file (``batch.parse_batch``) and installs Stage 1 once;
batch_entry handles one entry per visit (prepare, collect-only, Stage 1, and the
skip-marker re-run as a second visit of the same entry) and saves its verdict before
moving on, so a crash resumes at the entry it was on and never re-runs a finished one;
batch_report ends with the buckets as Markdown and JSON.

Entries are checked at Stage 1 only. An ``auto`` entry that passes there gets no
verdict (bucket ``unverified``, with the command that runs stages 2 and 3 for it alone):
the source build and CI lookups are per-entry agent work this sweep does not fan out.
"""
from __future__ import annotations

from typing import Any

from flow.outcome import Done, Go
from flow.reproduce import stepsflow
from flow.reproduce.batch import (
    BatchEntry, InvalidEntry, build_report, parse_batch, render_json, render_markdown,
)
from flow.reproduce.verdict import VERDICT_ADAPTER, NoReproducer, Stage

_PER_ENTRY = dict(verdict=None, tree=None, cwd=None, pytest_args=None, rerun_done=False,
                  pending_restore=None, batch_unskip=False, current_stage=Stage.NIGHTLY.value)


def _entries(ctx: Any) -> list[BatchEntry | InvalidEntry]:
    return [InvalidEntry.model_validate(e["invalid"]) if "invalid" in e
            else BatchEntry.model_validate(e["entry"]) for e in ctx.data.batch_entries]


def setup(ctx: Any) -> Any:
    """Parse the batch file and install Stage 1 once for every entry."""
    from pathlib import Path

    items = parse_batch(Path(ctx.data.batch_file).read_text())
    ctx.data.batch_entries = [{"invalid": i.model_dump()} if isinstance(i, InvalidEntry)
                              else {"entry": i.model_dump()} for i in items]
    problem = stepsflow.install_nightly(ctx, stepsflow.profile_of(ctx))
    if problem:
        ctx.data.notes.append(f"stage 1 install failed: {problem}")
        for item in items:
            if isinstance(item, BatchEntry):
                ctx.data.batch_verdicts[item.id] = {
                    "verdict": "CANNOT_VERIFY", "stage": "nightly", "blocker": problem}
        ctx.data.batch_index = len(items)
    return Go("ready")


def _next(ctx: Any, entry_id: str, verdict: dict[str, Any] | None, note: str = "") -> Go:
    if verdict is not None:
        ctx.data.batch_verdicts[entry_id] = verdict
    if note:
        ctx.data.batch_notes[entry_id] = note
    for key, value in _PER_ENTRY.items():
        setattr(ctx.data, key, value)
    ctx.data.batch_index += 1
    return Go("next")


def _settle(ctx: Any, entry: BatchEntry, go: Go) -> Go:
    """Turn what a single-flow step decided into this entry's row (or a re-run visit)."""
    if go.trigger == "unskip":
        ctx.data.batch_unskip = True  # pending restore is saved before the file is edited
        return Go("next")
    if go.trigger == "decided":
        return _next(ctx, entry.id, ctx.data.verdict)
    if go.trigger in {"next", "to_stage2"}:
        again = ctx.cmds.cli("reproduce", "--stage", "auto", "--command", entry.command)
        return _next(ctx, entry.id, None,
                     f"passes at stage 1; stages 2-3 need their own flow: {again}")
    raise AssertionError(f"unexpected trigger {go.trigger!r} for batch entry {entry.id!r}")


def entry(ctx: Any) -> Any:
    """One entry per visit; the index moves only once the entry's row is saved."""
    entries = _entries(ctx)
    if ctx.data.batch_index >= len(entries):
        return Go("finished")
    item = entries[ctx.data.batch_index]
    if isinstance(item, InvalidEntry):
        return _next(ctx, item.id, None)
    if ctx.data.batch_unskip:
        return _settle(ctx, item, stepsflow.unskip(ctx))
    ctx.log(f"batch entry {ctx.data.batch_index + 1}/{len(entries)}: {item.id}")
    ctx.data.command, ctx.data.stage = item.command, item.stage
    ctx.data.failure_pattern, ctx.data.ci_repo = item.failure_pattern, item.ci_repo
    from flow.reproduce.errors import ReproducerParseError
    from flow.reproduce.forms import parse_reproducer

    try:
        rep = parse_reproducer(item.command)
    except ReproducerParseError as exc:
        return _next(ctx, item.id, None, f"cannot be split into commands: {exc}")
    if rep is None:
        return _next(ctx, item.id, NoReproducer(reason="no_command").model_dump(mode="json"))
    for step in (stepsflow.prepare, stepsflow.collect):
        go = step(ctx)
        if go.trigger == "decided":
            return _settle(ctx, item, go)
    profile = stepsflow.profile_of(ctx)
    problem = stepsflow.runner.run_setup(rep, cwd=stepsflow.scratch(ctx), env=stepsflow.env_of(ctx),
                                         logs=ctx.path(f"logs/{item.id}"))
    if problem:
        return _settle(ctx, item, stepsflow.blocked(ctx, Stage.NIGHTLY, problem))
    decision = stepsflow.decide(ctx, profile, Stage.NIGHTLY, f"batch-{ctx.data.batch_index}")
    return _settle(ctx, item, stepsflow.act(ctx, decision))


def report(ctx: Any) -> Any:
    """The buckets as report.md and report.json; Done."""
    verdicts = {k: VERDICT_ADAPTER.validate_python(v) for k, v in ctx.data.batch_verdicts.items()}
    built = build_report(_entries(ctx), verdicts)
    for row in built.rows:
        if row.id in ctx.data.batch_notes:
            row.note = ctx.data.batch_notes[row.id]
    md = ctx.write_text("report.md", render_markdown(built))
    js = ctx.write_text("report.json", render_json(built))
    counts = {str(k): v for k, v in built.counts.items()}
    return Done({"outcome": "BATCH", "counts": counts, "report_path": str(md),
                 "report_json_path": str(js)},
                [f"read {md}", *[n for n in ctx.data.batch_notes.values() if "orchestrator.py" in n]])
