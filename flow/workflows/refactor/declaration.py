"""The ``refactor`` workflow (seed: pytorch-test-refactoring.md, phases 1-7) wired into the engine.

assess -> analyze -> distribute -> code -> verify -> review -> test -> finalize (Done), with
verify -> verify (lint fix round), review -> verify (review fix round), any bounded loop that
runs out escalating to a person (carry on / abort -> aborted).

The file is edited in place in the repository (``--pytorch-dir``, default the current
directory); the original is kept at ``original/<name>`` in the flow folder and every phase's
artifact (assessment.json, analyst_report.json, coder_tasks.json, verification.json,
review_findings.json, local_test.json, final_summary.md) is written next to it.
Mechanical rules (TR001, TR002, TR009, TR010) are applied by the orchestrator's codemods in
distribute; agents get only the judgment rules.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from flow.core.errors import WorkflowInputError
from flow.core.outcome import Done
from flow.core.workflow import Workflow
from flow.workflows.refactor import fixloop, gatedevices, gates, steps
from flow.workflows.refactor.finalize import (
    changed, earlier_flow, pr_input, restore_checkout, uncommitted, write_summary,
)
from flow.workflows.refactor.errors import FieldConflictError
from flow.workflows.refactor.feedmodels import FEEDS, RefactorData
from flow.workflows.refactor.fields import detect_field, load_field_lists, normalise
from reference import DIR as REFERENCE



def _paths(opts: dict[str, Any]) -> tuple[Path, Path, str]:
    """(repo root, absolute file, path relative to the root) for the CLI options."""
    raw = opts.get("file") or (opts.get("words") or [None])[0]
    if not raw:
        raise WorkflowInputError("no test file given", "run: orchestrator.py test/test_ops.py")
    repo = Path(opts.get("source_dir") or os.getcwd()).resolve()
    path = Path(raw)
    absolute = (path if path.is_absolute() else repo / path).resolve()
    try:
        rel = absolute.relative_to(repo).as_posix()
    except ValueError:
        rel = normalise(raw)
    return repo, absolute, rel


LOCATES_IN_STORE = True  # locate gets the PostgreSQL URL: every machine's flows of the file count


def locate(opts: dict[str, Any], root: Path, url: str | None = None) -> str:
    """``refactor/<field>/<file stem>`` (the seed's agent_space/refactor/{field}/{file_name}/)
    for the first flow of a file; another checkout or other content is another flow
    (``identity.flow_for``), among the workspace's flows or, with ``url``, the PostgreSQL
    store's (where another machine's flows of the file are)."""
    from flow.workflows.refactor.identity import flow_for

    saved = None
    if url is not None:
        from workspace.pgstore import PgSaved

        saved = PgSaved(url)
    repo, absolute, rel = _paths(opts)
    return flow_for(root, f"refactor/{_field(rel)}/{absolute.stem}", repo, absolute, rel, saved)


def _field(rel: str) -> str:
    try:
        # REFACTOR_REFERENCE_DIR points tests (and forks) at other field lists.
        return detect_field(rel, load_field_lists(Path(os.environ.get("REFACTOR_REFERENCE_DIR") or REFERENCE)))
    except FieldConflictError as exc:
        raise WorkflowInputError(exc.message, exc.hint) from None


def start(opts: dict[str, Any], root: Path, settings: Any) -> RefactorData:
    """The initial data; ``WorkflowInputError`` for a missing file or a field conflict."""
    repo, absolute, rel = _paths(opts)
    if not absolute.is_file():
        raise WorkflowInputError(f"test file {str(absolute)!r} does not exist",
                                 "give a path relative to the PyTorch checkout (--pytorch-dir, "
                                 "default the current directory) or an absolute path")
    gatedevices.configured_devices(settings)  # a malformed device list is refused now; the probe stays lazy
    gates.test_settings(settings)
    return RefactorData(file=str(absolute), rel=rel, repo=str(repo), field=_field(rel))  # type: ignore[arg-type]


def finalize(ctx: Any) -> Any:
    import hashlib

    restore_checkout(ctx, unchanged=not changed(ctx))  # unchanged: nothing in the checkout changed
    if not changed(ctx):
        # "Nothing changed" is this run's word: a checkout still holding an earlier change
        # (a finished flow's result, never committed) is said to, with that flow's summary.
        pending = uncommitted(ctx)
        earlier = earlier_flow(ctx) if pending else None
        path = write_summary(ctx, pending, earlier)
        result = {"outcome": "unchanged", "summary_path": str(path), "file": ctx.data.file,
                  "field": ctx.data.field, "notes": list(ctx.data.notes)}
        if not pending:
            return Done(result, [f"Nothing changed in {ctx.data.file}: there is no PR to open (see {path})."])
        files = ", ".join(pending)
        return Done({**result, "uncommitted": pending, "earlier_summary": earlier},
                    [f"This run changed nothing, but the checkout {ctx.data.repo} holds uncommitted changes "
                     f"to {files}" + (f", the result of an earlier flow (summary: {earlier})" if earlier
                                       else ", made before this run") + ": that is the change a PR would carry.",
                     f"Review it (git -C {ctx.data.repo} diff), commit it and open the PR"
                     + (f" with the title and description at the top of {earlier}." if earlier else ".")])
    path = write_summary(ctx)
    from flow.workflows.refactor.prtext import blockers

    stops = blockers(pr_input(ctx))
    result = {"outcome": "refactored", "summary_path": str(path), "pr_ready": not stops,
              "file": ctx.data.file, "field": ctx.data.field, "notes": list(ctx.data.notes),
              "file_sha256": hashlib.sha256(Path(ctx.data.file).read_bytes()).hexdigest()}
    if stops:
        # a test plan that did not run is never passed off as one that did: no PR advice
        return Done(result, [f"Review the changes to {ctx.data.file} and {path}.",
                             "Not ready for a PR yet: " + "; ".join(stops) + ".",
                             "Open the PR only once that has been done and has passed."])
    return Done(result,
                [f"Review the changes to {ctx.data.file} and {path}.",
                 "Create the PR by hand (one file per PR): a branch, a commit, push, and a PR "
                 f"with the title and description at the top of {path}.",
                 f"Then say 'look after the CI' or run: {ctx.cmds.cli('--ci-check')}"])


def aborted(ctx: Any) -> Any:
    restore_checkout(ctx, unchanged=False)  # no copy of the original left beside the file
    return Done({"outcome": "aborted", "file": ctx.data.file,
                 "notes": ctx.data.notes}, [f"The flow stopped by request; artifacts are in {ctx.dir}."])


WORKFLOW = Workflow(
    name="refactor",
    states=("assess", "analyze", "distribute", "code", "verify", "review", "test", "finalize",
            "aborted"),
    transitions=(
        ("assessed", "assess", "analyze"),
        ("analyzed", "analyze", "distribute"),
        ("abort", "analyze", "aborted"),
        ("distributed", "distribute", "code"),
        ("coded", "code", "verify"),
        ("abort", "code", "aborted"),
        ("reverify", "verify", "verify"),
        ("verified", "verify", "review"),
        ("abort", "verify", "aborted"),
        ("refix", "review", "verify"),
        ("reviewed", "review", "test"),
        ("abort", "review", "aborted"),
        ("tested", "test", "finalize"),
    ),
    initial="assess",
    terminal=frozenset({"finalize", "aborted"}),
    steps={"assess": steps.assess, "analyze": steps.analyze, "distribute": steps.distribute,
           "code": steps.code, "verify": fixloop.verify, "review": fixloop.review, "test": gates.test,
           "finalize": finalize, "aborted": aborted},
    feeds=FEEDS,
    data_model=RefactorData,
    asks_person=frozenset({"analyze", "code", "verify", "review", "test"}),
    skill="pytorch-test-refactoring",
    description="Decouple a PyTorch test file from specific accelerators (seed phases 1-7).",
)
