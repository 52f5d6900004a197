"""The file-level import graph of a repository, from ``ast`` facts (see ``facts.py``).

An edge ``a -> b`` means running ``a`` loads or names ``b``: its imports, dynamic imports
and string literals as ``resolve.Resolver`` reads them, and for ``conftest.py`` every test
file below its directory (pytest loads it without an import).

The graph is lazy: ``importers(f)`` resolves only the files whose words could name ``f``
(its stem, its package's directory name, or a relative import for a package
``__init__``), so a cold trace parses the neighbourhood of the diff, not the repository.
The word index comes from cached facts (``n``) or, for files not parsed yet, from their
bytes; it is sound for every form ``Resolver`` reads, since each spells the target's name
in the importer's source. ``complete()`` resolves everything (a full graph, or a benchmark).
"""

from __future__ import annotations

import posixpath
from pathlib import Path

import orjson

from flow.targeted.config import TargetedConfig
from flow.targeted.facts import REL, Facts, FactsCache, parse_many, sha1, words
from flow.targeted.paths import any_match, module_name
from flow.targeted.resolve import Resolver


class ImportGraph:
    """The import graph over the tracked files of one repository, resolved on demand.

    ``nodes``: every traced file (parsed Python, model definitions, and ``phantoms``: paths
    deleted or renamed away, kept so stale importers still reach them). Never raises on
    file content: a file that does not parse has no outgoing edges.
    """

    def __init__(self, repo_dir: Path, tracked: list[str], cfg: TargetedConfig,
                 cache: FactsCache, phantoms: set[str], tests: set[str]) -> None:
        self.repo_dir, self.cfg, self.cache = Path(repo_dir), cfg, cache
        py = [p for p in tracked if p.endswith(".py")]
        models_dir = cfg.models_dir.strip("/") + "/"
        self.models_dir = models_dir
        self.nodes = set(py) | {p for p in tracked if p.startswith(models_dir)}
        self.phantoms = set(phantoms) - self.nodes
        self.nodes |= self.phantoms
        self.py = py
        self.resolver = Resolver(self.nodes, cfg)
        self._data: dict[str, bytes] = {}
        self._key: dict[str, str] = {}
        self._facts: dict[str, Facts] = {}
        entries = cache.entries
        for rel in py:
            try:
                data = (self.repo_dir / rel).read_bytes()
            except OSError:
                continue  # a tracked file missing from the work tree has no edges
            key = sha1(data)
            self._data[rel], self._key[rel] = data, key
            hit = entries.get(key)
            if hit is not None:
                self._facts[rel] = hit
        self._deps: dict[str, set[str]] = {}
        # Resolved edges depend on the file's bytes and on the tree (which paths exist, the
        # roots, the tests): reuse them only under the same tree key.
        self.tree_key = sha1(orjson.dumps([sorted(self.nodes), sorted(tests), cfg.roots,
                                           cfg.models_dir]))
        if cache.edges.get("tree") == self.tree_key:
            for rel, (key, deps) in cache.edges.get("files", {}).items():
                if self._key.get(rel) == key:
                    self._deps[rel] = set(deps)
        self._rdeps: dict[str, set[str]] = {}
        self._index: dict[str, list[str]] | None = None
        self._lower: dict[str, bytes] | None = None
        # pytest loads a conftest without an import: every test below it depends on it.
        self._conf: dict[str, set[str]] = {}
        self._conf_r: dict[str, set[str]] = {}
        for conf in (p for p in py if posixpath.basename(p) == "conftest.py"):
            folder = posixpath.dirname(conf)
            prefix = folder + "/" if folder else ""
            for test in tests:
                if test.startswith(prefix) and test != conf:
                    self._conf.setdefault(test, set()).add(conf)
                    self._conf_r.setdefault(conf, set()).add(test)

    def ensure(self, paths: list[str]) -> None:
        """Parse every readable path in ``paths`` without facts yet, caching by content."""
        todo = [p for p in dict.fromkeys(paths) if p in self._data and p not in self._facts]
        if not todo:
            return
        for rel, facts in zip(todo, parse_many([self._data[p] for p in todo]), strict=True):
            self._facts[rel] = facts
            self.cache.entries[self._key[rel]] = facts
        self.cache.dirty = True

    def facts_of(self, path: str) -> Facts | None:
        """The parsed facts of ``path``, or None when it is no readable Python file."""
        self.ensure([path])
        return self._facts.get(path)

    def deps_of(self, path: str) -> set[str]:
        """Files ``path`` loads or names (conftests included)."""
        hit = self._deps.get(path)
        if hit is not None:
            return hit
        out: set[str] = set(self._conf.get(path, ()))
        facts = self.facts_of(path)
        if facts is not None:
            for entry in facts["i"]:
                out.update(self.resolver.imports(path, entry))
            out.update(self.resolver.strings(path, facts["s"]))
        out.discard(path)
        self._deps[path] = out
        return out

    def importers(self, path: str) -> set[str]:
        """Files that load or name ``path`` (empty when none)."""
        hit = self._rdeps.get(path)
        if hit is not None:
            return hit
        cands = self._candidates(path)
        self.ensure(cands)
        out = {c for c in cands if c != path and path in self.deps_of(c)}
        out |= self._conf_r.get(path, set())
        self._rdeps[path] = out
        return out

    def remember(self) -> None:
        """Put the edges resolved so far into the cache (saved by ``cache.save()``)."""
        files = {}
        if self.cache.edges.get("tree") == self.tree_key:
            files = dict(self.cache.edges.get("files", {}))
        for rel, deps in self._deps.items():
            files[rel] = [self._key[rel], sorted(deps)] if rel in self._key else None
        files = {k: v for k, v in files.items() if v is not None}
        self.cache.edges = {"tree": self.tree_key, "files": files}
        self.cache.dirty = True

    def complete(self) -> dict[str, set[str]]:
        """Parse every file and return the full forward graph (file -> files it loads)."""
        self.ensure(self.py)
        return {p: self.deps_of(p) for p in self.py}

    def _words(self) -> dict[str, list[str]]:
        if self._index is None:
            index: dict[str, list[str]] = {}
            for rel, data in self._data.items():
                facts = self._facts.get(rel)
                for word in (facts["n"] if facts is not None else words(data)):
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
        would parse every file naming any ``utils``."""
        folder = posixpath.dirname(path)
        parent = posixpath.basename(folder)
        name = module_name(path, self.cfg.roots)
        if not parent or not (parent.isidentifier() and parent.isascii()) \
                or (name is not None and "." not in name):
            return cands  # a top-level module: ``import mod`` spells no directory
        index = self._words()
        near = set(index.get(parent, ())) | set(index.get(REL, ()))
        prefix = folder + "/"
        return [c for c in cands if c in near or c.startswith(prefix)]


def build_graph(repo_dir: Path, tracked: list[str], cfg: TargetedConfig,
                cache: FactsCache | None = None, phantoms: set[str] | None = None,
                tests: set[str] | None = None) -> ImportGraph:
    """The (lazy) graph over ``tracked`` (repo-relative paths of files present at HEAD).

    ``phantoms`` are nodes without a file (deleted or renamed-away paths). ``tests`` are the
    test files conftest edges point from; by default the files matching ``cfg.tests``.
    """
    cache = cache if cache is not None else FactsCache(None)
    if tests is None:
        tests = {p for p in tracked if p.endswith(".py") and any_match(p, cfg.tests)}
    return ImportGraph(repo_dir, tracked, cfg, cache, set(phantoms or ()), tests)
