"""XPU skip-decorator removal on exactly one test, and the restore that always follows."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from flow.workflows.reproduce.errors import SkipMarkerNotFound
from flow.workflows.reproduce.run.interpret import Outcome, interpret_pytest
from flow.workflows.reproduce.unskip.marker import (
    PendingRestore, decorator_names, remove_skip_marker, restore, split_node_id, write_atomic,
)
from tests.reproduce.conftest import FIXTURES, PYTHON, run

SOURCE = '''import unittest


class TestFoo(unittest.TestCase):

    # why this is skipped
    @skipIfXpu
    def test_a(self, device):  # keep me
        self.assertEqual(1, 2)

    @skipIfXpu(msg="flaky")
    @dtypes(torch.float)
    def test_b(self, device, dtype):
        pass

    @common_utils.skipIfXpu
    def test_c(self):
        pass

    def test_d(self):
        pass


@skipXPU
def test_free():
    pass
'''

# (node id, expected source after removal)
REMOVE_CASES = [
    ("test_x.py::TestFooXPU::test_a_xpu", SOURCE.replace("    @skipIfXpu\n    def test_a", "    def test_a")),
    ("TestFoo::test_b", SOURCE.replace('    @skipIfXpu(msg="flaky")\n', "")),
    ("test_x.py::TestFooXPU::test_b_xpu_float32", SOURCE.replace('    @skipIfXpu(msg="flaky")\n', "")),
    ("TestFoo::test_c", SOURCE.replace("    @common_utils.skipIfXpu\n", "")),
    ("test_x.py::test_free[param]", SOURCE.replace("@skipXPU\ndef test_free", "def test_free")),
]


@pytest.mark.parametrize("node,expected", REMOVE_CASES)
def test_remove_only_target(node: str, expected: str) -> None:
    """Only the target's XPU marker goes; comments, blank lines and other tests stay."""
    removal = remove_skip_marker(SOURCE.encode(), node)
    assert (expected, SOURCE) == (removal.modified.decode(), removal.original.decode())


@pytest.mark.parametrize("node,message", [
    ("TestFoo::test_d", "no XPU skip marker"),
    ("TestFoo::test_missing", "not defined"),
    ("TestBar::test_a", "not defined"),
    ("test_x.py", "names no test"),
])
def test_not_found(node: str, message: str) -> None:
    """A missing test or a test without a marker raises with the node id, never guesses."""
    with pytest.raises(SkipMarkerNotFound, match=message):
        remove_skip_marker(SOURCE.encode(), node)


def test_decorator_names() -> None:
    """The names on a test are read for the skip classification."""
    assert ["skipIfXpu", "dtypes"] == decorator_names(SOURCE.encode(), "TestFooXPU::test_b_xpu_float32")


def test_split_node_id() -> None:
    """Node ids split into (class, test) with parameters dropped."""
    assert [("T", "t"), (None, "t")] == [split_node_id("a.py::T::t[x-1]"), split_node_id("a.py::t")]


def test_remove_rerun_restore_in_git_repo(tmp_path: Path, git_env: dict[str, str]) -> None:
    """Skipped by the marker -> removed -> re-run FAILS -> restored: git sees no change."""
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copy(FIXTURES / "outcomes_cases.py", repo / "outcomes_cases.py")
    # as a real project's: the runs' bytecode is not a change (whatever PYTHONDONTWRITEBYTECODE says)
    (repo / ".gitignore").write_text("__pycache__/\n")
    for argv in (["git", "init", "-q"], ["git", "add", "."], ["git", "commit", "-qm", "init"]):
        assert 0 == run(argv, cwd=repo, env=git_env)[0]
    node = "outcomes_cases.py::TestOutcomes::test_skipped_xpu"
    code, output = run([PYTHON, "-m", "pytest", "-rs", "-p", "no:cacheprovider", node], cwd=repo)
    assert Outcome.SKIPPED_XPU_MARKER == interpret_pytest(code, output).kind

    path = repo / "outcomes_cases.py"
    removal = remove_skip_marker(path.read_bytes(), node)
    pending = PendingRestore.of(path, removal.original, removal.modified)  # saved before writing
    write_atomic(path, removal.modified)
    code, output = run([PYTHON, "-m", "pytest", "-rs", "-p", "no:cacheprovider", node], cwd=repo)
    rerun = interpret_pytest(code, output).kind
    changed = restore(pending)
    status = run(["git", "status", "--porcelain"], cwd=repo, env=git_env)[1]
    assert (Outcome.FAILED, "restored", "", "unchanged") == (rerun, changed, status, restore(pending))


def test_restore_after_crash(tmp_path: Path) -> None:
    """A pending restore from state puts back the original bytes after a crash mid re-run."""
    path = tmp_path / "t.py"
    path.write_bytes(SOURCE.encode())
    pending = PendingRestore.model_validate_json(
        PendingRestore.of(path, SOURCE.encode()).model_dump_json())
    write_atomic(path, remove_skip_marker(SOURCE.encode(), "TestFoo::test_a").modified)
    restore(pending)
    assert SOURCE.encode() == path.read_bytes()


# (what the file holds when the resume comes, what restore does, what the file holds after)
RESUME_CASES = [
    ("edited", "restored", "original"),      # our edit is still there: undone
    ("original", "unchanged", "original"),   # crashed before the edit was written
    ("user", "kept", "user"),                # the user changed it since: never overwritten
]


@pytest.mark.parametrize("holds,result,after", RESUME_CASES, ids=[c[0] for c in RESUME_CASES])
def test_restore_only_undoes_our_own_edit(tmp_path: Path, holds: str, result: str,
                                          after: str) -> None:
    """The file is restored only while it holds exactly our edit; a user's change is kept."""
    removal = remove_skip_marker(SOURCE.encode(), "TestFoo::test_a")
    contents = {"original": SOURCE.encode(), "edited": removal.modified,
                "user": removal.modified + b"\n# the user's own line\n"}
    path = tmp_path / "t.py"
    path.write_bytes(contents[holds])
    pending = PendingRestore.of(path, removal.original, removal.modified)
    assert (result, contents[after]) == (restore(pending), path.read_bytes())


def test_decorators_are_dotted_with_lines() -> None:
    """Decorators are read with ast as dotted names with their line (no libcst needed)."""
    from flow.workflows.reproduce.unskip.marker import decorators

    source = b"import pytest\n\n\n@pytest.mark.skip(reason='x')\n@unittest.skip('y')\ndef test_a():\n    pass\n"
    assert [("pytest.mark.skip", 4), ("unittest.skip", 5)] == [
        (d.name, d.line) for d in decorators(source, "t.py::test_a")]


@pytest.mark.parametrize("decorator,marker,matches", [
    ("pytest.mark.skip", "pytest.mark.skip", True), ("mark.skip", "pytest.mark.skip", True),
    ("common_utils.skipIfXpu", "skipIfXpu", True), ("pytest.mark.skipif", "pytest.mark.skip", False),
    ("unittest.skip", "pytest.mark.skip", False), ("skip", "unittest.skip", True),
])
def test_marker_matches(decorator: str, marker: str, matches: bool) -> None:
    """A profile marker names a decorator by its dotted name or a dotted tail of it."""
    from flow.workflows.reproduce.unskip.marker import marker_matches

    assert matches == marker_matches(decorator, marker)


def test_unparsable_file_is_not_found() -> None:
    """A file libcst cannot parse raises SkipMarkerNotFound (a blocker), not a parser error."""
    with pytest.raises(SkipMarkerNotFound, match="does not parse with libcst"):
        remove_skip_marker(b"def test_a(:\n    pass\n", "test_x.py::test_a")
