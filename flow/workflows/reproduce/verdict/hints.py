"""How to get past a CANNOT_VERIFY whose blocker is a missing import (seed: "Run test",
"Exit code non-zero but cause is unrelated (missing dependency ...)"): the verdict's
``hint`` names the module, the distribution that provides it and how to add it where the
run needs it.

What the hint says depends on where the import failed and on what the tree declares:

- Stage 2 of the local profile (the source-build venv holds the project, its declared
  ``--test-extras`` and pytest): an extra of the tree that lists the distribution is
  named for ``--test-extras`` (or the profile's ``source_build.test_extras``); a
  requirements file, tox ``deps`` or dependency group that lists it, or none at all (an
  undeclared test dependency), is installed into the project interpreter, which the build
  borrows from under ``ORCHESTRATOR_REPRODUCE_OFFLINE=1``; when the project interpreter has
  it already, that flag alone is the way;
- any other stage: the interpreter that ran lacks it: its own ``pip install`` of the
  extra, the requirements file or the distribution.

The tree's declarations are read from its files (pyproject.toml ``[project.optional-
dependencies]`` and ``[dependency-groups]``, setup.cfg ``[options.extras_require]``, a
literal ``extras_require`` in setup.py, ``requirements*.txt`` files, tox.ini ``deps``);
nothing of the tree is imported or run.
"""
from __future__ import annotations

import ast
import configparser
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

MISSING = re.compile(r"No module named '?([A-Za-z_][\w.]*)'?")
# import names whose distribution is named otherwise (the well-known ones)
_DISTRIBUTION = {
    "yaml": "PyYAML", "attr": "attrs", "dateutil": "python-dateutil", "PIL": "Pillow",
    "sklearn": "scikit-learn", "cv2": "opencv-python", "bs4": "beautifulsoup4",
    "jwt": "PyJWT", "Crypto": "pycryptodome", "OpenSSL": "pyOpenSSL", "serial": "pyserial",
    "dotenv": "python-dotenv", "pkg_resources": "setuptools", "_pytest": "pytest",
    "zmq": "pyzmq", "git": "GitPython", "xdist": "pytest-xdist", "hamcrest": "PyHamcrest",
    "magic": "python-magic", "multipart": "python-multipart", "markdown": "Markdown",
}
_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def missing_module(text: str) -> str | None:
    """The module a ``No module named 'x.y'`` line names, else None."""
    found = MISSING.search(text or "")
    return found.group(1) if found else None


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _names(requirements: list[str]) -> set[str]:
    out = set()
    for line in requirements:
        got = _REQ_NAME.match(str(line))
        if got and not str(line).lstrip().startswith(("-", "#")):
            out.add(_norm(got.group(1)))
    return out


def declared(tree: str | None) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """``(extras, elsewhere)``: the tree's extras ``{extra: {normalised names}}`` and the
    other places that list test dependencies ``{place in words: {names}}``."""
    extras: dict[str, set[str]] = {}
    other: dict[str, set[str]] = {}
    if not tree:
        return extras, other
    root = Path(tree)
    try:
        py = tomllib.loads((root / "pyproject.toml").read_text(errors="replace"))
    except (OSError, tomllib.TOMLDecodeError):
        py = {}
    for extra, reqs in (py.get("project", {}).get("optional-dependencies") or {}).items():
        extras[extra] = _names(list(reqs or []))
    for group, reqs in (py.get("dependency-groups") or {}).items():
        other[f"the dependency group {group!r} of pyproject.toml"] = _names(
            [r for r in reqs or [] if isinstance(r, str)])
    cfg = configparser.ConfigParser(interpolation=None)
    try:
        cfg.read(root / "setup.cfg")
        if cfg.has_section("options.extras_require"):
            for extra, value in cfg.items("options.extras_require"):
                extras.setdefault(extra, set()).update(_names(value.splitlines()))
    except configparser.Error:
        pass
    try:
        extras_py = _setup_py_extras((root / "setup.py").read_text(errors="replace"))
    except OSError:
        extras_py = {}
    for extra, names in extras_py.items():
        extras.setdefault(extra, set()).update(names)
    for path in sorted({*root.glob("*requirements*.txt"), *root.glob("requirements/*.txt"),
                        *root.glob("requirements/*.in"), *root.glob("tests/requirements*.txt"),
                        *root.glob("test/requirements*.txt")}):
        try:
            other[str(path.relative_to(root))] = _names(path.read_text(errors="replace").splitlines())
        except OSError:
            continue
    tox = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        tox.read(root / "tox.ini")
        for section in tox.sections():
            if tox.has_option(section, "deps"):
                other[f"tox.ini [{section}] deps"] = _names(tox.get(section, "deps").splitlines())
    except configparser.Error:
        pass
    return extras, other


def _setup_py_extras(text: str) -> dict[str, set[str]]:
    """A literal ``extras_require={...}`` of a setup.py (a dict of lists of strings)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return {}
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "extras_require":
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return {}
            if isinstance(value, dict):
                return {str(k): _names([r for r in v if isinstance(r, str)])
                        for k, v in value.items() if isinstance(v, (list, tuple))}
    return {}


def distribution(module: str) -> str:
    """The distribution that most likely provides the import ``module``."""
    top = module.split(".")[0]
    return _DISTRIBUTION.get(top, top.replace("_", "-"))


def _listed(dist: str, names: set[str]) -> bool:
    return _norm(dist) in names


def hint(module: str, *, stage: str, python: str, project_python: str, tree: str | None,
         local_build: bool, offline: bool, project_has_it: bool | None) -> str:
    """In words: what is missing, and the command or flag that adds it where it is needed."""
    dist = distribution(module)
    extras, elsewhere = declared(tree)
    extra = next((e for e, names in sorted(extras.items()) if _listed(dist, names)), None)
    place = next((p for p, names in elsewhere.items() if _listed(dist, names)), None)
    q = shlex.quote
    what = f"the module {module!r} (distribution {dist})"
    if stage == "source_build" and local_build:
        head = f"the source-build venv lacks {what}"
        if extra:
            return (f"{head}, which the project's extra {extra!r} declares: re-run with "
                    f"--test-extras {extra} (or set source_build.test_extras in the profile)")
        if project_has_it and not offline:
            return (f"{head}, a test dependency the project does not declare as an extra; the "
                    f"project interpreter {project_python} has it: re-run with "
                    "ORCHESTRATOR_REPRODUCE_OFFLINE=1 (the build borrows that interpreter's "
                    "packages)")
        source = (f"-r {q(str(Path(tree, place)))}" if place and tree and not place.startswith(
            ("tox.ini", "the dependency group")) else q(dist))
        listed = f" ({place} lists it)" if place else " (the project does not declare it)"
        add = f"{q(project_python)} -m pip install {source}"
        if offline:
            return (f"{head}{listed}; under ORCHESTRATOR_REPRODUCE_OFFLINE=1 the build borrows "
                    f"the project interpreter's packages, which lack it too: run {add}, or add "
                    "it to an extra of the project and pass --test-extras")
        return (f"{head}{listed}: run {add} and re-run with ORCHESTRATOR_REPRODUCE_OFFLINE=1 "
                "(the build borrows that interpreter's packages), or add it to an extra of "
                "the project and pass --test-extras")
    head = f"the interpreter {python} lacks {what}"
    if extra and tree:
        return (f"{head}, which the project's extra {extra!r} declares: run {q(python)} -m pip "
                f"install -e {q(f'{tree}[{extra}]')} (or {q(python)} -m pip install {q(dist)}), "
                "then re-run with --restart")
    if place and tree and not place.startswith(("tox.ini", "the dependency group")):
        return (f"{head} ({place} lists it): run {q(python)} -m pip install -r "
                f"{q(str(Path(tree, place)))}, then re-run with --restart")
    listed = f" ({place} lists it)" if place else ""
    return (f"{head}{listed}: run {q(python)} -m pip install {q(dist)}, then re-run with "
            "--restart")


def for_verdict(ctx: Any, verdict: dict[str, Any]) -> str | None:
    """The hint of a CANNOT_VERIFY verdict (a dict) whose blocker is a missing import, for
    the flow or batch entry ``ctx`` is on; None for any other verdict."""
    if verdict.get("verdict") != "CANNOT_VERIFY":
        return None
    module = missing_module(str(verdict.get("blocker") or ""))
    if module is None:
        return None
    from flow.workflows.reproduce.context import OFFLINE_ENV, interpreter, profile_of, scratch

    profile = profile_of(ctx)
    stage = str(verdict.get("stage") or "nightly")
    env = verdict.get("environment") or {}
    tree = (env.get("tree") or {}).get("path") or ctx.data.source_dir
    project_python = interpreter(ctx)
    python = env.get("interpreter") or ctx.data.python or project_python
    local_build = profile.source_build.kind == "venv"
    offline = profile.source_build.offline or ctx.settings.get(OFFLINE_ENV) == "1"
    has_it = None
    if stage == "source_build" and local_build:
        got = ctx.query([project_python, "-c", "import importlib.util, sys; "
                         "sys.exit(0 if importlib.util.find_spec(sys.argv[1]) else 3)",
                         module.split(".")[0]], cwd=scratch(ctx), env=ctx.settings)
        has_it = got.code == 0
    return hint(module, stage=stage, python=python, project_python=project_python, tree=tree,
                local_build=local_build, offline=offline, project_has_it=has_it)
