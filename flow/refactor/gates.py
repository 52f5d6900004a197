"""The refactor workflow's steps for phases 5-7: verify (+ the lint hard gate), the mandatory
review, the CPU local test gate, and the summary finalize writes.

Bounds: 3 lint rounds, 3 review rounds (then a person: carry on / abort); 3 local-test
rounds, then a soft fail keeping what still fails as deferred.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from agents.prompts import Untrusted, render
from flow import proc
from flow.errors import WorkflowInputError
from flow.refactor.errors import JUnitError
from flow.outcome import Ask, Go, Human, Task
from flow.refactor.analysis import AnalystReport, moves
from flow.refactor.fields import field_profile
from flow.refactor.findings import summarise
from flow.refactor.mechanical import cmi_files, external_files, original, sentinel_dirs
from flow.refactor.rules import load_catalogue
from flow.refactor.steps import MAX_ROUNDS, assessment, common, plan
from flow.refactor.summary import DeferredFailure, SummaryInput, moved_tests, render_summary


def _python(ctx: Any) -> str:
    return str(ctx.settings.get("ORCHESTRATOR_PYTHON") or sys.executable)


DEVICES_ENV = "ORCHESTRATOR_REFACTOR_DEVICES"
TEST_TIMEOUT_ENV = "ORCHESTRATOR_REFACTOR_TEST_TIMEOUT"
TEST_SHARDS_ENV = "ORCHESTRATOR_REFACTOR_TEST_SHARDS"
DEFAULT_TEST_TIMEOUT = 1800.0


def test_settings(settings: Any) -> tuple[float, int]:
    """(timeout in seconds of one local-test job, how many shards a device's run is split
    into) from ``ORCHESTRATOR_REFACTOR_TEST_TIMEOUT`` (default 1800) and
    ``ORCHESTRATOR_REFACTOR_TEST_SHARDS`` (default 1). ``WorkflowInputError`` for a bad
    value; the workflow's start calls this so a typo is refused before any agent work."""
    raw_t = (settings.get(TEST_TIMEOUT_ENV) or "").strip()
    raw_s = (settings.get(TEST_SHARDS_ENV) or "").strip()
    try:
        timeout = float(raw_t) if raw_t else DEFAULT_TEST_TIMEOUT
        shards = int(raw_s) if raw_s else 1
    except ValueError:
        timeout, shards = -1.0, -1
    if not timeout > 0 or not 1 <= shards <= 64:
        raise WorkflowInputError(
            f"{TEST_TIMEOUT_ENV}={raw_t!r} / {TEST_SHARDS_ENV}={raw_s!r}: a timeout must be a "
            f"positive number of seconds and shards a whole number from 1 to 64",
            f"e.g. {TEST_TIMEOUT_ENV}=3600 {TEST_SHARDS_ENV}=4, or unset them")
    return timeout, shards


def configured_devices(settings: Any) -> list[str] | None:
    """The device types ``ORCHESTRATOR_REFACTOR_DEVICES`` names, ``None`` when unset.

    ``WorkflowInputError`` for a malformed value; the refactor workflow's start calls this so a
    bad value is refused before any agent work, not at the local test gate.
    """
    raw = (settings.get(DEVICES_ENV) or "").strip()
    if not raw:
        return None
    devices = [d.strip() for d in raw.split(",") if d.strip()]
    if not devices or not all(d.isidentifier() for d in devices):
        raise WorkflowInputError(f"{DEVICES_ENV}={raw!r} is not a comma-separated list "
                                 f"of device types", f"e.g. {DEVICES_ENV}=cpu,cuda")
    return devices


def _devices(ctx: Any) -> list[str]:
    """CPU, plus CUDA when the test interpreter's torch sees a GPU (asked once per flow).

    ``ORCHESTRATOR_REFACTOR_DEVICES=cpu,cuda`` overrides the probe.
    """
    if ctx.data.test_devices is None:
        devices = configured_devices(ctx.settings)
        if devices is None:
            # No usable torch gives "": the CPU run will show the import error itself.
            probe = proc.capture([_python(ctx), "-c",
                                  "import torch; print(torch.cuda.is_available())"],
                                 env=ctx.settings, timeout=300).text
            devices = ["cpu", "cuda"] if probe.strip().endswith("True") else ["cpu"]
        ctx.data.test_devices = devices
    return list(ctx.data.test_devices)


def _has_torch(ctx: Any) -> bool:
    """Whether the test interpreter (``ORCHESTRATOR_PYTHON``) finds torch (asked once per flow).

    The collect-only check runs under that interpreter, so the orchestrator's own imports say
    nothing. ``find_spec`` only locates torch, without importing it. Only a clear "not found"
    skips the check: an interpreter that cannot be started counts as having torch, so the
    collection runs and reports the failure (V204) instead of the check passing unseen.
    """
    if ctx.data.test_torch is None:
        probe = proc.capture([_python(ctx), "-c", "import importlib.util, sys; "
                              "sys.exit(importlib.util.find_spec('torch') is None)"],
                             env=ctx.settings, timeout=300)
        ctx.data.test_torch = probe.code != 1
    return bool(ctx.data.test_torch)


def _escalate(ctx: Any, key: str, question: str) -> Any:
    answer = ctx.answer(key)
    if answer is None:
        return Human(key, question, {"continue": "carry on to the next phase as it is",
                                     "abort": "end the flow now (outcome 'aborted')"})
    if answer == "abort":
        return Go("abort")
    ctx.data.notes.append(f"{key}: carried on by a person's decision")
    ctx.data.decided_by_person.append(key)
    return None


# -- phase 5: verify (+ the lint hard gate) --------------------------------------------------

def _verify_report(ctx: Any) -> Any:
    from flow.refactor.sentinels import list_sentinels
    from flow.refactor.verify import VerifyInput, verify as run_verify

    report = plan(ctx)
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
    if result.passed and "test_count" in inp.checks and _has_torch(ctx):
        result.findings += _collect_findings(ctx, report)
        # The check's verdict (shown in the summary) must count the collected losses too.
        counted = summarise("test_count", [f for f in result.findings if f.check == "test_count"])
        result.checks = [counted if c.name == "test_count" else c for c in result.checks]
    return result


def _collect_findings(ctx: Any, report: AnalystReport) -> list[Any]:
    """The real ``pytest --collect-only`` count check (only where the test interpreter has torch)."""
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
    return compare_collected(before, after, assessment(ctx), report, ctx.data.rel)


def _fix(ctx: Any, key: str, source: str, round_no: int, findings: str) -> Ask:
    prompt = render("refactor_coder_fix", round=round_no, max_rounds=MAX_ROUNDS, source=source,
                    findings=Untrusted(findings, source), **common(ctx))
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
                        verification=Untrusted(listing, "verification findings"), **common(ctx))
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
    key = f"test-fix-{ctx.data.test_rounds}"
    fed = ctx.result(key) if ctx.data.test_rounds else None
    if fed is not None and ctx.data.fix_key == key:
        ctx.data.deferred += [DeferredFailure(test_name=v.test_name, reason=v.defer_reason or "deferred")
                              for v in fed.verdicts if v.verdict == "deferred"]
        ctx.data.fix_key = None
    file = Path(ctx.data.file)
    devices = _devices(ctx)
    try:
        results = {d: _local_tests(ctx, file, d) for d in devices}
    except JUnitError as exc:
        return _gate_broken(ctx, exc)
    ctx.write_json("local_test.json", {d: r.model_dump(mode="json") for d, r in results.items()})
    ctx.data.local_tests = "; ".join(
        f"{d}: " + ", ".join(f"{n} {k}" for k, n in sorted(r.counts.items()))
        for d, r in results.items())
    deferred = {d.test_name for d in ctx.data.deferred}
    # A plain TestCase runs under every device: name the device beyond the first run.
    named = [n if d == devices[0] else f"{n} [{d}]"
             for d, r in results.items() for n in r.FAIL + r.ERROR]
    failing = [n for n in dict.fromkeys(named) if n not in deferred]
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
    prompt = render("refactor_coder_test", file=ctx.data.file, device=", ".join(devices),
                    round=ctx.data.test_rounds,
                    max_rounds=MAX_ROUNDS, local_test_path=str(ctx.path("local_test.json")),
                    failures=Untrusted("\n".join(failing), "failing tests"))
    return Ask([Task(key=key, role="coder", feed="coder_test", prompt=prompt, follow_up=True,
                     extra={"failures": failing})],
               extra={"rule_sub_phase": "test", "retry_count": ctx.data.test_rounds})


def _local_tests(ctx: Any, file: Path, device: str) -> Any:
    """One device's gate run as background jobs the flow owns (one per shard, started
    together so they run side by side); the step answers ``waiting`` until all have ended.
    Jobs are keyed by round, device and shard, so a fix round runs the tests anew."""
    from flow.jobs import Pending
    from flow.refactor.junit import local_test_run, read_local_tests

    timeout, shards = test_settings(ctx.settings)
    runs, waiting = [], None
    for i in range(shards):
        tag = f"{device}" + (f"-{i + 1}of{shards}" if shards > 1 else "")
        junit = ctx.path(f"local_test_r{ctx.data.test_rounds}_{tag}.xml")
        argv, env = local_test_run(file, device, junit, python=_python(ctx),
                                   shard=(i, shards) if shards > 1 else None)
        try:
            res = ctx.job(f"local-r{ctx.data.test_rounds}-{tag}", argv, cwd=file.parent,
                          env={**ctx.settings, **env}, timeout=timeout,
                          log_name=f"logs/local_test_r{ctx.data.test_rounds}_{tag}.log")
        except Pending as exc:  # start the other shards before waiting on this one
            waiting = waiting or exc
            continue
        runs.append((res, junit))
    if waiting is not None:
        raise waiting
    return read_local_tests(file, device, runs)


def _gate_broken(ctx: Any, exc: Exception) -> Any:
    """The gate could not produce a report (timed out, lost, no JUnit): a person decides;
    it is never read as a pass."""
    key = f"local-test-broken-{ctx.data.test_rounds}"
    answer = _escalate(ctx, key, f"The local test gate could not produce a result: {exc}. "
                                 f"Carry on without it (it is named in the summary), or abort? "
                                 f"(A longer {TEST_TIMEOUT_ENV} or more {TEST_SHARDS_ENV} "
                                 f"may help; then restart the flow.)")
    if answer is not None:
        return answer
    ctx.data.local_tests = f"not run: {exc}"
    return Go("tested")


# -- phase 7: finalize ------------------------------------------------------------------------

def write_summary(ctx: Any) -> Path:
    report = plan(ctx)
    summary = SummaryInput(file=ctx.data.rel, field=ctx.data.field,
                           moves=moved_tests(moves(report, assessment(ctx))), rules=ctx.data.applied,
                           checks=ctx.data.checks, retries=ctx.data.retries, deferred=ctx.data.deferred,
                           local_tests=ctx.data.local_tests, notes=list(ctx.data.notes),
                           decided_by_person=list(ctx.data.decided_by_person),
                           ci_check_command=ctx.cmds.cli("--ci-check"))
    return ctx.write_text("final_summary.md", render_summary(summary))
