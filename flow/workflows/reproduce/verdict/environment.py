"""What a verdict says about where it was reached: the interpreter, the project under test
(identified from installed metadata for every kind of project: pyproject.toml, setup.cfg or
setup.py), the versions of the packages the profile names, and the source tree's state
(HEAD plus a hash of the uncommitted changes).

The probe (``verdict.probe``: one child run of the stage's interpreter, or none for a
venv or this interpreter) prints JSON: the named distributions, and every distribution
whose ``direct_url.json`` points at the tree. ``read_probe`` turns its output into an
``Environment`` (never raises: an unreadable probe gives the interpreter alone). ``tree_state`` reads git through argument lists given to ``run``.
``rerun_after_fix`` says what a fix-verifier must run before ``refined_command``.
"""
from __future__ import annotations

import ast
import configparser
import hashlib
import json
import shlex
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

Install = Literal["editable", "installed", "not installed"]

class TreeState(BaseModel):
    """The source tree a verdict was reached on."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    path: str
    git: bool
    head: str | None = None
    dirty: bool = False
    changes_sha256: str | None = None   # of ``git diff HEAD`` plus untracked files

    def describe(self) -> str:
        if not self.git:
            return f"{self.path} (not a git repository: its files as they are)"
        state = (f"with uncommitted changes (sha256 {self.changes_sha256[:12]})"
                 if self.dirty and self.changes_sha256 else "clean")
        return f"{self.path} at HEAD {self.head[:12] if self.head else '?'}, {state}"


class Environment(BaseModel):
    """Where the verdict was reached (``environment`` in the verdict)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    interpreter: str
    python_version: str | None = None
    project: str | None = None
    project_version: str | None = None
    project_install: Install | None = None
    # where the installed copy came from: "the tree", another folder or URL, or "an index
    # or a legacy setup.py install (no direct_url.json)"; None when not installed
    project_origin: str | None = None
    # the installed copy's top-level import names (what an in-tree folder would shadow)
    project_imports: list[str] = []
    packages: dict[str, str] = {}
    tree: TreeState | None = None
    # set when the interpreter imports the project from another folder than the tree (an
    # editable install of another clone, a copy installed from elsewhere): the verdict is
    # about that code, not the tree's
    other_code: str | None = None
    # the files the deciding run itself imported the project's top-level modules from (its
    # import record, ``run.imports``); None when no record was written. When set, it
    # decides ``other_code`` instead of the install record
    imported_from: list[str] | None = None


def _other_code(proj: dict | None, origin: str | None, tree: TreeState | None) -> str | None:
    """What the run imports instead of the tree, in words; None when it is the tree's code
    (installed from the tree or a folder inside it, or not installed)."""
    if proj is None or tree is None or origin is None:
        return None
    root, home = Path(tree.path).resolve(), proj.get("home")
    if home:
        # where the package is really imported from (an egg-link, an editable finder's
        # mapping, a .pth line) decides, whatever the install record's URL says
        if Path(home).resolve().is_relative_to(root):
            return None
        if proj.get("editable"):
            return (f"the interpreter imports {proj.get('name')} from {home} (an editable "
                    f"install of another folder), not from the tree {tree.path}")
    if origin == "the tree" and not home:
        return None
    url = str(proj.get("url") or "")
    if url.startswith("file://") and not home:
        folder = Path(url[7:]).resolve()
        if folder.is_relative_to(root):
            return None
    if proj.get("editable"):
        return (f"the interpreter imports {proj.get('name')} from {origin} (an editable "
                f"install of another folder), not from the tree {tree.path}")
    return (f"the interpreter imports {proj.get('name')} {proj.get('version')} installed "
            f"from {origin}, not from the tree {tree.path}")


def _normal(name: str) -> str:
    """A distribution name as PEP 503 compares it."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _origin(dist: dict, tree_path: str | None) -> str:
    url = dist.get("url")
    if not url:
        return "an index or a legacy setup.py install (no direct_url.json)"
    if tree_path and url.startswith("file://") and \
            Path(url[7:]).resolve() == Path(tree_path).resolve():
        return "the tree"
    return str(url)


def _probe_found(output: str) -> dict:
    """The probe's JSON object (its line searched from the end), or {}."""
    for line in reversed(output.splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and "packages" in value:
            return value
    return {}


def _project_dist(found: dict, project: str | None) -> tuple[dict | None, str | None]:
    """(the project's distribution in the probe, its name): the one installed from the
    tree when there is one, else the named ``project``'s; a single distribution installed
    from the tree when no name is known."""
    dists = found.get("packages", {})
    from_tree = found.get("tree_dists") or []
    proj = None
    if project:
        proj = next((d for n, d in dists.items() if _normal(n) == _normal(project)), None)
        proj = next((d for d in from_tree if _normal(d["name"]) == _normal(project)), proj)
    if proj is None and len(from_tree) == 1:
        proj = from_tree[0]
        project = proj["name"]
    return proj, project


def read_probe(python: str, output: str, project: str | None, packages: list[str],
               tree: TreeState | None) -> Environment:
    """The Environment from the probe's output (the JSON line is searched from the end).
    The project is the distribution installed from the tree when there is one (its
    ``direct_url.json`` names the tree), else the named ``project``."""
    found = _probe_found(output)
    dists = found.get("packages", {})
    proj, project = _project_dist(found, project)
    install: Install | None = None
    if project:
        install = ("not installed" if proj is None
                   else "editable" if proj.get("editable") else "installed")
    origin = _origin(proj, tree.path if tree else None) if proj else None
    return Environment(
        interpreter=python, python_version=found.get("python_version"), project=project,
        project_version=proj.get("version") if proj else None, project_install=install,
        project_origin=origin,
        project_imports=list(proj.get("top_level") or []) if proj else [],
        packages={n: d["version"] for n, d in dists.items() if n in packages},
        tree=tree, other_code=_other_code(proj, origin, tree))


def tree_packages(tree: str | None) -> list[str]:
    """The top-level import packages a tree holds at its root or in ``src/`` (what the
    project's code is imported as when it is not installed)."""
    if not tree:
        return []
    names = []
    for base in (Path(tree), Path(tree, "src")):
        try:
            entries = sorted(base.iterdir())
        except OSError:
            continue
        names += [e.name for e in entries if (e / "__init__.py").is_file()
                  and e.name not in ("tests", "test", "docs")]
    return list(dict.fromkeys(names))


def from_imports(env: Environment, imported: dict[str, list[str]] | None,
                 tree_path: str | None) -> Environment:
    """``env`` with ``other_code`` decided by what the run imported (its import record)
    rather than by the install record: the project's top-level modules (the installed
    copy's, else the tree's packages) and the files they came from. A record in which
    the run imported none of them says no other code of the project ran. ``env`` as it is
    when there is no record or no name to look for."""
    if imported is None or not tree_path:
        return env
    names = env.project_imports or tree_packages(tree_path)
    if not names:
        return env
    files = [f for n in names for f in imported.get(n, [])]
    root = Path(tree_path).resolve()
    outside = [f for f in files if not Path(f).resolve().is_relative_to(root)]
    other = None
    if outside:
        where = ", ".join(sorted({str(Path(f).parent) for f in outside}))
        other = (f"the run imported {env.project or names[0]} from {where}, not from the tree "
                 f"{tree_path}")
    return env.model_copy(update={"other_code": other, "imported_from": files})


def _setup_py_name(text: str) -> str | None:
    """The literal ``name=`` of a ``setup(...)`` call in a setup.py (None when it is
    computed, which needs the installed metadata to know)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "setup":
            for kw in node.keywords:
                if kw.arg == "name" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                    return kw.value.value
    return None


def project_name(source_dir: str | None) -> str | None:
    """The distribution name the source dir declares: pyproject.toml's ``[project].name``,
    else setup.cfg's ``[metadata] name``, else a literal ``name=`` in setup.py (None when
    none says; the installed metadata may still know it, see ``read_probe``)."""
    if not source_dir:
        return None
    root = Path(source_dir)
    try:
        name = tomllib.loads((root / "pyproject.toml").read_text()).get("project", {}).get("name")
    except (OSError, tomllib.TOMLDecodeError):
        name = None
    if not name:
        cfg = configparser.ConfigParser(interpolation=None)
        try:
            cfg.read(root / "setup.cfg")
            name = cfg.get("metadata", "name", fallback=None)
        except configparser.Error:
            name = None
    if not name:
        try:
            name = _setup_py_name((root / "setup.py").read_text(errors="replace"))
        except OSError:
            name = None
    return str(name) if name else None


def shadowing_imports(env: Environment) -> list[str]:
    """The installed non-editable copy's import names that the tree's root also holds:
    running from the tree imports those from the tree, not from the copy."""
    if env.project_install != "installed" or env.tree is None:
        return []
    root = Path(env.tree.path)
    return [name for name in env.project_imports
            if (root / name / "__init__.py").is_file() or (root / f"{name}.py").is_file()]


def _built_in(root: Path, compiled: str) -> bool:
    """The tree ``root`` holds a build of the compiled module ``compiled`` (a path as the
    installed copy's RECORD names it: ``pkg/_speedups.cpython-311-x86_64-linux-gnu.so``),
    whatever its platform tag: ``pkg/_speedups*.so`` or ``.pyd``."""
    rel = Path(compiled)
    stem = rel.name.split(".")[0]
    try:
        names = [e.name for e in (root / rel.parent).iterdir()]
    except OSError:
        return False
    return any(n.split(".")[0] == stem and n.endswith((".so", ".pyd")) for n in names)


def unbuilt_imports(env: Environment, output: str) -> list[str]:
    """Of the import names the tree would shadow (``shadowing_imports``), those whose
    installed non-editable copy holds compiled modules that the tree's package lacks (an
    extension not built in place): importing them from the tree loads a package that
    cannot work, so no run in the tree says anything about the bug. ``output`` is the
    probe's, which lists the copy's compiled modules."""
    names = shadowing_imports(env)
    if not names:
        return []
    proj, _ = _project_dist(_probe_found(output), env.project)
    compiled = (proj or {}).get("compiled") or []
    root = Path(env.tree.path) if env.tree else Path(".")
    return [name for name in names
            if any(c.split("/")[0] == name and not _built_in(root, c) for c in compiled)]


def tree_state(path: str, run: Callable[[list[str]], tuple[int, str]],
               workspace: str | Path | None = None) -> TreeState:
    """HEAD and a hash of what differs from it (tracked changes and untracked files);
    ``run(argv) -> (exit code, stdout)``. One git call for a clean tree, and for one whose
    only changes are untracked files (``__pycache__`` left by the run): ``git diff HEAD``
    runs only when a tracked file changed (it prints nothing otherwise). The
    ``workspace``, when it lies inside the tree, is not part of it (the flow id's reads,
    ``reuse.tree_fingerprint``, leave it out the same way)."""
    from flow.workflows.reproduce.verdict.reuse import diff_argv, inside, status_argv

    exclude = inside(path, workspace)
    code, status = run(status_argv(path, exclude))
    if code != 0:
        return TreeState(path=path, git=False)
    head = next((l.split()[2] for l in status.splitlines() if l.startswith("# branch.oid ")), None)
    head = head if head and head != "(initial)" else None
    from flow.workflows.reproduce.verdict.reuse import status_changes

    changed = status_changes(status)  # a run's own __pycache__ is not a change of the tree
    if not changed:
        return TreeState(path=path, git=True, head=head)
    diff = ""
    if any(not l.startswith("? ") for l in changed):
        _, diff = run(diff_argv(path, exclude))
    digest = hashlib.sha256(diff.encode(errors="replace"))
    here = Path(path).resolve()
    top = next((p for p in (here, *here.parents) if (p / ".git").exists()), None)
    for line in sorted(l for l in changed if l.startswith("? ")):
        name = line[2:]
        digest.update(name.encode())
        # git prints them relative to ``path`` (or, with status.relativePaths=false, to
        # the top of the work tree): the first that names a file is read
        for base in (here, top):
            if base is not None and (base / name).is_file():
                try:
                    digest.update((base / name).read_bytes())
                except OSError:
                    pass
                break
    return TreeState(path=path, git=True, head=head, dirty=True,
                     changes_sha256=digest.hexdigest())


def ran_the_tree(env: Environment) -> bool:
    """The run's import record (``from_imports``) shows it imported none of the project
    from outside the tree; False when there is no record."""
    return env.imported_from is not None and env.other_code is None


def rerun_after_fix(env: Environment, source_dir: str | None, build_note: str | None) -> str:
    """What a fix-verifier runs before ``refined_command`` so a fix in the tree is seen:
    nothing (``""``) when the project is installed editable or not installed at all (the
    tests import it from the tree), or when the run's import record shows it imported
    none of the project from outside the tree (a copy is installed, but the command run
    in the tree imports the tree's package first); the reinstall command when a built copy
    is installed and may be what runs; ``build_note`` (a profile's rebuild instruction)
    when the profile builds elsewhere."""
    if build_note:
        return build_note
    if env.project_install == "installed" and source_dir:
        if ran_the_tree(env):
            return ""
        return reinstall_command(env.interpreter, source_dir)
    if env.project_install == "editable" and env.other_code and source_dir:
        # an editable install of another folder: the tree's code is seen once the tree is
        # the one installed editable
        return " ".join(shlex.quote(w) for w in [env.interpreter, "-m", "pip", "install",
                                                  "--no-deps", "-e", source_dir])
    return ""


def reinstall_command(python: str, source_dir: str) -> str:
    """The target interpreter's own pip (``<python> -m pip``, which every pip has; ``pip
    --python`` needs pip 22.3) reinstalling a non-editable copy of the tree."""
    return " ".join(shlex.quote(w) for w in [python, "-m", "pip", "install", "--no-deps",
                                              "--force-reinstall", source_dir])
