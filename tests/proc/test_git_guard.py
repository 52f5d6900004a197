"""git run on an untrusted checkout (through flow/core/proc.py) runs none of the commands its
.git/config names (core.fsmonitor, hooks, an external diff) and sees no secret setting."""

from __future__ import annotations

import os
from pathlib import Path

from flow.core import proc


def _repo(tmp_path: Path, marker: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (["init", "-q"], ["-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q",
                                  "--allow-empty", "-m", "x"]):
        assert 0 == proc.capture(["git", "-C", str(repo), *args], env=env).code
    hook = tmp_path / "evil.sh"
    hook.write_text(f"#!/bin/sh\nenv > {marker}\nexit 0\n")
    hook.chmod(0o755)
    (repo / "hooks").mkdir()
    (repo / "hooks" / "post-checkout").symlink_to(hook)
    with (repo / ".git" / "config").open("a") as fh:
        fh.write(f"[core]\n\tfsmonitor = {hook}\n\thooksPath = {repo / 'hooks'}\n"
                 f"[diff]\n\texternal = {hook}\n")
    (repo / "f.txt").write_text("changed\n")
    return repo


def test_git_queries_never_run_the_repository_fsmonitor_hook_or_external_diff(
        tmp_path: Path) -> None:
    """status, diff and checkout on a repository whose config names a command for
    core.fsmonitor, core.hooksPath and diff.external: that command never runs."""
    marker = tmp_path / "ran"
    repo = _repo(tmp_path, marker)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "ANTHROPIC_API_KEY": "sk-x-123456789"}
    for args in (["status", "--porcelain=v2"], ["diff", "HEAD"], ["checkout", "-q", "-b", "t"]):
        got = proc.capture(["git", "-C", str(repo), *args], env=env)
        assert 0 == got.code, got.problem
    assert False is marker.exists()


def test_the_guard_leaves_other_programs_alone_and_git_prompts_never() -> None:
    """Only a git child gets the guard options; it never prompts and loses GIT_EXTERNAL_DIFF."""
    args, env = proc.guarded(["/usr/bin/git", "status"], {"GIT_EXTERNAL_DIFF": "x", "A": "1"})
    assert (["/usr/bin/git", *proc.GIT_GUARD, "status"], {"A": "1", "GIT_TERMINAL_PROMPT": "0",
                                                          "GIT_OPTIONAL_LOCKS": "0"}) == (args, env)
    assert (["bash", "-c", "git x"], {"A": "1"}) == proc.guarded(["bash", "-c", "git x"], {"A": "1"})
