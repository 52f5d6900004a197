"""Resolving one file's import facts to the repository files they load or name.

The rules (see ``import_graph`` for the graph built from them):

- ``import x.y`` / ``from x.y import z`` (absolute), ``from . import z``, ``from ..p import
  *`` (relative), with ``z`` followed when it is a submodule and every ancestor package's
  ``__init__.py`` included, since Python executes it;
- a bare ``import helper`` that no root resolves, taken as a sibling file the importer put
  on ``sys.path``, or a module of a folder that the importer or a ``conftest.py`` above it
  puts on ``sys.path`` (``syspath``);
- ``importlib.import_module("x.y")`` / ``__import__`` with a literal;
- string literals: dotted module paths (``--custom-loss-function-path pkg.mod.fn`` names
  ``pkg.mod``), file paths (``python tools/x.py``, repo-relative or beside the file, as
  ``spec_from_file_location(..., "helper.py")`` loads them), also the tail of an f-string
  after a field (``f"{repo_base_dir}/tools/x.py"``, a script launched by path);
- a file under ``models_dir`` named in a string literal by its stem, or by a variant
  built from it (``<stem>-5layer``, ``<stem>_lora``), case-insensitively.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable

from flow.workflows.targeted.config import TargetedConfig
from flow.workflows.targeted.paths import module_name, norm


class Resolver:
    """Names to files over one tree's ``nodes``: modules under the config's roots, siblings,
    relative imports by directory, dotted and path strings, model files by stem."""

    def __init__(self, nodes: set[str], cfg: TargetedConfig,
                 syspath: Callable[[str], list[str]] | None = None) -> None:
        self.nodes = nodes
        # Folders a file runs with on sys.path beyond the roots (see import_graph).
        self.syspath: Callable[[str], list[str]] = syspath or (lambda _src: [])
        self.modules: dict[str, str] = {}
        for path in sorted(nodes):
            name = module_name(path, cfg.roots)
            if name and name not in self.modules:
                self.modules[name] = path
        # Lookups repeat across files (every file's ``import os`` misses the same way).
        self._module_memo: dict[str, list[str]] = {}
        self._sibling_memo: dict[tuple[str, str], list[str]] = {}
        models_dir = cfg.models_dir.strip("/") + "/"
        self.models: dict[str, str] = {}
        for path in sorted(nodes):
            if path.startswith(models_dir):
                stem = posixpath.basename(path).rsplit(".", 1)[0].lower()
                if stem and stem != "__init__":
                    self.models.setdefault(stem, path)
        # Every stem's first characters: a token opening with none of them names no model
        # (most tokens of most files), without trying each of its prefixes.
        self._head = min((len(s) for s in self.models), default=0)
        self._heads = {s[:self._head] for s in self.models}

    def module(self, name: str) -> list[str]:
        """The file of module ``name`` plus its ancestor packages' ``__init__.py``."""
        hit = self._module_memo.get(name)
        if hit is None:
            hit = self._module_memo[name] = self._module(name)
        return hit

    def _module(self, name: str) -> list[str]:
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
        return self.in_folder(posixpath.dirname(src), name)

    def in_folder(self, folder: str, name: str) -> list[str]:
        """The module ``name`` (dotted) found in ``folder``: ``name.py`` or its package."""
        key = (folder, name)
        hit = self._sibling_memo.get(key)
        if hit is None:
            hit = self._sibling_memo[key] = self._sibling(*key)
        return hit

    def _sibling(self, base: str, name: str) -> list[str]:
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
            # A bare import no root resolves: a sibling the importer put on sys.path, or a
            # module in a folder the importer or a conftest above it puts there.
            for folder in (posixpath.dirname(src), *self.syspath(src)):
                found = self.in_folder(folder, mod)
                if found:
                    return found + [p for n in names for p in self.in_folder(folder, f"{mod}.{n}")]
            return []
        return found + [p for n in names if n != "*" for p in self.module(f"{mod}.{n}")]

    def strings(self, src: str, tokens: list[str]) -> list[str]:
        out: list[str] = []
        base = posixpath.dirname(src)
        for raw in tokens:
            # Trailing punctuation and option dashes go; a leading dot stays, so a hidden
            # folder (``.github/``, ``.claude/``) still names its files.
            tok = raw.rstrip(".-/").lstrip("-")
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
                found = self.modules.get(dotted)
                if found is None:
                    head = dotted.rpartition(".")[0]
                    found = self.modules.get(head) if "." in head else None
                if found is not None and found != src:
                    out.append(found)
        return out

    def _model(self, low: str) -> str | None:
        if low[:self._head] not in self._heads:
            return None
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
