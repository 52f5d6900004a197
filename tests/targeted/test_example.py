"""examples/targeted: make_repo.py builds a miles-shaped repository whose one-module change
``affected-tests`` turns into a ``files`` plan, as the README's first targeted-CI run shows."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.contract.driver import ROOT, Driver

MAKE = ROOT / "examples" / "targeted" / "make_repo.py"


def _make(dest: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(MAKE), str(dest)], capture_output=True,
                          text=True, cwd=ROOT)


def test_example_change_reaches_the_tests_that_import_batching(tmp_path: Path) -> None:
    """The miles profile is detected; batching.py reaches its two CUDA tests (one through
    rollout.py) and its tests/fast file; the scoring test, importing neither, is left out."""
    dest = tmp_path / "example"
    made = _make(dest)
    assert (0, "") == (made.returncode, made.stderr)
    assert (dest / "tests/e2e/test_reward_mean.py").is_file()
    call = Driver(tmp_path / "ws").call(["affected-tests", "--repo-dir", str(dest),
                                         "--base", "HEAD~1", "--json"])
    assert 0 == call.code, call.stderr
    report, plan = call.spec["report"], call.spec["plan"]
    assert ("miles (detected)", [c["path"] for c in report["changed"]]) == (
        report["profile"], ["miles/batching.py"])
    assert ("files", ["/rerun-test tests/e2e/test_group_sizes.py",
                      "/rerun-test tests/e2e/test_grouped_rollout.py"], []) == (
        plan["mode"], plan["comments"], plan["labels"])
    assert [("tests/e2e/test_group_sizes.py", "cuda", 300, 1, "miles/batching.py"),
            ("tests/e2e/test_grouped_rollout.py", "cuda", 120, 2, "miles/rollout.py"),
            ("tests/fast/test_groups.py", "cpu", 1.0, 1, "miles/batching.py")] == [
        (t["path"], t["backend"], t["est_time"], t["hop"], t["via"]) for t in report["tests"]]


def test_make_repo_refuses_a_dest_that_is_not_empty(tmp_path: Path) -> None:
    """A DEST holding a file: exit 2, a message naming it, and nothing written there."""
    dest = tmp_path / "taken"
    dest.mkdir()
    (dest / "notes.txt").write_text("keep me\n", encoding="utf-8")
    made = _make(dest)
    assert (2, "") == (made.returncode, made.stdout)
    assert f"{dest} exists and is not an empty directory" in made.stderr
    assert (["notes.txt"], "keep me\n") == (
        sorted(p.name for p in dest.iterdir()), (dest / "notes.txt").read_text("utf-8"))


def test_make_repo_fills_an_empty_directory(tmp_path: Path) -> None:
    """An existing empty DEST is accepted: two commits on main, the last touching one file."""
    dest = tmp_path / "empty"
    dest.mkdir()
    assert 0 == _make(dest).returncode
    log = subprocess.run(["git", "-C", str(dest), "log", "--format=%an", "--name-only",
                          "-1"], capture_output=True, text=True, check=True).stdout.split()
    count = subprocess.run(["git", "-C", str(dest), "rev-list", "--count", "main"],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert (["Example", "Author", "miles/batching.py"], "2") == (log, count)
