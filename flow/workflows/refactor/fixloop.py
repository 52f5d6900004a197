"""The refactor workflow's phases 5 and 6: verify with the lint hard gate, the mandatory full
review, and the fix rounds between them, with their disputes.

Fix prompts list each finding with an id (``L1`` lint, ``R1`` review), its file, line and
source text. The coder may fix it or dispute it (``disputed``); lint disputes go to the
checker at once (``--feed checker`` with ``decisions``), review disputes to the next review
(``dispute_decisions``). An upheld dispute waives the finding (``flow.workflows.refactor.decisions``)
and a round whose every finding was upheld is given back. Bounds: 3 lint rounds, 3 review
rounds, then a person is asked, shown every finding (carry on / abort).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents.prompts import Untrusted, render
from flow.core.outcome import Ask, Go, Task
from flow.workflows.refactor.analysis import AnalystReport
from flow.workflows.refactor.fields import field_profile
from flow.workflows.refactor.findings import summarise
from flow.workflows.refactor.gates import _escalate
from flow.workflows.refactor.linting import label_classes, with_test_linter
from flow.workflows.refactor.mechanical import cmi_files, external_files, original, sentinel_dirs
from flow.workflows.refactor.rules import load_catalogue
from flow.workflows.refactor.steps import MAX_ROUNDS, assessment, common, plan
from flow.workflows.refactor.testenv import _has_torch, _note, collect_job as _collect_job, collected as _collected
from flow.workflows.refactor.testenv import original_collected as _original_collected


# -- phase 5: verify (+ the lint hard gate) --------------------------------------------------

def _verify_report(ctx: Any) -> Any:
    from flow.workflows.refactor.sentinels import list_sentinels
    from flow.workflows.refactor.verify import VerifyInput, verify as run_verify

    report = plan(ctx)
    label_classes(ctx, report)
    inp = VerifyInput(
        path=ctx.data.rel, before=original(ctx).read_text(encoding="utf-8"),
        after=Path(ctx.data.file).read_text(encoding="utf-8"), plan=report,
        checks=field_profile(ctx.data.field).checks,
        keep_decorators=tuple(load_catalogue().keep_decorators),
        decorate_info_files={str(p): p.read_text(encoding="utf-8") for p in cmi_files(ctx)},
        external_files=external_files(ctx, report),
        sentinel_names={d.name: list_sentinels(d) for d in sentinel_dirs(ctx)},
        before_assessment=assessment(ctx))
    result = run_verify(inp)
    if "lint" in inp.checks:
        result = with_test_linter(ctx, inp.before, inp.after, result)
    # Waivers first: collect_only runs once the other checks pass, and a finding the checker
    # judged a false positive must not keep it from running (it would stay `skipped`).
    result = _apply_waivers(ctx, result, inp.after)
    if "test_count" in inp.checks:
        waived = list(result.waived)
        result = _apply_waivers(ctx, _with_collect(ctx, report, result), inp.after)
        result = result.model_copy(update={"waived": [*waived, *result.waived]})
    return result


def _apply_waivers(ctx: Any, result: Any, after: str) -> Any:
    """Move findings judged false positives to ``waived`` and recount the checks they were in."""
    from flow.workflows.refactor.decisions import unwaived

    if not ctx.data.waivers:
        return result
    kept = unwaived(result.findings, after, ctx.data.waivers)
    waived = [f for f in result.findings if f not in kept]
    checks = [summarise(c.name, [f for f in kept if f.check == c.name]) if c.skipped is None else c
              for c in result.checks]
    return result.model_copy(update={"findings": kept, "waived": waived, "checks": checks})


def _with_collect(ctx: Any, report: AnalystReport, result: Any) -> Any:
    """Add the ``collect_only`` check: run, or shown ``skipped`` with the reason (never a pass)."""
    from flow.workflows.refactor.findings import CheckResult

    why = None
    if not result.passed:
        why = "not run while other checks report errors (it runs once they pass)"
    elif not _has_torch(ctx):
        why = f"the test interpreter {ctx.data.test_python} has no torch"
    if why is not None:
        check = CheckResult(name="collect_only", passed=True, errors=0, warnings=0, skipped=why)
        return result.model_copy(update={"checks": [*result.checks, check]})
    found = _collect_findings(ctx, report)
    return result.model_copy(update={"findings": [*result.findings, *found],
                                     "checks": [*result.checks, summarise("collect_only", found)]})


def _collect_findings(ctx: Any, report: AnalystReport) -> list[Any]:
    """The real ``pytest --collect-only`` count check, the refactored file collected in place."""
    import hashlib

    from flow.workflows.refactor.collect import compare_collected
    from flow.workflows.refactor.errors import CollectError
    from flow.workflows.refactor.findings import Finding

    file = Path(ctx.data.file)
    key = f"collect-{hashlib.sha256(file.read_bytes()).hexdigest()[:16]}"
    try:
        ctx.start_job(**_collect_job(ctx, key, file))  # side by side with the original's
        before = _original_collected(ctx)
        after = _collected(ctx, key, file)
    except CollectError as exc:
        return [Finding(check="collect_only", code="V204", severity="error", file=ctx.data.rel,
                        line=0, message=str(exc))]
    return compare_collected(before, after, assessment(ctx), report, ctx.data.rel)


DISPUTE_HELP = ("If a finding is a false positive, do not change the code for it: answer it in "
                "\"disputed\": [{\"finding\": \"<id>\", \"reason\": \"...\"}] (the checker decides; "
                "an upheld dispute costs no round).")


def _fix(ctx: Any, prefix: str, source: str, round_no: int, shown: list[Any]) -> Ask:
    ctx.data.fix_seq += 1
    key = f"{prefix}-{ctx.data.fix_seq}"
    ctx.data.shown = shown
    listing = "\n".join(s.render() for s in shown)
    prompt = render("refactor_coder_fix", round=round_no, max_rounds=MAX_ROUNDS, source=source,
                    findings=Untrusted(listing, source), dispute_help=DISPUTE_HELP, **common(ctx))
    ctx.data.fix_key = key
    return Ask([Task(key=key, role="coder", feed="coder", prompt=prompt, follow_up=True)],
               extra={"rule_sub_phase": source, "retry_count": round_no})


def _ask_dispute(ctx: Any) -> Ask:
    by_id = {s.id: s for s in ctx.data.shown}
    listing = "\n".join(f"{by_id[d.finding].render()}\n      coder's reason: {d.reason}"
                        for d in ctx.data.disputes)
    prompt = render("refactor_checker_dispute", findings=Untrusted(listing, "disputed findings"),
                    **common(ctx))
    return Ask([Task(key=str(ctx.data.dispute_key), role="checker", feed="checker_dispute",
                     prompt=prompt, follow_up=True)],
               extra={"rule_sub_phase": "dispute", "retry_count": ctx.data.dispute_rounds})


def _take_disputes(ctx: Any, disputed: list[Any]) -> list[Any]:
    """The coder's disputes that name a listed finding (first one per id); the rest noted."""
    from flow.workflows.refactor.decisions import check_disputes

    for problem in check_disputes(disputed, ctx.data.shown):
        _note(ctx, f"ignored: {problem}")
    ids = {s.id for s in ctx.data.shown}
    return list({d.finding: d for d in reversed(disputed) if d.finding in ids}.values())[::-1]


def _settle(ctx: Any, decisions: list[Any], counter: str) -> None:
    """Apply the checker's decisions; give the round back when every finding was upheld."""
    from flow.workflows.refactor.decisions import decide, round_given_back

    waivers, notes = decide(ctx.data.disputes, decisions, ctx.data.shown)
    ctx.data.waivers += waivers
    for n in notes:
        _note(ctx, n)
    for w in waivers:
        _note(ctx, f"{w.finding} waived as a false positive by the {w.decided_by}: {w.reason}")
    if round_given_back(ctx.data.shown, ctx.data.waivers) and getattr(ctx.data, counter) > 0:
        setattr(ctx.data, counter, getattr(ctx.data, counter) - 1)
        ctx.data.retries[counter.split("_")[0]] = getattr(ctx.data, counter)
    ctx.data.disputes, ctx.data.dispute_key, ctx.data.shown = [], None, []


def _question(head: str, shown: list[Any], ctx: Any) -> str:
    """A person's question with the facts to decide: every finding's file, line, text, disputes."""
    listing = "\n".join(f"- {s.render()}" for s in shown)
    disputes = [n for n in ctx.data.notes if n.startswith("dispute of ")]
    extra = ("\nDisputes decided so far:\n" + "\n".join(f"- {n}" for n in disputes)) if disputes else ""
    return f"{head}\n{listing}{extra}\nCarry on only if these are false positives or acceptable."


def verify(ctx: Any) -> Any:
    from flow.workflows.refactor.decisions import show

    if ctx.data.dispute_key is not None and ctx.data.fix_key is None:
        decided = ctx.result(ctx.data.dispute_key)
        if decided is None:
            return _ask_dispute(ctx)
        _settle(ctx, decided.decisions, "lint_rounds")
        return Go("reverify")
    if ctx.data.fix_key and ctx.data.fix_key.startswith("lint-") and ctx.result(ctx.data.fix_key) is not None:
        disputed = _take_disputes(ctx, ctx.result(ctx.data.fix_key).disputed)
        ctx.data.fix_key = None
        if disputed:
            ctx.data.disputes = disputed
            ctx.data.dispute_rounds += 1
            ctx.data.dispute_key = f"lint-dispute-{ctx.data.dispute_rounds}"
            return _ask_dispute(ctx)
        return Go("reverify")
    result = _verify_report(ctx)
    ctx.write_json("verification.json", result.model_dump(mode="json"))
    ctx.data.checks = result.checks
    lint_errors = result.lint_errors() if "lint" in field_profile(ctx.data.field).checks else []
    if lint_errors:
        shown = show(lint_errors, Path(ctx.data.file).read_text(encoding="utf-8"), "L")
        if ctx.data.lint_rounds >= MAX_ROUNDS:
            head = f"{len(lint_errors)} lint errors remain after {MAX_ROUNDS} fix rounds:"
            stop = _escalate(ctx, f"lint-gate-{ctx.data.lint_rounds}", _question(head, shown, ctx))
            if stop is not None:
                return stop
        else:
            ctx.data.lint_rounds += 1
            ctx.data.retries["lint"] = ctx.data.lint_rounds
            return _fix(ctx, "lint-fix", "lint", ctx.data.lint_rounds, shown)
    return Go("verified")


# -- phase 6: mandatory full review ----------------------------------------------------------

def _review_shown(ctx: Any, findings: list[Any]) -> list[Any]:
    """The checker's findings as ``R1..Rn`` with their source lines (no line: the whole file)."""
    from flow.workflows.refactor.decisions import show
    from flow.workflows.refactor.findings import Finding

    as_findings = [Finding(check="review", code=f"{f.severity}/{f.category or 'review'}", severity="error",
                           file=ctx.data.rel, line=f.line_number or 0, message=f.description) for f in findings]
    return show(as_findings, Path(ctx.data.file).read_text(encoding="utf-8"), "R")


def _verification_shown(ctx: Any) -> list[Any]:
    from flow.workflows.refactor.decisions import show
    from flow.workflows.refactor.findings import Finding

    findings = [Finding.model_validate(f) for f in ctx.read_json("verification.json")["findings"]]
    return show(findings, Path(ctx.data.file).read_text(encoding="utf-8"), "V")


def review(ctx: Any) -> Any:
    from flow.workflows.refactor.decisions import decide

    if ctx.data.fix_key and ctx.data.fix_key.startswith("review-") and ctx.result(ctx.data.fix_key) is not None:
        ctx.data.disputes = _take_disputes(ctx, ctx.result(ctx.data.fix_key).disputed)
        # Kept apart: a lint fix round in the re-verify would replace ``shown``.
        ctx.data.review_shown = list(ctx.data.shown) if ctx.data.disputes else []
        ctx.data.fix_key = None
        return Go("refix")
    key = f"review-{ctx.data.review_seq}"
    res = ctx.result(key)
    if res is None:
        verification = _verification_shown(ctx)
        listing = "\n".join(s.render() for s in verification) or "no findings"
        if ctx.data.disputes and ctx.data.review_shown:
            by_id = {s.id: s for s in ctx.data.review_shown}
            listing += ("\n\nThe coder disputes these findings of your last review; decide each in "
                        "dispute_decisions (upheld: drop it; not upheld: list it again):\n")
            listing += "\n".join(f"{by_id[d.finding].render()}\n      coder's reason: {d.reason}"
                                  for d in ctx.data.disputes)
        prompt = render("refactor_review", field=ctx.data.field,
                        verification_path=str(ctx.path("verification.json")),
                        verification=Untrusted(listing, "verification findings"), **common(ctx))
        return Ask([Task(key=key, role="checker", feed="checker_review", prompt=prompt,
                         follow_up=ctx.data.review_seq > 0)],
                   extra={"rule_sub_phase": "review", "retry_count": ctx.data.review_rounds})
    ctx.write_json("review_findings.json", res.model_dump(mode="json"))
    if ctx.data.disputes and ctx.data.review_shown:
        ctx.data.shown = ctx.data.review_shown
        _settle(ctx, res.dispute_decisions, "review_rounds")
        ctx.data.review_shown = []
    if res.disputed:  # the checker judges verification findings: it is their judge, so they go
        shown = _verification_shown(ctx)
        ids = {s.id for s in shown}
        from flow.workflows.refactor.decisions import Dispute, DisputeDecision

        mine = [d for d in res.disputed if d.finding in ids]
        waivers, _ = decide([Dispute(finding=d.finding, reason=d.reason) for d in mine],
                            [DisputeDecision(finding=d.finding, upheld=True) for d in mine], shown)
        ctx.data.waivers += [w for w in waivers if w not in ctx.data.waivers]
        for w in waivers:
            _note(ctx, f"{w.finding} waived as a false positive by the checker: {w.reason}")
    if res.all_clear:
        return Go("reviewed")
    shown = _review_shown(ctx, res.findings)
    if ctx.data.review_rounds >= MAX_ROUNDS:
        head = (f"The checker still reports findings after {MAX_ROUNDS} review rounds "
                f"(summary: {res.summary!r}):")
        stop = _escalate(ctx, f"review-gate-{ctx.data.review_rounds}", _question(head, shown, ctx))
        return stop if stop is not None else Go("reviewed")
    ctx.data.review_rounds += 1
    ctx.data.review_seq += 1  # the next review is a new task (a re-run of this step is not)
    ctx.data.retries["review"] = ctx.data.review_rounds
    if not shown:
        from flow.workflows.refactor.decisions import ShownFinding

        text = res.summary or "the checker reported not all clear"
        shown = [ShownFinding(id="R1", code="review", file=ctx.data.rel, line=0, text="", message=text,
                              key=f"review|{ctx.data.rel}|{text}")]
    return _fix(ctx, "review-fix", "review", ctx.data.review_rounds, shown)
