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
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from pathlib import Path

from flow.targeted.config import TargetedConfig
from flow.targeted.facts import Facts, FactsCache, facts_for
from flow.targeted.paths import any_match, module_name, norm


@dataclass
class ImportGraph:
    """``deps[a]``: files ``a`` loads or names; ``rdeps[b]``: files that load or name ``b``.

    ``nodes`` holds every traced file (parsed Python, model definitions, and ``phantoms``:
    paths deleted or renamed away, kept so stale importers still reach them).
    """

    nodes: set[str]
    deps: dict[str, set[str]]
    rdeps: dict[str, set[str]]
    facts: dict[str, Facts]
    phantoms: set[str] = field(default_factory=set)

    def importers(self, path: str) -> set[str]:
        """Files that load or name ``path`` (empty when none)."""
        return self.rdeps.get(path, set())


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


def build_graph(repo_dir: Path, tracked: list[str], cfg: TargetedConfig,
                cache: FactsCache | None = None, phantoms: set[str] | None = None,
                tests: set[str] | None = None) -> ImportGraph:
    """Build the graph over ``tracked`` (repo-relative paths of files present at HEAD).

    ``phantoms`` are nodes without a file (deleted or renamed-away paths). ``tests`` are the
    test files conftest edges point from; by default the files matching ``cfg.tests``.
    Never raises on file content; a file that does not parse has no outgoing edges.
    """
    cache = cache if cache is not None else FactsCache(None)
    py = [p for p in tracked if p.endswith(".py")]
    models_dir = cfg.models_dir.strip("/") + "/"
    nodes = set(py) | {p for p in tracked if p.startswith(models_dir)}
    phantoms = set(phantoms or ()) - nodes
    nodes |= phantoms
    facts = facts_for(Path(repo_dir), py, cache)
    resolver = _Resolver(nodes, cfg)
    deps: dict[str, set[str]] = {}
    for src, f in facts.items():
        out: set[str] = set()
        for entry in f["i"]:
            out.update(resolver.imports(src, entry))
        out.update(resolver.strings(src, f["s"]))
        out.discard(src)
        if out:
            deps[src] = out
    if tests is None:
        tests = {p for p in py if any_match(p, cfg.tests)}
    conftests = [p for p in py if posixpath.basename(p) == "conftest.py"]
    for conf in conftests:
        folder = posixpath.dirname(conf)
        prefix = folder + "/" if folder else ""
        for test in tests:
            if test.startswith(prefix) and test != conf:
                deps.setdefault(test, set()).add(conf)
    rdeps: dict[str, set[str]] = {}
    for src, targets in deps.items():
        for dst in targets:
            rdeps.setdefault(dst, set()).add(src)
    return ImportGraph(nodes=nodes, deps=deps, rdeps=rdeps, facts=facts, phantoms=phantoms)
