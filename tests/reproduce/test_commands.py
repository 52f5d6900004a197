"""The profile's git recipes, filled per argument and run on real repositories."""
from __future__ import annotations

from pathlib import Path

import pytest

from flow.workflows.reproduce.profiles import load_profile
from flow.workflows.reproduce.recipes import fill
from tests.reproduce.conftest import run

TREE = load_profile("pytorch-xpu").tree


def test_fill_keeps_words_whole() -> None:
    """A value with spaces or shell syntax stays one argument."""
    assert ["git", "-C", "/a b; rm -rf /", "fetch", "origin"] == fill(TREE.fetch, tree="/a b; rm -rf /")


@pytest.mark.parametrize("values,error", [
    ({"tree": "/t", "ci_commit": "--upload-pack=evil"}, ValueError),
    ({"ci_commit": "abcdef1"}, KeyError),
])
def test_fill_refuses(values: dict, error: type[Exception]) -> None:
    """A non-sha commit and a missing placeholder are refused."""
    with pytest.raises(error):
        fill(TREE.fallback_detach, **values)


def _git(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    code, output = run(["git", *args], cwd=cwd, env=env)
    assert 0 == code, output
    return output.strip()


def test_prepare_fallback_and_clean(tmp_path: Path, git_env: dict[str, str]) -> None:
    """Clone (blob:none), fetch, detach at origin/main, fall back to ci_commit, clean stage-2
    outputs: the recipes do what the seed says on a real origin repository."""
    origin = tmp_path / "origin"
    origin.mkdir()
    _git(["init", "-q", "-b", "main"], origin, git_env)
    _git(["config", "uploadpack.allowFilter", "true"], origin, git_env)
    (origin / "third_party").mkdir()
    (origin / "third_party" / "xpu.txt").write_text("pin-1\n")
    _git(["add", "."], origin, git_env)
    _git(["commit", "-qm", "one"], origin, git_env)
    ci_commit = _git(["rev-parse", "HEAD"], origin, git_env)
    (origin / "third_party" / "xpu.txt").write_text("pin-2\n")
    _git(["commit", "-qam", "two"], origin, git_env)
    main = _git(["rev-parse", "HEAD"], origin, git_env)

    tree = tmp_path / "pytorch"
    steps = [fill(TREE.clone, clone_url=f"file://{origin}", tree=str(tree)),
             fill(TREE.fetch, tree=str(tree)), fill(TREE.detach_main, tree=str(tree)),
             fill(TREE.submodules, tree=str(tree))]
    for argv in steps:
        assert 0 == run(argv, env=git_env)[0]
    at_main = _git(["rev-parse", "HEAD"], tree, git_env)
    assert 0 == run(fill(TREE.fallback_detach, tree=str(tree), ci_commit=ci_commit), env=git_env)[0]
    at_fallback = _git(["rev-parse", "HEAD"], tree, git_env)
    (tree / "build").mkdir()
    (tree / "build" / "_C.so").write_text("stale")
    (tree / "third_party" / "xpu.txt").write_text("dev-override\n")
    for argv in TREE.clean:
        assert 0 == run(fill(argv, tree=str(tree)), env=git_env)[0]
    assert (main, ci_commit, False, "pin-1\n", "") == (
        at_main, at_fallback, (tree / "build").exists(),
        (tree / "third_party" / "xpu.txt").read_text(), _git(["status", "--porcelain"], tree, git_env))
