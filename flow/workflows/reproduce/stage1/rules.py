"""Stage 1's install rules and the working-directory rules (seed: Install, Working
directory, torch-xpu-ops test invocation).

Pure: version parsing, the same-build-day check, pip command lines as argument lists
(never a shell string), and the cwd choice that avoids the in-tree-import trap.
"""
from __future__ import annotations

import posixpath
import re
from datetime import date
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from flow.reproduce.errors import InTreeImportTrap, UnresolvedNodeId
from flow.reproduce.forms import Form, Reproducer

_DEV = re.compile(r"\.dev(\d{8})")


class WheelVersion(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    text: str
    release: str            # "2.9.0"
    build_day: date | None  # from .devYYYYMMDD, None for a release
    local: str | None       # "xpu" from "+xpu"


def parse_version(text: str) -> WheelVersion:
    """Parse ``2.9.0.dev20250101+xpu``. Raises ValueError on a version with no release part
    or a dev tag that is not a date."""
    public, _, local = text.strip().partition("+")
    m = re.match(r"^(\d+(?:\.\d+)*)", public)
    if not m:
        raise ValueError(f"version {text!r} has no release number; expected e.g. 2.9.0.dev20250101+xpu")
    day = None
    dm = _DEV.search(public)
    if dm:
        try:
            day = date(int(dm.group(1)[:4]), int(dm.group(1)[4:6]), int(dm.group(1)[6:]))
        except ValueError as exc:
            raise ValueError(f"version {text!r}: dev tag {dm.group(1)} is not a YYYYMMDD date") from exc
    return WheelVersion(text=text.strip(), release=m.group(1), build_day=day, local=local or None)


class SameDay(BaseModel):
    """Result of the same-build-day check over the profile's package set."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    ok: bool
    days: dict[str, date | None]
    missing: list[str]
    reason: str


def listed(installed: dict[str, str], packages: list[str]) -> str:
    """``pkg=version, ...`` in ``packages`` order (``not installed`` for a missing one)."""
    return ", ".join(f"{p}={installed.get(p, 'not installed')}" for p in packages)


def same_build_day(installed: dict[str, str], packages: list[str]) -> SameDay:
    """All of ``packages`` installed and built the same day? A missing package or a mixed
    set is not ok (the caller uninstalls all and reinstalls them together). A set of
    releases (no dev tags) counts as one day."""
    missing = [p for p in packages if p not in installed]
    days = {p: parse_version(installed[p]).build_day for p in packages if p in installed}
    distinct = set(days.values())
    if missing:
        return SameDay(ok=False, days=days, missing=missing, reason=f"not installed: {missing}")
    if len(distinct) > 1:
        return SameDay(ok=False, days=days, missing=[],
                       reason=f"mixed build days: {listed(installed, packages)}")
    return SameDay(ok=True, days=days, missing=[], reason="same build day")


def pip_for(python: str, target: str | None = None) -> list[str]:
    """The pip prefix: ``python -m pip``, or, with ``target``, ``python -m pip --python
    TARGET`` (pip >= 22.3 installs into another interpreter's environment)."""
    return [python, "-m", "pip", *(["--python", target] if target else [])]


def pip_install(pip: list[str], packages: list[str], *, index_url: str | None = None,
                find_links: str | None = None, no_index: bool = False, pre: bool = False,
                upgrade: bool = False, force_reinstall: bool = False) -> list[str]:
    """``<pip> install ...`` as an argument list (``pip`` from ``pip_for``)."""
    argv = [*pip, "install"]
    argv += ["--pre"] if pre else []
    argv += ["--upgrade"] if upgrade else []
    argv += ["--force-reinstall"] if force_reinstall else []
    argv += ["--index-url", index_url] if index_url else []
    argv += ["--find-links", find_links] if find_links else []
    argv += ["--no-index"] if no_index else []
    return argv + list(packages)


def pip_uninstall(pip: list[str], packages: list[str]) -> list[str]:
    return [*pip, "uninstall", "-y", *packages]


def pip_index_versions(pip: list[str], package: str, index_url: str) -> list[str]:
    """Informational query of available versions (the seed's first command)."""
    return [*pip, "index", "versions", package, "--pre", "--index-url", index_url]


def versions_query(python: str, packages: list[str]) -> list[str]:
    """A command printing ``{name: version}`` JSON for the installed ``packages`` (absent
    ones left out), read from distribution metadata so it works from any cwd."""
    code = ("import json,sys,importlib.metadata as m\n"
            "out={}\n"
            "for p in sys.argv[1:]:\n"
            "    try: out[p]=m.version(p)\n"
            "    except m.PackageNotFoundError: pass\n"
            "print(json.dumps(out))")
    return [python, "-c", code, *packages]


def install_plan(pip: list[str], check: SameDay, packages: list[str], *,
                 index_url: str | None = None, find_links: str | None = None,
                 no_index: bool = False, pre: bool = True) -> list[list[str]]:
    """Commands to run after the post-install check: none when ok, else uninstall all and
    reinstall the set together (seed: "If they diverge, uninstall all three and reinstall")."""
    if check.ok:
        return []
    return [pip_uninstall(pip, packages),
            pip_install(pip, packages, index_url=index_url, find_links=find_links,
                        no_index=no_index, pre=pre)]


def shadowing_package(cwd: str | Path, package: str) -> Path | None:
    """The in-tree package ``import package`` would pick from ``cwd`` (it is on sys.path
    first), or None."""
    candidate = Path(cwd) / package
    if (candidate / "__init__.py").exists() or Path(f"{candidate}.py").exists():
        return candidate
    return None


def resolve_bare_node(node_id: str, tree: str | Path, test_dir: str = "test") -> str | None:
    """The repo-relative file defining a bare ``Class::test`` node id, searched under
    ``<tree>/<test_dir>`` (seed: "pytest rootdir discovery needs the tree"). torch's
    device-generic names (``TestFooXPU::test_bar_xpu_float32``) are found through their
    source names. None when no file or more than one file defines it (never a guess)."""
    parts = [p for p in node_id.split("::") if p]
    if len(parts) < 2:
        return None
    cls, test = parts[-2], re.sub(r"\[.*\]$", "", parts[-1])
    classes = {cls, re.sub(r"XPU$", "", cls)}
    tests = {test, re.sub(r"_xpu(_.*)?$", "", test)}
    class_re = re.compile(r"^class (%s)\b" % "|".join(map(re.escape, classes)), re.M)
    test_re = re.compile(r"^\s+def (%s)\(" % "|".join(map(re.escape, tests)), re.M)
    root = Path(tree)
    hits = []
    for path in sorted((root / test_dir).rglob("*.py")):
        text = path.read_text(errors="replace")
        if class_re.search(text) and test_re.search(text):
            hits.append(path.relative_to(root).as_posix())
    return hits[0] if len(hits) == 1 else None


class CwdChoice(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    cwd: str
    pytest_args: list[str] | None = None  # targets rewritten for ``cwd``
    rule: str


XPU_OPS_SUBDIR = "third_party/torch-xpu-ops/test/xpu"


def choose_cwd(rep: Reproducer, *, scratch: str, tree: str | None, package: str | None,
               xpu_ops_subdir: str = XPU_OPS_SUBDIR) -> CwdChoice:
    """Where to run the reproducer (seed: Working directory).

    - pytest target under ``test/xpu/``: ``<tree>/<xpu_ops_subdir>``, target made relative
      to it (the tests' relative sys.path appends resolve only there);
    - other repo-relative pytest targets: made absolute under ``tree``, run from ``scratch``;
    - absolute targets, python -c, scripts, shell blocks, and commands that ``cd``
      themselves: ``scratch`` with the written cds applied on top of it.
    A bare ``Class::test`` is first resolved to its file in the tree (UnresolvedNodeId
    when no single file defines it). Raises InTreeImportTrap when the chosen cwd would
    import ``package`` from a tree (``package=None``: no guard, for projects whose tests
    import from their own tree).
    """
    choice: CwdChoice
    bare = [t for t in rep.pytest_targets if "::" in t and not t.split("::")[0].endswith(".py")]
    if rep.form is Form.PYTEST and tree and bare:
        resolved = {}
        for node in bare:
            found = resolve_bare_node(node, tree)
            if found is None:
                raise UnresolvedNodeId(
                    f"bare node id {node!r} is defined in no single file under {tree}/test; "
                    "give the reproducer as path/test_file.py::Class::test", node_id=node)
            resolved[node] = f"{found}::{node}"
        rep = rep.model_copy(update={
            "pytest_args": [resolved.get(a, a) for a in rep.pytest_args],
            "pytest_targets": [resolved.get(t, t) for t in rep.pytest_targets]})
    if rep.form is Form.PYTEST and rep.needs_tree and tree and not rep.cd:
        rewritten, rule, cwd = [], "repo-relative target made absolute, run outside the tree", scratch
        xpu_targets = [t for t in rep.pytest_targets if t.startswith("test/xpu/")]
        if xpu_targets:
            cwd = posixpath.join(tree, xpu_ops_subdir)
            rule = "torch-xpu-ops test: run from its test/xpu dir"
        for arg in rep.pytest_args:
            path = arg.split("::")[0]
            if arg in rep.pytest_targets and (path.endswith(".py") or "/" in path) \
                    and not posixpath.isabs(arg):
                arg = arg[len("test/xpu/"):] if xpu_targets and arg.startswith("test/xpu/") \
                    else posixpath.join(tree, arg)
            rewritten.append(arg)
        choice = CwdChoice(cwd=cwd, pytest_args=rewritten, rule=rule)
    else:
        cwd = scratch
        for step in rep.cd:
            if "$" in step or "`" in step or step == "-":
                cwd = scratch  # cannot be resolved here: stay somewhere safe
                continue
            cwd = posixpath.normpath(posixpath.join(cwd, step))
        choice = CwdChoice(cwd=cwd, rule="outside any source tree")
    shadow = shadowing_package(choice.cwd, package) if package else None
    if shadow is not None:
        raise InTreeImportTrap(
            f"cwd {choice.cwd!r} holds {shadow}, so `import {package}` would load the tree "
            "instead of the installed wheel; run from a scratch dir or with an absolute path",
            cwd=choice.cwd, shadow=str(shadow))
    return choice
