"""The seed's step 2 as a pure function: run files one by one, or add a few labels.

``choose(report, cfg) -> Plan``. Files (one exact ``/rerun-test <path>`` comment each) are
the default; the change is broad, and labels are chosen, when it reaches more than
``cfg.max_files`` files, a hub on CI's path is touched or met within
``cfg.near_hub_hops`` hops, an importer left at the depth bound leads to more tests, a
changed path is outside the trace, or a changed file is on a training entry path.
Blackwell-specific changes always take labels plus the Blackwell label, because a
``/rerun-test`` runs only on the test's (usually Hopper) home suite.
"""

from __future__ import annotations

from itertools import combinations
from typing import Literal

from pydantic import BaseModel, ConfigDict

from flow.targeted.config import TargetedConfig
from flow.targeted.paths import any_match
from flow.targeted.report import AffectedReport, LabelCount
from flow.targeted.trace import rerun_line

_EXACT_LIMIT = 16  # candidate labels up to which the minimal cover is searched exactly


class Plan(BaseModel):
    """What to spend runners on. ``comments`` are exact PR comment bodies, one per file;
    ``labels`` are PR labels to add; ``judgement`` lists what the trace cannot decide and a
    human or agent must (an empty list means the plan is complete as given)."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["files", "labels", "nothing"]
    comments: list[str]
    labels: list[str]
    reasons: list[str]
    judgement: list[str]


def _regular(report: AffectedReport) -> list[str]:
    # Reached files some PR label can select: an enabled, non-nightly, actionable row.
    return sorted({t.path for t in report.tests if not t.nightly and not t.disabled
                   and (t.backend == "cuda" or (t.backend == "cpu" and t.labels))})


def cover(universe: list[str], labels: list[LabelCount], never: list[str]) -> list[str]:
    """The smallest set of labels whose reached tests cover ``universe`` as far as any label
    can, preferring a high reached/all ratio, then fewer tests run; deterministic."""
    cands = [c for c in labels if c.label not in never and set(c.tests) & set(universe)]
    want = set(universe) & {t for c in cands for t in c.tests}
    if not want:
        return []

    def rank(combo: tuple[LabelCount, ...]) -> tuple[float, int, list[str]]:
        ratio = sum(c.reached / c.all for c in combo) / len(combo)
        return (-ratio, sum(c.all for c in combo), [c.label for c in combo])

    if len(cands) <= _EXACT_LIMIT:
        for size in range(1, len(cands) + 1):
            fits = [combo for combo in combinations(cands, size)
                    if want <= {t for c in combo for t in c.tests}]
            if fits:
                return sorted(c.label for c in min(fits, key=rank))
    chosen: list[LabelCount] = []  # greedy beyond the exact limit
    left = set(want)
    while left:
        best = max(cands, key=lambda c: (len(left & set(c.tests)), c.reached / c.all,
                                         -c.all, c.label))
        chosen.append(best)
        left -= set(best.tests)
    return sorted(c.label for c in chosen)


def choose(report: AffectedReport, cfg: TargetedConfig) -> Plan:
    """Pick files or labels for ``report`` following the seed's step 2. Never raises."""
    reasons: list[str] = []
    judgement: list[str] = []
    rerun = set(report.rerun)
    for h in report.hubs:
        if not h.on_ci_path:
            # GPU CI never runs it; the labeled CPU tests below it are how CI exercises it.
            rerun |= {rerun_line(t) for t in h.cpu_tests}
            judgement.append(f"hub {h.path} ({h.met}) not counted: CI never takes this path"
                             + (f"; {h.note}" if h.note else ""))
        elif h.hop <= cfg.near_hub_hops:
            reasons.append(f"hub {h.path} met: {h.met}")
            if h.adds_only:
                judgement.append(f"the diff at hub {h.path} only adds lines: if it adds "
                                 "something only the listed files read, files may suffice")
    for f in report.frontier:
        if f.reaches:
            reasons.append(f"{f.importer} left at depth {report.depth} leads to "
                           f"{len(f.reaches)} more test(s)")
    for o in report.outside_trace:
        reasons.append(f"{o.path} is outside the import trace ({o.reason})")
    for e in report.entry_loads:
        reasons.append(f"{e.path} is loaded by {', '.join(e.entry_points)}")
    if report.entry_loads:
        judgement.append("add the domain labels of the training paths the change touches")
    if len(rerun) > cfg.max_files:
        reasons.append(f"{len(rerun)} files exceed {cfg.max_files}")
    changed = {p for c in report.changed for p in (c.path, c.old_path) if p}
    blackwell = sorted(p for p in changed if any_match(p.lower(), cfg.blackwell_paths))

    if not blackwell and not reasons:
        if not rerun:
            return Plan(mode="nothing", comments=[], labels=[], judgement=judgement,
                        reasons=["no enabled GPU test or labeled CPU test is reached"])
        return Plan(mode="files", comments=sorted(rerun), labels=[], judgement=judgement,
                    reasons=[f"{len(rerun)} file(s), no hub near, nothing left at the "
                             "depth bound"])
    regular = _regular(report)
    labels = cover(regular, report.labels, cfg.labels.never)
    covered = {t for c in report.labels if c.label in labels for t in c.tests}
    # Nightly-only targets and files no label selects keep their /rerun-test lines.
    keep = sorted({n.path for n in report.nightly_only} | (set(regular) - covered))
    if blackwell:
        reasons.append(f"Blackwell-specific code changed: {', '.join(blackwell)}")
        labels = sorted(set(labels) | {cfg.labels.blackwell})
    if not covered and report.outside_trace:
        judgement.append("no reached test carries a label: choose domain labels for "
                         + ", ".join(o.path for o in report.outside_trace))
    labels = [lab for lab in labels if lab not in cfg.labels.never]
    return Plan(mode="labels", comments=[rerun_line(p) for p in keep], labels=labels,
                reasons=reasons, judgement=judgement)
