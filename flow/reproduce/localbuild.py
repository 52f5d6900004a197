"""The ``local`` profile's Stage 2 build as one command, for a ``run`` task.

    python -m flow.reproduce.localbuild --source DIR --work DIR [--commit SHA]

Builds ``--source`` into a wheel and installs it into a fresh venv under ``--work``
(see ``sourcebuild``: offline, test tooling lent by the current environment). With
``--commit`` (the seed's one ci_commit fallback) the source's git repository is cloned
into ``<work>/src`` and detached at that commit first, so the user's own tree is never
checked out elsewhere. Exit 0 means the venv is ready; anything else is a failed build.
"""
from __future__ import annotations

import argparse
import shutil
import stat
import subprocess
import sys
import sysconfig
from pathlib import Path

from flow.reproduce.sourcebuild import install_built, pytest_script, tools_pth, venv_plan


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True).stdout.strip()


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


def build(source: Path, work: Path, python: str = sys.executable) -> Path:
    """Build and install; return the venv's python. Raises CalledProcessError on failure."""
    for sub in ("venv", "dist"):
        shutil.rmtree(work / sub, ignore_errors=True)
    plan = venv_plan(python, source, work)
    for argv in (plan.create, plan.build):
        print("$", " ".join(argv), flush=True)
        subprocess.run(argv, check=True)
    wheels = sorted(str(p) for p in Path(plan.wheel_dir).glob("*.whl"))
    subprocess.run(install_built(python, plan, wheels), check=True)
    purelib = subprocess.run(plan.purelib_query, check=True, capture_output=True,
                             text=True).stdout.strip()
    pth, content = tools_pth(purelib, [sysconfig.get_path("purelib")])
    pth.write_text(content)
    script, body = pytest_script(plan)
    script.write_text(body)
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return Path(plan.venv_python)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m flow.reproduce.localbuild")
    parser.add_argument("--source", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--commit")
    args = parser.parse_args(argv)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    try:
        source = Path(args.source)
        if args.commit:
            source = checkout_commit(source, args.commit, work)
        venv_python = build(source, work)
    except (subprocess.CalledProcessError, OSError) as exc:
        print(f"build failed: {exc}", file=sys.stderr)
        return 1
    print(f"built: {venv_python}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
