"""The affected-tests report: its pydantic model and the text rendering.

One section per item of the seed's step 1. ``AffectedReport.model_dump(mode="json")`` is
the ``--json`` form; ``render_text`` is the default output of ``affected-tests``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from flow.workflows.targeted.config import Backend
from flow.workflows.targeted.gitdiff import ChangedFile
from flow.workflows.targeted.registrations import Unreadable


class _Row(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReachedTest(_Row):
    """One registration of a test file the diff reaches; ``reached_from`` is the changed file
    the first path started at and ``via`` the file just before the test on it."""

    path: str
    backend: Backend
    suite: str
    labels: list[str]
    hardware: list[str]
    nightly: bool
    est_time: int | float | None
    disabled: str | None
    num_gpus: int | None = None
    # how CI starts the file: pytest, python (python3 file.py), or unknown (a suite the
    # profile does not map and no runner for its backend)
    runner: str = "pytest"
    on_pr: bool = True  # a PR workflow job runs its suite (False: nightly-only, no job)
    hop: int
    reached_from: str
    via: str | None
    # how the test reaches ``via`` when no import says so: a launch flag it passes that
    # starts ``via`` (the gate, its condition, the file passing the flag)
    why: str | None = None


class FlagEdgeFound(_Row):
    """A launch-flag edge the trace used: ``gate`` (file:line starts module when the flag
    is set, or the profile's rule) and the tests that pass the flag."""

    module: str
    gate: str
    tests: list[str]
    # False: more enabled CUDA tests pass the flag than fit the files; the edge names no
    # specific path: not followed, reported as a hub with those tests behind it
    followed: bool = True


class LabelCount(_Row):
    """A PR label selecting reached regular registrations: ``reached`` of ``all`` it
    selects. ``tests`` are registration keys ``path@suite``: a label covers a test only on
    the suites (hardware) it runs, so ``run-ci-amd`` covering ``x.py@stage-c-4-gpu-mi350``
    does not cover ``x.py@stage-b-2-gpu-h200``."""

    label: str
    reached: int
    all: int
    tests: list[str]
    behind: int = 0  # of ``tests``, those behind hubs or past the depth bound (not reached)


class LabelCost(_Row):
    """What one PR label starts: ``registrations`` it selects at regular cadence and their
    summed ``est_time`` in seconds (``unknown``: registrations without one)."""

    label: str
    registrations: int
    est_time: float
    unknown: int = 0
    # of those, the always-on ones (CPU, ``labels=[]``): every PR Test run starts them,
    # so a label run does too (miles' run_suite keeps a test that declares no labels)
    always_on: int = 0
    always_on_est: float = 0.0
    keys: list[str] = []  # the labelled registrations it selects (path@suite), for totals


class UnknownSuite(_Row):
    """A suite registrations name that the profile does not map: no PR job is known to run
    it, and its files start as ``runner`` says (the backend's runner, or unknown)."""

    suite: str
    backend: Backend
    runner: str
    paths: list[str]


class External(_Row):
    """A changed module that code outside this repository imports by module path."""

    path: str
    importers: list[str]
    labels: list[str]
    why: str = ""


class NightlyTarget(_Row):
    """A reached test whose actionable registrations are all nightly: no PR label runs it."""

    path: str
    rerun: str


class Hub(_Row):
    """A file whose dependents reach more than ``hub_limit`` enabled CUDA tests within
    ``depth`` hops; not followed. ``met`` is "changed" or "hop N from <file>"."""

    path: str
    reach: int
    met: str
    hop: int
    via: str | None
    note: str | None = None
    on_ci_path: bool = True
    adds_only: bool | None = None
    cpu_tests: list[str] = []  # labeled CPU tests within depth: how CI exercises an off-path hub
    tests: list[str] = []  # registration keys (path@suite) of the GPU/labeled tests behind it


class Frontier(_Row):
    """An importer left unfollowed at the depth bound; ``reaches`` lists actionable tests it
    leads to (within ``depth`` more hops) that the trace did not reach."""

    importer: str
    imports: str
    reaches: list[str]
    keys: list[str] = []  # their registrations (path@suite), ROCm ones included


class Outside(_Row):
    """A changed path the import trace does not cover, and why; ``labels`` are what the
    profile says it needs (``[]``: no GPU run exercises it; None: no rule, the fallback)."""

    path: str
    reason: str
    labels: list[str] | None = None
    why: str = ""


class EntryLoad(_Row):
    """A changed file a training entry point loads (transitively), ``hops`` imports away
    (1: the entry point imports it directly)."""

    path: str
    entry_points: list[str]
    hops: int = 1


class AffectedReport(_Row):
    """Everything ``affected_tests`` found, section by section (see the seed's step 1)."""

    base: str
    depth: int
    hub_limit: int
    profile: str = "defaults"  # the config's source (see config.load_config)
    changed: list[ChangedFile]
    no_gpu: list[str] = []  # changed paths the profile's no-GPU allowlist exempts
    # registrations (path@suite) of test files whose diff touches only register_*_ci lines
    registration_changes: list[str] = []
    uncommitted: list[str] = []  # paths with uncommitted changes (traced only with worktree)
    worktree: bool = False  # the trace included uncommitted changes
    tests: list[ReachedTest]
    rerun: list[str]
    labels: list[LabelCount]
    nightly_only: list[NightlyTarget]
    hubs: list[Hub]
    frontier: list[Frontier]
    outside_trace: list[Outside]
    entry_loads: list[EntryLoad]
    unimported: list[str]
    unreadable: list[Unreadable]
    unknown_suites: list[UnknownSuite] = []
    external: list[External] = []  # changed modules imported from outside the repository
    blackwell_only: list[str] = []  # changed files whose changed lines run only on Blackwell
    flag_edges: list[FlagEdgeFound] = []  # launch-flag edges that reached tests
    costs: list[LabelCost] = []  # every label that selects a registration, with its cost
    key_est: dict[str, float | None] = {}  # est_time of each registration a label selects
    # registrations of postable files that any PR Test run starts (labels=[] CPU ones)
    always_on_keys: list[str] = []
    # est_time of what ``/rerun-test <file>`` runs (its one enabled CPU or CUDA
    # registration), for every file a plan may post: reached, or past the depth bound;
    # None where the repository registers no est_time (unknown, never 0)
    file_est: dict[str, float | None] = {}
    # for the same files, the registrations a PR label could select instead (enabled, not
    # nightly, on a suite a PR job runs, CPU or CUDA): when the plan's labels select all of
    # them, a /rerun-test of the file would run it twice
    file_runs: dict[str, list[str]] = {}


def _est(value: int | float | None) -> str:
    if value is None:
        return "est unknown"
    return f"est {value:g}s"


def files_total(paths: list[str], est: dict[str, float | None]) -> str:
    """The summed estimate of ``paths``: ``"est 2300s of GPU time"``; files without an
    estimate are counted apart as unknown, never summed as 0."""
    known = [v for p in paths if (v := est.get(p)) is not None]
    unknown = len(paths) - len(known)
    if not known:
        return f"unknown ({unknown} file(s) without est_time)"
    text = f"est {sum(known):g}s of GPU time"
    return text + (f" + {unknown} file(s) of unknown time" if unknown else "")


def cost_text(cost: LabelCost) -> str:
    """``"12 registrations, est 3400s"`` (plus how many have no est_time, and how many of
    them are the always-on ones every PR Test run starts)."""
    return (f"{cost.registrations} registration(s), est {cost.est_time:g}s"
            + (f" (+{cost.unknown} without est_time)" if cost.unknown else "")
            + (f", of which {cost.always_on} always-on (labels=[], est "
               f"{cost.always_on_est:g}s) that any PR Test run starts" if cost.always_on
               else ""))


def plan_spend(costs: list[LabelCost], labels: list[str], files: list[str],
               est: dict[str, float | None],
               key_est: dict[str, float | None]) -> tuple[float, int, int, int]:
    """``(seconds, registrations the labels start, of them always-on, without est_time)``
    of a plan: each registration its labels start counted once (the always-on ones once),
    plus its ``/rerun-test`` files."""
    chosen = [c for c in costs if c.label in labels]
    keys = {k for c in chosen for k in c.keys}
    on = max(chosen, key=lambda c: c.always_on, default=None)
    always, always_est = (on.always_on, on.always_on_est) if on else (0, 0.0)
    times = [key_est.get(k) for k in sorted(keys)] + [est.get(p) for p in files]
    known = [e for e in times if e is not None]
    return (sum(known) + always_est, len(keys) + always, always,
            len(times) - len(known))


def plan_total(costs: list[LabelCost], labels: list[str], files: list[str],
               est: dict[str, float | None], key_est: dict[str, float | None]) -> str:
    """What a plan spends in all (``plan_spend``), as the approval question says it."""
    seconds, regs, always, unknown = plan_spend(costs, labels, files, est, key_est)
    parts = []
    if labels:
        parts.append(f"{regs} registration(s) the labels start"
                     + (f" ({always} always-on, counted once)" if always else ""))
    if files:
        parts.append(f"{len(files)} file run(s)")
    return (f"est {seconds:g}s: " + " + ".join(parts)
            + (f"; {unknown} without est_time" if unknown else ""))


def _kind(o: Outside) -> str:
    if o.labels == []:
        return "needs no GPU run"
    if o.labels:
        return "needs " + ", ".join(o.labels)
    return o.reason


def render_text(report: AffectedReport, plan: object | None = None, limit: int = 12) -> str:
    """The human-readable report: the profile on the first line, a warning for
    uncommitted changes, the plan (a ``select.Plan``) first, then one short line per test
    (path, backend and hardware, est_time), hubs with the tests behind them, and the
    outside changes grouped by kind. Lists past ``limit`` rows are cut with a count."""
    changed = len({p for c in report.changed for p in (c.path, c.old_path) if p})
    out: list[str] = [f"Profile: {report.profile}. Base: merge base of {report.base} and HEAD"
                      + (" plus uncommitted changes" if report.worktree else "")
                      + f"; {changed} changed path(s); depth {report.depth}, hub limit "
                      f"{report.hub_limit}."]
    if report.profile == "defaults":
        out.append("Note: no profile found for this repository: generic rules apply "
                   "(pass --profile NAME, e.g. --profile miles).")
    if report.uncommitted:
        shown = ", ".join(report.uncommitted[:5]) + (" ..." if len(report.uncommitted) > 5
                                                     else "")
        out.append(f"WARNING: {len(report.uncommitted)} uncommitted path(s) are not traced "
                   f"({shown}); pass --include-worktree to trace them.")

    def section(title: str, lines: list[str]) -> None:
        out.append("")
        out.append(f"## {title}")
        if not lines:
            out.append("(none)")
            return
        out.extend(lines[:limit])
        if len(lines) > limit:
            out.append(f"... and {len(lines) - limit} more (--json lists all)")

    if plan is not None:
        p = plan
        mode = {"files": "run these files", "labels": "add labels",
                "nothing": "no GPU run"}.get(getattr(p, "mode", ""), getattr(p, "mode", ""))
        undecided = getattr(p, "undecided", [])
        if getattr(p, "mode", "") == "nothing" and undecided:
            mode = "none chosen: a person decides (labels, or no GPU CI needed)"
        lines = [f"Plan: {mode}"]
        lines += [f"  undecided: {u}" for u in undecided]
        comments = list(getattr(p, "comments", []))
        lines += [f"  comment: {c}  ({_est(report.file_est.get(c.split(' ', 1)[1]))})"
                  for c in comments]
        if comments:
            lines.append("  files total: " + files_total(
                [c.split(" ", 1)[1] for c in comments], report.file_est))
        costs = {c.label: c for c in report.costs}
        plan_labels = list(getattr(p, "labels", []))
        lines += [f"  label: {lab}" + (f"  (starts {cost_text(costs[lab])})" if lab in costs
                                       else "") for lab in plan_labels]
        if plan_labels:
            lines.append("  total: " + plan_total(
                report.costs, plan_labels, [c.split(" ", 1)[1] for c in comments],
                report.file_est, report.key_est))
        lines += [f"  why: {r}" for r in getattr(p, "reasons", [])]
        lines += [f"  judge: {j}" for j in getattr(p, "judgement", [])]
        out.append("")
        out.extend(lines)

    files = len({t.path for t in report.tests})
    section(f"Tests reached ({files} file(s), {len(report.tests)} registration(s))", [
        f"{t.path}  {t.backend}/{','.join(t.hardware) or '-'}  {_est(t.est_time)}"
        + ("  nightly" if t.nightly else "") + ("  disabled" if t.disabled else "")
        + ("" if t.on_pr else "  (no PR job)")
        # GPU and labeled tests first: the unlabeled CPU ones run on every PR anyway
        for t in sorted(report.tests, key=lambda t: (t.backend == "cpu" and not t.labels,
                                                      t.path))])
    flagged = {t.path: t.why for t in report.tests if t.why}
    section("Tests reached through a launch flag (no import says so)",
            [f"{p}  <- {why}" for p, why in sorted(flagged.items())]
            + [f"not followed (a hub: {len(e.tests)} tests pass the flag): {e.gate}"
               for e in report.flag_edges if not e.followed])
    costs = {c.label: c for c in report.costs}
    section("Labels (reached / all registrations they select; behind hubs; est. time)",
            [f"{c.label}  {c.reached - c.behind} / {c.all}"
             + (f"  (+{c.behind} behind hubs or the depth bound)" if c.behind else "")
             + (f"  {cost_text(costs[c.label])}" if c.label in costs else "")
             for c in report.labels])
    section("Nightly-only targets (no PR label runs them)",
            [n.rerun for n in report.nightly_only])
    section("Hubs (not followed; the tests behind them)", [
        f"{h.path}  {h.reach} CUDA tests; met: {h.met}"
        + ("; CI never takes this path" if not h.on_ci_path else "")
        + (f"; behind it: {', '.join(t.rsplit('@', 1)[0] for t in h.tests[:3])}"
           + (f" +{len(h.tests) - 3}" if len(h.tests) > 3 else "") if h.tests else "")
        for h in report.hubs])
    section("Importers left at the depth bound", [
        f"{f.importer} -> {f.imports}" + (f"  ({len(f.reaches)} more test(s))"
                                          if f.reaches else "")
        for f in report.frontier if f.reaches])
    groups: dict[str, list[str]] = {}
    for o in report.outside_trace:
        groups.setdefault(_kind(o), []).append(o.path)
    if report.no_gpu:
        groups["on the no-GPU allowlist (docs, markdown)"] = list(report.no_gpu)
    section("Changed paths outside the import trace, by kind", [
        f"{kind}: {len(paths)}: " + ", ".join(paths[:4]) + (" ..." if len(paths) > 4 else "")
        for kind, paths in groups.items()])
    section("Changed files the training entry points load",
            [f"{e.path}  <- {', '.join(e.entry_points)} ({e.hops} hop(s))"
             for e in report.entry_loads])
    section("Changed Python files nothing imports or names (entry points, or loaded some "
            "other way)", list(report.unimported))
    section("Changed modules imported from outside this repository",
            [f"{e.path}  <- {', '.join(e.importers)}: needs {', '.join(e.labels) or '?'}"
             for e in report.external])
    section("Changed lines that run only on Blackwell", list(report.blackwell_only))
    section("Suites the profile does not know", [
        f"suite {u.suite} is not in the profile ({u.backend}; started as {u.runner}): "
        + ", ".join(u.paths[:3]) + (f" +{len(u.paths) - 3}" if len(u.paths) > 3 else "")
        for u in report.unknown_suites])
    section("Test files whose registration cannot be read",
            [f"{u.path}  {u.reason}" for u in report.unreadable])
    return "\n".join(out) + "\n"
