"""The refactor workflow's CPU local test gate (phase 6.5) and its --hw-classification runs.
Verify and review are in ``fixloop``; the summary finalize writes (phase 7) in ``finalize``.

Bounds: 3 local-test rounds, then a person decides on what still fails (with both runs'
results: more rounds, defer by a person's decision, or abort); a coder's verdicts that do
not name the failing tests are asked for again, 3 times.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from agents.prompts import Untrusted, render
from flow.core import proc
from flow.core.outcome import Ask, Go, Human, Task
from flow.workflows.refactor.analysis import moves
from flow.workflows.refactor.gatedevices import CUDA_PROBE, DEVICES_ENV, configured_devices, gpu_nodes
from flow.workflows.refactor.errors import JUnitError
from flow.workflows.refactor.fields import field_profile
from flow.workflows.refactor.prtext import plural
from flow.workflows.refactor.steps import MAX_ROUNDS, assessment, plan
from flow.workflows.refactor.summary import DeferredFailure
from flow.workflows.refactor.testenv import TEST_SHARDS_ENV, TEST_TIMEOUT_ENV, _has_torch, _note, _python, test_settings


def _devices(ctx: Any) -> list[str]:
    """CPU, plus CUDA when the test interpreter's torch sees a GPU (decided once per flow; see
    ``gatedevices``: the setting, else no GPU node means CPU only, else torch is asked)."""
    if ctx.data.test_devices is None:
        devices = configured_devices(ctx.settings)
        if devices is None and not gpu_nodes():
            devices = ["cpu"]
            _note(ctx, "no GPU device node on this machine: the local tests run on CPU only "
                       "(torch was not asked)")
        elif devices is None:
            # Importing torch can take long on a cold disk: a job, not a foreground run. No
            # usable torch prints no "True": the CPU run will show the import error itself.
            probe = ctx.job("probe-devices", [_python(ctx), "-c", CUDA_PROBE],
                            env=ctx.settings, timeout=300, log_name="logs/probe_devices.log")
            devices = ["cpu", "cuda"] if probe.tail(1).strip().endswith("True") else ["cpu"]
            if probe.timed_out or probe.lost:  # never a silent "no GPU": say the probe failed
                _note(ctx, f"the CUDA probe of {_python(ctx)} {'timed out' if probe.timed_out else 'was lost'}"
                           f" (log {probe.log}): tests ran on CPU only; set {DEVICES_ENV}=cpu,cuda "
                           "to run them on CUDA too")
        ctx.data.test_devices = devices
    return list(ctx.data.test_devices)


def _escalate(ctx: Any, key: str, question: str) -> Any:
    answer = ctx.answer(key)
    if answer is None:
        return Human(key, question, {"continue": "carry on to the next phase as it is",
                                     "abort": "end the flow now (outcome 'aborted')"})
    if answer == "abort":
        return Go("abort")
    _note(ctx, f"{key}: carried on by a person's decision")
    if key not in ctx.data.decided_by_person:
        ctx.data.decided_by_person.append(key)
    return None


# -- phase 6.5: local test gate ---------------------------------------------------------------

def _take_verdicts(ctx: Any) -> Ask | None:
    """Accept the coder's verdicts when each names a listed failure and each deferral is one the
    original shares (``preexisting``); otherwise ask again. Nothing is recorded before the
    original's run has ended, so the step can run again while it runs."""
    from flow.workflows.refactor.decisions import check_verdicts

    fed = ctx.result(ctx.data.fix_key)
    rows = [(v.test_name, v.verdict, v.fix_applied, v.defer_reason) for v in fed.verdicts]
    problems = check_verdicts(rows, ctx.data.test_failing)
    failing = set(ctx.data.test_failing)
    claimed = [v for v in fed.verdicts if v.verdict == "deferred" and v.test_name in failing
               and (v.defer_reason or "").strip()]
    checked = _check_preexisting(ctx, [v.test_name for v in claimed]) if claimed else None
    only = dict(checked.only_refactored) if checked is not None else {}
    problems += [f"{n}: deferred as pre-existing, but the original does not fail it ({why}): the refactor "
                 "caused it, so it cannot be deferred; fix it" for n, why in only.items()]
    if problems and ctx.data.verdict_asks < MAX_ROUNDS:
        ctx.data.verdict_asks += 1
        return _ask_verdicts(ctx, problems)
    for p in problems:
        _note(ctx, f"local test gate: verdict ignored: {p}")
    ctx.data.refactor_failures += [n for n in only if n not in ctx.data.refactor_failures]
    shared = checked.shared if checked is not None else {}
    if checked is not None:
        _note(ctx, f"local test gate: the original, run the same way, shares {len(shared)} of the "
                   f"{len(claimed)} failures deferred as pre-existing"
                   + (f" ({', '.join(shared)})" if shared else "")
                   + (f"; only the refactored file fails {', '.join(only)}" if only else ""))
    known = {d.test_name for d in ctx.data.deferred}
    ctx.data.deferred += [DeferredFailure(test_name=v.test_name, reason=(v.defer_reason or "deferred") + (
                              f" (checked: the original fails it too, as {shared[v.test_name]})"
                              if v.test_name in shared else ""),
                          original_fails_as=shared.get(v.test_name, ""))
                          for v in claimed if v.test_name not in only and v.test_name not in known]
    ctx.data.fix_key, ctx.data.verdict_asks = None, 0
    return None


def _check_preexisting(ctx: Any, names: list[str]) -> Any:
    """The original's own run compared with the deferred failures (None, said in the notes,
    when the original's run gave no result)."""
    from flow.workflows.refactor.preexisting import original_results, shared_with

    from flow.workflows.refactor.mechanical import original

    devices = _devices(ctx)
    try:
        runs = original_results(ctx, devices)
    except JUnitError as exc:
        _note(ctx, f"local test gate: the original's own run gave no result ({exc}); the failures "
                   "deferred as pre-existing are unchecked")
        return None
    moved = {(m.new_class, m.test): m.old_class for m in moves(plan(ctx), assessment(ctx))}
    return shared_with(names, runs, devices[0], before=original(ctx).read_text(encoding="utf-8"),
                       after=Path(ctx.data.file).read_text(encoding="utf-8"), moved=moved)


def _ask_verdicts(ctx: Any, problems: list[str]) -> Ask:
    ctx.data.fix_seq += 1
    key = f"test-fix-{ctx.data.fix_seq}"
    ctx.data.fix_key = key
    failures = "\n".join(ctx.data.test_failing)
    if problems:
        failures += ("\n\nYour previous verdicts were not accepted:\n" + "\n".join(f"- {p}" for p in problems))
    prompt = render("refactor_coder_test", file=ctx.data.file, device=", ".join(ctx.data.test_devices or ["cpu"]),
                    round=ctx.data.test_rounds, max_rounds=MAX_ROUNDS + ctx.data.test_rounds_granted,
                    local_test_path=str(ctx.path("local_test.json")),
                    failures=Untrusted(failures, "failing tests"))
    return Ask([Task(key=key, role="coder", feed="coder_test", prompt=prompt, follow_up=True,
                     extra={"failures": list(ctx.data.test_failing)})],
               extra={"rule_sub_phase": "test", "retry_count": ctx.data.test_rounds})


def test(ctx: Any) -> Any:
    if not field_profile(ctx.data.field).local_test_gate:
        ctx.data.local_tests = f"skipped: no local test gate for the {ctx.data.field} field"
        ctx.data.hw_note = f"the {ctx.data.field} field has no local test gate, so the counts did not run"
        return Go("tested")
    if ctx.data.fix_key and ctx.data.fix_key.startswith("test-fix-") and ctx.result(ctx.data.fix_key) is not None:
        again = _take_verdicts(ctx)
        if again is not None:
            return again
    file = Path(ctx.data.file)
    devices = _devices(ctx)
    _has_torch(ctx)  # records which torch the tests run against (asked once per flow)
    sha = hashlib.sha256(file.read_bytes()).hexdigest()
    if ctx.data.test_rounds and ctx.data.tested_sha == sha and ctx.path("local_test.json").exists():
        # The coder changed nothing since the last run (every failure deferred): its results
        # stand; the whole gate is not run again.
        from flow.workflows.refactor.junit import LocalTestResult

        results = {d: LocalTestResult.model_validate(r) for d, r in ctx.read_json("local_test.json").items()}
        _note(ctx, "local test gate: the file did not change after the coder's verdicts; the last "
                   "run's results stand (the gate was not run again)")
    else:
        try:
            results = {d: _local_tests(ctx, file, d) for d in devices}
        except JUnitError as exc:
            return _gate_broken(ctx, exc)
        ctx.write_json("local_test.json", {d: r.model_dump(mode="json") for d, r in results.items()})
        ctx.data.tested_sha = sha
    torch = f" ({ctx.data.test_torch_info})" if ctx.data.test_torch_info else ""
    ctx.data.local_counts = "; ".join(f"{d}: " + (", ".join(f"{n} {k}" for k, n in sorted(r.counts.items()))
                                                  or "no test collected") for d, r in results.items())
    ctx.data.local_tests = f"with {_python(ctx)}{torch}: " + ctx.data.local_counts
    deferred = {d.test_name for d in ctx.data.deferred}
    # A plain TestCase runs under every device: name the device beyond the first run.
    named = [n if d == devices[0] else f"{n} [{d}]"
             for d, r in results.items() for n in r.FAIL + r.ERROR]
    failing = [n for n in dict.fromkeys(named) if n not in deferred]
    if not failing:
        ctx.data.refactor_failures = []  # whatever failed only after the refactor passes now
        _hw_runs(ctx, file)
        return Go("tested")
    if ctx.data.test_rounds >= MAX_ROUNDS + ctx.data.test_rounds_granted:
        return _rounds_spent(ctx, file, failing, results)
    ctx.data.test_rounds += 1
    ctx.data.retries["test"] = ctx.data.test_rounds
    ctx.data.test_failing = failing
    return _ask_verdicts(ctx, [])


ROUNDS_KEY = "local-test-rounds-"


def _rounds_spent(ctx: Any, file: Path, failing: list[str], results: dict[str, Any]) -> Any:
    """The fix rounds are spent and tests still fail: a person decides, with the evidence (each
    test's result here and the original's result of the same test, run the same way) and the
    choices: more rounds for the coder, defer them by a person's decision, or abort. A
    failure is never deferred, nor blamed on the refactor, without that answer."""
    limit = MAX_ROUNDS + ctx.data.test_rounds_granted
    key = f"{ROUNDS_KEY}{limit}"
    answer = ctx.answer(key)
    checked = _check_preexisting(ctx, failing)  # the original's run (once per flow)
    rows = _evidence(failing, results, checked)
    if answer is None:
        count = plural(len(failing), "test")
        lines = [f"- {r['test']}: {r['here']}; the original, run the same way: {r['original']}" for r in rows]
        question = (f"After {limit} fix rounds {count} still fail{'s' if len(failing) == 1 else ''} "
                    f"in the refactored {ctx.data.rel}:\n" + "\n".join(lines)
                    + f"\nBoth runs' results: {ctx.path('local_test.json')} (refactored) and "
                    + (f"{ctx.path('original_test.json')} (the original)" if checked is not None
                       else "none for the original (its run gave no result; see the notes)")
                    + f". Give the coder {MAX_ROUNDS} more "
                    "rounds (retry), defer these failures as not the refactor's (defer: the PR names "
                    "them as failing, with the original's result), or abort?")
        return Human(key, question, {
            "retry": f"send the failures to the coder again, {MAX_ROUNDS} more fix rounds",
            "defer": "a person's decision: they are not the refactor's to fix; finish, and the "
                     "PR text names them as failing with the original's result",
            "abort": "end the flow now (outcome 'aborted')"},
            extra={"evidence": rows, "refactored_results": str(ctx.path("local_test.json")),
                   "original_results": str(ctx.path("original_test.json")) if checked is not None else None})
    if answer == "abort":
        return Go("abort")
    if answer == "retry":
        ctx.data.test_rounds_granted += MAX_ROUNDS
        _note(ctx, f"local test gate: a person gave the coder {MAX_ROUNDS} more rounds after {limit} "
                   f"(still failing: {', '.join(failing)})")
        ctx.data.test_rounds += 1
        ctx.data.retries["test"] = ctx.data.test_rounds
        ctx.data.test_failing = failing
        return _ask_verdicts(ctx, [])
    shared = checked.shared if checked is not None else {}
    ctx.data.deferred += [DeferredFailure(
        test_name=r["test"], by_person=True, original_fails_as=shared.get(r["test"], ""),
        reason=f"deferred by a person after {limit} fix rounds; here: {r['here']}; the original: {r['original']}")
        for r in rows]
    ctx.data.refactor_failures = [n for n in ctx.data.refactor_failures if n not in failing]
    if key not in ctx.data.decided_by_person:
        ctx.data.decided_by_person.append(key)
    _note(ctx, f"local test gate: {plural(len(failing), 'failure')} deferred by a person after {limit} "
               f"fix rounds: {', '.join(failing)}")
    _hw_runs(ctx, file)
    return Go("tested")


def _evidence(failing: list[str], results: dict[str, Any], checked: Any) -> list[dict[str, str]]:
    """One row per failing test: its result here (outcome and the first line of its message)
    and the original's result of the same test."""
    devices = list(results)
    rows = []
    for name in failing:
        dev = name[:-1].rpartition(" [")[2] if name.endswith("]") and " [" in name else devices[0]
        plain = name[: -len(f" [{dev}]")] if name.endswith(f" [{dev}]") else name
        res = results.get(dev)
        got = next((o for o in (res.outcomes if res is not None else []) if o.name == plain), None)
        here = "not in this run" if got is None else got.outcome + (
            f" ({_first_line(got.message)})" if got.message.strip() else "")
        original = ("the original's run gave no result" if checked is None
                    else checked.original.get(name, "not run by the original"))
        rows.append({"test": name, "device": dev, "here": here, "original": original})
    return rows


def _first_line(text: str) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= 200 else line[:197] + "..."


def _hw_check(ctx: Any, check: Any) -> None:
    ctx.data.checks = [c for c in ctx.data.checks if c.name != "hw_classification"] + [check]


def _hw_runs(ctx: Any, file: Path) -> None:
    """Each label's count for the final file, as ``python FILE --hw-classification LABEL``
    counts it, from one job (``hwruns.count_argv``: one interpreter start, no test run again);
    for a file without ``run_tests()``, ``pytest --collect-only`` with the checkout conftest's
    filter, one job per label side by side. The check ``hw_classification`` passes when every
    test is accounted for (none unclassified, the labels' counts adding up to the whole file)
    and the declared labels are the plan's. A torch without the flag makes the check
    ``skipped`` with that reason, never a pass."""
    from flow.workflows.refactor.findings import CheckResult
    from flow.workflows.refactor.hwruns import (
        ENTRY_WORDS, HwRunError, account, conftest_filter, count_argv, entry_fix, entry_point, hw_env,
        pytest_hw_argv, read_run,
    )
    from flow.workflows.refactor.interpreter import HW_ENUM_PROBE
    from flow.workflows.refactor.prtext import class_rows

    def skipped(why: str, todo: str = "") -> None:
        ctx.data.hw_note, ctx.data.hw_todo = why, todo
        _hw_check(ctx, CheckResult(name="hw_classification", passed=True, errors=0, warnings=0, skipped=why))

    ctx.data.hw_counts, ctx.data.hw_runner, ctx.data.hw_todo = {}, "", ""
    probe = proc.capture([_python(ctx), "-c", HW_ENUM_PROBE], env=ctx.settings, timeout=300).or_wait()
    if not (probe.code == 0 and probe.text.strip().endswith("yes")):
        return skipped(f"the torch of {_python(ctx)} has no HardwareClassification "
                       "(--hw-classification needs torch 2.14.1 or later)",
                       "run the test plan's --hw-classification commands with torch 2.14.1 or later")
    text = file.read_text(encoding="utf-8")
    rows = class_rows(text)
    labels = sorted({r.hw_classification for r in rows if r.hw_classification})
    if not labels:
        return skipped("no class of the file declares hw_classification",
                       "label every test class with hw_classification")
    entry, by_pytest = entry_point(text), False
    if entry != "run_tests":
        # Only common_utils.run_tests() parses --hw-classification: unittest.main() exits 2 on it
        # and a file without a __main__ block runs nothing. PyTorch's conftest has the same
        # filter for pytest; without it the check cannot apply and is said not to have run.
        if conftest_filter(Path(ctx.data.repo), file) is None:
            return skipped(f"{ctx.data.rel} {ENTRY_WORDS[entry]}, so `python {ctx.data.rel} "
                           "--hw-classification` cannot count its tests (only common_utils.run_tests() "
                           "takes the flag), and no conftest.py of this checkout has pytest's "
                           "--hw-classification filter",
                           f"{entry_fix(entry, text)}; then run `python {ctx.data.rel} --hw-classification "
                           "LABEL` for each label; or count them with `pytest FILE --hw-classification "
                           "LABEL` in a checkout whose test/conftest.py has that filter")
        by_pytest = True
        _note(ctx, f"--hw-classification: {ctx.data.rel} {ENTRY_WORDS[entry]}; the counts come from "
                   "pytest --collect-only with the checkout conftest's --hw-classification filter")
    ctx.data.hw_runner = "pytest" if by_pytest else "python"
    timeout, _ = test_settings(ctx.settings)
    env = hw_env(ctx.settings)
    n = ctx.data.test_rounds
    if by_pytest:
        jobs = [dict(key=f"hw-r{n}-pytest-{label}", argv=pytest_hw_argv(_python(ctx), file, label),
                     cwd=file.parent, env=env, timeout=timeout,
                     log_name=f"logs/hw_classification_r{n}_{label}.log") for label in labels]
    else:
        jobs = [dict(key=f"hw-r{n}-count", argv=count_argv(_python(ctx), file, labels), cwd=file.parent,
                     env=env, timeout=timeout, log_name=f"logs/hw_classification_r{n}.log")]
    for job in jobs:
        ctx.start_job(**job)
    results = [ctx.job(**job) for job in jobs]
    # one job per label on the pytest path, else the one counting job holds every label's line
    of_label = dict(zip(labels, results)) if by_pytest else dict.fromkeys(labels, results[0])
    problems: list[str] = []
    runs = []
    for label, res in of_label.items():
        try:
            runs.append(read_run(label, res.code, res.output))
        except HwRunError as exc:
            problems.append(exc.message)
    problems += account(runs)
    planned = plan(ctx).labels()
    for row in rows:
        if row.name in planned and row.hw_classification != planned[row.name]:
            problems.append(f"{row.name} declares {row.hw_classification} but the plan labels it {planned[row.name]}")
    if runs and not problems and all(r.total == 0 for r in runs):
        # Nothing was instantiated here (a class only_for a device this machine lacks): a
        # count of zero is no test plan, never a pass.
        here = ", ".join(ctx.data.test_devices or ["cpu"])
        commands = ", ".join(f"`{ctx.data.hw_runner} {ctx.data.rel} --hw-classification {label}`" for label in labels)
        return skipped(f"no test of the file was instantiated here ({here}): its classes run only on a "
                       "device this machine lacks",
                       f"run {commands} on a machine with that device and put the counts in the test plan")
    ctx.data.hw_counts = {r.label: r.passed for r in runs}
    if problems and not runs:
        ctx.data.hw_note = "no run printed its count line"
    for p in problems:
        _note(ctx, f"--hw-classification: {p}")
    _hw_check(ctx, CheckResult(name="hw_classification", passed=not problems, errors=len(problems), warnings=0))


def _local_tests(ctx: Any, file: Path, device: str) -> Any:
    """One device's gate run as background jobs the flow owns (one per shard, all started
    before any is waited on, so they run side by side); the step answers ``waiting`` until
    all have ended. Jobs are keyed by round, device and shard, so a fix round runs the tests
    anew."""
    from flow.workflows.refactor.junit import local_test_run, read_local_tests

    timeout, shards = test_settings(ctx.settings)
    jobs = []
    for i in range(shards):
        tag = f"{device}" + (f"-{i + 1}of{shards}" if shards > 1 else "")
        junit = ctx.path(f"local_test_r{ctx.data.test_rounds}_{tag}.xml")
        argv, env = local_test_run(file, device, junit, python=_python(ctx),
                                   shard=(i, shards) if shards > 1 else None)
        job = dict(key=f"local-r{ctx.data.test_rounds}-{tag}", argv=argv, cwd=file.parent,
                   env={**ctx.settings, **env}, timeout=timeout,
                   log_name=f"logs/local_test_r{ctx.data.test_rounds}_{tag}.log")
        ctx.start_job(**job)
        jobs.append((job, junit))
    return read_local_tests(file, device, [(ctx.job(**job), junit) for job, junit in jobs])


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
    ctx.data.hw_note = "the local test gate could not produce a result, so the counts did not run"
    return Go("tested")
