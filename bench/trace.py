"""Bench: trace a generated 2,000-module repository cold and warm, against grimp; or a real
checkout against git and ``ast`` (``--repo-dir``).

Runnable on its own: ``python bench/trace.py [--modules 2000] [--repeat 3]``, or
``python bench/trace.py --repo-dir CLONE [--base HEAD~20]`` (target: a cold
trace plus plan of CLONE's ``--base...HEAD`` no slower than ``git diff --name-status BASE``
plus reading and ``ast.parse`` of every tracked ``.py`` file, measured side by side; the
profile is the one ``load_config`` detects). Prints one JSON object: wall seconds, and CPU
seconds (user + system, children included: git, the scan's forked child) with
``cold_cpu_ratio``, the machine's load average before and after the rounds, best of
``--repeat`` rounds each.

Targets: cold trace <= 3x ``grimp.build_graph`` on the same tree in
the same run, warm trace (content cache hit) <= 1x. ``grimp`` runs with ``cache_dir=None``
(its own cache off) so both sides read every file; its cached time is reported too. Every
figure is the best of ``--repeat`` runs; on a shared machine grimp's own time varies by
half from run to run, so compare ratios from one run.

What is measured besides the two targets: ``scan_all_s`` (the lexer over every file, one
process), ``ast_all_s`` (``ast.parse`` of every file, the parse alone, for scale: the old facts
walked each tree too, which cost about twice the parse again),
``graph_*`` (the full graph, every file resolved) and ``trace_after_one_edit_s`` (a warm
cache after one file changed: its facts are rescanned and importers resolved again, since
a file's importers depend on every file's content).

Where the cold time goes: a depth-3 trace of this tree reaches nearly every file (each
visited file's hub count looks ``depth`` more hops out), so the cold trace scans all of
them (in two processes on a machine with two cores) and resolves most.
"""

from __future__ import annotations

import argparse
import ast
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import orjson  # noqa: E402

from flow.workflows.targeted.config import TargetedConfig  # noqa: E402
from flow.workflows.targeted.facts import FactsCache, scan_facts  # noqa: E402
from flow.workflows.targeted.gitdiff import Git  # noqa: E402
from flow.workflows.targeted.import_graph import build_graph  # noqa: E402
from flow.workflows.targeted.trace import affected_tests  # noqa: E402

PKG = "benchpkg"
_BODY = '''

def f{i}(x: int) -> int:
    """Helper {i}: see {ref} and the docs for details."""
    if x > {i}:
        return x - {i}
    return helper_{i}(x) + {i}


def helper_{i}(x: int) -> int:
    values = [x * k for k in range(10)]
    message = "value %d out of range for {name}" % x
    return sum(values) if message else 0


class Thing{i}:
    NAME = "{name}"

    def run(self, *args: object) -> str:
        return "--flag-{i} " + self.NAME
'''


def generate(root: Path, n_modules: int, seed: int = 7) -> list[str]:
    """Write ``n_modules`` modules in 20 subpackages plus one test per 10 modules; return the
    module paths. Imports are absolute, relative and ``from pkg import module`` forms."""
    rng = random.Random(seed)
    per = n_modules // 20
    names = [(f"sub{s:02d}", f"mod{m:03d}") for s in range(20) for m in range(per)]
    (root / PKG).mkdir(parents=True)
    (root / PKG / "__init__.py").write_text("")
    paths: list[str] = []
    for s in range(20):
        (root / PKG / f"sub{s:02d}").mkdir()
        (root / PKG / f"sub{s:02d}" / "__init__.py").write_text("")
    for idx, (sub, mod) in enumerate(names):
        lines = ['"""Generated module for the trace bench."""', "from __future__ import annotations",
                 "import os", "import typing"]
        for _ in range(rng.randint(2, 5)):
            osub, omod = names[rng.randrange(max(1, idx))] if idx else names[0]
            if (osub, omod) == (sub, mod):
                continue
            form = rng.randrange(3)
            if form == 0:
                lines.append(f"import {PKG}.{osub}.{omod}")
            elif form == 1 and osub == sub:
                lines.append(f"from . import {omod}")
            else:
                lines.append(f"from {PKG}.{osub} import {omod}")
        ref = ".".join((PKG, *names[rng.randrange(len(names))]))
        text = "\n".join(lines) + _BODY.format(i=idx, ref=ref, name=mod)
        rel = f"{PKG}/{sub}/{mod}.py"
        (root / rel).write_text(text)
        paths.append(rel)
    (root / "tests").mkdir()
    for t in range(n_modules // 10):
        sub, mod = names[rng.randrange(len(names))]
        (root / "tests" / f"test_{t:04d}.py").write_text(
            f"from {PKG}.{sub} import {mod}\n"
            f"register_cuda_ci(est_time=60, suite='stage-b', labels=['l{t % 7}'])\n"
            f"def test_it():\n    assert {mod}\n")
    return paths


def _git(root: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.invalid",
           "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.invalid",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "-C", str(root), "-c", "commit.gpgsign=false", *args], check=True,
                   capture_output=True, env=env)


def _best(fn, repeat: int, setup=None) -> float:
    """The shortest of ``repeat`` timed calls of ``fn``; ``setup`` runs before each, untimed."""
    times = []
    for _ in range(repeat):
        if setup is not None:
            setup()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def _cpu() -> float:
    """CPU seconds (user + system) of this process and of its children waited for so far
    (git, the scan's forked child)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _timed(fn, setup=None) -> tuple[float, float]:
    """``(wall, cpu)`` seconds of one call of ``fn``; ``setup`` runs before it, untimed."""
    if setup is not None:
        setup()
    wall, cpu = time.perf_counter(), _cpu()
    fn()
    return time.perf_counter() - wall, _cpu() - cpu


def real_repo(repo: Path, base: str, repeat: int) -> dict[str, object]:
    """Cold and warm trace (with the plan) of ``base...HEAD`` of ``repo`` against the
    baseline: ``git diff --name-status base`` plus read + ``ast.parse`` of every .py."""
    from flow.workflows.targeted.config import load_config
    from flow.workflows.targeted.select import choose

    cfg = load_config(repo)
    tracked = Git().tracked(repo)
    py = [p for p in tracked if p.endswith(".py")]

    def diff() -> None:
        subprocess.run(["git", "-C", str(repo), "diff", "--name-status", base], check=True,
                       capture_output=True)

    def parse_all() -> None:
        for rel in py:
            try:
                ast.parse((repo / rel).read_bytes())
            except (SyntaxError, ValueError):
                pass

    tmp = Path(tempfile.mkdtemp(prefix="trace-real-"))
    try:
        def run() -> None:
            choose(affected_tests(repo, base, config=cfg, cache_dir=tmp / "cache"), cfg)

        # The two sides interleaved, one round each at a time: on a shared machine the load
        # changes from minute to minute, and timing one side's rounds after the other's
        # compares two different machines. CPU time (user + system, children included) is
        # kept beside wall time: it moves less with the load, though a loaded machine's
        # shared caches inflate it too.
        load_before = os.getloadavg()
        diffs, asts, colds = [], [], []
        for _ in range(repeat):
            diffs.append(_timed(diff))
            asts.append(_timed(parse_all))
            colds.append(_timed(run, setup=lambda: shutil.rmtree(tmp / "cache",
                                                                 ignore_errors=True)))
        diff_s, ast_s, cold = (min(w for w, _ in x) for x in (diffs, asts, colds))
        diff_cpu, ast_cpu, cold_cpu = (min(c for _, c in x) for x in (diffs, asts, colds))
        load_after = os.getloadavg()
        run()
        warm = _best(run, repeat)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    baseline, baseline_cpu = diff_s + ast_s, diff_cpu + ast_cpu
    return {"repo": str(repo), "base": base, "profile": cfg.source, "py_files": len(py),
            "git_diff_s": round(diff_s, 4), "ast_parse_all_s": round(ast_s, 4),
            "baseline_s": round(baseline, 4), "trace_cold_s": round(cold, 4),
            "trace_warm_s": round(warm, 4), "cold_ratio": round(cold / baseline, 2),
            "baseline_cpu_s": round(baseline_cpu, 4), "trace_cold_cpu_s": round(cold_cpu, 4),
            "cold_cpu_ratio": round(cold_cpu / baseline_cpu, 2),
            "met": cold <= baseline, "cpus": os.cpu_count(), "repeat": repeat,
            "load_avg_1m": [round(load_before[0], 2), round(load_after[0], 2)]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--modules", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--repo-dir", help="a real checkout to trace instead of a generated tree")
    ap.add_argument("--base", default="HEAD~20", help="with --repo-dir: the base revision")
    args = ap.parse_args()
    if args.repo_dir:
        out = real_repo(Path(args.repo_dir).resolve(), args.base, args.repeat)
        print(orjson.dumps(out, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode())
        return
    import grimp

    tmp = Path(tempfile.mkdtemp(prefix="trace-bench-"))
    try:
        repo = tmp / "repo"
        repo.mkdir()
        paths = generate(repo, args.modules)
        _git(repo, "init", "-q", "-b", "main")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", "base")
        base = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True,
                              capture_output=True, text=True).stdout.strip()
        changed = repo / paths[len(paths) // 2]
        changed.write_text(changed.read_text() + "\nEXTRA = 1\n")
        _git(repo, "commit", "-q", "-am", "change")
        sys.path.insert(0, str(repo))
        cfg = TargetedConfig()
        tracked = Git().tracked(repo)

        grimp_cold = _best(lambda: grimp.build_graph(PKG, cache_dir=None), args.repeat)
        gcache = tmp / "grimp-cache"
        grimp.build_graph(PKG, cache_dir=str(gcache))
        grimp_warm = _best(lambda: grimp.build_graph(PKG, cache_dir=str(gcache)), args.repeat)

        sources = [(repo / p).read_bytes() for p in tracked if p.endswith(".py")]
        scan_all = _best(lambda: [scan_facts(s) for s in sources], args.repeat)
        ast_all = _best(lambda: [ast.parse(s) for s in sources], args.repeat)
        cold_graph = _best(lambda: build_graph(repo, tracked, cfg, FactsCache(None)).complete(),
                           args.repeat)

        cold_trace = _best(lambda: affected_tests(repo, base, config=cfg, cache_dir=tmp / "cache"),
                           args.repeat,
                           setup=lambda: shutil.rmtree(tmp / "cache", ignore_errors=True))
        cold_parsed = len(FactsCache(tmp / "cache").entries)
        affected_tests(repo, base, config=cfg, cache_dir=tmp / "cache")
        warm_trace = _best(lambda: affected_tests(repo, base, config=cfg,
                                                  cache_dir=tmp / "cache"), args.repeat)

        def fresh_warm_copy() -> None:  # the warm cache as it was, for each timed run
            shutil.rmtree(tmp / "edit-cache", ignore_errors=True)
            shutil.copytree(tmp / "cache", tmp / "edit-cache")

        def trace_after_edit() -> None:  # warm cache, one file edited since it was written
            affected_tests(repo, base, config=cfg, cache_dir=tmp / "edit-cache")

        edited = repo / paths[0]
        original = edited.read_bytes()
        edited.write_bytes(original + b"\nEDITED = 2\n")
        edit_trace = _best(trace_after_edit, args.repeat, setup=fresh_warm_copy)
        edited.write_bytes(original)
        full = tmp / "full-cache"
        warm_cache = FactsCache(full)
        build_graph(repo, tracked, cfg, warm_cache).complete()
        warm_cache.save()
        warm_graph = _best(lambda: build_graph(repo, tracked, cfg, FactsCache(full)).complete(),
                           args.repeat)
        report = affected_tests(repo, base, config=cfg, cache_dir=tmp / "cache")
        out = {
            "modules": len(paths), "files": len(tracked), "cpus": os.cpu_count(),
            "grimp_cold_s": round(grimp_cold, 4), "grimp_warm_s": round(grimp_warm, 4),
            "scan_all_s": round(scan_all, 4), "ast_all_s": round(ast_all, 4),
            "graph_cold_s": round(cold_graph, 4), "graph_warm_s": round(warm_graph, 4),
            "trace_cold_s": round(cold_trace, 4), "trace_warm_s": round(warm_trace, 4),
            "trace_after_one_edit_s": round(edit_trace, 4),
            "cold_ratio": round(cold_trace / grimp_cold, 2),
            "warm_ratio": round(warm_trace / grimp_cold, 2),
            "warm_ratio_vs_grimp_cached": round(warm_trace / grimp_warm, 2),
            "targets": {"cold_ratio_max": 3.0, "warm_ratio_max": 1.0},
            "met": {"cold": cold_trace <= 3 * grimp_cold, "warm": warm_trace <= grimp_cold},
            "cold_sources_parsed": cold_parsed,
            "tests_reached": len({t.path for t in report.tests}),
            "hubs": len(report.hubs), "frontier": len(report.frontier),
        }
        print(orjson.dumps(out, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
