"""The environment probe (seed: Output, what a verdict says it ran on): one function,
kept as source text, that lists the named distributions of an interpreter and every one
whose ``direct_url.json`` or in-tree egg-info points at the tree (version, editable or
not, install URL, the folder its code is imported from, its top-level names and a
non-editable copy's compiled modules). ``probe_argv`` runs it in a child interpreter
(``importlib.metadata``, its backport, or the metadata files on ``sys.path`` read
directly for Python 3.6/3.7 without either); ``probe_here`` runs it in this process, for
this interpreter or for a venv whose layout ``venv_layout`` reads from its files.
``verdict.environment.read_probe`` reads the output. Standard library only.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

PROBE_FN = """\
def probe(names, tree=None, paths=None, facts=None):
    import json, os, platform, sys
    m = None
    if paths is None:
        try:
            import importlib.metadata as m
        except ImportError:  # Python < 3.8: the backport, when the environment has it
            try:
                import importlib_metadata as m
            except ImportError:  # neither: the metadata files are read directly below
                m = None
        paths = sys.path
    if facts is None:
        facts = {"interpreter": sys.executable, "python_version": platform.python_version(),
                 "prefix": sys.prefix}
    out = dict(facts, packages={}, tree_dists=[])
    real = os.path.realpath(tree) if tree else None

    def norm(name):
        return "-".join(w for w in name.replace("_", "-").replace(".", "-").lower().split("-") if w)

    def read(folder, name):
        try:
            with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as fh:
                return fh.read()
        except (OSError, ValueError):
            return None

    class Files(object):
        # one *.dist-info / *.egg-info folder (or an egg-info file) read without a library
        def __init__(self, where):
            self._path = where
            folder = os.path.isdir(where)
            head = read(where, "METADATA" if where.endswith(".dist-info") else "PKG-INFO") \\
                if folder else read(os.path.dirname(where), os.path.basename(where))
            self.metadata = {}
            for line in (head or "").splitlines():
                if not line.strip():
                    break
                key, _, value = line.partition(":")
                if key in ("Name", "Version") and key not in self.metadata:
                    self.metadata[key] = value.strip()
            stem = os.path.basename(where).rsplit(".", 1)[0]
            self.metadata.setdefault("Name", stem.split("-")[0])
            self.version = self.metadata.get("Version") or (stem.split("-") + ["?"])[1]
            self.folder = where if folder else None

        def read_text(self, name):
            return read(self.folder, name) if self.folder else None

        @property
        def files(self):
            record = self.read_text("RECORD")
            if record is not None:
                return [l.split(",")[0] for l in record.splitlines() if l.strip()]
            listed = self.read_text("installed-files.txt") or self.read_text("SOURCES.txt") or ""
            return [l.strip().replace("../", "", 1) if l.startswith("../") else l.strip()
                    for l in listed.splitlines() if l.strip()]

    def scanned():
        seen = set()
        for entry in paths:
            try:
                found = sorted(os.listdir(entry or "."))
            except OSError:
                continue
            for name in found:
                if name.endswith((".dist-info", ".egg-info")):
                    dist = Files(os.path.join(entry or ".", name))
                    key = norm(dist.metadata["Name"])
                    if key not in seen:
                        seen.add(key)
                        yield dist

    if m is None:
        every = list(scanned())
        by_name = dict((norm(d.metadata["Name"]), d) for d in every)
    else:
        every = None

    def distribution(name):
        if m is not None:
            try:
                return m.distribution(name)
            except m.PackageNotFoundError:
                return None
        return by_name.get(norm(name))

    def site_dirs():
        # the folders whose .pth and .egg-link files say where installed code lives
        return [p for p in paths if p and os.path.basename(p) in ("site-packages", "dist-packages")]

    def listing(folder):
        try:
            return sorted(os.listdir(folder))
        except OSError:
            return []

    def egg_link(name):
        # a legacy ``setup.py develop``: <site>/<name>.egg-link, its first line the folder
        # the code is imported from, its second the project root relative to that
        for site in site_dirs():
            for entry in listing(site):
                if entry.endswith(".egg-link") and norm(entry[:-9]) == norm(name):
                    lines = [l.strip() for l in (read(site, entry) or "").splitlines()]
                    if lines and lines[0]:
                        base = os.path.normpath(lines[0])
                        root = os.path.normpath(os.path.join(base, lines[1])) \
                            if len(lines) > 1 and lines[1] else base
                        return base, root
        return None

    def mapped(top):
        # where a site folder says a top-level package lives: a setuptools editable
        # finder's MAPPING (__editable___*_finder.py), else a .pth file's path line
        import ast
        for site in site_dirs():
            for entry in listing(site):
                if not (entry.startswith("__editable__") and entry.endswith("_finder.py")):
                    continue
                try:
                    tree_ = ast.parse(read(site, entry) or "")
                except (SyntaxError, ValueError):
                    continue
                for node in tree_.body:
                    target = getattr(node, "target", None) or (getattr(node, "targets", None) or [None])[0]
                    if getattr(target, "id", None) == "MAPPING" and getattr(node, "value", None) is not None:
                        try:
                            mapping = ast.literal_eval(node.value)
                        except ValueError:
                            continue
                        for name in top:
                            if name in mapping:
                                return os.path.dirname(os.path.normpath(mapping[name]))
            for entry in listing(site):
                if not entry.endswith(".pth"):
                    continue
                for line in (read(site, entry) or "").splitlines():
                    line = line.strip()
                    if not line or line.startswith(("#", "import ", "import\t")):
                        continue
                    folder = os.path.normpath(os.path.join(site, line))
                    for name in top:
                        if os.path.isfile(os.path.join(folder, name, "__init__.py")) \
                                or os.path.isfile(os.path.join(folder, name + ".py")):
                            return folder
        return None

    def info(dist):
        url = dist.read_text("direct_url.json") or "{}"
        try:
            data = json.loads(url)
        except ValueError:
            data = {}
        top = (dist.read_text("top_level.txt") or "").split()
        if not top:
            top = sorted({str(f).split("/")[0].split(".")[0] for f in (dist.files or [])
                          if str(f).endswith(".py") and "/" in str(f)
                          and not str(f).split("/")[0].endswith((".dist-info", ".egg-info"))})
        editable, url, home = bool(data.get("dir_info", {}).get("editable")), data.get("url"), None
        where = str(getattr(dist, "_path", None) or "")
        if not url:
            link = egg_link(dist.metadata["Name"])
            outside = where.endswith(".egg-info") and os.path.isdir(where) and \
                os.path.basename(os.path.dirname(where)) not in ("site-packages", "dist-packages")
            if link is not None:
                editable, url, home = True, "file://" + link[1], link[0]
            elif outside:
                # its egg-info sits in a folder a .pth line puts on sys.path: the code is
                # imported from there (a develop install whose egg-link is gone)
                home = os.path.dirname(where)
                root = os.path.dirname(home) if os.path.basename(home) == "src" else home
                editable, url = True, "file://" + root
        if editable and home is None:
            home = mapped(top)
        # a non-editable copy's compiled modules (the first 50), which a tree holding the
        # same package has only once built in place
        files = [str(f)[3:] if str(f).startswith("../") else str(f)
                 for f in (() if editable else dist.files or ())]
        compiled = [f for f in files if f.endswith((".so", ".pyd"))
                    and f.split("/")[0] in top][:50]
        return {"name": dist.metadata["Name"], "version": dist.version,
                "editable": editable, "url": url, "home": home, "top_level": top,
                "compiled": compiled}
    for name in names:
        dist = distribution(name)
        if dist is not None:
            out["packages"][name] = info(dist)
    if real:
        for dist in (m.distributions() if m is not None else every):
            try:
                data = json.loads(dist.read_text("direct_url.json") or "{}")
            except ValueError:
                continue
            url = str(data.get("url") or "")
            if url.startswith("file://") and os.path.realpath(url[7:]) == real:
                out["tree_dists"].append(info(dist))
                continue
            # a legacy ``setup.py develop`` install: its .egg-info lives in the tree
            where = getattr(dist, "_path", None)
            if where is not None and str(where).endswith(".egg-info"):
                home = os.path.realpath(os.path.dirname(str(where)))
                if home == real or os.path.dirname(home) == real:
                    found = info(dist)
                    found["editable"], found["url"] = True, "file://" + real
                    found["home"] = found.get("home") or home
                    out["tree_dists"].append(found)
    return out
"""
PROBE = PROBE_FN + "import json, sys\nprint(json.dumps(probe(sys.argv[2:], sys.argv[1] or None)))\n"


def probe_here(packages: list[str], tree: str | None = None,
               layout: tuple[list[str], dict] | None = None) -> str:
    """The probe's output, computed in this process: for the orchestrator's own interpreter
    (``importlib.metadata``), or for another venv's from its ``layout`` (``venv_layout``:
    the metadata files read directly). No child interpreter to start either way."""
    space: dict = {}
    exec(compile(PROBE_FN, "<envinfo probe>", "exec"), space)  # noqa: S102 (our own code)
    paths, facts = layout if layout is not None else (None, None)
    return json.dumps(space["probe"](packages, tree, paths, facts))


def venv_layout(python: str) -> tuple[list[str], dict] | None:
    """What ``python``'s ``sys.path`` holds for distributions, read from its files alone
    (no child run): for a venv (``pyvenv.cfg`` beside its ``bin/``) without the system's
    site-packages, its one ``lib/pythonX.Y/site-packages`` plus the folders its ``.pth``
    files add (in ``site``'s order), and the facts the probe reports (interpreter, version
    from ``pyvenv.cfg``, prefix). None when the layout is anything else (a system or
    conda interpreter, system site-packages included, an odd ``pyvenv.cfg``): the caller
    runs the probe in ``python`` then."""
    import os

    prefix = os.path.dirname(os.path.dirname(os.path.abspath(python)))
    try:
        text = Path(prefix, "pyvenv.cfg").read_text(errors="replace")
    except OSError:
        return None
    cfg = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            cfg[key.strip().lower()] = value.strip()
    if cfg.get("include-system-site-packages", "false").lower() != "false":
        return None
    version = re.match(r"(\d+)\.(\d+)\.(\d+)", cfg.get("version") or cfg.get("version_info") or "")
    if version is None:
        return None
    site = Path(prefix, "lib", f"python{version[1]}.{version[2]}", "site-packages")
    if not site.is_dir() or not os.access(python, os.X_OK):
        return None
    paths = [str(site)]
    for pth in sorted(site.glob("*.pth")):
        try:
            lines = pth.read_text(errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            if not line.strip() or line.startswith(("#", "import ", "import\t")):
                continue
            extra = os.path.join(str(site), line.rstrip())
            if os.path.isdir(extra) and extra not in paths:
                paths.append(extra)
    return paths, {"interpreter": python, "python_version": version[0], "prefix": prefix}


def is_this_interpreter(python: str) -> bool:
    """``python`` is the interpreter running this process (same file, same prefix)."""
    import os
    import sys

    try:
        return os.path.samefile(python, sys.executable) and (
            Path(python).parent.parent.resolve() == Path(sys.prefix).resolve())
    except OSError:
        return False


def probe_argv(python: str, packages: list[str], tree: str | None = None) -> list[str]:
    """One run of ``python`` printing the JSON ``read_probe`` reads."""
    return [python, "-c", PROBE, tree or "", *packages]
