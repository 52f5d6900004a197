"""The ``local`` profile's Stage 2 build as one command, for a ``run`` task.

    python -m flow.workflows.reproduce.stage2.build --source DIR --work DIR [--commit SHA]
        [--python PY] [--offline] [--extras a,b] [--no-editable]

Installs ``--source`` into a fresh venv ``<work>/venv`` made from ``--python`` (the
project's own interpreter, ``ORCHESTRATOR_REPRODUCE_PYTHON``; default this one), with
the project's build backend, through the target interpreter's own pip (``<venv python>
-m pip``: the stock pip ``ensurepip`` gives that interpreter, or offline the lent
environment's; so a Python 3.6 or 3.7 project works too, where ``pip --python`` would need
pip 22.3):

- editable (``pip install -e``) where the project allows it, so a fix made in the tree
  takes effect without a rebuild; when the editable install fails, a built wheel is
  installed instead and the last line says so (a fix then needs the rebuild the verdict's
  ``rerun_after_fix`` names);
- default: build isolation, the project's dependencies and declared ``--extras`` (test
  dependencies) and pytest from pip's configured index;
- ``--offline``: no index, no isolation: the build backend, the dependencies and the
  test tools are lent by ``--python``'s environment through a ``.pth`` placed *after* the
  venv's own site-packages (the freshly installed project wins over a copy there). A
  setuptools project built as a wheel then needs ``wheel`` (or setuptools 70.1+) there:
  when that is what failed, the error says so and names the command that adds it.

With ``--commit`` (the seed's one ci_commit fallback) the source's repository is cloned
into ``<work>/src`` and detached at that commit first. Exit 0 means the venv is ready;
the last line is ``installed: editable|wheel <venv python>``. A failure prints the
failing command's last lines (the real error) and exits 1.
"""
from __future__ import annotations

import argparse
import itertools
import shutil
import sys
from pathlib import Path

from flow.core import proc
from flow.workflows.reproduce.stage2.venv import TOOLS_PTH

BUILD_TIMEOUT = 3600.0
_logs = itertools.count(1)
_log_dir: list[Path] = []


class BuildFailed(Exception):
    """A build command failed; the message holds its real error lines."""


def _run(argv: list[str], capture: bool = False) -> str:
    """One build command through ``flow.core.proc`` (own process group, capped log under
    ``<work>/logs``, stdin /dev/null, no decode error); its output, or BuildFailed."""
    print("$", " ".join(argv), flush=True)
    folder = _log_dir[0] if _log_dir else Path.cwd()
    result = proc.run(argv, log=folder / f"step-{next(_logs)}.log", timeout=BUILD_TIMEOUT)
    out = result.output
    if not capture:
        sys.stdout.write(out)
    if result.timed_out:
        raise BuildFailed(f"timed out after {BUILD_TIMEOUT:.0f} s: {result.tail(5)}")
    if result.code != 0:
        raise BuildFailed(error_lines(out) or f"exit {result.code}")
    return out


def error_lines(output: str, limit: int = 12) -> str:
    """The lines of a pip/build log that say what went wrong (``error:``, ``ERROR:``,
    exceptions), else its last lines."""
    lines = [l.rstrip() for l in output.splitlines() if l.strip()]
    picked = [l for l in lines if any(k in l for k in (
        "error", "ERROR", "Error", "No matching distribution", "Could not find",
        "ModuleNotFoundError", "BackendUnavailable"))]
    return "\n".join((picked or lines)[-limit:])


def _git(*args: str) -> str:
    return _run(["git", *args], capture=True).strip()


def checkout_commit(source: Path, commit: str, work: Path) -> Path:
    """A clone of ``source``'s repository detached at ``commit``; the source's path inside it."""
    top = _git("-C", str(source), "rev-parse", "--show-toplevel")
    prefix = _git("-C", str(source), "rev-parse", "--show-prefix")
    clone = work / "src"
    if clone.exists():
        shutil.rmtree(clone)
    _git("clone", "--quiet", "--no-checkout", top, str(clone))
    _git("-C", str(clone), "checkout", "--quiet", "--detach", commit)
    return clone / prefix


def _target(source: Path, extras: list[str]) -> str:
    return f"{source}[{','.join(extras)}]" if extras else str(source)


def build(source: Path, work: Path, python: str = sys.executable, *, offline: bool = False,
          extras: list[str] | None = None, editable: bool = True) -> tuple[Path, str]:
    """Create the venv and install the source; (venv python, "editable" | "wheel").
    Raises BuildFailed with the real error lines."""
    venv = work / "venv"
    for sub in ("venv", "dist"):
        shutil.rmtree(work / sub, ignore_errors=True)
    _run([python, "-m", "venv", "--without-pip", str(venv)])
    venv_python = str(venv / "bin" / "python")
    if not offline:  # the interpreter's own stock pip (offline: the lent environment's)
        _run([venv_python, "-m", "ensurepip", "--default-pip"])
    if offline:
        purelib = _run([venv_python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                       capture=True).strip().splitlines()[-1]
        lent = _run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                    capture=True).strip().splitlines()[-1]
        Path(purelib, TOOLS_PTH).write_text(f"{lent}\n")
    pip = [venv_python, "-m", "pip", "install"]
    flags = ["--no-deps", "--no-index", "--no-build-isolation"] if offline else []
    target = _target(source, extras or [])
    kind = "wheel"
    if editable:
        try:
            _run([*pip, *flags, "-e", target])
            kind = "editable"
        except BuildFailed as exc:
            print(f"editable install failed, installing a built wheel instead:\n{exc}", flush=True)
    if kind == "wheel":
        try:
            _run([*pip, *flags, target])
        except BuildFailed as exc:
            raise BuildFailed(wheel_hint(str(exc), python) if offline else str(exc)) from exc
    if not offline:
        _run([*pip, "pytest"])
    return Path(venv_python), kind


def wheel_hint(error: str, python: str) -> str:
    """The build error, with how to mend it when an offline (no-isolation) setuptools
    build lacked ``wheel`` (``invalid command 'bdist_wheel'``: setuptools before 70.1
    needs it, and the lent environment has none)."""
    if "bdist_wheel" not in error:
        return error
    return (f"{error}\nthe offline build of a setuptools project needs the 'wheel' package in "
            f"{python}'s environment: {python} -m pip install wheel (or build without --offline)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m flow.workflows.reproduce.stage2.build")
    parser.add_argument("--source", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--commit")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--offline", action="store_true")
    parser.add_argument("--extras", default="")
    parser.add_argument("--no-editable", action="store_true")
    args = parser.parse_args(argv)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    _log_dir[:] = [work / "logs"]
    # this process is itself the background part (a run task): the calling orchestrator's
    # foreground budget does not bound it, each build command has BUILD_TIMEOUT
    import os

    os.environ[proc.FOREGROUND_ENV] = str(BUILD_TIMEOUT * 4)
    proc.begin_call()
    try:
        source = Path(args.source)
        if args.commit:
            source = checkout_commit(source, args.commit, work)
        venv_python, kind = build(source, work, args.python, offline=args.offline,
                                  extras=[e for e in args.extras.split(",") if e],
                                  editable=not args.no_editable)
    except (BuildFailed, OSError) as exc:
        print(f"build failed:\n{exc}", file=sys.stderr)
        return 1
    print(f"installed: {kind} {venv_python}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
