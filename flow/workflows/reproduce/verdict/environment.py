"""What a verdict says about where it was reached: the interpreter, the versions of the
project under test and of the packages the profile names, and the source tree's state
(HEAD plus a hash of the uncommitted changes).

``probe_argv`` is one child run of the stage's interpreter printing JSON; ``read_probe``
turns its output into an ``Environment`` (never raises: an unreadable probe gives the
interpreter alone). ``tree_state`` reads git through argument lists given to ``run``.
``rerun_after_fix`` says what a fix-verifier must run before ``refined_command``.
"""
from __future__ import annotations

import hashlib
import json
import shlex
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

Install = Literal["editable", "installed", "not installed"]

_PROBE_FN = """\
def probe(names):
    import json, platform, sys, importlib.metadata as m
    out = {"interpreter": sys.executable, "python_version": platform.python_version(),
           "prefix": sys.prefix, "packages": {}}
    for name in names:
        try:
            dist = m.distribution(name)
        except m.PackageNotFoundError:
            continue
        url = dist.read_text("direct_url.json") or "{}"
        try:
            editable = bool(json.loads(url).get("dir_info", {}).get("editable"))
        except ValueError:
            editable = False
        out["packages"][name] = {"version": dist.version, "editable": editable}
    return out
"""
_PROBE = _PROBE_FN + "import json, sys\nprint(json.dumps(probe(sys.argv[1:])))\n"


def probe_here(packages: list[str]) -> str:
    """The probe's output, computed in this process (for the orchestrator's own
    interpreter: no child interpreter to start)."""
    space: dict = {}
    exec(compile(_PROBE_FN, "<envinfo probe>", "exec"), space)  # noqa: S102 (our own code)
    return json.dumps(space["probe"](packages))


def is_this_interpreter(python: str) -> bool:
    """``python`` is the interpreter running this process (same file, same prefix)."""
    import os
    import sys

    try:
        return os.path.samefile(python, sys.executable) and (
            Path(python).parent.parent.resolve() == Path(sys.prefix).resolve())
    except OSError:
        return False


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
    packages: dict[str, str] = {}
    tree: TreeState | None = None


def probe_argv(python: str, packages: list[str]) -> list[str]:
    """One run of ``python`` printing the JSON ``read_probe`` reads."""
    return [python, "-c", _PROBE, *packages]


def read_probe(python: str, output: str, project: str | None, packages: list[str],
               tree: TreeState | None) -> Environment:
    """The Environment from the probe's output (the JSON line is searched from the end)."""
    found: dict = {}
    for line in reversed(output.splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and "packages" in value:
            found = value
            break
    dists = found.get("packages", {})
    proj = dists.get(project) if project else None
    install: Install | None = None
    if project:
        install = ("not installed" if proj is None
                   else "editable" if proj.get("editable") else "installed")
    return Environment(
        interpreter=python, python_version=found.get("python_version"), project=project,
        project_version=proj.get("version") if proj else None, project_install=install,
        packages={n: d["version"] for n, d in dists.items() if n in packages},
        tree=tree)


def project_name(source_dir: str | None) -> str | None:
    """``[project].name`` of the source dir's pyproject.toml (None when absent)."""
    if not source_dir:
        return None
    path = Path(source_dir) / "pyproject.toml"
    try:
        name = tomllib.loads(path.read_text()).get("project", {}).get("name")
    except (OSError, tomllib.TOMLDecodeError):
        return None
    return str(name) if name else None


def tree_state(path: str, run: Callable[[list[str]], tuple[int, str]]) -> TreeState:
    """HEAD and a hash of what differs from it (tracked changes and untracked files);
    ``run(argv) -> (exit code, stdout)``. One git call for a clean tree."""
    code, status = run(["git", "-C", path, "status", "--porcelain=v2", "--branch",
                        "--untracked-files=all", "--", "."])
    if code != 0:
        return TreeState(path=path, git=False)
    head = next((l.split()[2] for l in status.splitlines() if l.startswith("# branch.oid ")), None)
    head = head if head and head != "(initial)" else None
    changed = [l for l in status.splitlines() if l and not l.startswith("#")]
    if not changed:
        return TreeState(path=path, git=True, head=head)
    _, diff = run(["git", "-C", path, "diff", "HEAD", "--binary", "--", "."])
    digest = hashlib.sha256(diff.encode(errors="replace"))
    top = Path(path)
    _, prefix = run(["git", "-C", path, "rev-parse", "--show-toplevel"])
    root = Path(prefix.strip()) if prefix.strip() else top
    for line in sorted(l for l in changed if l.startswith("? ")):
        name = line[2:]
        digest.update(name.encode())
        try:
            digest.update((root / name).read_bytes())
        except OSError:
            pass
    return TreeState(path=path, git=True, head=head, dirty=True,
                     changes_sha256=digest.hexdigest())


def rerun_after_fix(env: Environment, source_dir: str | None, build_note: str | None) -> str:
    """What a fix-verifier runs before ``refined_command`` so a fix in the tree is seen:
    nothing (``""``) when the project is installed editable or not installed at all (the
    tests import it from the tree); the reinstall command when a built copy is installed;
    ``build_note`` (a profile's rebuild instruction) when the profile builds elsewhere."""
    if build_note:
        return build_note
    if env.project_install == "installed" and source_dir:
        return (f"{shlex.quote(env.interpreter)} -m pip install --no-deps --force-reinstall "
                f"{shlex.quote(source_dir)}")
    return ""
