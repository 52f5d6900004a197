"""``affected_tests``: the registered CI tests a diff can reach, as an ``AffectedReport``.

The trace walks importers (reverse edges of ``import_graph``) breadth-first from the changed
files, at most ``depth`` hops, and does not follow hubs: files whose dependents reach more
than ``hub_limit`` enabled CUDA tests within ``depth`` hops. The bound keeps the trace
local; what it leaves unfollowed is reported, never silently dropped, and each hub lists
the tests behind it.

A registration is keyed ``path@suite``: what a PR label selects depends on the suite
(and so the hardware) it runs, and the config says which suites a PR workflow runs
(``TargetedConfig.pr_runs``).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from pathlib import Path

from flow.workflows.targeted.config import PathLabels, TargetedConfig, load_config
from flow.workflows.targeted.facts import FactsCache
from flow.workflows.targeted.gitdiff import ChangedFile, Git, GitReader
from flow.workflows.targeted.import_graph import ImportGraph, build_graph
from flow.workflows.targeted.paths import any_match
from flow.workflows.targeted.registrations import Registration, Unreadable, from_calls, is_test
from flow.workflows.targeted.report import (
    AffectedReport, EntryLoad, External, FlagEdgeFound, Frontier, Hub, LabelCost, LabelCount, NightlyTarget,
    Outside, ReachedTest, UnknownSuite,
)


def rerun_line(path: str) -> str:
    """The exact ``/rerun-test`` comment body for one test file."""
    return f"/rerun-test {path}"


def key_of(reg: Registration) -> str:
    """The registration's key: ``path@suite``."""
    return f"{reg.path}@{reg.suite}"


def actionable(reg: Registration, cfg: TargetedConfig) -> bool:
    """True when a PR must act to run ``reg`` and ``/rerun-test`` can: an enabled CUDA
    registration, or an enabled labeled CPU one (unlabeled CPU suites run on every PR)."""
    if not reg.enabled:
        return False
    if reg.backend == "cuda":
        return True
    return reg.backend == "cpu" and bool(reg.labels)


def label_only(reg: Registration, cfg: TargetedConfig) -> bool:
    """True for an enabled ROCm registration a PR workflow runs: only a label runs it
    (``/rerun-test`` supports CPU and CUDA)."""
    return reg.enabled and reg.backend == "rocm" and not reg.nightly and cfg.pr_runs(reg.suite)


def selects(label: str, reg: Registration, cfg: TargetedConfig) -> bool:
    """True when PR label ``label`` selects ``reg`` at regular cadence: never nightly or
    disabled, only on a suite a PR workflow runs, through the registration's labels (or
    a label rule, or a scope label such as ``run-ci-all``)."""
    if reg.nightly or not reg.enabled or not cfg.pr_runs(reg.suite):
        return False
    rule = cfg.labels.rules.get(label)
    if rule is not None:
        return (reg.suite in rule.suites or any_match(reg.path, rule.tests)
                or bool(set(rule.test_labels) & set(reg.labels)))
    scope = cfg.labels.scopes.get(label)
    if scope is not None:
        return bool(set(reg.labels) - set(scope.exclude))
    prefix = cfg.labels.prefix
    return label.startswith(prefix) and label[len(prefix):] in reg.labels


class _Reach:
    """Depth-bounded reverse reachability, memoised per start file."""

    def __init__(self, graph: ImportGraph, depth: int, importers=None) -> None:
        self.graph, self.depth = graph, depth
        self.importers = importers if importers is not None else graph.importers
        self.memo: dict[str, frozenset[str]] = {}

    def __call__(self, start: str) -> frozenset[str]:
        hit = self.memo.get(start)
        if hit is not None:
            return hit
        seen = {start}
        level = [start]
        for _ in range(self.depth):
            nxt = [i for n in level for i in self.importers(n) if i not in seen]
            seen.update(nxt)
            level = nxt
            if not level:
                break
        out = frozenset(seen)
        self.memo[start] = out
        return out


def _registrations(graph: ImportGraph, path: str,
                   cfg: TargetedConfig) -> list[Registration] | Unreadable:
    calls = graph.calls_of(path)
    if calls is None:
        return Unreadable(path=path, reason="unreadable file")
    return from_calls(path, calls, cfg)


def affected_tests(repo_dir: Path, base: str, depth: int = 3, hub_limit: int = 40,
                   config: TargetedConfig | None = None, *, git: GitReader | None = None,
                   cache_dir: Path | None = None, worktree: bool = False) -> AffectedReport:
    """Trace the diff ``<merge-base of base>...HEAD`` of ``repo_dir`` to the CI tests it
    reaches; with ``worktree`` the uncommitted changes too (untracked files included).

    ``config`` defaults to ``load_config(repo_dir)``; ``cache_dir`` keeps scanned facts
    between runs. Raises GitError (bad base, not a repository) and ConfigError; file
    content never raises: unreadable registrations are reported in the result. Without
    ``worktree`` the uncommitted paths are listed in ``uncommitted`` (not traced).
    """
    repo_dir = Path(repo_dir)
    cfg = config if config is not None else load_config(repo_dir)
    git = git if git is not None else Git()
    changed = git.changed(repo_dir, base, worktree)
    tracked = git.tracked(repo_dir, worktree)
    uncommitted = [] if worktree else git.uncommitted(repo_dir)
    present = set(tracked)
    gone = {p for c in changed for p in (c.path, c.old_path)
            if p and p not in present and p.endswith(".py")}
    cache = FactsCache(cache_dir)
    tests = {p for p in tracked if p.endswith(".py") and is_test(p, cfg)}

    regs: dict[str, list[Registration]] = {}
    unreadable: dict[str, Unreadable] = {}

    def under_pytest(graph: ImportGraph, path: str) -> bool:
        # How CI starts the file decides whether its conftests load: read from its
        # registrations' suites, or a script that calls pytest.main.
        got = _registrations(graph, path, cfg)
        if isinstance(got, Unreadable):
            unreadable[path] = got
            return True  # unknown: keep the conftest edge
        regs[path] = got
        # A suite the profile does not know starts as its backend's runner says; with no
        # runner known, only a pytest.main call loads the conftests (never a default).
        return (any(cfg.runner(r.suite, r.backend) == "pytest" for r in got)
                or graph.runs_pytest_main(path))

    graph = build_graph(repo_dir, tracked, cfg, cache, phantoms=gone, tests=tests,
                        under_pytest=under_pytest)
    cuda = {p for p, rs in regs.items() if any(r.backend == "cuda" and r.enabled for r in rs)}
    acting = {p for p, rs in regs.items()
              if any(actionable(r, cfg) or label_only(r, cfg) for r in rs)}
    cpu_acting = {p for p, rs in regs.items()
                  if any(actionable(r, cfg) and r.backend == "cpu" for r in rs)}
    no_gpu = sorted(p for p in _changed_paths(changed) if any_match(p, cfg.no_gpu))

    reg_changes = _registration_changes(repo_dir, base, worktree, git, changed, regs)
    reach = _Reach(graph, depth)
    # A test whose diff only touches its register_*_ci calls changed no code: what changed
    # is which suites and labels select it, which a label run shows and a file run does not.
    seeds = sorted({p for c in changed for p in (c.path, c.old_path)
                    if p and p in graph.nodes and p not in reg_changes})
    adds = {c.path: c.adds_only for c in changed}
    visited: dict[str, tuple[int, str, str | None]] = {s: (0, s, None) for s in seeds}
    hubs: list[Hub] = []
    frontier: list[Frontier] = []
    level = list(seeds)
    flags = _flag_edges(graph, cfg, reach, tests,
                        broad=lambda found: len(set(found) & cuda) > cfg.max_files)
    flag_why: dict[str, str] = {}
    for hop in range(depth + 1):
        nxt: list[str] = []
        for node in level:
            count = len(reach(node) & cuda)
            if count > hub_limit:
                behind = reach(node) & acting
                hubs.append(_hub(node, count, visited[node], adds, cfg,
                                 sorted(behind & cpu_acting),
                                 sorted(key_of(r) for p in behind for r in regs[p]
                                        if actionable(r, cfg) or label_only(r, cfg))))
                continue
            for imp in sorted(graph.importers(node)):
                if imp in visited:
                    continue
                if hop == depth:
                    if not any(f.importer == imp for f in frontier):
                        frontier.append(Frontier(importer=imp, imports=node, reaches=[]))
                    continue
                visited[imp] = (hop + 1, visited[node][1], node)
                nxt.append(imp)
            if flags is not None and node not in tests:
                # A test passing a flag that starts ``node`` runs it: it is reached at
                # node's hop (nothing is traced above a test, so the edge costs no hop).
                for test, why in flags.tests_starting(node).items():
                    if test not in visited:
                        visited[test] = (hop, visited[node][1], node)
                        flag_why[test] = why
        level = nxt
    # A flag more tests pass than fit the files names no specific path: like a hub met
    # where the trace met its module, with the tests passing it behind it.
    for e in (flags.edges if flags else []):
        if e["followed"] or e["module"] not in visited:
            continue
        hop, _, via = visited[e["module"]]
        behind = sorted(set(e["tests"]) & acting)
        hubs.append(Hub(path=e["module"], reach=len(set(e["tests"]) & cuda),
                        met=("changed" if hop == 0 else f"hop {hop} from {via}")
                        + f"; a launch flag: {e['gate']}", hop=hop, via=via,
                        cpu_tests=sorted(set(behind) & cpu_acting),
                        tests=sorted(key_of(r) for p in behind for r in regs[p]
                                     if actionable(r, cfg) or label_only(r, cfg))))
    reached = set(visited)
    for i, f in enumerate(frontier):
        more = reach(f.importer) & acting - reached
        frontier[i] = f.model_copy(update={
            "reaches": sorted(p for p in more if any(actionable(r, cfg) for r in regs[p])),
            "keys": sorted(key_of(r) for p in more for r in regs[p]
                           if actionable(r, cfg) or label_only(r, cfg))})

    behind_keys = ({k for h in hubs for k in h.tests} | {k for f in frontier for k in f.keys}
                   | {k for ks in reg_changes.values() for k in ks})
    rows = [ReachedTest(**_row(r, cfg), hop=visited[p][0],
                        reached_from=visited[p][1], via=visited[p][2], why=flag_why.get(p))
            for p in sorted(reached & set(regs)) for r in regs[p]]
    hit = sorted(reached & acting)
    runnable = [p for p in hit if any(actionable(r, cfg) for r in regs[p])]
    # every file a plan may post a /rerun-test for: reached, past the depth bound, behind hubs
    postable = (set(runnable) | {t for f in frontier for t in f.reaches}
                | {k.rsplit("@", 1)[0] for h in hubs for k in h.tests})
    report = AffectedReport(
        base=base, depth=depth, hub_limit=hub_limit, profile=cfg.source, changed=changed,
        no_gpu=no_gpu, uncommitted=uncommitted, worktree=worktree, tests=rows,
        rerun=[rerun_line(p) for p in runnable],
        labels=_labels(hit, regs, cfg, behind_keys),
        registration_changes=sorted(k for ks in reg_changes.values() for k in ks),
        nightly_only=[NightlyTarget(path=p, rerun=rerun_line(p)) for p in runnable
                      if all(r.nightly for r in regs[p] if actionable(r, cfg))],
        hubs=sorted(hubs, key=lambda h: (h.hop, h.path)),
        frontier=sorted(frontier, key=lambda f: f.importer),
        outside_trace=_outside(changed, graph, cfg),
        entry_loads=_entry_loads(changed, graph, cfg),
        unimported=_unimported(changed, graph, tests),
        unreadable=[unreadable[p] for p in sorted(reached & set(unreadable))],
        unknown_suites=_unknown_suites(regs, cfg),
        external=_external(changed, cfg),
        flag_edges=[FlagEdgeFound(**e) for e in (flags.edges if flags else [])],
        blackwell_only=_blackwell_only(repo_dir, base, worktree, git, changed),
        costs=(costs := label_costs(regs, cfg)),
        key_est=_key_est(regs, costs),
        always_on_keys=sorted(k for p in postable for r in regs.get(p, [])
                              if always_on(r, cfg) for k in [key_of(r)]),
        file_est=_file_est(postable, regs, cfg),
        file_runs={p: sorted(key_of(r) for r in regs.get(p, []) if r.enabled and not r.nightly
                             and cfg.pr_runs(r.suite) and r.backend in ("cpu", "cuda"))
                   for p in sorted(postable)},
    )
    graph.remember()
    cache.save()  # after the last scan
    return report


def _flag_edges(graph: ImportGraph, cfg: TargetedConfig, reach: _Reach,
                tests: set[str], broad):
    """The launch-flag edges of this trace (``flags.FlagEdges``), or None when the profile
    turns learning off and writes none by hand."""
    if not cfg.learn_flag_edges and not cfg.flag_edges:
        return None
    from flow.workflows.targeted.flags import FlagEdges

    learn = cfg.learn_flag_edges
    # the top folders holding tests: their files consume the runtime, they do not start it
    sides = {g.split("/", 1)[0] for g in cfg.tests if "/" in g and "*" not in g.split("/")[0]}
    return FlagEdges(
        importers=graph.importers if learn else (lambda _: ()), data=graph.data_of,
        # the files passing a flag reach their tests by import, not through a conftest
        # (a fixture module spelling a flag does not launch every test below it)
        resolve=graph.resolver.imports, reach=_Reach(graph, reach.depth, graph.loaders),
        tests=tests,
        gates_of=graph.gates_of, files=lambda: graph.py, manual=cfg.flag_edges,
        test_side=lambda p: p.split("/", 1)[0] in sides,
        plain_imports=graph.deps_of, broad=broad, passes=graph.passes_flag)


def _registration_changes(repo_dir: Path, base: str, worktree: bool, git: GitReader,
                          changed: list[ChangedFile],
                          regs: dict[str, list[Registration]]) -> dict[str, list[str]]:
    """``{test path: keys of the registrations whose lines changed}`` for modified test
    files whose every changed line lies inside a registration call."""
    paths = [c.path for c in changed if c.status == "M" and c.old_path is None
             and any(r.span for r in regs.get(c.path, ()))]
    if not paths:
        return {}
    lines = git.changed_lines(repo_dir, base, paths, worktree)
    out: dict[str, list[str]] = {}
    for path in paths:
        touched = lines.get(path, set())
        spans = [r for r in regs[path] if r.span]
        if touched and all(any(r.span[0] <= n <= r.span[1] for r in spans) for n in touched):
            out[path] = sorted(key_of(r) for r in spans
                               if any(r.span[0] <= n <= r.span[1] for n in touched))
    return out


def _file_est(paths: set[str], regs: dict[str, list[Registration]],
              cfg: TargetedConfig) -> dict[str, float | None]:
    """What ``/rerun-test <path>`` costs: the ``est_time`` of the file's enabled CPU or
    CUDA registration (the one the rerun workflow resolves the file to; with several,
    their sum), None when none of them carries one."""
    out: dict[str, float | None] = {}
    for path in sorted(paths):
        runs = [r for r in regs.get(path, []) if actionable(r, cfg)]
        known = [float(r.est_time) for r in runs if r.est_time is not None]
        out[path] = sum(known) if runs and len(known) == len(runs) else None
    return out


def _row(reg: Registration, cfg: TargetedConfig) -> dict[str, object]:
    row = reg.model_dump(exclude={"implicit", "span"})
    if not row["hardware"]:
        row["hardware"] = [cfg.hardware(reg.suite, reg.backend)]
    row["runner"] = cfg.runner(reg.suite, reg.backend) or "unknown"
    row["on_pr"] = cfg.pr_runs(reg.suite)
    return row


def _hub(node: str, count: int, seen: tuple[int, str, str | None],
         adds: dict[str, bool | None], cfg: TargetedConfig, cpu_tests: list[str],
         tests: list[str]) -> Hub:
    hop, _, via = seen
    note = next((n for n in cfg.hub_notes if any_match(node, [n.path])), None)
    return Hub(path=node, reach=count, met="changed" if hop == 0 else f"hop {hop} from {via}",
               hop=hop, via=via, note=note.note if note else None,
               on_ci_path=note.on_ci_path if note else True, adds_only=adds.get(node),
               cpu_tests=cpu_tests, tests=tests)


def _labels(hit: list[str], regs: dict[str, list[Registration]], cfg: TargetedConfig,
            behind_hubs: set[str]) -> list[LabelCount]:
    """Every label that selects a reached registration or one behind a hub, as reached
    (both kinds) of all it selects; keys are ``path@suite``."""
    reached = {key_of(r) for p in hit for r in regs[p]}
    keys_hit = reached | behind_hubs
    candidates = {cfg.labels.prefix + lab for rs in regs.values() for r in rs
                  if key_of(r) in keys_hit for lab in r.labels}
    candidates |= set(cfg.labels.rules) | set(cfg.labels.scopes)
    out: list[LabelCount] = []
    for label in sorted(candidates):
        every = sorted(key_of(r) for rs in regs.values() for r in rs if selects(label, r, cfg))
        mine = [k for k in every if k in keys_hit]
        if mine:
            out.append(LabelCount(label=label, reached=len(mine), all=len(every), tests=mine,
                                  behind=len([k for k in mine if k not in reached])))
    return out


def always_on(reg: Registration, cfg: TargetedConfig) -> bool:
    """True for a registration every PR Test run starts whatever its labels: an enabled
    regular CPU registration declaring no labels, on a suite a PR workflow runs."""
    return (reg.backend == "cpu" and not reg.labels and reg.enabled and not reg.nightly
            and cfg.pr_runs(reg.suite))


def label_costs(regs: dict[str, list[Registration]], cfg: TargetedConfig) -> list[LabelCost]:
    """Every label that selects a registration at regular cadence, with the number it
    starts and their summed ``est_time`` (for the approval question): the registrations
    it selects, and the always-on ones (``labels=[]``) that every PR Test run starts."""
    every = [r for rs in regs.values() for r in rs]
    names = {cfg.labels.prefix + lab for r in every for lab in r.labels}
    names |= set(cfg.labels.rules) | set(cfg.labels.scopes) | set(cfg.labels.fallback)
    names |= {lab for e in cfg.external_imports for lab in e.labels}
    names |= {lab for p in cfg.labels.paths for lab in p.labels}
    regular = [r for r in every if not r.nightly and r.enabled and cfg.pr_runs(r.suite)]
    on = [r for r in regular if always_on(r, cfg)]
    on_est = float(sum(r.est_time or 0 for r in on))
    on_unknown = sum(1 for r in on if r.est_time is None)
    by_label: dict[str, list[Registration]] = {}
    for r in regular:  # a plain prefix label selects the registrations carrying it
        for lab in r.labels:
            by_label.setdefault(cfg.labels.prefix + lab, []).append(r)
    out: list[LabelCost] = []
    for label in sorted(names):
        if label in cfg.labels.rules or label in cfg.labels.scopes:
            chosen = [r for r in regular if selects(label, r, cfg)]
        else:
            chosen = by_label.get(label, [])
        chosen = [r for r in chosen if not always_on(r, cfg)]
        if chosen:
            out.append(LabelCost(label=label, registrations=len(chosen) + len(on),
                                 est_time=float(sum(r.est_time or 0 for r in chosen)) + on_est,
                                 unknown=sum(1 for r in chosen if r.est_time is None)
                                 + on_unknown, always_on=len(on), always_on_est=on_est,
                                 keys=sorted(key_of(r) for r in chosen)))
    return out


def _key_est(regs: dict[str, list[Registration]], costs: list[LabelCost]) -> dict[str, float | None]:
    keys = {k for c in costs for k in c.keys}
    return {key_of(r): (float(r.est_time) if r.est_time is not None else None)
            for rs in regs.values() for r in rs if key_of(r) in keys}


def _unknown_suites(regs: dict[str, list[Registration]],
                    cfg: TargetedConfig) -> list[UnknownSuite]:
    """Suites registrations name that the profile does not map, with their files."""
    found: dict[tuple[str, str], list[str]] = {}
    for path, rs in regs.items():
        for r in rs:
            if not cfg.known_suite(r.suite):
                found.setdefault((r.suite, r.backend), []).append(path)
    return [UnknownSuite(suite=s, backend=b,  # type: ignore[arg-type]
                         runner=cfg.runner(s, b) or "unknown", paths=sorted(set(ps)))
            for (s, b), ps in sorted(found.items())]


def _external(changed: list[ChangedFile], cfg: TargetedConfig) -> list[External]:
    """Changed modules the profile says code outside this repository imports."""
    out: list[External] = []
    for p in sorted(_changed_paths(changed)):
        rule = next((e for e in cfg.external_imports if any_match(p, [e.path])), None)
        if rule is not None:
            out.append(External(path=p, importers=list(rule.importers),
                                labels=list(rule.labels), why=rule.why))
    return out


def _blackwell_only(repo_dir: Path, base: str, worktree: bool, git: GitReader,
                    changed: list[ChangedFile]) -> list[str]:
    """Modified Python files whose every changed line runs only on Blackwell."""
    from flow.workflows.targeted.blackwell import may_gate, only_blackwell

    sources: dict[str, bytes] = {}
    for c in changed:
        if c.status == "M" and c.path.endswith(".py"):
            try:
                data = (repo_dir / c.path).read_bytes()
            except OSError:
                continue
            if may_gate(data):  # most files spell no capability test: no parse, no diff
                sources[c.path] = data
    if not sources:
        return []
    lines = git.changed_lines(repo_dir, base, sorted(sources), worktree)
    out: list[str] = []
    for path, source in sorted(sources.items()):
        if only_blackwell(source, lines.get(path, set())):
            out.append(path)
    return out


def _outside(changed: list[ChangedFile], graph: ImportGraph,
             cfg: TargetedConfig) -> list[Outside]:
    out: dict[str, str] = {}
    for c in changed:
        for p in (c.path, c.old_path):
            if not p or p in out or any_match(p, cfg.no_gpu):
                continue
            if p.endswith(".py"):
                if not any_match(p, cfg.allowlist) and not any_match(p, cfg.entry_points):
                    out[p] = "Python outside the allowlist"
            elif p not in graph.nodes:
                out[p] = "non-Python file"
    rows = []
    for p, reason in sorted(out.items()):
        rule = path_rule(p, cfg)
        rows.append(Outside(path=p, reason=reason, labels=rule.labels if rule else None,
                            why=rule.why if rule else ""))
    return rows


def path_rule(path: str, cfg: TargetedConfig) -> PathLabels | None:
    """The first ``labels.paths`` rule matching ``path``, or None."""
    return next((r for r in cfg.labels.paths if any_match(path, [r.path])), None)


def _hops_from(graph: ImportGraph, start: str) -> dict[str, int]:
    """Import hops from ``start`` to every file it loads (breadth first)."""
    seen = {start: 0}
    level = [start]
    while level:
        nxt = []
        for node in level:
            for dep in graph.deps_of(node):
                if dep not in seen:
                    seen[dep] = seen[node] + 1
                    nxt.append(dep)
        level = nxt
    return seen


def _entry_loads(changed: list[ChangedFile], graph: ImportGraph,
                 cfg: TargetedConfig) -> list[EntryLoad]:
    paths = _changed_paths(changed)  # a changed entry point itself is 0 hops away
    loads: dict[str, list[str]] = {}
    hops: dict[str, int] = {}
    for entry in cfg.entry_points:
        if entry in graph.nodes:
            dist = _hops_from(graph, entry)
            for p in sorted(set(dist) & paths):
                loads.setdefault(p, []).append(entry)
                hops[p] = min(hops.get(p, dist[p]), dist[p])
    return [EntryLoad(path=p, entry_points=e, hops=hops[p]) for p, e in sorted(loads.items())]


def _changed_paths(changed: Iterable[ChangedFile]) -> set[str]:
    return {p for c in changed for p in (c.path, c.old_path) if p}


def _unimported(changed: list[ChangedFile], graph: ImportGraph, tests: set[str]) -> list[str]:
    return sorted(c.path for c in changed
                  if c.status != "D" and c.path in graph.nodes and c.path not in tests
                  and posixpath.basename(c.path) != "conftest.py"
                  and not graph.importers(c.path))
