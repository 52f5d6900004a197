"""A project's own environment for the flows the tests drive, made from the test environment.

The reproduce workflow runs a reproducer with the project's interpreter
(``ORCHESTRATOR_REPRODUCE_PYTHON``, else the orchestrator's own), and a pytest started there
loads every plugin that environment registers. The test environment registers xdist's,
hypothesis's and anyio's (mcp's dependency), which no project under test asked for: a pytest
start there took 0.58 CPU-seconds on a 2-core machine, 0.26 without them, and the reproduce
tests start some 500. ``make`` builds a venv holding copies of the named distributions of the
test environment and of what they require, with their console scripts (``pytest``, ``pip``)
in its ``bin``: the same installed code, without ``ensurepip`` or an index, and what a flow
installs or removes there stays there. A project's environment holds its own tools, not ours.
(The refactor's runs fork from a server that imported torch instead: ``tests.forkserver``.)

``lending`` makes the other kind the tests need: a venv of its own (its ``pyvenv.cfg``, its
own site-packages first) that also imports the test environment's packages through a ``.pth``,
for tests whose subject is such an interpreter rather than the tools in it.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

SCRIPT = """#!{python}
import sys
from {module} import {head}
sys.exit({call}())
"""


def _closure(names: Iterable[str]) -> list[metadata.Distribution]:
    """The distributions ``names`` and, recursively, what they require on this interpreter
    (markers evaluated, a requirement's extras followed). A named one this environment does
    not hold, or holds without a file list, is an error: the project environment would lack
    it and the flows' runs would fail for a reason of ours."""
    seen: dict[str, metadata.Distribution] = {}
    taken: set[tuple[str, str]] = set()
    for name in names:
        if not metadata.distribution(name).files:  # PackageNotFoundError names it
            raise RuntimeError(f"{name} has no RECORD in {sys.prefix}: reinstall it with pip")
    todo = [(name, "") for name in names]
    while todo:
        name, extra = todo.pop()
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # an optional requirement this environment does not hold
        key = dist.metadata["Name"].lower().replace("_", "-")
        if (key, extra) in taken:
            continue
        taken.add((key, extra))
        seen[key] = dist
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": extra}):
                todo += [(req.name, "")] + [(req.name, e) for e in req.extras]
    return list(seen.values())


def make(venv: Path, names: Iterable[str]) -> Path:
    """Make ``venv`` holding ``names`` (and their requirements) of this environment, copied
    into its site-packages (compiled files and times kept); its python. ``["pip"]`` gives a
    venv as ``python -m venv`` makes it (``.ci/test`` builds this environment with the pip
    ``ensurepip`` gives, and never upgrades it) without the 4 to 5 CPU-seconds ``ensurepip``
    spends unpacking and compiling pip."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    _copy_in(venv, names)
    return venv / "bin" / "python"


def _copy_in(venv: Path, names: Iterable[str]) -> None:
    """Copy ``names`` and their requirements into ``venv``, console scripts included."""
    python = venv / "bin" / "python"
    site = _site(venv)
    for dist in _closure(names):
        tops = {f.parts[0] for f in dist.files or [] if f.parts[0] not in ("..", "__pycache__")}
        for top in sorted(tops):
            source = Path(dist.locate_file(top))
            if (site / top).exists() or not source.exists():
                continue
            if source.is_dir():
                shutil.copytree(source, site / top, symlinks=True)
            else:
                shutil.copy2(source, site / top)
        for ep in dist.entry_points.select(group="console_scripts"):
            head = ep.attr.split(".")[0]
            script = venv / "bin" / ep.name
            script.write_text(SCRIPT.format(python=python, module=ep.module, head=head,
                                            call=ep.attr))
            script.chmod(0o755)


def lending(venv: Path, *flags: str, pip: bool = False) -> Path:
    """Make ``venv`` (``python -m venv`` with ``flags``; with a pip of its own, copied as
    ``make`` does, if ``pip``) that also imports this environment's packages (pytest and the
    rest) through a ``.pth`` after its own site-packages: another interpreter to run with,
    without installing anything; its python. A bare link to this interpreter is no such
    thing: without a ``pyvenv.cfg`` beside it, some Pythons (Debian's) run it as the base
    interpreter, without our packages."""
    subprocess.run([sys.executable, "-m", "venv", *flags, "--without-pip", str(venv)], check=True)
    if pip:
        _copy_in(venv, ["pip"])
    (_site(venv) / "zz_lent.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return venv / "bin" / "python"


def _site(venv: Path) -> Path:
    """``venv``'s site-packages, as this interpreter lays a venv out."""
    return Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
