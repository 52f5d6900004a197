"""``affected_tests``: the registered CI tests a diff can reach, as an ``AffectedReport``.

The trace walks importers (reverse edges of ``import_graph``) breadth-first from the changed
files, at most ``depth`` hops, and does not follow hubs: files whose dependents reach more
than ``hub_limit`` enabled CUDA tests within ``depth`` hops. The bound keeps the trace
local; what it leaves unfollowed is reported, never silently dropped.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from pathlib import Path

from flow.targeted.config import TargetedConfig, load_config
from flow.targeted.facts import FactsCache
from flow.targeted.gitdiff import ChangedFile, Git, GitReader
from flow.targeted.import_graph import ImportGraph, build_graph
from flow.targeted.paths import any_match
from flow.targeted.registrations import Registration, Unreadable, from_calls, is_test
from flow.targeted.report import (AffectedReport, EntryLoad, Frontier, Hub, LabelCount,
                                  NightlyTarget, Outside, ReachedTest)


def rerun_line(path: str) -> str:
    """The exact ``/rerun-test`` comment body for one test file."""
    return f"/rerun-test {path}"


def actionable(reg: Registration, cfg: TargetedConfig) -> bool:
    """True when a PR must act to run ``reg``: an enabled CUDA registration, or an enabled
    labeled CPU one (unlabeled CPU suites run on every PR)."""
    if not reg.enabled:
        return False
    if reg.backend == "cuda":
        return True
    return reg.backend == "cpu" and bool(reg.labels)


def selects(label: str, reg: Registration, cfg: TargetedConfig) -> bool:
    """True when PR label ``label`` selects ``reg`` at regular cadence (never nightly)."""
    if reg.nightly or not reg.enabled:
        return False
    rule = cfg.labels.rules.get(label)
    if rule is not None:
        return (reg.suite in rule.suites or any_match(reg.path, rule.tests)
                or bool(set(rule.test_labels) & set(reg.labels)))
    prefix = cfg.labels.prefix
    return label.startswith(prefix) and label[len(prefix):] in reg.labels


class _Reach:
    """Depth-bounded reverse reachability, memoised per start file."""

    def __init__(self, graph: ImportGraph, depth: int) -> None:
        self.graph, self.depth = graph, depth
        self.memo: dict[str, frozenset[str]] = {}

    def __call__(self, start: str) -> frozenset[str]:
        hit = self.memo.get(start)
        if hit is not None:
            return hit
        seen = {start}
        level = [start]
        for _ in range(self.depth):
            nxt = [i for n in level for i in self.graph.importers(n) if i not in seen]
            seen.update(nxt)
            level = nxt
            if not level:
                break
        out = frozenset(seen)
        self.memo[start] = out
        return out


def affected_tests(repo_dir: Path, base: str, depth: int = 3, hub_limit: int = 40,
                   config: TargetedConfig | None = None, *, git: GitReader | None = None,
                   cache_dir: Path | None = None) -> AffectedReport:
    """Trace the diff ``<merge-base of base>...HEAD`` of ``repo_dir`` to the CI tests it reaches.

    ``config`` defaults to ``load_config(repo_dir)``; ``cache_dir`` keeps scanned facts
    between runs. Raises GitError (bad base, not a repository) and ConfigError; file
    content never raises: unreadable registrations are reported in the result.
    """
    repo_dir = Path(repo_dir)
    cfg = config if config is not None else load_config(repo_dir)
    git = git if git is not None else Git()
    changed = git.changed(repo_dir, base)
    tracked = git.tracked(repo_dir)
    present = set(tracked)
    gone = {p for c in changed for p in (c.path, c.old_path)
            if p and p not in present and p.endswith(".py")}
    cache = FactsCache(cache_dir)
    tests = {p for p in tracked if p.endswith(".py") and is_test(p, cfg)}
    graph = build_graph(repo_dir, tracked, cfg, cache, phantoms=gone, tests=tests)

    regs: dict[str, list[Registration]] = {}
    unreadable: dict[str, Unreadable] = {}
    for path in sorted(tests):
        calls = graph.calls_of(path)
        got = from_calls(path, calls, cfg) if calls is not None else Unreadable(
            path=path, reason="unreadable file")
        if isinstance(got, Unreadable):
            unreadable[path] = got
        else:
            regs[path] = got
    cuda = {p for p, rs in regs.items() if any(r.backend == "cuda" and r.enabled for r in rs)}
    acting = {p for p, rs in regs.items() if any(actionable(r, cfg) for r in rs)}
    cpu_acting = {p for p, rs in regs.items()
                  if any(actionable(r, cfg) and r.backend == "cpu" for r in rs)}

    reach = _Reach(graph, depth)
    seeds = sorted({p for c in changed for p in (c.path, c.old_path)
                    if p and p in graph.nodes})
    adds = {c.path: c.adds_only for c in changed}
    visited: dict[str, tuple[int, str, str | None]] = {s: (0, s, None) for s in seeds}
    hubs: list[Hub] = []
    frontier: list[Frontier] = []
    level = list(seeds)
    for hop in range(depth + 1):
        nxt: list[str] = []
        for node in level:
            count = len(reach(node) & cuda)
            if count > hub_limit:
                hubs.append(_hub(node, count, visited[node], adds, cfg,
                                 sorted(reach(node) & cpu_acting)))
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
        level = nxt
    reached = set(visited)
    for i, f in enumerate(frontier):
        frontier[i] = f.model_copy(update={"reaches": sorted((reach(f.importer) & acting)
                                                             - reached)})

    rows = [ReachedTest(**r.model_dump(exclude={"implicit"}), hop=visited[p][0],
                        reached_from=visited[p][1], via=visited[p][2])
            for p in sorted(reached & set(regs)) for r in regs[p]]
    hit = sorted(reached & acting)
    report = AffectedReport(
        base=base, depth=depth, hub_limit=hub_limit, changed=changed, tests=rows,
        rerun=[rerun_line(p) for p in hit],
        labels=_labels(hit, regs, cfg),
        nightly_only=[NightlyTarget(path=p, rerun=rerun_line(p)) for p in hit
                      if all(r.nightly for r in regs[p] if actionable(r, cfg))],
        hubs=sorted(hubs, key=lambda h: (h.hop, h.path)),
        frontier=sorted(frontier, key=lambda f: f.importer),
        outside_trace=_outside(changed, graph, cfg),
        entry_loads=_entry_loads(changed, graph, cfg),
        unimported=_unimported(changed, graph, tests),
        unreadable=[unreadable[p] for p in sorted(reached & set(unreadable))],
    )
    graph.remember()
    cache.save()  # after the last scan
    return report


def _hub(node: str, count: int, seen: tuple[int, str, str | None],
         adds: dict[str, bool | None], cfg: TargetedConfig, cpu_tests: list[str]) -> Hub:
    hop, _, via = seen
    note = next((n for n in cfg.hub_notes if any_match(node, [n.path])), None)
    return Hub(path=node, reach=count, met="changed" if hop == 0 else f"hop {hop} from {via}",
               hop=hop, via=via, note=note.note if note else None,
               on_ci_path=note.on_ci_path if note else True, adds_only=adds.get(node),
               cpu_tests=cpu_tests)


def _labels(hit: list[str], regs: dict[str, list[Registration]],
            cfg: TargetedConfig) -> list[LabelCount]:
    candidates = {cfg.labels.prefix + lab for p in hit for r in regs[p] for lab in r.labels}
    candidates |= set(cfg.labels.rules)
    hit_set = set(hit)
    out: list[LabelCount] = []
    for label in sorted(candidates):
        every = sorted(p for p, rs in regs.items() if any(selects(label, r, cfg) for r in rs))
        mine = [p for p in every if p in hit_set]
        if mine:
            out.append(LabelCount(label=label, reached=len(mine), all=len(every), tests=mine))
    return out


def _outside(changed: list[ChangedFile], graph: ImportGraph,
             cfg: TargetedConfig) -> list[Outside]:
    out: dict[str, str] = {}
    for c in changed:
        for p in (c.path, c.old_path):
            if not p or p in out:
                continue
            if p.endswith(".py"):
                if not any_match(p, cfg.allowlist) and not any_match(p, cfg.entry_points):
                    out[p] = "Python outside the allowlist"
            elif p not in graph.nodes:
                out[p] = "non-Python file"
    return [Outside(path=p, reason=r) for p, r in sorted(out.items())]


def _closure(graph: ImportGraph, start: str) -> set[str]:
    seen = {start}
    stack = [start]
    while stack:
        for dep in graph.deps_of(stack.pop()):
            if dep not in seen:
                seen.add(dep)
                stack.append(dep)
    return seen


def _entry_loads(changed: list[ChangedFile], graph: ImportGraph,
                 cfg: TargetedConfig) -> list[EntryLoad]:
    paths = _changed_paths(changed)
    loads: dict[str, list[str]] = {}
    for entry in cfg.entry_points:
        if entry in graph.nodes:
            for p in sorted(_closure(graph, entry) & paths):
                loads.setdefault(p, []).append(entry)
    return [EntryLoad(path=p, entry_points=e) for p, e in sorted(loads.items())]


def _changed_paths(changed: Iterable[ChangedFile]) -> set[str]:
    return {p for c in changed for p in (c.path, c.old_path) if p}


def _unimported(changed: list[ChangedFile], graph: ImportGraph, tests: set[str]) -> list[str]:
    return sorted(c.path for c in changed
                  if c.status != "D" and c.path in graph.nodes and c.path not in tests
                  and posixpath.basename(c.path) != "conftest.py"
                  and not graph.importers(c.path))
