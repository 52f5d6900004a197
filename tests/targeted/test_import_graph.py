"""The import graph: one case per import form the seed names, and the forms real trees use."""

from __future__ import annotations

import pytest

from flow.workflows.targeted.config import TargetedConfig
from flow.workflows.targeted.facts import FactsCache
from flow.workflows.targeted.gitdiff import Git
from flow.workflows.targeted.import_graph import build_graph

PKG = {"pkg/__init__.py": "", "pkg/sub/__init__.py": "", "pkg/sub/mod.py": "def fn(): ...\n",
       "pkg/util.py": "X = 1\n", "pkg/loss.py": "def my_loss(): ...\n",
       "tools/x.py": "print(1)\n", "scripts/models/qwen3-4B.sh": "ARGS=1\n",
       "scripts/models/qwen3-4B-base.sh": "ARGS=2\n"}

# (name, importer path, importer source, the file the importer must depend on)
CASES = [
    ("absolute import", "app.py", "import pkg.util\n", "pkg/util.py"),
    ("absolute import runs the package __init__", "app.py", "import pkg.sub.mod\n",
     "pkg/sub/__init__.py"),
    ("from pkg import module", "app.py", "from pkg.sub import mod\n", "pkg/sub/mod.py"),
    ("from pkg import name", "app.py", "from pkg.util import X\n", "pkg/util.py"),
    ("relative from . import x", "pkg/sub/other.py", "from . import mod\n", "pkg/sub/mod.py"),
    ("relative from .. import x", "pkg/sub/other.py", "from .. import util\n", "pkg/util.py"),
    ("relative from .x import *", "pkg/sub/other.py", "from .mod import *\n",
     "pkg/sub/mod.py"),
    ("relative from ..sub.mod import", "pkg/deep/leaf.py", "from ..sub.mod import fn\n",
     "pkg/sub/mod.py"),
    ("bare import of a sibling on sys.path", "tests/e2e/test_a.py",
     "import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\nimport helper\n",
     "tests/e2e/helper.py"),
    ("relative import in a non-importable dir", "tests/fast-gpu/test_a.py",
     "from .helper import thing\n", "tests/fast-gpu/helper.py"),
    ("dotted function path in a string", "tests/test_a.py",
     'ARGS = "--custom-loss-function-path pkg.loss.my_loss"\n', "pkg/loss.py"),
    ("dotted module path with colon", "tests/test_a.py", 'E = "pkg.sub.mod:fn"\n',
     "pkg/sub/mod.py"),
    ("python tools/x.py subprocess", "tests/test_a.py",
     'import subprocess\nsubprocess.run("python tools/x.py --n 1", shell=False)\n',
     "tools/x.py"),
    ("sibling loaded by file name", "tests/e2e/test_a.py",
     "import importlib.util, pathlib\nspec = importlib.util.spec_from_file_location(\n"
     "    'h', pathlib.Path(__file__).parent / 'helper.py')\n", "tests/e2e/helper.py"),
    ("importlib.import_module literal", "app.py",
     "import importlib\nm = importlib.import_module('pkg.util')\n", "pkg/util.py"),
    ("__import__ literal", "app.py", "m = __import__('pkg.util')\n", "pkg/util.py"),
    ("model name in a string", "tests/test_a.py", 'M = "--model-name Qwen3-4B"\n',
     "scripts/models/qwen3-4B.sh"),
    ("model variant -5layer", "tests/test_a.py", 'M = "Qwen3-4B-5layer"\n',
     "scripts/models/qwen3-4B.sh"),
    ("model variant _lora", "tests/test_a.py", 'M = "qwen3-4B_lora"\n',
     "scripts/models/qwen3-4B.sh"),
    ("longest model stem wins", "tests/test_a.py", 'M = "qwen3-4B-base_lora"\n',
     "scripts/models/qwen3-4B-base.sh"),
    ("conftest reaches tests below it", "tests/unit/deep/test_a.py", "X = 1\n",
     "tests/conftest.py"),
]


@pytest.mark.parametrize("name,src,text,target", CASES, ids=[c[0] for c in CASES])
def test_import_form_makes_edge(repo, name, src, text, target):
    """Each import form the seed names yields an edge, seen from both ends (the lazy
    importer lookup's byte prefilter must not miss it)."""
    files = dict(PKG)
    files.update({"tests/e2e/helper.py": "H = 1\n", "tests/fast-gpu/helper.py": "H = 1\n",
                  "tests/conftest.py": "import pytest\n", src: text})
    repo.commit(files)
    graph = build_graph(repo.path, Git().tracked(repo.path), TargetedConfig())
    assert (True, True) == (target in graph.deps_of(src), src in graph.importers(target))


NEGATIVE = [
    ("unknown third-party import", "app.py", "import numpy.linalg\n", "pkg/util.py"),
    ("word in prose is no module", "app.py", '"""pkg is great."""\n', "pkg/__init__.py"),
    ("model prefix without separator", "tests/test_a.py", 'M = "qwen3-4Bx"\n',
     "scripts/models/qwen3-4B.sh"),
    ("conftest does not reach tests beside its parent", "other/test_a.py", "X = 1\n",
     "tests/conftest.py"),
]


@pytest.mark.parametrize("name,src,text,target", NEGATIVE, ids=[c[0] for c in NEGATIVE])
def test_non_reference_makes_no_edge(repo, name, src, text, target):
    """Text that only looks like a reference does not create an edge."""
    files = dict(PKG)
    files.update({"tests/conftest.py": "", src: text})
    repo.commit(files)
    graph = build_graph(repo.path, Git().tracked(repo.path), TargetedConfig())
    assert (False, False) == (target in graph.deps_of(src), src in graph.importers(target))


def test_warm_cache_skips_scanning(repo, tmp_path, monkeypatch):
    """A second build over unchanged files takes every file's facts from the cache."""
    repo.commit(dict(PKG))
    tracked = Git().tracked(repo.path)
    cache = FactsCache(tmp_path / "cache")
    cold = build_graph(repo.path, tracked, TargetedConfig(), cache).complete()
    cache.save()
    import flow.workflows.targeted.import_graph as graph_mod

    def refuse(*_args: object) -> dict:
        raise AssertionError("scanned on a warm cache")

    monkeypatch.setattr(graph_mod, "scan_facts", refuse)
    monkeypatch.setattr(graph_mod, "scan_many", refuse)
    warm = build_graph(repo.path, tracked, TargetedConfig(), FactsCache(tmp_path / "cache"))
    assert cold == warm.complete()


def test_a_cache_that_json_cannot_hold_is_not_written_and_raises_nothing(tmp_path) -> None:
    """A value with no JSON form among the cached calls (a set literal an argument passes)
    leaves the cache unwritten, costing only a re-scan, never a traceback."""
    cache = FactsCache(tmp_path / "cache")
    cache.calls["abc"] = [{"args": {"labels": {"run-ci-short"}}}]  # type: ignore[assignment]
    cache.dirty = True
    cache.save()
    assert [] == list((tmp_path / "cache").glob("graph-*.json"))


def _random_tree(n: int, seed: int) -> dict[str, str]:
    import random

    rng = random.Random(seed)
    mods = [(f"p{i % 4}", f"m{i}") for i in range(n)]
    files = {"p0/__init__.py": "", "p1/__init__.py": "from . import m1\n", "p2/__init__.py": "",
             "p3/__init__.py": "", "scripts/models/tiny-1B.sh": "", "tests/conftest.py": ""}
    for pkg, mod in mods:
        lines = []
        for _ in range(3):
            opkg, omod = mods[rng.randrange(n)]
            lines.append(rng.choice([f"import {opkg}.{omod}", f"from {opkg} import {omod}",
                                     f"X = '{opkg}.{omod}.fn'", f"P = '{opkg}/{omod}.py'",
                                     "from .. import p2" if opkg == pkg else "M = 'tiny-1B_lora'",
                                     f"from .{omod} import *" if opkg == pkg else "",
                                     "from . import m0"]))
        files[f"{pkg}/{mod}.py"] = "\n".join(lines) + "\n"
    for t in range(10):
        files[f"tests/test_{t}.py"] = f"import p{t % 4}.m{t}\n"
    return files


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_lazy_importers_match_the_complete_graph(repo, seed):
    """importers() through the word index equals the reverse of the fully resolved graph."""
    repo.commit(_random_tree(40, seed))
    tracked = Git().tracked(repo.path)
    full = build_graph(repo.path, tracked, TargetedConfig()).complete()
    reverse: dict[str, set[str]] = {}
    for src, targets in full.items():
        for dst in targets:
            reverse.setdefault(dst, set()).add(src)
    lazy = build_graph(repo.path, tracked, TargetedConfig())
    nodes = sorted(set(full) | set(reverse))
    assert {n: reverse.get(n, set()) for n in nodes} == {n: lazy.importers(n) for n in nodes}


def test_a_common_stem_resolves_only_files_that_can_name_its_package(repo):
    """Importers of alpha/util.py are looked for among files naming ``util`` that also name
    ``alpha``, import relatively or live in alpha/: beta's users of its own util are not
    resolved."""
    users = {f"beta/m{i}.py": "from beta import util\n" for i in range(5)}
    repo.commit({"alpha/__init__.py": "", "alpha/util.py": "", "beta/__init__.py": "",
                 "beta/util.py": "", "app.py": "from alpha import util\n",
                 "alpha/sub/rel.py": "from .. import util\n", **users})
    graph = build_graph(repo.path, Git().tracked(repo.path), TargetedConfig())
    resolved: list[str] = []
    real = graph.deps_of
    graph.deps_of = lambda path: (resolved.append(path), real(path))[1]  # type: ignore[method-assign]
    assert ({"app.py", "alpha/sub/rel.py"}, ["alpha/sub/rel.py", "app.py"]) == (
        graph.importers("alpha/util.py"), sorted(resolved))


def test_cached_importers_hold_only_for_the_same_contents(repo, tmp_path):
    """Importers found in one run are reused by the next on the same checkout, and a file
    that starts importing the target (no path added or removed) is seen at once."""
    repo.commit({**PKG, "app.py": "from pkg import util\n"})
    tracked = Git().tracked(repo.path)

    def importers(reuse: bool = False) -> set[str]:
        cache = FactsCache(tmp_path / "cache")
        graph = build_graph(repo.path, tracked, TargetedConfig(), cache)
        if reuse:  # nothing may be resolved again
            graph.deps_of = lambda path: pytest.fail(f"resolved {path}")  # type: ignore[method-assign]
        found = graph.importers("pkg/util.py")
        graph.remember()
        cache.save()
        return found

    first = importers()
    reused = importers(reuse=True)
    repo.commit({"tools/x.py": "import pkg.util\n"})
    assert (first, reused, importers()) == ({"app.py"}, {"app.py"}, {"app.py", "tools/x.py"})


def _sources(n: int) -> list[bytes]:
    return [f"import pkg.m{i}\nfrom . import sib{i % 7}\nP = 'tools/run{i}.py'\n".encode()
            for i in range(n)]


def test_a_large_batch_scans_in_two_processes_with_the_same_answer(monkeypatch):
    import os

    import flow.workflows.targeted.facts as facts_mod

    forks: list[int] = []
    real_fork = os.fork

    def counted_fork() -> int:
        forks.append(1)
        return real_fork()

    monkeypatch.setattr(facts_mod, "_can_fork", lambda: True)
    monkeypatch.setattr(facts_mod.os, "fork", counted_fork)
    sources = _sources(facts_mod.PARALLEL_MIN + 11)
    assert (facts_mod.scan_many(sources), len(forks)) == (
        [facts_mod.scan_facts(s) for s in sources], 1)


def test_a_failed_child_is_scanned_again_in_the_parent(monkeypatch):
    """The child's half is never lost: if the forked child fails, the parent scans it."""
    import os

    import flow.workflows.targeted.facts as facts_mod

    parent = os.getpid()
    real = facts_mod.scan_facts

    def child_fails(source: bytes) -> dict:
        if os.getpid() != parent:
            raise RuntimeError("the child breaks")
        return real(source)

    monkeypatch.setattr(facts_mod, "scan_facts", child_fails)
    monkeypatch.setattr(facts_mod, "_can_fork", lambda: True)
    sources = _sources(facts_mod.PARALLEL_MIN + 3)
    assert facts_mod.scan_many(sources) == [real(s) for s in sources]


def test_the_cache_keeps_current_files_and_a_bounded_number_of_old_versions(tmp_path):
    """Facts and calls of files as they are now always stay; older versions are dropped,
    oldest first, past the spare allowance."""
    cache = FactsCache(tmp_path / "c")
    for i in range(10):
        cache.put(f"old{i}", {"i": [], "s": [], "n": []})
        cache.calls[f"old{i}"] = {"c": [], "e": None}
    for key in ("now1", "now2"):
        cache.put(key, {"i": [], "s": [], "n": []})
        cache.calls[key] = {"c": [], "e": None}
    cache.prune({"now1", "now2"}, spare=3)
    cache.save()
    again = FactsCache(tmp_path / "c")
    kept = ["old7", "old8", "old9", "now1", "now2"]
    assert (kept, kept) == (list(again.entries), list(again.calls))


def test_saving_removes_cache_files_of_other_versions(tmp_path):
    from flow.workflows.targeted.facts import FACTS_VERSION

    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "facts-v1.json").write_text("{}")
    (folder / "graph-v1.json").write_text("{}")
    cache = FactsCache(folder)
    cache.put("k", {"i": [], "s": [], "n": []})
    cache.save()
    assert [f"facts-v{FACTS_VERSION}.json"] == sorted(p.name for p in folder.iterdir())
