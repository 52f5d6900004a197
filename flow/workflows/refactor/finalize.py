"""Phase 7, finalize: what the run changed, the checkout put back as it was where it changed
nothing, the checkout's uncommitted changes and the earlier flow they came from, the PR
description's inputs and ``final_summary.md`` (the seed's workflow phase 7, Finalize, and its
"Resuming After Interruption")."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from flow.core import proc
from flow.workflows.refactor.analysis import moves
from flow.workflows.refactor.steps import assessment, plan
from flow.workflows.refactor.summary import SummaryInput, moved_tests, render_summary
from flow.workflows.refactor.testenv import _note, _python


def _sentinel_notes(ctx: Any) -> list[str]:
    """Unresolved sentinels still present now (one renamed since by the coder is not stale news)."""
    return [f"{Path(folder).name}/{name}: {reason}" for folder, name, reason in ctx.data.sentinel_notes
            if (Path(folder) / name).exists()]


def changed(ctx: Any) -> bool:
    """Whether the run changed anything: the file's text, or a codemod's edit elsewhere
    (DecorateInfo entries, sentinel files)."""
    from flow.workflows.refactor.mechanical import original

    if Path(ctx.data.file).read_text(encoding="utf-8") != original(ctx).read_text(encoding="utf-8"):
        return True
    return any(r.changes for r in ctx.data.applied if r.by == "codemod" and r.rule_id in ("TR009", "TR010"))


def restore_checkout(ctx: Any, unchanged: bool) -> None:
    """Leave in the checkout only what the flow changed on purpose: the original's copy a
    stopped local-test run left beside the file goes; a flow that changed nothing also puts
    back the allowlist entry verify took out (the kept bytes), said in the notes. Safe to
    run again."""
    from flow.workflows.refactor.linting import ALLOWLIST_KEPT
    from flow.workflows.refactor.preexisting import beside
    from flow.workflows.refactor.testlinter import ALLOWLIST, put_back_in_allowlist

    beside(ctx).unlink(missing_ok=True)
    if not unchanged:
        return
    kept = ctx.path(ALLOWLIST_KEPT)
    if kept.exists() and put_back_in_allowlist(Path(ctx.data.repo), ctx.data.rel, kept):
        _note(ctx, f"{ctx.data.rel} put back in {ALLOWLIST.as_posix()}: the flow changed nothing, "
                   "so the checkout is left as it was")


def uncommitted(ctx: Any) -> list[str]:
    """The files a refactor touches (the test file, the TEST_LINTER allowlist, the DecorateInfo
    and dynamo sentinel files) that the checkout's git shows changed and not committed, as git
    names them; [] when none is, or the checkout is not a git work tree."""
    from flow.workflows.refactor.mechanical import cmi_files, sentinel_dirs
    from flow.workflows.refactor.testlinter import ALLOWLIST

    repo = Path(ctx.data.repo)
    paths = [ctx.data.rel, ALLOWLIST.as_posix(), *(str(p) for p in cmi_files(ctx)), *(str(d) for d in sentinel_dirs(ctx))]
    res = proc.capture(["git", "-C", str(repo), "status", "--porcelain", "--", *paths], env=ctx.settings,
                       timeout=60).or_wait()
    if res.code != 0:
        return []
    return [line[3:].strip() for line in res.text.splitlines() if len(line) > 3]


def earlier_flow(ctx: Any) -> str | None:
    """The summary of a finished flow of the same file of this checkout whose result is the file
    this flow started from (its change is still uncommitted in the checkout), else None."""
    import json

    from flow.workflows.refactor.mechanical import original

    digest = hashlib.sha256(original(ctx).read_bytes()).hexdigest()
    stem = Path(ctx.data.file).stem
    for state in sorted(ctx.dir.parent.glob(f"{stem}*/flow_state.json")):
        if state.parent == ctx.dir:
            continue
        try:
            raw = json.loads(state.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        result, data = raw.get("result") or {}, raw.get("data") or {}
        if (isinstance(result, dict) and result.get("file_sha256") == digest and isinstance(data, dict)
                and data.get("file") == ctx.data.file and data.get("repo") == ctx.data.repo):
            return str(result.get("summary_path") or state.parent / "final_summary.md")
    return None


def _version(info: str | None) -> str:
    """``2.14.1`` of ``torch 2.14.1 at /path/torch``: the PR says which torch, not where."""
    words = (info or "").split()
    return words[1] if len(words) > 1 and words[0] == "torch" else "unknown"


def pr_input(ctx: Any) -> Any:
    """The PR description's inputs, from the flow's checks and counts. Nothing of this machine
    goes in: the linter is named without its interpreter, and the checkout's, the
    interpreter's, the flow folder's and the home folder's paths are given to be scrubbed."""
    from flow.workflows.refactor.mechanical import original
    from flow.workflows.refactor.prchange import cuda_decoupled, label_only, wider_coverage
    from flow.workflows.refactor.prtext import MovedRow, PrInput, class_rows
    from flow.workflows.refactor.testids import moved_tests

    checks = {c.name: c for c in ctx.data.checks}
    lint, hw = checks.get("test_linter"), checks.get("hw_classification")
    before, after = original(ctx).read_text(encoding="utf-8"), Path(ctx.data.file).read_text(encoding="utf-8")
    classes = class_rows(after)
    labels = {c.name: c.hw_classification for c in classes}
    moved = [MovedRow(test=m.fn, old_class=m.old_class, new_class=m.new_class, old_ids=list(m.old_ids),
                      new_ids=list(m.new_ids), label=labels.get(m.new_class), old_pattern=m.old_pattern,
                      new_pattern=m.new_pattern) for m in moved_tests(before, after)]
    python = _python(ctx)
    local = {ctx.data.repo: "the checkout", str(ctx.dir): "the flow folder", str(Path.home()): "~",
             **{p: "python" for p in (python, str(Path(python).resolve()))}}
    return PrInput(rel=ctx.data.rel, classes=classes, moved=moved, cuda_decoupled=cuda_decoupled(before, after),
                   label_only=label_only(before, after), coverage=wider_coverage(before, after),
                   linter=ctx.data.linter.split(" (run by ")[0],
                   linter_passed=None if lint is None or lint.skipped else lint.passed,
                   hw_counts=dict(ctx.data.hw_counts), hw_note=ctx.data.hw_note, hw_todo=ctx.data.hw_todo,
                   hw_runner=ctx.data.hw_runner or "python", refactor_failures=list(ctx.data.refactor_failures),
                   preexisting=[d.test_name for d in ctx.data.deferred if d.original_fails_as and not d.by_person],
                   preexisting_as={d.test_name: d.original_fails_as for d in ctx.data.deferred
                                   if d.original_fails_as and not d.by_person},
                   deferred=[d.test_name for d in ctx.data.deferred if not d.original_fails_as
                             and not d.by_person and d.test_name not in ctx.data.refactor_failures],
                   person_deferred={d.test_name: d.reason.partition("; the original: ")[2]
                                    for d in ctx.data.deferred if d.by_person},
                   hw_passed=None if hw is None or hw.skipped else hw.passed,
                   local_tests=(f"{ctx.data.local_counts} (torch {_version(ctx.data.test_torch_info)})"
                                if ctx.data.local_counts else ctx.data.local_tests),
                   devices=list(ctx.data.test_devices or []),
                   local={p: w for p, w in local.items() if p.strip("/")})


def write_summary(ctx: Any, pending: list[str] | None = None, earlier: str | None = None) -> Path:
    """``final_summary.md``; ``pending``: the checkout's uncommitted changes to the files a
    refactor touches (said when this run changed nothing), ``earlier``: the summary of the
    flow whose result they are."""
    report = plan(ctx)
    unchanged = not changed(ctx)
    summary = SummaryInput(file=ctx.data.rel, field=ctx.data.field, unchanged=unchanged,
                           pr=None if unchanged else pr_input(ctx), judged_by=ctx.data.linter,
                           moves=moved_tests(moves(report, assessment(ctx))), rules=ctx.data.applied,
                           checks=ctx.data.checks, retries=ctx.data.retries, deferred=ctx.data.deferred,
                           local_tests=ctx.data.local_tests, notes=[*ctx.data.notes, *_sentinel_notes(ctx)],
                           decided_by_person=list(ctx.data.decided_by_person),
                           uncommitted=list(pending or []), earlier_summary=earlier or "",
                           ci_check_command=ctx.cmds.cli("--ci-check"))
    return ctx.write_text("final_summary.md", render_summary(summary))
