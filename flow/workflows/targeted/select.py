"""The seed's step 2 as a pure function: run files one by one, add a few labels, or
nothing.

``choose(report, cfg) -> Plan``, never empty. ``nothing`` when every changed path is on
the no-GPU allowlist, or the change reaches no GPU or labeled CPU test and needs no label
(the reason says which). Files (one exact ``/rerun-test <path>`` comment each) are the
default; ROCm registrations reached ride along as the labels that select them (a
``/rerun-test`` runs CPU and CUDA only). The change is broad, and labels are chosen, when:

- it reaches more than ``cfg.max_files`` files (tests one hop past the depth bound run
  only when no GPU test within the bound reaches the change and they fit; beside tests
  that do, they are named for judgement with their price: the trace does not show they
  run the changed code, and a dense import graph reaches every e2e test at a fixpoint);
- a hub on CI's path is touched or met within ``cfg.near_hub_hops`` hops (the tests
  behind it join the ones to cover);
- a changed path outside the trace has a profile rule asking for labels (or none: the
  fallback); a rule with no labels says no GPU run exercises that path;
- the entry-point fan-out: a changed file within ``cfg.entry_core_hops`` imports of a
  training entry point runs on every training run (broad). A file deeper in the entry
  points' static closure (``train.py`` loads most of ``miles/``) is a specific code path:
  the tests the trace reaches are the ones exercising it, so files mode stands; only when
  no GPU test reaches it do its domain's labels (``labels.paths``, else the fallback)
  run it.

Labels cover registrations on the suites (hardware) they run: the smallest domain-label
set, or a scope label past ``labels.max_domain`` labels. Blackwell-specific changes add
the Blackwell label when the profile has one.
"""

from __future__ import annotations

from itertools import combinations
from typing import Literal

from pydantic import BaseModel, ConfigDict

from flow.workflows.targeted.config import TargetedConfig
from flow.workflows.targeted.paths import any_match
from flow.workflows.targeted.report import AffectedReport, LabelCount
from flow.workflows.targeted.trace import path_rule, rerun_line

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
    # Changed paths nothing traces to a test and the config names no labels for: a
    # ``nothing`` plan with any of them is a question for a person (labels, or "no GPU CI
    # needed"), never an answer by itself.
    undecided: list[str] = []


def _regular(report: AffectedReport) -> list[str]:
    # Reached registrations some PR label can select: enabled, not nightly, on a suite a
    # PR workflow runs, and needing action (GPU, or labeled CPU). Keys are path@suite.
    return sorted({f"{t.path}@{t.suite}" for t in report.tests
                   if not t.nightly and not t.disabled and t.on_pr
                   and (t.backend in ("cuda", "rocm") or (t.backend == "cpu" and t.labels))})


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


def _scope_or_cover(want: set[str], labels: list[LabelCount], cfg: TargetedConfig) -> list[str]:
    """The domain-label cover of ``want``; past ``labels.max_domain`` labels, the scope
    label selecting the fewest registrations that covers as much."""
    chosen = cover(sorted(want), labels, [*cfg.labels.never, *cfg.labels.scopes])
    if len(chosen) <= cfg.labels.max_domain:
        return chosen
    covered = {t for c in labels if c.label in chosen for t in c.tests}
    scopes = [c for c in labels if c.label in cfg.labels.scopes
              and covered <= set(c.tests) and c.label not in cfg.labels.never]
    if scopes:
        return [min(scopes, key=lambda c: (c.all, c.label)).label]
    return chosen


def choose(report: AffectedReport, cfg: TargetedConfig) -> Plan:
    """Pick files, labels, or nothing for ``report`` following the seed's step 2, as the
    repository's CI really runs (see the module docstring). Never raises, and never
    returns an empty plan: ``files`` has comments, ``labels`` has at least one label, and
    ``nothing`` says why no GPU run is needed, or names in ``undecided`` the untraced
    files only a person can judge."""
    undecided: list[str] = []
    plan = _within_scope(_choose(report, cfg, undecided), cfg)
    return plan.model_copy(update={"undecided": sorted(set(undecided))}) if undecided else plan


def _within_scope(plan: Plan, cfg: TargetedConfig) -> Plan:
    """The plan without the labels a scope label beside them already selects: with
    ``run-ci-all`` (every label) or ``run-ci-image`` (all but its excluded ones), a
    narrower ``run-ci-x`` selects nothing more, and each added label restarts PR Test.
    A scope whose exclusions cover another's is dropped beside it the same way."""
    scopes = [s for s in plan.labels if s in cfg.labels.scopes]
    if not scopes:
        return plan
    prefix = cfg.labels.prefix
    keep: list[str] = []
    dropped: list[str] = []
    for lab in plan.labels:
        if lab in cfg.labels.scopes:
            mine = set(cfg.labels.scopes[lab].exclude)
            wider = [s for s in scopes if s != lab
                     and set(cfg.labels.scopes[s].exclude) < mine
                     or (s < lab and set(cfg.labels.scopes[s].exclude) == mine)]
        elif lab.startswith(prefix) and lab not in cfg.labels.rules:
            wider = [s for s in scopes
                     if lab[len(prefix):] not in cfg.labels.scopes[s].exclude]
        else:
            wider = []
        if wider:
            dropped.append(f"{lab} ({wider[0]} selects it)")
        else:
            keep.append(lab)
    if not dropped:
        return plan
    return plan.model_copy(update={
        "labels": keep,
        "judgement": [*plan.judgement, "not added, since a scope label beside them selects "
                      "nothing less and each label restarts PR Test: " + ", ".join(dropped)]})


def _choose(report: AffectedReport, cfg: TargetedConfig, undecided: list[str]) -> Plan:
    reasons: list[str] = []
    judgement: list[str] = []
    changed = sorted({p for c in report.changed for p in (c.path, c.old_path) if p})
    if not changed:
        return Plan(mode="nothing", comments=[], labels=[], judgement=[],
                    reasons=["no GPU CI needed: the diff changes nothing"])
    if set(changed) <= set(report.no_gpu):
        return Plan(mode="nothing", comments=[], labels=[], judgement=[],
                    reasons=["no GPU CI needed: every changed path is on the no-GPU "
                             "allowlist (" + ", ".join(changed[:3])
                             + (", ..." if len(changed) > 3 else "") + ")"])
    rerun = set(report.rerun)
    want = set(_regular(report))
    behind: set[str] = set()  # registrations behind near hubs
    required: list[str] = []  # labels the profile's path rules ask for
    needed: list[str] = []  # why these labels are needed (not broad by themselves)
    for h in report.hubs:
        if not h.on_ci_path:
            # GPU CI never runs it; the labeled CPU tests below it are how CI exercises it.
            rerun |= {rerun_line(t) for t in h.cpu_tests}
            judgement.append(f"hub {h.path} ({h.met}) not counted: CI never takes this path"
                             + (f"; {h.note}" if h.note else ""))
        elif h.hop <= cfg.near_hub_hops:
            reasons.append(f"hub {h.path} met: {h.met} ({len(h.tests)} test(s) behind it)")
            behind |= set(h.tests)
            if h.adds_only:
                judgement.append(f"the diff at hub {h.path} only adds lines: if it adds "
                                 "something only the listed files read, files may suffice")
    extra = sorted({t for f in report.frontier for t in f.reaches})
    gpu_reached = any(t.backend in ("cuda", "rocm") and not t.disabled for t in report.tests)
    if extra and not gpu_reached and not behind and len(rerun) + len(extra) <= cfg.max_files:
        # Nothing within the bound runs the change on a GPU: the tests one hop past it
        # are its nearest consumers (a kernel reached through a model definition), so
        # they run while they fit.
        rerun |= {rerun_line(t) for t in extra}
        judgement.append(f"{len(extra)} test(s) past the depth bound added, since no GPU "
                         "test within it reaches the change: " + ", ".join(extra))
    elif extra:
        # Beside tests that do reach the change, the ones past the bound are named with
        # their price, never run by themselves: the trace does not show that they run
        # the changed code (on miles they mostly do not), and the bound is the trace's
        # locality rule (a dense graph reaches every e2e test at a fixpoint).
        known = [report.file_est.get(t) for t in extra]
        price = sum(e for e in known if e)
        judgement.append(
            f"{len(extra)} more test(s) lie past the depth bound {report.depth} (est "
            f"{price:g}s" + (f", {sum(1 for e in known if not e)} unknown" if not all(known)
                            else "") + "), not run: the trace does not show they run the "
            "changed code; re-run with a larger --depth if they matter: "
            + ", ".join(extra[:5]) + (f" +{len(extra) - 5}" if len(extra) > 5 else ""))
    for o in report.outside_trace:
        labels = o.labels if o.labels is not None else cfg.labels.fallback
        if o.labels == []:
            judgement.append(f"{o.path}: {o.why or 'needs no GPU run'}")
            continue
        if not labels:  # no rule and no fallback: the config cannot say; a person must
            reasons.append(f"{o.path} is outside the import trace ({o.reason})")
            judgement.append(f"choose domain labels for {o.path}: the config names none")
            undecided.append(o.path)
            continue
        needed.append(f"{o.path} is outside the import trace ({o.reason}"
                      + (f"; {o.why}" if o.why else "") + "): " + ", ".join(labels))
        required += labels
    if report.registration_changes:
        labels = cover(report.registration_changes, report.labels,
                       [*cfg.labels.never, *cfg.labels.scopes])
        if labels:
            needed.append("only the CI registrations of "
                          + ", ".join(report.registration_changes)
                          + " changed: a run under " + ", ".join(labels)
                          + " shows which suites select them")
            required += labels
        else:
            judgement.append("registrations changed that no PR label selects: "
                             + ", ".join(report.registration_changes))
    gpu_hit = {t.path for t in report.tests if t.backend in ("cuda", "rocm")
               and not t.disabled}
    for e in report.entry_loads:
        if e.hops <= cfg.entry_core_hops:
            reasons.append(f"{e.path} is on every training run: "
                           f"{', '.join(e.entry_points)} load(s) it {e.hops} hop(s) away")
            if not gpu_hit:
                required += _path_labels(e.path, cfg)
        elif not gpu_hit:
            # Loaded deep in the entry points' closure and named by no GPU test: the e2e
            # runs of its domain execute it.
            labels = _path_labels(e.path, cfg)
            needed.append(f"{e.path} is loaded by {', '.join(e.entry_points)} "
                          f"({e.hops} hops) and no GPU test names its code path: "
                          + ", ".join(labels))
            required += labels
        else:
            judgement.append(f"{e.path} is loaded by {', '.join(e.entry_points)} "
                             f"({e.hops} hops): the listed tests are those naming its path")
    _unreached(report, cfg, needed, required, judgement, reasons, undecided)
    for e in report.external:
        needed.append(f"{e.path} is imported by path outside this repository ("
                      + ", ".join(e.importers) + "): the trace cannot see those importers"
                      + (f"; {e.why}" if e.why else "") + ": " + (", ".join(e.labels) or "?"))
        required += e.labels
        if not e.labels:
            judgement.append(f"choose the e2e tests of the models that use {e.path}: the "
                             "profile names no label for its outside importers")
            undecided.append(e.path)
    near = ({t.path for t in report.tests}
            | {k.rsplit("@", 1)[0] for h in report.hubs for k in h.tests}
            | {k.rsplit("@", 1)[0] for f in report.frontier for k in f.keys})
    for u in report.unknown_suites:
        if not near & set(u.paths):
            continue  # reported with the trace; no test of this change runs on it
        judgement.append(f"suite {u.suite} is not in the profile: no PR job is known to run "
                         f"it and its files start as {u.runner} ({len(u.paths)} file(s), e.g. "
                         f"{u.paths[0]}); add it to the profile's suites")
    for p in report.blackwell_only:
        if cfg.labels.blackwell:
            reasons.append(f"the changed lines of {p} run only on Blackwell")
        else:
            judgement.append(f"the changed lines of {p} run only on Blackwell (compute "
                             "capability 10+): no run this plan starts executes them, and no "
                             "PR suite has Blackwell runners; test them on a Blackwell machine")
    if len(rerun) > cfg.max_files:
        reasons.append(f"{len(rerun)} files exceed {cfg.max_files}")
    blackwell = sorted(p for p in changed if cfg.blackwell_paths
                       and any_match(p.lower(), cfg.blackwell_paths))
    if cfg.labels.blackwell:
        blackwell = sorted(set(blackwell) | set(report.blackwell_only))
    rocm = {k for k in want if _is_rocm(k, report)}

    if not blackwell and not reasons:
        labels = _scope_or_cover(rocm, report.labels, cfg) if rocm else []
        if labels:
            judgement.append("ROCm registrations reached run only under a label: "
                             + ", ".join(sorted(rocm)))
        labels = sorted(set(labels) | set(required))
        labels = [lab for lab in labels if lab not in cfg.labels.never]
        if not rerun and not labels:
            return Plan(mode="nothing", comments=[], labels=[], judgement=judgement,
                        reasons=[_why_nothing(report, cfg)])
        if not rerun:
            return Plan(mode="labels", comments=[], labels=labels, judgement=judgement,
                        reasons=needed)
        rerun, twice = not_twice(rerun, labels, report)
        if twice:
            judgement.append("not posted as /rerun-test, since the plan's labels run them: "
                             + ", ".join(twice))
        if not rerun:
            return Plan(mode="labels", comments=[], labels=labels, judgement=judgement,
                        reasons=needed)
        return Plan(mode="files", comments=sorted(rerun), labels=labels, judgement=judgement,
                    reasons=[f"{len(rerun)} file(s), no hub near, nothing broad", *needed])
    reasons += needed
    # Behind a hub lies most of the suite: cover it with domain labels when a few do;
    # otherwise the fallback smoke label runs the general path, and a person may widen it.
    labels = cover(sorted(want | behind), report.labels, [*cfg.labels.never, *cfg.labels.scopes])
    if behind and len(labels) > cfg.labels.max_domain:
        labels = _scope_or_cover(want, report.labels, cfg) + list(cfg.labels.fallback)
        scope = sorted(cfg.labels.scopes)
        judgement.append(f"{len(behind)} test(s) lie behind the hub(s): the plan runs the "
                         f"fallback {', '.join(cfg.labels.fallback) or '(none)'}; add "
                         f"{' or '.join(scope) or 'the domain labels'} if the change alters "
                         "what every one of them does")
    elif len(labels) > cfg.labels.max_domain:
        labels = _scope_or_cover(want, report.labels, cfg)
    covered = {t for c in report.labels if c.label in labels for t in c.tests}
    if labels:  # any label's PR Test run starts the always-on (labels=[]) registrations
        covered |= set(report.always_on_keys)
    labels = sorted(set(labels) | set(required))
    if not labels:
        labels = sorted(set(cfg.labels.fallback))
        if labels:
            judgement.append("no reached test carries a label: the fallback "
                             + ", ".join(labels) + " runs the general path")
    # Nightly-only targets and registrations no label selects keep their /rerun-test lines.
    keep = sorted({n.path for n in report.nightly_only}
                  | {k.rsplit("@", 1)[0] for k in want - covered
                     if not _is_rocm(k, report) and rerun_line(k.rsplit("@", 1)[0]) in rerun})
    if blackwell and cfg.labels.blackwell:
        reasons.append(f"Blackwell-specific code changed: {', '.join(blackwell)}")
        labels = sorted(set(labels) | {cfg.labels.blackwell})
    labels = [lab for lab in labels if lab not in cfg.labels.never]
    if not labels:  # no label to propose: run the files rather than return an empty plan
        if not rerun:  # broad, and nothing to run it with: only a person can say
            undecided += [p for p in changed if p not in report.no_gpu]
        return Plan(mode="files" if rerun else "nothing", comments=sorted(rerun), labels=[],
                    judgement=judgement + ["no label is configured for this broad change"],
                    reasons=reasons if rerun else [
                        "no GPU run chosen: the change is broad but the config names no "
                        "label for it (" + "; ".join(reasons) + "); judge by hand"])
    return Plan(mode="labels", comments=[rerun_line(p) for p in keep], labels=labels,
                reasons=reasons, judgement=judgement)


def not_twice(rerun: set[str], labels: list[str],
               report: AffectedReport) -> tuple[set[str], list[str]]:
    """The ``/rerun-test`` lines minus the files the plan's labels already run on every
    suite they are registered on (posting both runs the file twice), and those files."""
    covered = {t for c in report.labels if c.label in labels for t in c.tests}
    if labels:  # any label's PR Test run starts the always-on (labels=[]) registrations
        covered |= set(report.always_on_keys)
    keep: set[str] = set()
    twice: list[str] = []
    for line in sorted(rerun):
        path = line.split(" ", 1)[1]
        # past the depth bound too: the file's own registrations, not only reached rows
        keys = set(report.file_runs.get(path, [])) or {
            f"{t.path}@{t.suite}" for t in report.tests if t.path == path
            and not t.disabled and not t.nightly and t.on_pr and t.backend != "rocm"}
        if keys and keys <= covered:
            twice.append(path)
        else:
            keep.add(line)
    return keep, twice


def _unreached(report: AffectedReport, cfg: TargetedConfig, needed: list[str],
               required: list[str], judgement: list[str], reasons: list[str],
               undecided: list[str]) -> None:
    """Changed Python files nothing imports or names (the seed: "entry points, or code
    loaded some other way") never make a plan say "nothing": the profile's path rule for
    them, else the fallback labels, run them, and the plan says why; a rule with no labels
    says why no GPU run is needed; with neither, a person must choose (``undecided``)."""
    handled = ({e.path for e in report.entry_loads} | {o.path for o in report.outside_trace}
               | set(report.no_gpu) | {e.path for e in report.external})
    for p in report.unimported:
        if p in handled:
            continue
        rule = path_rule(p, cfg)
        if rule is not None and not rule.labels:
            judgement.append(f"{p}: nothing imports or names it; {rule.why}")
            continue
        labels = list(rule.labels) if rule is not None else list(cfg.labels.fallback)
        if not labels:
            reasons.append(f"{p}: nothing imports or names it (an entry point, or code "
                           "loaded some other way)")
            judgement.append(f"choose labels for {p}: the config names none")
            undecided.append(p)
            continue
        needed.append(f"{p}: nothing imports or names it (an entry point, or code loaded "
                      "some other way), so no test run is known to load it: "
                      + ", ".join(labels))
        judgement.append(f"find how {p} is loaded (a launcher, a plugin registry, a path "
                         "built at run time) and run the tests of its callers if "
                         + ", ".join(labels) + " does not exercise it")
        required += labels


def _is_rocm(key: str, report: AffectedReport) -> bool:
    path, _, suite = key.rpartition("@")
    return any(t.path == path and t.suite == suite and t.backend == "rocm"
               for t in report.tests)


def _path_labels(path: str, cfg: TargetedConfig) -> list[str]:
    rule = path_rule(path, cfg)
    return list(rule.labels) if rule is not None else list(cfg.labels.fallback)


def _why_nothing(report: AffectedReport, cfg: TargetedConfig) -> str:
    """The reason a plan of nothing gives, naming the profile rules it rests on."""
    ruled = [(p, rule.why) for p in report.unimported
             if (rule := path_rule(p, cfg)) is not None and not rule.labels]
    ruled += [(o.path, o.why) for o in report.outside_trace]
    rules = ("; the profile's rules say the untraced paths need no GPU run ("
             + "; ".join(f"{p}: {why}" for p, why in ruled[:3])
             + (f"; and {len(ruled) - 3} more" if len(ruled) > 3 else "") + ")") if ruled else ""
    cpu = sorted({t.path for t in report.tests if t.backend == "cpu" and not t.labels})
    if cpu:
        return (f"no GPU CI needed: the change reaches only {len(cpu)} unlabeled CPU "
                "test(s), which run on every PR" + rules)
    if report.outside_trace and not report.unimported:
        return ("no GPU CI needed: the changed paths outside the trace need no GPU run ("
                + "; ".join(f"{o.path}: {o.why}" for o in report.outside_trace[:3]) + ")")
    return "no GPU CI needed: no registered test reaches the change" + rules
