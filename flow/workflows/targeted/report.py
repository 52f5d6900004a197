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
    runner: str = "pytest"  # how CI starts the file: pytest, or python (python3 file.py)
    on_pr: bool = True  # a PR workflow job runs its suite (False: nightly-only, no job)
    hop: int
    reached_from: str
    via: str | None


class LabelCount(_Row):
    """A PR label selecting reached regular registrations: ``reached`` of ``all`` it
    selects. ``tests`` are registration keys ``path@suite``: a label covers a test only on
    the suites (hardware) it runs, so ``run-ci-amd`` covering ``x.py@stage-c-4-gpu-mi350``
    does not cover ``x.py@stage-b-2-gpu-h200``."""

    label: str
    reached: int
    all: int
    tests: list[str]


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


def _est(value: int | float | None) -> str:
    if value is None:
        return "est ?"
    return f"est {value:g}s"


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
        lines = [f"Plan: {mode}"]
        lines += [f"  comment: {c}" for c in getattr(p, "comments", [])]
        lines += [f"  label: {lab}" for lab in getattr(p, "labels", [])]
        lines += [f"  why: {r}" for r in getattr(p, "reasons", [])]
        lines += [f"  judge: {j}" for j in getattr(p, "judgement", [])]
        out.append("")
        out.extend(lines)

    section(f"Tests reached ({len({t.path for t in report.tests})})", [
        f"{t.path}  {t.backend}/{','.join(t.hardware) or '-'}  {_est(t.est_time)}"
        + ("  nightly" if t.nightly else "") + ("  disabled" if t.disabled else "")
        + ("" if t.on_pr else "  (no PR job)")
        # GPU and labeled tests first: the unlabeled CPU ones run on every PR anyway
        for t in sorted(report.tests, key=lambda t: (t.backend == "cpu" and not t.labels,
                                                      t.path))])
    section("Labels (reached / all registrations they select)",
            [f"{c.label}  {c.reached} / {c.all}" for c in report.labels])
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
    section("Changed Python files nothing imports or names", list(report.unimported))
    section("Test files whose registration cannot be read",
            [f"{u.path}  {u.reason}" for u in report.unreadable])
    return "\n".join(out) + "\n"
