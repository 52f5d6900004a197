"""Phase 6.5's check of the word "pre-existing": a failure the coder defers is looked for in
the original's own run of the same tests (the original is kept in the flow folder), so the
summary says which failures the original shares and a failure only the refactored file has is
never deferred (seed "Local test gate": fix-or-defer, deferred = pre-existing/environmental).

``shared_with`` is pure: a refactored failure is the original's when the same test failed
there, the test known by its own function (``testids``): the def it comes from, the class it
came from (the plan's moves, class renames included) and its variant without the device, so
a test that moved between a device class and a plain one (``TestFooCPU.test_x_cpu`` <->
``TestFoo.test_x``) is the same test; names outside the file are matched by name.
``original_results`` runs the original once per flow, with the
same pytest command as the gate, from a copy beside the file in the checkout (so the
checkout's ``pytest.ini`` and ``conftest.py`` apply to it too), removed once it has run; the
results are kept in ``original_test.json``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from flow.workflows.refactor.testids import FileTests, split_name

RESULTS = "original_test.json"


class Shared(BaseModel):
    """Which deferred failures the original shares (refactored name -> original name), which it
    does not (refactored name -> the original's outcome of that test, or "not run by the
    original"), and for each the original's result in words (the evidence a person reads)."""

    model_config = ConfigDict(extra="forbid")

    shared: dict[str, str] = Field(default_factory=dict)
    only_refactored: dict[str, str] = Field(default_factory=dict)
    original: dict[str, str] = Field(default_factory=dict)  # refactored name -> "failed as X", ...


FAILING = ("failed", "xpassed", "error")


def _tail(name: str) -> str:
    cls, method, _ = split_name(name)
    return f"{cls}.{method}" if cls else method


def _by_name(name: str, runs: dict[str, str], dev: str) -> str | None:
    """The original's failing test for ``name`` by its name alone: the same ``Class.method``,
    the same method (a test that moved class), or the original's method with the device
    appended (``test_x`` -> ``test_x_cpu``) or taken off (``test_x_cpu`` -> ``test_x``)."""
    cls, method, _ = split_name(name)
    failing = [n for n, o in runs.items() if o in FAILING]
    for n in failing:
        if _tail(n) == f"{cls}.{method}":
            return n
    for n in failing:
        if split_name(n)[1] == method:
            return n
    for n in failing:
        other = split_name(n)[1]
        for a, b in ((method, other), (other, method)):
            if a == f"{b}_{dev}" or a.startswith(f"{b}_{dev}_"):
                return n
    return None


def shared_with(deferred: list[str], original: dict[str, dict[str, str]], first: str, *,
                before: str = "", after: str = "",
                moved: dict[tuple[str, str], str] | None = None) -> Shared:
    """Match each deferred failure against ``original`` (device -> test name -> outcome);
    ``first`` is the device whose names carry no `` [device]`` suffix.

    With the original's text ``before`` and the refactored text ``after``, a test is matched
    by its own function (``testids``): the def it comes from, in the class it came from
    (``moved``: (new class, def) -> old class, the plan's moves; else the same class, else
    the one class of the original with that def), and the same variant (dtype, op,
    parameter) without the device. So ``TestFoo.test_x`` of a GENERIC class is
    ``TestFooCPU.test_x_cpu`` of the original, and the other way round. A test whose variants
    changed (``@dtypes`` dropped by a move to a plain class) is shared when every variant of
    it failed in the original. Names outside both files are matched by name alone."""
    out = Shared()
    old, new = (FileTests(before), FileTests(after)) if before and after else (None, None)
    for name in deferred:
        dev = split_name(name)[2] or first
        runs = original.get(dev, {})
        mine = new.origin(name) if new is not None else None
        if mine is not None and old is not None:
            src = (moved or {}).get((mine.cls, mine.fn))
            if src is None:
                src = mine.cls if mine.fn in old.defs(mine.cls) else None
            if src is None:
                homes = [c for c in old.nodes if mine.fn in old.defs(c)]
                src = homes[0] if len(homes) == 1 else None
            if src is not None:
                same = {n: o for n, o in runs.items()
                        if (g := old.origin(n)) is not None and (g.cls, g.fn) == (src, mine.fn)}
                exact = {n: o for n, o in same.items() if old.origin(n).variant == mine.variant}  # type: ignore[union-attr]
                pool = exact or same
                failed = [n for n, o in pool.items() if o in FAILING]
                words = ", ".join(f"{o} as {_tail(n)}" for n, o in pool.items())
                if failed and (exact or len(failed) == len(pool)):
                    out.shared[name], out.original[name] = failed[0], words
                elif pool:
                    out.original[name], out.only_refactored[name] = words, f"{words} in the original"
                else:
                    out.only_refactored[name] = out.original[name] = (
                        f"not run by the original ({src}.{mine.fn} ran no test on {dev})")
                continue
        match = _by_name(name, runs, dev)
        if match is not None:
            out.shared[name], out.original[name] = match, f"{runs[match]} as {_tail(match)}"
            continue
        _, method, _ = split_name(name)
        seen = next((f"{o} as {_tail(n)}" for n, o in runs.items()
                     if _tail(n) == _tail(name) or split_name(n)[1] == method), None)
        out.original[name] = seen or "not run by the original"
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
    run has ended (``finalize.restore_checkout`` removes one a stopped flow left)."""
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
