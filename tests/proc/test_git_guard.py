"""git run on an untrusted checkout (through flow/core/proc.py) runs none of the commands its
.git/config names (core.fsmonitor, hooks, an external diff) and sees no secret setting."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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


def _driver_repo(tmp_path: Path, marker: Path) -> tuple[Path, dict[str, str]]:
    """A repository whose .gitattributes picks filter and diff drivers that its own
    .git/config defines as commands writing ``marker`` (the real git sets it up)."""
    import subprocess

    repo = tmp_path / "drivers"
    repo.mkdir()
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    evil = tmp_path / "driver.sh"
    evil.write_text(f"#!/bin/sh\necho \"$0 $*\" >> {marker}\nexec cat\n")
    evil.chmod(0o755)
    (repo / ".gitattributes").write_text("*.txt filter=tidy diff=pretty\n")
    (repo / "a.txt").write_text("one\n")
    for args in (["init", "-q"], ["add", "-A"],
                 ["-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "x"]):
        subprocess.run(["git", "-C", str(repo), *args], env=env, check=True, capture_output=True)
    with (repo / ".git" / "config").open("a") as fh:
        fh.write(f"[filter \"tidy\"]\n\tclean = {evil} clean\n\tsmudge = {evil} smudge\n"
                 f"\trequired = true\n"
                 f"[diff \"pretty\"]\n\ttextconv = {evil} textconv\n\tcommand = {evil} command\n")
    (repo / "a.txt").write_text("two\n")
    return repo, env


def test_filter_and_diff_drivers_of_the_repository_config_never_run(tmp_path: Path) -> None:
    """status, diff HEAD (--binary too), log -p and show on a checkout whose own config names
    clean/smudge filters, a textconv and a diff command: none runs, and the answers are
    git's own (the change is seen, stored bytes as they are)."""
    import subprocess

    marker = tmp_path / "ran"
    repo, env = _driver_repo(tmp_path, marker)
    # the set-up is live: plain git (not through the runner) does run the drivers
    subprocess.run(["git", "-C", str(repo), "diff", "HEAD"], env=env, capture_output=True)
    assert marker.exists(), "the drivers never ran even without the guard"
    marker.unlink()
    answers = {}
    for args in (["status", "--porcelain=v2", "--untracked-files=all"], ["diff", "HEAD"],
                 ["diff", "HEAD", "--binary", "--", "."], ["log", "-p", "-1"], ["show", "HEAD"],
                 ["checkout", "-q", "-b", "t"]):
        got = proc.capture(["git", "-C", str(repo), *args], env=env)
        assert 0 == got.code, (args, got.problem)
        answers[args[0]] = got.text
    assert (False, True, True) == (marker.exists(), "a.txt" in answers["status"],
                                   "+two" in answers["diff"])


def test_the_user_own_filters_stay_theirs(tmp_path: Path) -> None:
    """A filter defined in the user's global config (git-lfs's way) is not emptied."""
    repo, env = _driver_repo(tmp_path, tmp_path / "ran")
    (tmp_path / ".gitconfig").write_text("[filter \"lfs\"]\n\tclean = git-lfs clean -- %f\n")
    args, _ = proc.guarded(["git", "-C", str(repo), "status"], env)
    assert "filter.tidy.clean=" in args and not any("filter.lfs" in a for a in args)


def _plain_repo(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    import subprocess

    repo = tmp_path / "plain"
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "init", "-q", str(repo)], env=env, check=True)
    return repo, env


def test_a_plain_repository_config_is_read_without_asking_git(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A .git/config with no filter and no include section names no filter driver: the
    guard knows it without a `git config` child (one process less per git call)."""
    import subprocess

    repo, env = _plain_repo(tmp_path)
    asked: list[object] = []
    real = subprocess.run
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: asked.append(a) or real(*a, **k))
    assert [] == proc.repo_filters(["git", "-C", str(repo), "status"], None, env)
    assert [] == proc.repo_filters(["git", "status"], repo / "sub" / "dir", env)
    assert [] == asked


def test_a_filter_behind_an_include_is_still_found_by_git(tmp_path: Path) -> None:
    """A filter the local config names only through an [include] (or a git setting in the
    environment) is left to git to read, so the guard still empties it."""
    repo, env = _plain_repo(tmp_path)
    other = tmp_path / "more.cfg"
    other.write_text('[filter "lfsish"]\n\tclean = touch /nonexistent/x\n')
    with (repo / ".git" / "config").open("a") as fh:
        fh.write(f"[include]\n\tpath = {other}\n")
    assert ["lfsish"] == proc.repo_filters(["git", "-C", str(repo), "status"], None, env)
    args, _ = proc.guarded(["git", "-C", str(repo), "status"], env)
    assert "filter.lfsish.clean=" in args
