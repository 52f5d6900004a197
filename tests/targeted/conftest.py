"""Synthetic git repositories for the targeted-CI tests, built with real git in tmp dirs."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

_ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


class Repo:
    """A git repository in a tmp dir; ``commit`` writes files (None deletes) and commits."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        out = subprocess.run(["git", "-C", str(self.path), "-c", "commit.gpgsign=false",
                              *args], check=True, capture_output=True, env=_ENV, text=True)
        return out.stdout.strip()

    def commit(self, files: dict[str, str | None], message: str = "change") -> str:
        for rel, text in files.items():
            target = self.path / rel
            if text is None:
                self.git("rm", "-q", "--", rel)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            self.git("add", "--", rel)
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD")

    def move(self, old: str, new: str) -> None:
        (self.path / new).parent.mkdir(parents=True, exist_ok=True)
        self.git("mv", old, new)


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    """An empty git repository on branch main."""
    return Repo(tmp_path / "repo")


CUDA = 'register_cuda_ci(est_time={t}, suite="stage-b-2-gpu-h200", labels={labels})\n'


def cuda_test(*imports: str, labels: list[str] | None = None, est: int = 60,
              extra: str = "") -> str:
    """Source of a CUDA test file importing ``imports`` (lines) with one registration."""
    body = "".join(f"{line}\n" for line in imports)
    return body + extra + CUDA.format(t=est, labels=labels or ["rollout"])
