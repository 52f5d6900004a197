"""Prepare's rules (seed: "Prepare" and Stage 1 "Working directory"): the collect-only
decision, and where the reproducer runs: where the user's command expects to run (the
project tree, for the ``local`` profile, as bash typed there), and outside the tree only
when the tree's package cannot be what runs (a profile's ``import_package``, such as torch,
whose in-tree copy loads a stale ``_C``, or the project's package not built in place while
a compiled copy is installed); a bare node id resolved against the tree, torch-xpu-ops
tests from their own folder. Every choice names the rule that made it. Pure: no IO beyond
looking at paths.
"""
from __future__ import annotations

import posixpath
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from flow.workflows.reproduce.errors import InTreeImportTrap, UnresolvedNodeId
from flow.workflows.reproduce.reproducer.forms import Form, Reproducer, prefix_only
from flow.workflows.reproduce.run.interpret import Outcome, RunOutcome
from flow.workflows.reproduce.verdict.models import CannotVerify, NoReproducer, Stage, Verdict


def after_collect_only(outcome: RunOutcome, stage: Stage = Stage.NIGHTLY) -> Verdict | None:
    """collected 0 items -> NO_REPRODUCER(collected_zero) for all stages; a collection
    error -> CANNOT_VERIFY; otherwise None (go on)."""
    if outcome.kind is Outcome.COLLECTED_ZERO:
        return NoReproducer(reason="collected_zero")
    if outcome.kind is Outcome.BLOCKED:
        return CannotVerify(stage=stage, blocker=outcome.detail)
    return None


def shadowing_package(cwd: str | Path, package: str) -> Path | None:
    """The in-tree package ``import package`` would pick from ``cwd`` (it is on sys.path
    first), or None."""
    candidate = Path(cwd) / package
    if (candidate / "__init__.py").exists() or Path(f"{candidate}.py").exists():
        return candidate
    return None


_SKIP_DIRS = frozenset({".git", ".hg", ".tox", ".nox", ".venv", "venv", "node_modules",
                        "build", "dist", "site-packages", "__pycache__"})


def pytest_testpaths(tree: str | Path) -> list[str]:
    """The ``testpaths`` of the project's pytest configuration at the tree's root, in
    pytest's order of precedence (``pytest.ini``, ``pyproject.toml``, ``tox.ini``,
    ``setup.cfg``: the first file that configures pytest decides); [] when none says."""
    import configparser
    import tomllib

    root = Path(tree)
    for name, section in (("pytest.ini", "pytest"), ("pyproject.toml", None),
                          ("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):
        path = root / name
        if not path.is_file():
            continue
        try:
            if section is None:
                tool = tomllib.loads(path.read_text(errors="replace")).get("tool", {})
                pytest_cfg = tool.get("pytest", {})
                options = pytest_cfg.get("ini_options", pytest_cfg) if isinstance(
                    pytest_cfg, dict) else {}
                if not pytest_cfg:
                    continue
                value = options.get("testpaths", [])
                return [value] if isinstance(value, str) else [str(v) for v in value]
            parser = configparser.ConfigParser(interpolation=None)
            parser.read_string(path.read_text(errors="replace"))
        except (ValueError, configparser.Error, OSError):
            continue
        if parser.has_section(section):
            return parser.get(section, "testpaths", fallback="").split()
    return []


_TEST_NAME = re.compile(r"^(test_.*|.*_test)\.py$")


def _test_files(folder: Path, named_as_tests: bool = False) -> list[Path]:
    """The ``.py`` files under ``folder`` (``named_as_tests``: only ``test_*.py`` and
    ``*_test.py``, the files pytest collects by default), sorted, outside virtualenvs,
    VCS and build dirs."""
    found: list[Path] = []
    if not folder.is_dir():
        return [folder] if folder.suffix == ".py" and folder.is_file() else []
    for path in sorted(folder.rglob("*.py")):
        if named_as_tests and not _TEST_NAME.match(path.name):
            continue
        if not _SKIP_DIRS.intersection(path.relative_to(folder).parts[:-1]):
            found.append(path)
    return found


def bare_node_places(tree: str | Path) -> list[str]:
    """Where a bare node id is looked for, in order: the pytest configuration's
    ``testpaths`` (globs expanded), then ``test/`` and ``tests/``, then the whole tree
    (pytest's rootdir)."""
    root = Path(tree)
    places: list[str] = []
    for entry in pytest_testpaths(root):
        matches = sorted(root.glob(entry)) if any(c in entry for c in "*?[") else [root / entry]
        places += [m.relative_to(root).as_posix() for m in matches if m.exists()]
    places += ["test", "tests", "."]
    return list(dict.fromkeys(places))


def resolve_bare_node(node_id: str, tree: str | Path) -> str | None:
    """The repo-relative file defining a bare ``Class::test`` node id (seed: "pytest rootdir
    discovery needs the tree"), looked for where the project's pytest configuration says
    tests are, then in both layouts, then the whole tree (``bare_node_places``): the first
    place where any file defines it decides. torch's device-generic names
    (``TestFooXPU::test_bar_xpu_float32``) are found through their source names. None when
    no file or more than one file of that place defines it (never a guess)."""
    parts = [p for p in node_id.split("::") if p]
    if len(parts) < 2:
        return None
    cls, test = parts[-2], re.sub(r"\[.*\]$", "", parts[-1])
    classes = {cls, re.sub(r"XPU$", "", cls)}
    tests = {test, re.sub(r"_xpu(_.*)?$", "", test)}
    class_re = re.compile(r"^class (%s)\b" % "|".join(map(re.escape, classes)), re.M)
    test_re = re.compile(r"^\s+def (%s)\(" % "|".join(map(re.escape, tests)), re.M)
    root = Path(tree)
    for place in bare_node_places(root):
        hits = []
        for path in _test_files(root / place, named_as_tests=place == "."):
            text = path.read_text(errors="replace")
            if class_re.search(text) and test_re.search(text):
                hits.append(path.relative_to(root).as_posix())
        if hits:
            return hits[0] if len(set(hits)) == 1 else None
    return None


class CwdChoice(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    cwd: str
    pytest_args: list[str] | None = None  # targets rewritten for ``cwd``
    rule: str


XPU_OPS_SUBDIR = "third_party/torch-xpu-ops/test/xpu"


RULE_IN_TREE = "the project tree, where the command expects to run (local profile)"
RULE_PREFIX_IN_TREE = ("the project tree, as bash runs the command typed there (its "
                       "cd/export/source prefix applied there)")


def _apply_cds(start: str, cds: list[str], fallback: str) -> str:
    cwd = start
    for step in cds:
        if "$" in step or "`" in step or step == "-":
            cwd = fallback  # cannot be resolved here: stay somewhere safe
            continue
        cwd = posixpath.normpath(posixpath.join(cwd, step))
    return cwd


def choose_cwd(rep: Reproducer, *, scratch: str, tree: str | None, package: str | None,
               xpu_ops_subdir: str = XPU_OPS_SUBDIR, in_tree: bool = False,
               unbuilt: str | None = None) -> CwdChoice:
    """Where to run the reproducer (seed: Working directory).

    - ``in_tree`` (the ``local`` profile, whose tree is the user's project; not for a
      shell block, which does its own setup in scratch, unless its setup is only a
      cd/export/source prefix, ``prefix_only``, which runs in the tree as bash would
      run it typed there: ``RULE_PREFIX_IN_TREE``): the tree,
      with the command's own cds applied on top of it, targets as written, whatever copy
      of the project the interpreter also holds (bash typed in the tree imports the
      tree's package, and the user asks about the tree); unless the tree's package
      cannot be what runs: ``package``'s folder is at the tree's root, or ``unbuilt``
      (the caller's finding: a compiled copy is installed non-editable and the tree's
      package lacks its compiled modules) says why; then the rules below;
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
                where = ", ".join(p if p != "." else "the rest of the tree"
                                  for p in bare_node_places(tree))
                raise UnresolvedNodeId(
                    f"bare node id {node!r} is defined in no single file of {tree} (looked in "
                    f"{where}); give the reproducer as path/test_file.py::Class::test",
                    node_id=node)
            resolved[node] = f"{found}::{node}"
        rep = rep.model_copy(update={
            "pytest_args": [resolved.get(a, a) for a in rep.pytest_args],
            "pytest_targets": [resolved.get(t, t) for t in rep.pytest_targets]})
    own = shadowing_package(tree, package) if tree and package else None
    if in_tree and tree and own is None and not unbuilt and (
            not rep.setup or prefix_only(rep)):
        return CwdChoice(cwd=_apply_cds(tree, rep.cd, tree), pytest_args=rep.pytest_args,
                         rule=RULE_PREFIX_IN_TREE if rep.setup else RULE_IN_TREE)
    why = (f"; left the tree: {unbuilt}" if unbuilt else
           f"; left the tree: its {own.name}/ would shadow the installed {package}"
           if in_tree and own is not None else "")
    if rep.form is Form.PYTEST and rep.needs_tree and tree and not rep.cd:
        rewritten, rule, cwd = [], "repo-relative target made absolute, run outside the tree" + why, scratch
        xpu_targets = [t for t in rep.pytest_targets if t.startswith("test/xpu/")]
        if xpu_targets:
            cwd = posixpath.join(tree, xpu_ops_subdir)
            rule = "torch-xpu-ops test: run from its test/xpu dir" + why
        for arg in rep.pytest_args:
            path = arg.split("::")[0]
            if arg in rep.pytest_targets and (path.endswith(".py") or "/" in path) \
                    and not posixpath.isabs(arg):
                arg = arg[len("test/xpu/"):] if xpu_targets and arg.startswith("test/xpu/") \
                    else posixpath.join(tree, arg)
            rewritten.append(arg)
        choice = CwdChoice(cwd=cwd, pytest_args=rewritten, rule=rule)
    else:
        choice = CwdChoice(cwd=_apply_cds(scratch, rep.cd, scratch),
                           rule="outside any source tree" + why)
    shadow = shadowing_package(choice.cwd, package) if package else None
    if shadow is not None:
        raise InTreeImportTrap(
            f"cwd {choice.cwd!r} holds {shadow}, so `import {package}` would load the tree "
            "instead of the installed wheel; run from a scratch dir or with an absolute path",
            cwd=choice.cwd, shadow=str(shadow))
    return choice
