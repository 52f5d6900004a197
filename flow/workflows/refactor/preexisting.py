"""Phase 6.5's check of the word "pre-existing": a failure the coder defers is looked for in
the original's own run of the same tests (the original is kept in the flow folder), so the
summary says which failures the original shares and a failure only the refactored file has is
never deferred (seed "Local test gate": fix-or-defer, deferred = pre-existing/environmental).

``shared_with`` is pure: a refactored failure is the original's when the same test method
failed there, by ``Class.method``, by method name (a test that moved class), or as the
original's method with the device appended (a plain test that became device-instantiated:
``test_x`` -> ``test_x_cpu``). ``original_results`` runs the original once per flow, with the
same pytest command as the gate, from a copy beside the file in the checkout (so the
checkout's ``pytest.ini`` and ``conftest.py`` apply to it too), removed once it has run; the
results are kept in ``original_test.json``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

RESULTS = "original_test.json"


class Shared(BaseModel):
    """Which deferred failures the original shares (refactored name -> original name), which it
    does not (refactored name -> the original's outcome of that test, or "not found")."""

    model_config = ConfigDict(extra="forbid")

    shared: dict[str, str] = Field(default_factory=dict)
    only_refactored: dict[str, str] = Field(default_factory=dict)


def _split(name: str) -> tuple[str, str, str]:
    """(``Class.method`` tail, method, device) of a gate name such as
    ``test_x.TestFooCPU.test_a_cpu [cuda]``."""
    device = ""
    if name.endswith("]") and " [" in name:
        name, _, device = name[:-1].rpartition(" [")
    parts = name.split(".")
    return ".".join(parts[-2:]), parts[-1], device


def shared_with(deferred: list[str], original: dict[str, dict[str, str]], first: str) -> Shared:
    """Match each deferred failure against ``original`` (device -> test name -> outcome);
    ``first`` is the device whose names carry no `` [device]`` suffix."""
    out = Shared()
    for name in deferred:
        tail, method, device = _split(name)
        runs = original.get(device or first, {})
        failing = {n: o for n, o in runs.items() if o in ("failed", "xpassed", "error")}
        match = next((n for n in failing if _split(n)[0] == tail), None)
        match = match or next((n for n in failing if _split(n)[1] == method), None)
        dev = device or first
        match = match or next((n for n in failing if method == f"{_split(n)[1]}_{dev}"
                               or method.startswith(f"{_split(n)[1]}_{dev}_")), None)
        if match is not None:
            out.shared[name] = match
            continue
        seen = next((o for n, o in runs.items() if _split(n)[0] == tail or _split(n)[1] == method), None)
        out.only_refactored[name] = f"{seen} in the original" if seen else "not run by the original"
    return out


def beside(ctx: Any) -> Path:
    """Where the original's copy runs: beside the file in the checkout, so the checkout's
    ``pytest.ini`` and ``conftest.py`` files apply to it as they do to the file."""
    file = Path(ctx.data.file)
    return file.with_name(f"{file.stem}_flow_original.py")


def original_results(ctx: Any, devices: list[str]) -> dict[str, dict[str, str]]:
    """device -> test name -> outcome of the original's gate run (once per flow; raises the
    engine's ``Pending`` while its jobs run). The copy beside the file is removed once the
    run has ended (``gates.restore_checkout`` removes one a stopped flow left)."""
    from flow.core.jobs import Pending
    from flow.workflows.refactor.junit import local_test_run, read_local_tests
    from flow.workflows.refactor.mechanical import original
    from flow.workflows.refactor.testenv import _python, test_settings

    if ctx.path(RESULTS).exists():
        return ctx.read_json(RESULTS)
    timeout, _ = test_settings(ctx.settings)
    copy = beside(ctx)
    if not copy.exists():
        copy.write_bytes(original(ctx).read_bytes())
    jobs = []
    for device in devices:
        junit = ctx.path(f"original_test_{device}.xml")
        argv, env = local_test_run(copy, device, junit, python=_python(ctx))
        job = dict(key=f"original-tests-{device}", argv=argv, cwd=copy.parent,
                   env={**ctx.settings, **env}, timeout=timeout,
                   log_name=f"logs/original_test_{device}.log")
        ctx.start_job(**job)
        jobs.append((device, job, junit))
    out: dict[str, dict[str, str]] = {}
    try:
        for device, job, junit in jobs:
            res = read_local_tests(copy, device, [(ctx.job(**job), junit)])
            out[device] = {o.name: ("error" if o.also_error else o.outcome) for o in res.outcomes}
    except Pending:
        raise  # still running: the copy stays until the run has ended
    except Exception:
        copy.unlink(missing_ok=True)
        raise
    copy.unlink(missing_ok=True)
    ctx.write_json(RESULTS, out)
    return out
