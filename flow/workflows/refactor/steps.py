"""The refactor workflow's steps for phases 1-4 (assess, analyze, distribute, code + check):
thin IO around the pure core. Phases 5-7 (the gates and the summary) are in ``gates``.

Loop counters live in ``ctx.data`` (a new visit of a state resets the engine's attempts).
Bounds: a bad analyst report is asked again up to the task's 3 attempts (then the engine
asks a person); 3 checker-driven fixes per rule (then a person: retry / skip / abort).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agents.prompts import Untrusted, fence, render
from flow.core.errors import WorkflowInputError
from flow.core.outcome import Ask, Go, Human, Task
from flow.workflows.refactor.analysis import AnalystReport, check_report
from flow.workflows.refactor.assess import Assessment, assess_source
from flow.workflows.refactor.distribute import CoderTask, distribute as plan_tasks
from flow.workflows.refactor.feedmodels import load_assessment, load_report
from flow.workflows.refactor.fields import field_profile
from flow.workflows.refactor.mechanical import apply_mechanical, original
from flow.workflows.refactor.rules import load_catalogue
from flow.workflows.refactor.summary import AppliedRule

MAX_ROUNDS = 3


# -- helpers -------------------------------------------------------------------------------

def plan(ctx: Any) -> AnalystReport:
    """The accepted analyst report (``analyst_report.json``)."""
    return load_report(ctx.path("analyst_report.json").read_bytes())


def assessment(ctx: Any) -> Assessment:
    """Phase 1's ``assessment.json``."""
    return load_assessment(ctx.path("assessment.json").read_bytes())


def common(ctx: Any) -> dict[str, str]:
    """The prompt values every coder/checker template takes."""
    return {"file": ctx.data.file, "original_path": str(original(ctx)),
            "report_path": str(ctx.path("analyst_report.json"))}


# -- phase 1: assess -------------------------------------------------------------------------

def assess(ctx: Any) -> Any:
    kept = original(ctx)
    if not kept.exists():  # a re-run must never take an edited file for the original
        try:
            source = Path(ctx.data.file).read_text(encoding="utf-8")
        except OSError as exc:
            raise WorkflowInputError(
                f"cannot read the test file {ctx.data.file!r}: {exc.strerror or exc}",
                "restore the file (or check out the branch again), then run --resume") from None
        ctx.write_text(f"original/{kept.name}", source, copy=True)
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
    """``text`` fenced as data, for a prompt value that mixes our words with agent output."""
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
    from flow.workflows.refactor.lint import plan_problems

    before = assessment(ctx)
    problems = check_report(report, before)
    if not field_profile(ctx.data.field).safe_baseline:
        problems += plan_problems(report, before)  # L012 is the plan's to resolve, not the coder's
    return problems, False


def _original_does_not_import(ctx: Any) -> Any:
    """None when the original collects (or this field has no local test gate, or the test
    interpreter has no torch); else the person's stop: an original that does not import can
    be neither planned nor verified, so the flow asks before any agent works on it, and it
    never ends ``refactored`` while that stays so (retry, or abort: outcome ``aborted``)."""
    from flow.workflows.refactor.errors import CollectError
    from flow.workflows.refactor.testenv import _has_torch, original_collected

    if not field_profile(ctx.data.field).local_test_gate or not _has_torch(ctx):
        return None
    while True:
        n = ctx.data.original_checks
        try:
            original_collected(ctx, n)
            return None
        except CollectError as exc:
            if not exc.detail.startswith("exited "):
                # pytest never ran (no such interpreter, a timeout): that says nothing about the
                # file; verify's collect_only reports it (V204) where it judges the change
                return None
            key = f"original-import-{n}"
            answer = ctx.answer(key)
            if answer is None:
                question = (f"The original {ctx.data.rel} does not import with the test interpreter "
                            f"{ctx.data.test_python} ({ctx.data.test_torch_info}): pytest --collect-only "
                            "failed before any change, so the refactor cannot be planned or checked.\n"
                            + render_untrusted(exc.detail, "collect output")
                            + "\nMend the environment (the torch the file needs) or the file, then retry.")
                return Human(key, question, {"retry": "collect the original again",
                                             "abort": "end the flow now (outcome 'aborted')"})
            if answer == "abort":
                return Go("abort")
            ctx.data.original_checks += 1


def analyze(ctx: Any) -> Any:
    fed = ctx.result("analyst")
    if fed is None:
        stop = _original_does_not_import(ctx)
        if stop is not None:
            return stop
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
    report, before = plan(ctx), assessment(ctx)
    profile = field_profile(ctx.data.field)
    tasks = plan_tasks(report, before, load_catalogue(), safe_baseline=profile.safe_baseline)
    ctx.write_json("coder_tasks.json", [t.model_dump(mode="json") for t in tasks])
    ctx.data.applied = apply_mechanical(ctx, [t for t in tasks if t.mechanical], report, before)
    ctx.data.agent_rules = [t.rule_id for t in tasks if not t.mechanical]
    ctx.write_text("rule_base/0.py", Path(ctx.data.file).read_text(encoding="utf-8"), copy=True)
    return Go("distributed")


# -- phase 4: code + check per rule ---------------------------------------------------------

def ranges_text(task: CoderTask, before: Assessment) -> str:
    """``TestFoo 12-80, TestFooDevice (new class)``: every class the task touches."""
    infos = {c.name: c for c in before.classes}
    return ", ".join(f"{n} {infos[n].start}-{infos[n].end}" if n in infos else f"{n} (new class)"
                     for n in task.classes) or "(none)"


def _coder_task(ctx: Any, task: CoderTask, key: str, feedback: str) -> Task:
    mech = ", ".join(f"{a.rule_id} ({a.changes} edits)" for a in ctx.data.applied if a.by == "codemod") or "none"
    prompt = render("refactor_coder", rule_id=task.rule_id, rule_index=ctx.data.rule_index + 1,
                    rule_count=len(ctx.data.agent_rules), title=task.title,
                    instructions=task.instructions, tests=", ".join(task.tests) or "(whole file)",
                    classes=", ".join(task.classes), line_ranges=ranges_text(task, assessment(ctx)),
                    notes="\n".join(task.notes), mechanical=mech, feedback=feedback,
                    **common(ctx))
    # One coder iterates over the rules: after the first rule it is a follow-up.
    return Task(key=key, role="coder", feed="coder", prompt=prompt,
                follow_up=ctx.data.rule_index > 0 or ctx.data.rule_fixes > 0,
                extra={"rule_id": task.rule_id})


def _changed_since_last_rule(ctx: Any) -> int:
    """Lines added or removed in the file since the last accepted rule (or since distribute):
    the summary lists a coder's rule as applied only where it changed lines. Rule ``i`` counts
    from ``rule_base/<i>.py`` (the file when rule ``i - 1`` was accepted, or after distribute)
    and writes ``rule_base/<i + 1>.py`` once, so a step run again after a crash counts the same."""
    import difflib

    i = ctx.data.rule_index
    base_path = ctx.path(f"rule_base/{i}.py")
    now = Path(ctx.data.file).read_text(encoding="utf-8")
    base = base_path.read_text(encoding="utf-8") if base_path.exists() else original(ctx).read_text(encoding="utf-8")
    changed = sum(1 for line in difflib.unified_diff(base.splitlines(), now.splitlines(), lineterm="", n=0)
                  if line[:1] in "+-" and not line.startswith(("+++", "---")))
    if not ctx.path(f"rule_base/{i + 1}.py").exists():
        ctx.write_text(f"rule_base/{i + 1}.py", now, copy=True)
    return changed


def code(ctx: Any) -> Any:
    by_id = {t["rule_id"]: CoderTask.model_validate(t) for t in ctx.read_json("coder_tasks.json")}
    while ctx.data.rule_index < len(ctx.data.agent_rules):
        rid = ctx.data.agent_rules[ctx.data.rule_index]
        task, n = by_id[rid], ctx.data.rule_fixes
        extra = {"rule_index": ctx.data.rule_index, "retry_count": n}
        ckey, kkey = f"coder-{rid}-r{n}", f"checker-{rid}-r{n}"
        coder = ctx.result(ckey)
        # A reply that only disputes the checker's issues is an answer for the checker to
        # judge, not a failed attempt to redo.
        if coder is None or (not coder.success and not coder.disputed):
            feedback = ""
            if n:
                feedback = "The checker found this rule not applied correctly; re-check it and fix it."
                prior = ctx.result(f"checker-{rid}-r{n - 1}")
                if prior is not None and prior.issues:
                    issues = "\n".join(f"[I{i}] {text}" for i, text in enumerate(prior.issues, 1))
                    feedback += ("\nThe checker reported:\n" + render_untrusted(issues, "checker issues")
                                 + "\nAn issue you judge wrong: answer it in \"disputed\": "
                                 "[{\"finding\": \"I1\", \"reason\": \"...\"}] instead of changing the code.")
            if coder is not None:
                feedback += "\nYour last attempt reported errors:\n" + render_untrusted("\n".join(coder.errors), "coder errors")
            return Ask([_coder_task(ctx, task, ckey, feedback)],
                       extra={"rule_sub_phase": "coder", **extra})
        checker = ctx.result(kkey)
        if checker is None:
            instructions = task.instructions
            if coder.disputed:
                listing = "\n".join(f"{d.finding}: {d.reason}" for d in coder.disputed)
                instructions += ("\n\nThe coder disputes these issues of your last check (reply passed "
                                 "true if you agree they are not problems):\n"
                                 + render_untrusted(listing, "coder disputes"))
            prompt = render("refactor_checker_rule", rule_id=rid, title=task.title,
                            instructions=instructions, tests=", ".join(task.tests) or "(whole file)",
                            **common(ctx))
            return Ask([Task(key=kkey, role="checker", feed="checker_rule", prompt=prompt,
                             follow_up=ctx.data.rule_index > 0 or n > 0)],
                       extra={"rule_sub_phase": "checker", **extra})
        if not checker.passed:
            if n >= ctx.data.rule_fix_limit:
                answer = ctx.answer(f"rule-{rid}-{n}")
                if answer is None:
                    facts = "\n".join(f"- {i}" for i in checker.issues) or "- (the checker listed no issue)"
                    disputes = "\n".join(f"- disputed {d.finding}: {d.reason}" for d in coder.disputed)
                    question = (f"Rule {rid} ({task.title}) still fails the checker after {n} fixes on "
                                f"{ctx.data.rel}. The checker's issues:\n{facts}"
                                + (f"\nThe coder's disputes:\n{disputes}" if disputes else ""))
                    return Human(f"rule-{rid}-{n}", question,
                                 {"retry": f"{MAX_ROUNDS} more fixes", "skip": "leave it and go on",
                                  "abort": "end the flow now (outcome 'aborted')"})
                if answer == "abort":
                    return Go("abort")
                if answer == "retry":
                    ctx.data.rule_fix_limit += MAX_ROUNDS
                    ctx.data.rule_fixes += 1
                    ctx.data.retries[rid] = ctx.data.retries.get(rid, 0) + 1
                    continue
                if f"rule-{rid}-{n}" not in ctx.data.decided_by_person:
                    ctx.data.notes.append(f"{rid}: left failing the checker by a person's decision")
                    ctx.data.decided_by_person.append(f"rule-{rid}-{n}")
            else:
                ctx.data.rule_fixes += 1
                ctx.data.retries[rid] = ctx.data.retries.get(rid, 0) + 1
                continue
        ctx.data.tests_moved += coder.tests_moved
        ctx.data.applied.append(AppliedRule(rule_id=rid, title=task.title, by="coder",
                                            changed_lines=_changed_since_last_rule(ctx)))
        ctx.data.rule_index += 1
        ctx.data.rule_fixes, ctx.data.rule_fix_limit = 0, MAX_ROUNDS
    return Go("coded")
