"""The refactor workflow's steps: thin IO around the pure core (assess, analysis, distribute,
codemods, sentinels, verify, collect, junit, summary).

Loop counters live in ``ctx.data`` (a new visit of a state resets the engine's attempts).
Bounds: a bad analyst report is asked again up to the task's 3 attempts (then the engine
asks a person); 3 checker-driven fixes per rule, 3 lint rounds, 3 review rounds (then a
person: carry on / abort); 3 local-test rounds, then a soft fail keeping the deferred list.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agents.prompts import Untrusted, render
from flow.outcome import Ask, Go, Human, Task
from flow.refactor.analysis import AnalystReport, check_report, moves
from flow.refactor.assess import Assessment, assess_source
from flow.refactor.distribute import CoderTask, distribute as plan_tasks
from flow.refactor.mechanical import apply_mechanical, cmi_files, external_files, original, sentinel_dirs
from flow.refactor.feedmodels import load_assessment, load_report
from flow.refactor.fields import field_profile
from flow.refactor.rules import load_catalogue
from flow.refactor.summary import AppliedRule, DeferredFailure, SummaryInput, moved_tests, render_summary

MAX_ROUNDS = 3


# -- helpers -------------------------------------------------------------------------------

def _report(ctx: Any) -> AnalystReport:
    return load_report(ctx.path("analyst_report.json").read_bytes())


def _assessment(ctx: Any) -> Assessment:
    return load_assessment(ctx.path("assessment.json").read_bytes())


def _python(ctx: Any) -> str:
    return str(ctx.settings.get("ORCHESTRATOR_PYTHON") or sys.executable)


def _common(ctx: Any) -> dict[str, str]:
    return {"file": ctx.data.file, "original_path": str(original(ctx)),
            "report_path": str(ctx.path("analyst_report.json"))}


def _escalate(ctx: Any, key: str, question: str) -> Any:
    answer = ctx.answer(key)
    if answer is None:
        return Human(key, question, {"continue": "carry on to the next phase as it is",
                                     "abort": "end the flow now (outcome 'aborted')"})
    if answer == "abort":
        return Go("abort")
    ctx.data.notes.append(f"{key}: carried on by a person's decision")
    return None


# -- phase 1: assess -------------------------------------------------------------------------

def assess(ctx: Any) -> Any:
    kept = original(ctx)
    if not kept.exists():  # a re-run must never take an edited file for the original
        ctx.write_text(f"original/{kept.name}", Path(ctx.data.file).read_text(encoding="utf-8"))
    text = kept.read_text(encoding="utf-8")
    ctx.write_json("assessment.json", assess_source(text, ctx.data.rel).model_dump(mode="json"))
    return Go("assessed")


# -- phase 2: analyze ------------------------------------------------------------------------

def _ask_analyst(ctx: Any, problems: list[str], fresh: bool) -> Ask:
    extra = ""
    if problems:
        listing = "\n".join(f"- {p}" for p in problems)
        extra = ("\nYour previous report was rejected; mend every problem below and write the "
                 "whole report again:\n\n" + render_untrusted(listing, "problems"))
    prompt = render("refactor_analyst", file=ctx.data.file, field=ctx.data.field,
                    file_name=ctx.data.rel, assessment_path=str(ctx.path("assessment.json")),
                    report_path=str(ctx.path("analyst_report.json")), problems=extra)
    return Ask([Task(key="analyst", role="analyst", feed="analyst", prompt=prompt,
                     follow_up=not fresh, extra={"report_path": str(ctx.path("analyst_report.json"))})],
               extra={"rule_sub_phase": "analyst"})


def render_untrusted(text: str, label: str) -> str:
    from agents.prompts import fence

    return fence(Untrusted(text, label))


def _report_problems(ctx: Any) -> tuple[list[str], bool]:
    """(problems, whether the report file was missing)."""
    path = ctx.path("analyst_report.json")
    if not path.exists():
        return [f"no analyst_report.json was written to {path}"], True
    try:
        report = load_report(path.read_bytes())
    except (ValidationError, ValueError) as exc:
        return [f"analyst_report.json does not match the report schema: {exc}"], False
    return check_report(report, _assessment(ctx)), False


def analyze(ctx: Any) -> Any:
    fed = ctx.result("analyst")
    if fed is None:
        return _ask_analyst(ctx, [], fresh=True)
    problems, missing = _report_problems(ctx)
    if not problems:
        ctx.data.analyst_problems = []
        return Go("analyzed")
    # Keep the rejected report aside so the next attempt's report is never confused with it.
    ctx.data.analyst_rejected += 1
    path = ctx.path("analyst_report.json")
    if path.exists():
        path.replace(ctx.path(f"analyst_report.rejected-{ctx.data.analyst_rejected}.json"))
    ctx.data.analyst_problems = problems
    ctx.data.retries["analyze"] = ctx.data.retries.get("analyze", 0) + 1
    # `{}` (no agent identity) or no report: the analyst failed; a fresh one gets the reason.
    fresh = missing or fed.agent_id is None
    return _ask_analyst(ctx, problems, fresh=fresh)


# -- phase 3: distribute (+ the mechanical rules) --------------------------------------------

def distribute(ctx: Any) -> Any:
    report, before = _report(ctx), _assessment(ctx)
    profile = field_profile(ctx.data.field)
    tasks = plan_tasks(report, before, load_catalogue(), safe_baseline=profile.safe_baseline)
    ctx.write_json("coder_tasks.json", [t.model_dump(mode="json") for t in tasks])
    ctx.data.applied = apply_mechanical(ctx, [t for t in tasks if t.mechanical], report, before)
    ctx.data.agent_rules = [t.rule_id for t in tasks if not t.mechanical]
    return Go("distributed")


# -- phase 4: code + check per rule ---------------------------------------------------------

def _coder_task(ctx: Any, task: CoderTask, key: str, feedback: str) -> Task:
    mech = ", ".join(f"{a.rule_id} ({a.changes} edits)" for a in ctx.data.applied) or "none"
    prompt = render("refactor_coder", rule_id=task.rule_id, rule_index=ctx.data.rule_index + 1,
                    rule_count=len(ctx.data.agent_rules), title=task.title,
                    instructions=task.instructions, tests=", ".join(task.tests) or "(whole file)",
                    classes=", ".join(task.classes), line_ranges=str(task.line_ranges),
                    notes="\n".join(task.notes), mechanical=mech, feedback=feedback,
                    **_common(ctx))
    # One coder iterates over the rules: after the first rule it is a follow-up.
    return Task(key=key, role="coder", feed="coder", prompt=prompt,
                follow_up=ctx.data.rule_index > 0 or ctx.data.rule_fixes > 0,
                extra={"rule_id": task.rule_id})


def code(ctx: Any) -> Any:
    by_id = {t["rule_id"]: CoderTask.model_validate(t) for t in ctx.read_json("coder_tasks.json")}
    while ctx.data.rule_index < len(ctx.data.agent_rules):
        rid = ctx.data.agent_rules[ctx.data.rule_index]
        task, n = by_id[rid], ctx.data.rule_fixes
        extra = {"rule_index": ctx.data.rule_index, "retry_count": n}
        ckey, kkey = f"coder-{rid}-r{n}", f"checker-{rid}-r{n}"
        coder = ctx.result(ckey)
        if coder is None or not coder.success:
            feedback = ""
            if n:
                feedback = "The checker found this rule not applied correctly; re-check it and fix it."
                prior = ctx.result(f"checker-{rid}-r{n - 1}")
                if prior is not None and prior.issues:
                    feedback += "\nThe checker reported:\n" + render_untrusted("\n".join(prior.issues), "checker issues")
            if coder is not None:
                feedback += "\nYour last attempt reported errors:\n" + render_untrusted("\n".join(coder.errors), "coder errors")
            return Ask([_coder_task(ctx, task, ckey, feedback)],
                       extra={"rule_sub_phase": "coder", **extra})
        checker = ctx.result(kkey)
        if checker is None:
            prompt = render("refactor_checker_rule", rule_id=rid, title=task.title,
                            instructions=task.instructions, tests=", ".join(task.tests) or "(whole file)",
                            **_common(ctx))
            return Ask([Task(key=kkey, role="checker", feed="checker_rule", prompt=prompt,
                             follow_up=ctx.data.rule_index > 0 or n > 0)],
                       extra={"rule_sub_phase": "checker", **extra})
        if not checker.passed:
            if n >= ctx.data.rule_fix_limit:
                answer = ctx.answer(f"rule-{rid}-{n}")
                if answer is None:
                    return Human(f"rule-{rid}-{n}", f"Rule {rid} still fails the checker after {n} fixes.",
                                 {"retry": f"{MAX_ROUNDS} more fixes", "skip": "leave it and go on",
                                  "abort": "end the flow now (outcome 'aborted')"})
                if answer == "abort":
                    return Go("abort")
                if answer == "retry":
                    ctx.data.rule_fix_limit += MAX_ROUNDS
                    ctx.data.rule_fixes += 1
                    ctx.data.retries[rid] = ctx.data.retries.get(rid, 0) + 1
                    continue
                ctx.data.notes.append(f"{rid}: left failing the checker by a person's decision")
            else:
                ctx.data.rule_fixes += 1
                ctx.data.retries[rid] = ctx.data.retries.get(rid, 0) + 1
                continue
        ctx.data.tests_moved += coder.tests_moved
        ctx.data.applied.append(AppliedRule(rule_id=rid, title=task.title, by="coder"))
        ctx.data.rule_index += 1
        ctx.data.rule_fixes, ctx.data.rule_fix_limit = 0, MAX_ROUNDS
    return Go("coded")


# -- phase 5: verify (+ the lint hard gate) --------------------------------------------------

def _verify_report(ctx: Any) -> Any:
    from flow.refactor.sentinels import list_sentinels
    from flow.refactor.verify import VerifyInput, verify as run_verify

    report = _report(ctx)
    inp = VerifyInput(
        path=ctx.data.rel, before=original(ctx).read_text(encoding="utf-8"),
        after=Path(ctx.data.file).read_text(encoding="utf-8"), plan=report,
        checks=field_profile(ctx.data.field).checks,
        keep_decorators=tuple(load_catalogue().keep_decorators),
        decorate_info_files={str(p): p.read_text(encoding="utf-8") for p in cmi_files(ctx)},
        external_files=external_files(ctx, report),
        sentinel_names={d.name: list_sentinels(d) for d in sentinel_dirs(ctx)},
        before_assessment=_assessment(ctx))
    result = run_verify(inp)
    if result.passed and importlib.util.find_spec("torch") is not None and "test_count" in inp.checks:
        result.findings += _collect_findings(ctx, report)
    return result


def _collect_findings(ctx: Any, report: AnalystReport) -> list[Any]:
    """The real ``pytest --collect-only`` count check (only where torch is importable)."""
    from flow.refactor.collect import collect_tests, compare_collected
    from flow.refactor.errors import CollectError
    from flow.refactor.findings import Finding

    file = Path(ctx.data.file)
    try:
        before = collect_tests(original(ctx), original(ctx).parent, python=_python(ctx))
        after = collect_tests(file, file.parent, python=_python(ctx))
    except CollectError as exc:
        return [Finding(check="test_count", code="V204", severity="error", file=ctx.data.rel,
                        line=0, message=str(exc))]
    return compare_collected(before, after, _assessment(ctx), report, ctx.data.rel)


def _fix(ctx: Any, key: str, source: str, round_no: int, findings: str) -> Ask:
    prompt = render("refactor_coder_fix", round=round_no, max_rounds=MAX_ROUNDS, source=source,
                    findings=render_untrusted(findings, source), **_common(ctx))
    ctx.data.fix_key = key
    return Ask([Task(key=key, role="coder", feed="coder", prompt=prompt, follow_up=True)],
               extra={"rule_sub_phase": source, "retry_count": round_no})


def verify(ctx: Any) -> Any:
    if ctx.data.fix_key and ctx.data.fix_key.startswith("lint-") and ctx.result(ctx.data.fix_key) is not None:
        ctx.data.fix_key = None
        return Go("reverify")
    result = _verify_report(ctx)
    ctx.write_json("verification.json", result.model_dump(mode="json"))
    ctx.data.checks = result.checks
    lint_errors = result.lint_errors() if "lint" in field_profile(ctx.data.field).checks else []
    if lint_errors:
        if ctx.data.lint_rounds >= MAX_ROUNDS:
            stop = _escalate(ctx, f"lint-gate-{ctx.data.lint_rounds}",
                             f"{len(lint_errors)} lint errors remain after {MAX_ROUNDS} fix rounds.")
            if stop is not None:
                return stop
        else:
            ctx.data.lint_rounds += 1
            ctx.data.retries["lint"] = ctx.data.lint_rounds
            listing = "\n".join(f"{f.file}:{f.line} [{f.code}] {f.message}" for f in lint_errors)
            return _fix(ctx, f"lint-fix-{ctx.data.lint_rounds}", "lint", ctx.data.lint_rounds, listing)
    return Go("verified")


# -- phase 6: mandatory full review ----------------------------------------------------------

def review(ctx: Any) -> Any:
    if ctx.data.fix_key and ctx.data.fix_key.startswith("review-") and ctx.result(ctx.data.fix_key) is not None:
        ctx.data.fix_key = None
        return Go("refix")
    key = f"review-{ctx.data.review_rounds}"
    res = ctx.result(key)
    if res is None:
        findings = ctx.read_json("verification.json")["findings"]
        listing = "\n".join(f"{f['file']}:{f['line']} [{f['severity']}] {f['message']}" for f in findings) or "no findings"
        prompt = render("refactor_review", field=ctx.data.field,
                        verification_path=str(ctx.path("verification.json")),
                        verification=render_untrusted(listing, "verification findings"), **_common(ctx))
        return Ask([Task(key=key, role="checker", feed="checker_review", prompt=prompt,
                         follow_up=ctx.data.review_rounds > 0)],
                   extra={"rule_sub_phase": "review", "retry_count": ctx.data.review_rounds})
    ctx.write_json("review_findings.json", res.model_dump(mode="json"))
    if res.all_clear:
        return Go("reviewed")
    if ctx.data.review_rounds >= MAX_ROUNDS:
        stop = _escalate(ctx, f"review-gate-{ctx.data.review_rounds}",
                         f"The checker still reports findings after {MAX_ROUNDS} review rounds: {res.summary!r}")
        return stop if stop is not None else Go("reviewed")
    ctx.data.review_rounds += 1
    ctx.data.retries["review"] = ctx.data.review_rounds
    listing = "\n".join(f"line {f.line_number}: [{f.severity}/{f.category}] {f.description}"
                        for f in res.findings) or res.summary or "the checker reported not all clear"
    return _fix(ctx, f"review-fix-{ctx.data.review_rounds}", "review", ctx.data.review_rounds, listing)


# -- phase 6.5: local test gate ---------------------------------------------------------------

def test(ctx: Any) -> Any:
    if not field_profile(ctx.data.field).local_test_gate:
        ctx.data.local_tests = f"skipped: no local test gate for the {ctx.data.field} field"
        return Go("tested")
    from flow.refactor.junit import run_local_tests

    key = f"test-fix-{ctx.data.test_rounds}"
    fed = ctx.result(key) if ctx.data.test_rounds else None
    if fed is not None and ctx.data.fix_key == key:
        ctx.data.deferred += [DeferredFailure(test_name=v.test_name, reason=v.defer_reason or "deferred")
                              for v in fed.verdicts if v.verdict == "deferred"]
        ctx.data.fix_key = None
    file = Path(ctx.data.file)
    result = run_local_tests(file, file.parent, "cpu", python=_python(ctx),
                             junit_path=ctx.path("local_test_cpu.xml"))
    ctx.write_json("local_test.json", result.model_dump(mode="json"))
    counts = ", ".join(f"{n} {k}" for k, n in sorted(result.counts.items()))
    ctx.data.local_tests = f"cpu: {counts}"
    deferred = {d.test_name for d in ctx.data.deferred}
    failing = [n for n in result.FAIL + result.ERROR if n not in deferred]
    if not failing:
        return Go("tested")
    if ctx.data.test_rounds >= MAX_ROUNDS:
        # Soft fail: keep what is still failing as deferred and finish.
        ctx.data.deferred += [DeferredFailure(test_name=n, reason=f"still failing after {MAX_ROUNDS} rounds")
                              for n in failing]
        ctx.data.notes.append(f"local test gate soft-failed after {MAX_ROUNDS} rounds")
        return Go("tested")
    ctx.data.test_rounds += 1
    ctx.data.retries["test"] = ctx.data.test_rounds
    key = f"test-fix-{ctx.data.test_rounds}"
    ctx.data.fix_key = key
    prompt = render("refactor_coder_test", file=ctx.data.file, device="cpu", round=ctx.data.test_rounds,
                    max_rounds=MAX_ROUNDS, local_test_path=str(ctx.path("local_test.json")),
                    failures=render_untrusted("\n".join(failing), "failing tests"))
    return Ask([Task(key=key, role="coder", feed="coder_test", prompt=prompt, follow_up=True,
                     extra={"failures": failing})],
               extra={"rule_sub_phase": "test", "retry_count": ctx.data.test_rounds})


# -- phase 7: finalize ------------------------------------------------------------------------

def write_summary(ctx: Any) -> Path:
    report = _report(ctx)
    summary = SummaryInput(file=ctx.data.rel, field=ctx.data.field,
                           moves=moved_tests(moves(report, _assessment(ctx))), rules=ctx.data.applied,
                           checks=ctx.data.checks, retries=ctx.data.retries, deferred=ctx.data.deferred,
                           local_tests=ctx.data.local_tests, harness=ctx.harness)
    return ctx.write_text("final_summary.md", render_summary(summary))
