"""Verify's PyTorch gate (seed phase 5, "Verify"): the verify-time codemods and TEST_LINTER.

``label_classes`` runs HW002 (same-call CUDA APIs to ``torch.accelerator`` in tests run on
every accelerator) and, where this PyTorch knows ``HardwareClassification``, HW001 (the
plan's ``hw_classification`` labels) on the file as the coder left it, every verify round.
``with_test_linter`` adds the ``test_linter`` check (the checkout's
``tools/linter/adapters/test_linter.py``, the file taken out of its allowlist first, else
the built-in rules of ``flow.workflows.refactor.testlinter``) and the ``line_length`` check.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flow.workflows.refactor.analysis import AnalystReport
from flow.workflows.refactor.findings import summarise
from flow.workflows.refactor.mechanical import original
from flow.workflows.refactor.testenv import _note, _python


def label_classes(ctx: Any, report: AnalystReport) -> None:
    """The verify-time codemods on the file as the coder left it (every verify round, so
    classes the coder created are covered too): HW001 writes the plan's hw_classification
    where this PyTorch knows the enum, HW002 renames same-call CUDA APIs in tests that run on
    every accelerator. Each rule's edits are counted in the summary.

    Crash-safe: the file as the coder left it is written to the flow folder
    (``codemod-input.py``) before the edited file replaces it, and the state records the
    written file's hash once counted (``codemod_done``); a call killed between the two
    writes finds the edited file, its input beside it and no record, and counts the same
    edits from that input again instead of seeing a file with nothing left to change."""
    import hashlib

    from workspace.atomic import write_atomic

    file = Path(ctx.data.file)
    text = file.read_text(encoding="utf-8")
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    ahead = ctx.path("codemod-input.py")
    if digest == ctx.data.codemod_done:
        return  # this very file was written and counted by an earlier round
    if ahead.is_file():
        prior = ahead.read_text(encoding="utf-8")
        redo = _codemods(ctx, report, file, prior)
        if redo is not None and redo[0] == text:  # killed after the write, before the record
            _record(ctx, redo[1], digest)
            return
    done = _codemods(ctx, report, file, text)
    if done is None:
        return
    code, results = done
    write_atomic(ahead, text.encode("utf-8"))
    write_atomic(file, code.encode("utf-8"))
    _record(ctx, results, hashlib.sha256(code.encode("utf-8")).hexdigest())


def _codemods(ctx: Any, report: AnalystReport, file: Path, text: str) -> tuple[str, list[Any]] | None:
    """(the edited text, each codemod's result) for ``text``; None when nothing changes or
    the text does not parse (the syntax check reports it)."""
    from flow.workflows.refactor.errors import SourceSyntaxError
    from flow.workflows.refactor.hwcodemod import label_classes as write_labels, rename_device_apis
    from flow.workflows.refactor.imports import sort_imports, usort_config

    try:
        results = [rename_device_apis(text)]
        if _wants_labels(ctx):
            results.append(write_labels(results[0].code, report.labels()))
    except (SyntaxError, SourceSyntaxError):
        return None
    if not any(r.changed for r in results):
        return None
    code = results[-1].code
    if len(results) > 1 and results[1].changed:
        code = sort_imports(original(ctx).read_text(encoding="utf-8"), code, usort_config(file))
    return code, results


def _record(ctx: Any, results: list[Any], digest: str) -> None:
    ctx.data.codemod_done = digest
    titles = {"HW001": "Declare hw_classification on every test class",
              "HW002": "Same-call CUDA APIs to torch.accelerator in tests run on every accelerator"}
    for result in results:
        for change in result.changes:
            _note(ctx, f"{change.rule_id} {change.description}")
            _count(ctx, change.rule_id, titles[change.rule_id])


def _count(ctx: Any, rule_id: str, title: str) -> None:
    from flow.workflows.refactor.summary import AppliedRule

    rule = next((r for r in ctx.data.applied if r.rule_id == rule_id), None)
    if rule is None:
        rule = AppliedRule(rule_id=rule_id, title=title, by="codemod")
        ctx.data.applied.append(rule)
    rule.changes += 1


def _wants_labels(ctx: Any) -> bool:
    """Whether this PyTorch knows ``HardwareClassification``: the checkout has the test linter
    or the enum in its common_utils.py, or the test interpreter's torch has it (asked once
    per flow). An older PyTorch has neither: a label would make the file fail to import."""
    from flow.workflows.refactor.hwclass import COMMON_UTILS
    from flow.workflows.refactor.testlinter import checkout_linter

    if ctx.data.hw_enum is None:
        repo = Path(ctx.data.repo)
        source = repo / (COMMON_UTILS.replace(".", "/") + ".py")
        if checkout_linter(repo) is not None or (
                source.is_file() and "class HardwareClassification" in source.read_text(encoding="utf-8", errors="replace")):
            ctx.data.hw_enum = True
        else:
            from flow.core import proc
            from flow.workflows.refactor.interpreter import HW_ENUM_PROBE

            probe = proc.capture([_python(ctx), "-c", HW_ENUM_PROBE], env=ctx.settings,
                                 timeout=300).or_wait()
            ctx.data.hw_enum = probe.code == 0 and probe.text.strip().endswith("yes")
            if not ctx.data.hw_enum:
                _note(ctx, f"hw_classification not written: neither the checkout nor the torch of "
                           f"{_python(ctx)} has HardwareClassification (torch 2.14.1 and later have it)")
    return bool(ctx.data.hw_enum)


#: the checkout's allowlist before the flow took the file out of it (put back on ``unchanged``)
ALLOWLIST_KEPT = "original/test_linter_allowlist.json"


def with_test_linter(ctx: Any, before: str, after: str, result: Any) -> Any:
    """PyTorch's TEST_LINTER (the checkout's script, else the built-in rules) and the
    checkout's line length for the changed lines, as checks of the hard gate."""
    from flow.workflows.refactor.testlinter import (
        builtin, checkout_linter, line_length, max_line_length, take_out_of_allowlist,
    )

    from flow.workflows.refactor.findings import CheckResult

    repo = Path(ctx.data.repo)
    linter = checkout_linter(repo)
    longs = line_length(before, after, ctx.data.rel, max_line_length(repo))
    if linter is None and not _wants_labels(ctx):
        ctx.data.linter = "none: this PyTorch predates HardwareClassification and TEST_LINTER"
        skipped = CheckResult(name="test_linter", passed=True, errors=0, warnings=0,
                              skipped="the checkout has no tools/linter/adapters/test_linter.py and "
                                      "its torch has no HardwareClassification")
        return result.model_copy(update={"findings": [*result.findings, *longs],
                                         "checks": [*result.checks, skipped, summarise("line_length", longs)]})
    if linter is None:
        found = builtin(after, ctx.data.rel)
        ctx.data.linter = "built-in TEST_LINTER rules (the checkout has no tools/linter/adapters/test_linter.py)"
    else:
        if take_out_of_allowlist(repo, ctx.data.rel, ctx.path(ALLOWLIST_KEPT)):
            _note(ctx, f"{ctx.data.rel} taken out of tools/linter/adapters/test_linter_allowlist.json")
        found = _run_checkout_linter(ctx, linter)
        ctx.data.linter = f"the checkout's {linter.relative_to(repo).as_posix()} (run by {_python(ctx)})"
    return result.model_copy(update={
        "findings": [*result.findings, *found, *longs],
        "checks": [*result.checks, summarise("test_linter", found), summarise("line_length", longs)]})


def _run_checkout_linter(ctx: Any, linter: Path) -> list[Any]:
    """``python tools/linter/adapters/test_linter.py FILE`` in the checkout; its JSON lines as
    findings. A run that could not finish, or exited non-zero with no message, is an error
    finding: never read as a clean file."""
    from flow.core import proc
    from flow.workflows.refactor.findings import Finding
    from flow.workflows.refactor.testlinter import read_messages

    res = proc.capture([_python(ctx), str(linter), ctx.data.file], cwd=ctx.data.repo, timeout=300)
    found = read_messages(res.text, ctx.data.rel)
    if res.timed_out or res.too_big or (res.code != 0 and not found):
        return [Finding(check="test_linter", code="TEST_LINTER[not_run]", severity="error",
                        file=ctx.data.rel, line=0,
                        message=f"the checkout's test linter did not run: {res.problem}; "
                                "make it runnable with the test interpreter (ORCHESTRATOR_PYTHON)")]
    return found
