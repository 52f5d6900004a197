"""Lay out examples/targeted/repo as a git repository with two commits, for a first
``orchestrator.py affected-tests`` run.

    python examples/targeted/make_repo.py DEST

The first commit holds the tree as it is; the second changes one library module
(miles/batching.py: larger groups), which some registered tests import directly and one
through miles/rollout.py. Standard library only; git runs with a fixed author and no
user or system configuration, so the commits are the same on every machine. DEST must not
exist or be an empty directory.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

TREE = Path(__file__).resolve().parent / "repo"
CHANGED = "miles/batching.py"
OLD, NEW = "GROUP_SIZE = 4\n", "GROUP_SIZE = 8\n"
ENV = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
       "GIT_AUTHOR_NAME": "Example Author", "GIT_AUTHOR_EMAIL": "author@example.invalid",
       "GIT_COMMITTER_NAME": "Example Author", "GIT_COMMITTER_EMAIL": "author@example.invalid",
       "GIT_AUTHOR_DATE": "2026-01-01T12:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T12:00:00Z"}


def git(dest: Path, *args: str) -> None:
    """Run one git command in ``dest``; its output is not needed."""
    subprocess.run(["git", "-C", str(dest), "-c", "commit.gpgsign=false", *args],
                   check=True, capture_output=True, env=ENV)


def make(dest: Path) -> None:
    """Copy the tree to ``dest``, commit it as the base, then commit the one-line change."""
    shutil.copytree(TREE, dest, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    git(dest, "init", "-q", "-b", "main")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "base: batching, rollout, scoring and their CI tests")
    module = dest / CHANGED
    text = module.read_text(encoding="utf-8")
    assert text.count(OLD) == 1, f"{CHANGED} no longer holds {OLD!r}"
    module.write_text(text.replace(OLD, NEW), encoding="utf-8")
    git(dest, "commit", "-q", "-am", "batching: groups of eight prompts instead of four")


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: make_repo.py DEST  (DEST: a new or empty directory)", file=sys.stderr)
        return 2
    dest = Path(argv[0])
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        print(f"make_repo.py: {dest} exists and is not an empty directory; "
              "pass a new path or remove it first", file=sys.stderr)
        return 2
    make(dest)
    print(f"made {dest}: two commits on main; try\n"
          f"  orchestrator.py affected-tests --repo-dir {dest} --base HEAD~1")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
