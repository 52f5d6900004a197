"""The file-level import graph of a repository, from ``ast`` facts (see ``facts.py``).

An edge ``a -> b`` means running ``a`` loads or names ``b``. Edges come from:

- ``import x.y`` / ``from x.y import z`` (absolute), ``from . import z``, ``from ..p import
  *`` (relative), with ``z`` followed when it is a submodule and every ancestor package's
  ``__init__.py`` included, since Python executes it;
- a bare ``import helper`` that no root resolves, taken as a sibling file the importer put
  on ``sys.path``;
- ``importlib.import_module("x.y")`` / ``__import__`` with a literal;
- string literals: dotted module paths (``--custom-loss-function-path pkg.mod.fn`` names
  ``pkg.mod``), file paths (``python tools/x.py``, repo-relative or beside the file, as
  ``spec_from_file_location(..., "helper.py")`` loads them);
- a file under ``models_dir`` named in a string literal by its stem, or by a variant
  built from it (``<stem>-5layer``, ``<stem>_lora``), case-insensitively;
- ``conftest.py``: every test file below its directory depends on it.

The graph is lazy: ``importers(f)`` resolves only the files whose words could name ``f``
(its stem, its package's directory name, or a relative import for a package
``__init__``), so a cold trace parses the neighbourhood of the diff, not the repository.
The word index comes from cached facts (``n``) or, for files not parsed yet, from their
bytes; it is sound for every form above, since each spells the target's name in the
importer's source. ``complete()`` resolves everything (a full graph, or a benchmark).
"""

from __future__ import annotations

import posixpath
from pathlib import Path

import orjson

from flow.targeted.config import TargetedConfig
from flow.targeted.facts import REL, Facts, FactsCache, parse_many, sha1, words
from flow.targeted.paths import any_match, module_name, norm


class _Resolver:
    def __init__(self, nodes: set[str], cfg: TargetedConfig) -> None:
        self.nodes = nodes
        self.modules: dict[str, str] = {}
        for path in sorted(nodes):
            name = module_name(path, cfg.roots)
            if name and name not in self.modules:
                self.modules[name] = path
        models_dir = cfg.models_dir.strip("/") + "/"
        self.models: dict[str, str] = {}
        for path in sorted(nodes):
            if path.startswith(models_dir):
                stem = posixpath.basename(path).rsplit(".", 1)[0].lower()
                if stem and stem != "__init__":
                    self.models.setdefault(stem, path)

    def module(self, name: str) -> list[str]:
        """The file of module ``name`` plus its ancestor packages' ``__init__.py``."""
        out: list[str] = []
        path = self.modules.get(name)
        if path is None:
            return out
        out.append(path)
        parts = name.split(".")
        for i in range(1, len(parts)):
            parent = self.modules.get(".".join(parts[:i]))
            if parent is not None:
                out.append(parent)
        return out

    def sibling(self, src: str, name: str) -> list[str]:
        base = posixpath.dirname(src)
        rel = name.replace(".", "/")
        for cand in (f"{rel}.py", f"{rel}/__init__.py"):
            path = norm(posixpath.join(base, cand))
            if path in self.nodes:
                return [path]
        return []

    def file_for(self, rel: str) -> list[str]:
        """The file that module path ``rel`` (``a/b``) names: ``a/b.py`` or its package."""
        for cand in (f"{rel}.py", f"{rel}/__init__.py") if rel else ("__init__.py",):
            path = norm(cand)
            if path in self.nodes:
                return [path]
        return []

    def relative(self, src: str, mod: str, level: int, names: list[str]) -> list[str]:
        # Relative imports follow directories, so resolve them by path: this also serves
        # files whose directory is not importable by name (``tests/fast-gpu/``).
        base = posixpath.dirname(src)
        for _ in range(level - 1):
            if not base:
                return []  # climbs above the repository: Python would raise ImportError
            base = posixpath.dirname(base)
        parts = mod.split(".") if mod else []
        out: list[str] = []
        for i in range(1, len(parts)):  # intermediate packages run their __init__
            out += self.file_for(posixpath.join(base, *parts[:i]) + "/__init__")
        target = posixpath.join(base, *parts) if parts else base
        out += self.file_for(target) if parts else self.file_for(
            posixpath.join(base, "__init__") if base else "__init__")
        for n in names:
            if n != "*":
                out += self.file_for(posixpath.join(target, n) if target else n)
        return out

    def imports(self, src: str, entry: list) -> list[str]:
        mod, level, names = entry
        if level == -1:  # dynamic import with a literal, maybe relative (".x")
            stripped = mod.lstrip(".")
            level = len(mod) - len(stripped)
            mod, names = stripped, []
        if level > 0:
            return self.relative(src, mod, level, names)
        found = self.module(mod)
        if not found:
            # A bare import no root resolves: a sibling the importer put on sys.path.
            found = self.sibling(src, mod)
            if found:
                return found + [p for n in names for p in self.sibling(src, f"{mod}.{n}")]
            return []
        return found + [p for n in names if n != "*" for p in self.module(f"{mod}.{n}")]

    def strings(self, src: str, tokens: list[str]) -> list[str]:
        out: list[str] = []
        base = posixpath.dirname(src)
        for raw in tokens:
            tok = raw.strip(".-/")
            if not tok:
                continue
            low = tok.lower()
            if self.models:
                hit = self._model(low)
                if hit:
                    out.append(hit)
            if "/" in tok or low.endswith(".py"):
                for cand in (tok, posixpath.join(base, tok)):
                    path = norm(cand)
                    if path in self.nodes and path != src:
                        out.append(path)
                        break
                continue
            if "." in tok:
                dotted = tok.split(":", 1)[0]
                path = self.modules.get(dotted)
                if path is None:
                    head = dotted.rpartition(".")[0]
                    path = self.modules.get(head) if "." in head else None
                if path is not None and path != src:
                    out.append(path)
        return out

    def _model(self, low: str) -> str | None:
        hit = self.models.get(low)
        if hit is not None:
            return hit
        # Variants extend the name: qwen3-4b-5layer, qwen3-4b_lora; prefer the longest stem.
        for i in range(len(low) - 1, 0, -1):
            if low[i] in "-_":
                hit = self.models.get(low[:i])
                if hit is not None:
                    return hit
        return None


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
        self.resolver = _Resolver(self.nodes, cfg)
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
        return list(dict.fromkeys(out))


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
