"""The file-level import graph of a repository, from per-file facts (see ``facts.py``).

An edge ``a -> b`` means running ``a`` loads or names ``b``: its imports, dynamic imports
and string literals as ``resolve.Resolver`` reads them (not those of ``strings_not_loads``
files), imports through folders put on ``sys.path`` (``syspath``), and for ``conftest.py``
every test file below its directory that pytest runs (pytest loads it without an import;
a file CI starts as ``python3 file.py`` loads it only when it calls ``pytest.main``).

A model definition under ``models_dir`` (not Python) names what it loads too: its words
are string tokens (``--spec "miles_plugins.models.glm5.glm5" "get_glm5_spec"``).

Every file is scanned once (``lexer``; facts cached by content), but the graph is
resolved lazily: ``importers(f)`` resolves only the files whose words could name ``f``
(its stem, its package's directory name, or a relative import for a package
``__init__``). The word index is sound for every form ``Resolver`` reads, since each
spells the target's name in the importer's source. Importers found are cached with the
edges and reused while the tree and every file's content stay the same. ``complete()``
resolves everything (a full graph, or a benchmark).
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path

import orjson

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from flow.workflows.targeted.config import TargetedConfig
from flow.workflows.targeted.facts import (
    REL, Calls, Facts, FactsCache, in_two, read_calls, scan_facts, scan_many, sha1,
    text_facts,
)
from flow.workflows.targeted.paths import any_match, glob_match, module_name
from flow.workflows.targeted.resolve import Resolver
from flow.workflows.targeted.syspath import folders as syspath_folders

if TYPE_CHECKING:
    from flow.workflows.targeted.flags import Spelled

_PYTEST_MAIN = re.compile(rb"\bpytest\s*\.\s*main\s*\(")


class ImportGraph:
    """The import graph over the tracked files of one repository, resolved on demand.

    ``nodes``: every traced file (scanned Python, model definitions, and ``phantoms``: paths
    deleted or renamed away, kept so stale importers still reach them). Never raises on
    file content: a file with a syntax error still has the edges its imports and strings
    spell.
    """

    def __init__(self, repo_dir: Path, tracked: list[str], cfg: TargetedConfig,
                 cache: FactsCache, phantoms: set[str], tests: set[str],
                 under_pytest: Callable[[ImportGraph, str], bool] | None = None) -> None:
        self.repo_dir, self.cfg, self.cache = Path(repo_dir), cfg, cache
        py = [p for p in tracked if p.endswith(".py")]
        models_dir = cfg.models_dir.strip("/") + "/"
        self.models_dir = models_dir
        self.nodes = set(py) | {p for p in tracked if p.startswith(models_dir)}
        self.phantoms = set(phantoms) - self.nodes
        self.nodes |= self.phantoms
        self.py = py
        self.resolver = Resolver(self.nodes, cfg, self.syspath)
        self._data: dict[str, bytes] = {}
        self._key: dict[str, str] = {}
        self._facts: dict[str, Facts] = {}
        self._all_facts = False
        root = str(self.repo_dir)
        for rel in py:
            try:
                with open(os.path.join(root, rel), "rb") as fh:
                    data = fh.read()
            except OSError:
                continue  # a tracked file missing from the work tree has no edges
            self._data[rel], self._key[rel] = data, sha1(data)
        for rel in sorted(self.nodes - set(py) - self.phantoms):
            # A model definition (a shell fragment: ``--spec "pkg.mod" "fn"``) names the
            # modules it loads: read its words as string tokens (keyed apart from Python).
            try:
                with open(os.path.join(root, rel), "rb") as fh:
                    data = fh.read()
            except OSError:
                continue
            self._data[rel], self._key[rel] = data, sha1(b"text\0" + data)
        if not cache.graph:
            # Nothing cached (a first trace): every Python file will be scanned, and every
            # test's calls read when ``under_pytest`` asks; do both at once, in two processes.
            self._prefetch(tests if under_pytest is not None else set())
        self._scopes = self._read_syspath()
        self._syspath_dirs = {f for _, _, fs in self._scopes for f in fs}
        # Tests pytest runs (their conftests load); the rest run as plain scripts.
        self.pytest_tests = {t for t in tests if under_pytest is None or under_pytest(self, t)}
        # Resolved edges depend on the file's bytes and on the tree (which paths exist, the
        # roots, the tests): reuse them only under the same tree key.
        self.tree_key = sha1(orjson.dumps([sorted(self.nodes), sorted(tests), cfg.roots,
                                           cfg.models_dir, sorted(self.pytest_tests),
                                           self._scopes, cfg.strings_not_loads]))
        # A file's importers depend on every file's bytes: reuse them only when the tree
        # and all contents are the same as last time (a re-run on the same checkout).
        self.content_key = sha1(orjson.dumps([self.tree_key, sorted(self._key.items())]))
        known = cache.graph
        self._deps: dict[str, set[str]] = {}
        self._rdeps: dict[str, set[str]] = {}
        if known.get("tree") == self.tree_key:
            for rel, (key, deps) in known.get("files", {}).items():
                if self._key.get(rel) == key:
                    self._deps[rel] = set(deps)
        if known.get("content") == self.content_key:
            self._rdeps = {rel: set(imp) for rel, imp in known.get("importers", {}).items()}
        else:
            self._load_all_facts()
        self._resolved = False  # anything resolved that the cache does not hold yet
        self._index: dict[str, list[str]] | None = None
        self._lower: dict[str, bytes] | None = None
        self._near_sets: dict[str, set[str]] = {}
        self._tokens: dict[str, set[str] | None] = {}  # string tokens, for passes_flag
        self._spelled: dict[str, Spelled | None] = {}
        # pytest loads a conftest without an import: every test below it depends on it.
        self._conf: dict[str, set[str]] = {}
        self._conf_r: dict[str, set[str]] = {}
        for conf in (p for p in py if posixpath.basename(p) == "conftest.py"):
            folder = posixpath.dirname(conf)
            prefix = folder + "/" if folder else ""
            for test in self.pytest_tests:
                if test.startswith(prefix) and test != conf:
                    self._conf.setdefault(test, set()).add(conf)
                    self._conf_r.setdefault(conf, set()).add(test)

    def _read_syspath(self) -> list[tuple[str, bool, list[str]]]:
        """``(scope, is_dir, folders)`` per file that puts folders on ``sys.path``: a
        conftest's apply below its directory, another file's to itself."""
        dirs = {posixpath.dirname(n) for n in self.nodes}
        out: list[tuple[str, bool, list[str]]] = []
        for rel in sorted(self._data):
            data = self._data[rel]
            if b"sys.path" not in data:
                continue
            conf = posixpath.basename(rel) == "conftest.py"
            sources = [data]
            init = self._data.get(posixpath.join(posixpath.dirname(rel), "__init__.py"))
            if conf and init is not None:
                sources.append(init)  # the folder is often a constant of the package
            found = [f for f in syspath_folders(rel, sources) if f and f in dirs]
            if found:
                out.append((posixpath.dirname(rel) if conf else rel, conf, found))
        return out

    def syspath(self, src: str) -> list[str]:
        """Folders ``src`` runs with on ``sys.path`` beyond the roots."""
        out: list[str] = []
        for scope, is_dir, found in self._scopes:
            if (src.startswith(scope + "/") or not scope) if is_dir else src == scope:
                out += found
        return out

    def runs_pytest_main(self, path: str) -> bool:
        """True when ``path`` calls ``pytest.main`` (so it loads conftests when run as a
        script)."""
        data = self._data.get(path) if path.endswith(".py") else None
        return data is not None and _PYTEST_MAIN.search(data) is not None

    def _prefetch(self, tests: set[str]) -> None:
        """Put in the cache the facts of every Python file it lacks and the calls of each
        of ``tests`` that ``calls_of`` would parse, computed in one batch split with a
        second process (``in_two``); the lookups that follow find them there."""
        entries = self.cache.entries
        scan = [r for r in self.py if r in self._data and self._key[r] not in entries]
        calls = [t for t in tests if self._parses_calls(t)]
        jobs = [(read_calls, self._data[t], 2 * len(self._data[t])) for t in calls]
        jobs += [(scan_facts, self._data[r], len(self._data[r])) for r in scan]
        done = in_two(jobs)  # a parse costs about twice the lexer's scan per byte
        for rel, hit in zip(calls, done[:len(calls)], strict=True):
            self.cache.put_calls(self._key[rel], hit)
        for rel, facts in zip(scan, done[len(calls):], strict=True):
            self._facts[rel] = facts
            self.cache.put(self._key[rel], facts)

    def _parses_calls(self, path: str) -> bool:
        """True when ``calls_of(path)`` would parse: a readable file whose calls are not
        cached and that is not skipped (see ``calls_of``)."""
        data = self._data.get(path)
        return (data is not None and self._key[path] not in self.cache.calls
                and not self._no_calls(path, data))

    def _no_calls(self, path: str, data: bytes) -> bool:
        """True for a file registered by location that spells no registration function."""
        return (not any(name.encode() in data for name in self.cfg.registration)
                and any(glob_match(path, rule.path) for rule in self.cfg.implicit))

    def _load_all_facts(self) -> None:
        """Facts for every file: from the cache, the rest scanned in one batch (the scan
        is cheap next to resolving, and a trace of a few hops reaches most of a tree
        through its hubs' importers anyway; resolution stays lazy)."""
        if self._all_facts:
            return
        entries = self.cache.entries
        todo = []
        for rel, key in self._key.items():
            hit = entries.get(key)
            if hit is None:
                todo.append(rel)
            else:
                self._facts[rel] = hit
        text = [r for r in todo if not r.endswith(".py")]
        todo = [r for r in todo if r.endswith(".py")]
        for rel in text:
            self._facts[rel] = facts = text_facts(self._data[rel])
            self.cache.put(self._key[rel], facts)
        if todo:
            for rel, facts in zip(todo, scan_many([self._data[r] for r in todo]), strict=True):
                self._facts[rel] = facts
                self.cache.put(self._key[rel], facts)
        self._all_facts = True

    def facts_of(self, path: str) -> Facts | None:
        """The facts of ``path``, or None when it is no readable Python file."""
        hit = self._facts.get(path)
        if hit is None and path in self._data:
            key = self._key[path]
            hit = self.cache.entries.get(key)
            if hit is None:
                data = self._data[path]
                hit = scan_facts(data) if path.endswith(".py") else text_facts(data)
                self.cache.put(key, hit)
            self._facts[path] = hit
        return hit

    def calls_of(self, path: str) -> Calls | None:
        """``read_calls`` of ``path`` (cached by content), or None when it is no readable
        Python file; a file under an ``implicit`` location spelling no registration
        function has no calls (not parsed)."""
        data = self._data.get(path)
        if data is None:
            return None
        key = self._key[path]
        hit = self.cache.calls.get(key)
        if hit is None:
            if self._no_calls(path, data):
                # Registered by location and spelling no registration call: nothing to
                # read, so skip the parse (most of miles' tests/fast/).
                return {"c": [], "e": None}
            hit = read_calls(data)
            self.cache.put_calls(key, hit)
        return hit

    def data_of(self, path: str) -> bytes | None:
        """The bytes of a scanned file, or None."""
        return self._data.get(path)

    def gates_of(self, path: str) -> dict:
        """``flags.read_gates`` of ``path`` (cached by content); empty for no Python file."""
        from flow.workflows.targeted.flags import read_gates

        data = self._data.get(path) if path.endswith(".py") else None
        if data is None:
            return {"g": [], "p": {}, "m": {}}
        key = self._key[path]
        hit = self.cache.gates.get(key)
        if hit is None:
            hit = read_gates(data)
            self.cache.put_gates(key, hit)
        return hit

    def passes_flag(self, path: str, dest: str, value: str | None) -> bool:
        """``flags.passes`` of ``path`` (cached by content, flag and value)."""
        from flow.workflows.targeted.flags import passes

        data = self._data.get(path) if path.endswith(".py") else None
        if data is None:
            return False
        key = f"pass\0{self._key[path]}\0{dest}\0{value or ''}"
        hit = self.cache.gates.get(key)
        if hit is None:
            # One token set and at most one parse per file, whatever the flags asked about.
            if path not in self._tokens:
                facts = self.facts_of(path)
                self._tokens[path] = set(facts["s"]) if facts else None
            tokens = self._tokens[path]
            hit = passes(data, dest, value, tokens, spelled=lambda: self._spelled_of(path))
            self.cache.put_gates(key, hit)
        return hit

    def _spelled_of(self, path: str) -> Spelled | None:
        """``flags.read_spelled`` of a scanned Python file, read once per graph."""
        from flow.workflows.targeted.flags import read_spelled

        if path not in self._spelled:
            self._spelled[path] = read_spelled(self._data[path])
        return self._spelled[path]

    def deps_of(self, path: str) -> set[str]:
        """Files ``path`` loads or names (conftests included)."""
        hit = self._deps.get(path)
        if hit is not None:
            return hit
        self._resolved = True
        out: set[str] = set(self._conf.get(path, ()))
        facts = self.facts_of(path)
        if facts is not None:
            for entry in facts["i"]:
                out.update(self.resolver.imports(path, entry))
            if not any_match(path, self.cfg.strings_not_loads):
                out.update(self.resolver.strings(path, facts["s"]))
        out.discard(path)
        self._deps[path] = out
        return out

    def importers(self, path: str) -> set[str]:
        """Files that load or name ``path`` (empty when none)."""
        hit = self._rdeps.get(path)
        if hit is not None:
            return hit
        self._resolved = True
        cands = self._candidates(path)
        out = {c for c in cands if c != path and path in self.deps_of(c)}
        out |= self._conf_r.get(path, set())
        self._rdeps[path] = out
        return out

    def loaders(self, path: str) -> set[str]:
        """``importers`` without the tests a conftest reaches by being one."""
        return self.importers(path) - self._conf_r.get(path, set())

    def remember(self) -> None:
        """Put the edges and importers resolved so far into the cache (saved by
        ``cache.save()``); nothing to do when everything came from it."""
        if not self._resolved and self.cache.graph.get("content") == self.content_key:
            return
        known = self.cache.graph
        files = dict(known.get("files", {})) if known.get("tree") == self.tree_key else {}
        for rel, deps in self._deps.items():
            if rel in self._key:
                files[rel] = [self._key[rel], sorted(deps)]
        current = set(self._key.values())
        self.cache.prune(current, spare=max(len(current), 200))
        importers = {rel: sorted(imp) for rel, imp in self._rdeps.items()}
        self.cache.set_graph({"tree": self.tree_key, "files": files,
                              "content": self.content_key, "importers": importers})

    def complete(self) -> dict[str, set[str]]:
        """Resolve every file and return the full forward graph (file -> files it loads)."""
        self._load_all_facts()
        return {p: self.deps_of(p) for p in self.py}

    def _words(self) -> dict[str, list[str]]:
        """Files by the words of their facts (``n``), for the words a lookup can ask for:
        the stems and directory names of the nodes, and REL."""
        if self._index is None:
            keys = {REL}
            for node in self.nodes:
                head, _, base = node.rpartition("/")
                keys.add(base[:-3] if base.endswith(".py") else base)
                keys.add(head.rpartition("/")[2])
            self._load_all_facts()
            index: dict[str, list[str]] = {}
            for rel, facts in self._facts.items():
                for word in keys.intersection(facts["n"]):
                    index.setdefault(word, []).append(rel)
            self._index = index
        return self._index

    def _candidates(self, path: str) -> list[str]:
        """The files that spell a name every reference to ``path`` must spell."""
        base = posixpath.basename(path)
        if path.startswith(self.models_dir):  # matched case-insensitively, variants too
            if self._lower is None:
                self._lower = {p: d.lower() for p, d in self._data.items()}
            stem = base.rsplit(".", 1)[0].lower()
            return [p for p, d in self._lower.items() if stem.encode() in d]
        if base == "__init__.py":
            keys = [posixpath.basename(posixpath.dirname(path)), REL]
        else:
            keys = [base[:-3] if base.endswith(".py") else base]
        index = self._words()
        out: list[str] = []
        for key in keys:
            if (key.isidentifier() and key.isascii()) or key == REL:
                out += index.get(key, ())
            else:  # a stem no ASCII word spells (``my-tool.py``): scan the bytes
                raw = key.encode()
                out += [p for p, d in self._data.items() if raw in d]
        if base != "__init__.py":
            out = self._near(path, out)
        return list(dict.fromkeys(out))

    def _near(self, path: str, cands: list[str]) -> list[str]:
        """Keep the candidates that can reach ``path`` inside a package directory: they also
        spell the directory's name (an absolute import, a dotted or repo-relative string),
        have a relative or dynamic import, or sit in that directory or below it (a sibling
        import, a path beside or above the file). Without this a common stem (``utils``)
        would resolve every file naming any ``utils``."""
        folder = posixpath.dirname(path)
        if folder in self._syspath_dirs:
            return cands  # imported by bare name from anywhere its folder is on sys.path
        parent = posixpath.basename(folder)
        name = module_name(path, self.cfg.roots)
        if not parent or not (parent.isidentifier() and parent.isascii()) \
                or (name is not None and "." not in name):
            return cands  # a top-level module: ``import mod`` spells no directory
        near = self._near_sets.get(parent)
        if near is None:
            index = self._words()
            near = self._near_sets[parent] = set(index.get(parent, ())) | set(index.get(REL, ()))
        prefix = folder + "/"
        return [c for c in cands if c in near or c.startswith(prefix)]


def build_graph(repo_dir: Path, tracked: list[str], cfg: TargetedConfig,
                cache: FactsCache | None = None, phantoms: set[str] | None = None,
                tests: set[str] | None = None,
                under_pytest: Callable[[ImportGraph, str], bool] | None = None) -> ImportGraph:
    """The (lazy) graph over ``tracked`` (repo-relative paths of files present at HEAD).

    ``phantoms`` are nodes without a file (deleted or renamed-away paths). ``tests`` are the
    test files conftest edges point from (only those ``under_pytest`` says pytest runs;
    all of them without it); by default the files matching ``cfg.tests``.
    """
    cache = cache if cache is not None else FactsCache(None)
    if tests is None:
        tests = {p for p in tracked if p.endswith(".py") and any_match(p, cfg.tests)}
    return ImportGraph(repo_dir, tracked, cfg, cache, set(phantoms or ()), tests, under_pytest)
