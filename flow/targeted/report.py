"""The affected-tests report: its pydantic model and the text rendering.

One section per item of the seed's step 1. ``AffectedReport.model_dump(mode="json")`` is
the ``--json`` form; ``render_text`` is the default output of ``affected-tests``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from flow.targeted.config import Backend
from flow.targeted.gitdiff import ChangedFile
from flow.targeted.registrations import Unreadable


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


def _cell(value: object) -> str:
    if value is None or value == [] or value is False:
        return "-"
    if value is True:
        return "yes"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def render_text(report: AffectedReport) -> str:
    """The human-readable report: one titled section per seed item, empty ones saying so."""
    out: list[str] = [f"Affected tests since the merge base of {report.base} and HEAD; depth "
                      f"{report.depth}, hub limit {report.hub_limit}; "
                      f"{len(report.changed)} changed path(s)."]

    def section(title: str, lines: list[str]) -> None:
        out.append("")
        out.append(f"## {title}")
        out.extend(lines if lines else ["(none)"])

    section("Tests reached", [
        f"{t.path}  backend={t.backend} suite={t.suite} labels={_cell(t.labels)} "
        f"hardware={_cell(t.hardware)} nightly={_cell(t.nightly)} "
        f"est_time={_cell(t.est_time)} disabled={_cell(t.disabled)} "
        f"from={t.reached_from}" + (f" via={t.via}" if t.via else "") + f" hop={t.hop}"
        for t in report.tests])
    section("Ready-to-post /rerun-test lines", list(report.rerun))
    section("Labels (reached / all regular tests the label selects)",
            [f"{c.label}  {c.reached} / {c.all}" for c in report.labels])
    section("Nightly-only targets (no PR label runs them; keep their lines)",
            [n.rerun for n in report.nightly_only])
    section("Hubs (not followed)", [
        f"{h.path}  reaches {h.reach} CUDA tests; met: {h.met}"
        + ("" if h.on_ci_path else "; CI never takes this path")
        + (f"; note: {h.note}" if h.note else "")
        + ("; diff there only adds lines" if h.adds_only else "")
        + (f"; labeled CPU tests: {', '.join(h.cpu_tests)}" if h.cpu_tests else "")
        for h in report.hubs])
    section("Importers left at the depth bound (re-run with a larger --depth if they "
            "matter)", [f"{f.importer} -> {f.imports}"
                        + (f"  leads to {len(f.reaches)} more test(s)" if f.reaches else "")
                        for f in report.frontier])
    section("Changed paths outside the allowlist and the import trace (need labels)",
            [f"{o.path}  ({o.reason})" for o in report.outside_trace])
    section("Changed files the training entry points load",
            [f"{e.path}  <- {', '.join(e.entry_points)}" for e in report.entry_loads])
    section("Changed Python files nothing imports or names", list(report.unimported))
    section("Test files whose registration cannot be read (left out of the trace)",
            [f"{u.path}  {u.reason}" for u in report.unreadable])
    return "\n".join(out) + "\n"
