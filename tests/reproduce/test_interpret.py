"""Run interpretation per form, on real pytest and python runs."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from flow.workflows.reproduce.run.interpret import (
    Outcome, collect_only, infra_blocker, interpret_command, interpret_pytest, setup_blocker,
)
from tests.reproduce.conftest import FIXTURES, PYTHON, run


@pytest.fixture
def cases(tmp_path: Path) -> Path:
    """The fixture test files copied into a tmp dir (their own rootdir)."""
    for name in ("outcomes_cases.py", "broken_import_cases.py"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    return tmp_path


# (node id in outcomes_cases.py, outcome)
PYTEST_CASES = [
    ("TestOutcomes::test_fails", Outcome.FAILED),
    ("test_xfails", Outcome.FAILED),
    ("TestOutcomes::test_passes", Outcome.PASSED),
    ("TestOutcomes::test_skipped_xpu", Outcome.SKIPPED_XPU_MARKER),
    ("TestOutcomes::test_skipped_env", Outcome.BLOCKED),
    ("test_errors_missing_module", Outcome.BLOCKED),
    ("TestOutcomes::test_not_there", Outcome.COLLECTED_ZERO),
]


@pytest.mark.parametrize("node,expected", PYTEST_CASES)
def test_pytest_text_output(cases: Path, node: str, expected: Outcome) -> None:
    """pytest's text output (with -rs) maps to the seed's pytest result rows."""
    code, output = run([PYTHON, "-m", "pytest", "-rs", "-p", "no:cacheprovider",
                        f"outcomes_cases.py::{node}"], cwd=cases)
    assert expected == interpret_pytest(code, output).kind


@pytest.mark.parametrize("node,expected", [c for c in PYTEST_CASES if c[1] is not Outcome.COLLECTED_ZERO])
def test_pytest_junit(cases: Path, node: str, expected: Outcome) -> None:
    """The JUnit report gives the same outcome as the text output."""
    junit = cases / "junit.xml"
    code, output = run([PYTHON, "-m", "pytest", "-p", "no:cacheprovider", f"--junitxml={junit}",
                        f"outcomes_cases.py::{node}"], cwd=cases)
    assert expected == interpret_pytest(code, output, junit.read_text()).kind


def test_marker_named_by_decorator_counts(cases: Path) -> None:
    """A skip whose reason hides the marker is still an XPU skip when the decorator says so."""
    code, output = run([PYTHON, "-m", "pytest", "-rs", "-p", "no:cacheprovider",
                        "outcomes_cases.py::TestOutcomes::test_skipped_env"], cwd=cases)
    assert Outcome.SKIPPED_XPU_MARKER == interpret_pytest(code, output, decorators=["skipXPU"]).kind


# (collect-only target, outcome)
COLLECT_CASES = [
    ("outcomes_cases.py::TestOutcomes::test_fails", Outcome.PASSED),
    ("outcomes_cases.py::TestOutcomes::test_not_there", Outcome.COLLECTED_ZERO),
    ("no_such_file.py::test_x", Outcome.COLLECTED_ZERO),
    ("outcomes_cases.py", Outcome.PASSED),
    ("broken_import_cases.py", Outcome.BLOCKED),
]


@pytest.mark.parametrize("target,expected", COLLECT_CASES)
def test_collect_only(cases: Path, target: str, expected: Outcome) -> None:
    """``pytest --collect-only``: 0 items is COLLECTED_ZERO, a collection error is BLOCKED."""
    code, output = run([PYTHON, "-m", "pytest", "--collect-only", "-p", "no:cacheprovider", target],
                       cwd=cases)
    assert expected == collect_only(code, output).kind


# (python code, failure pattern, outcome)
COMMAND_CASES = [
    ("print('ok')", "boom", Outcome.PASSED),
    ("raise AssertionError('boom: tensors differ')", "boom: tensors differ", Outcome.FAILED),
    ("raise AssertionError('boom')", None, Outcome.FAILED),
    ("import module_that_is_not_installed", "boom", Outcome.BLOCKED),
    ("raise PermissionError(13, 'Permission denied', '/dev/dri/renderD128')", "boom", Outcome.BLOCKED),
    ("raise RuntimeError('No XPU devices are available')", "boom", Outcome.BLOCKED),
    ("raise ValueError('something else')", "boom", Outcome.BLOCKED),
    ("import module_that_is_not_installed", "No module named", Outcome.FAILED),
]


@pytest.mark.parametrize("code,pattern,expected", COMMAND_CASES)
def test_python_command(code: str, pattern: str | None, expected: Outcome) -> None:
    """Non-pytest forms: exit code plus failure pattern; infra causes are blockers."""
    exit_code, output = run([PYTHON, "-c", code])
    assert expected == interpret_command(exit_code, output, pattern).kind


def test_missing_script_is_blocker(tmp_path: Path) -> None:
    """A script that does not exist is a blocker, not a reproduction."""
    exit_code, output = run([PYTHON, str(tmp_path / "nope.py")])
    result = interpret_command(exit_code, output, None)
    assert (Outcome.BLOCKED, True) == (result.kind, result.detail.startswith("command not found"))


INFRA_CASES = [
    ("ImportError: /x/torch/_C.so: undefined symbol: _ZN3c10", "in-tree import (stale torch/_C)"),
    ("RuntimeError: PyTorch is not linked with support for xpu devices", "missing device"),
    ("bash: line 1: pytest: command not found", "command not found"),
    ("AssertionError: Tensor-likes are not close!", None),
]


@pytest.mark.parametrize("output,cause", INFRA_CASES)
def test_infra_blocker(output: str, cause: str | None) -> None:
    """Infra causes are named by kind; a real assertion is not an infra cause."""
    found = infra_blocker(output)
    assert cause == (found.split(":", 1)[0] if found else None)


def test_setup_step_failure_is_blocker() -> None:
    """A failed setup step of a shell block becomes the blocker text; a passing one none."""
    code, _ = run(["bash", "-c", "false"])
    assert ("setup step failed (exit 1): pip install nope", None) == (
        setup_blocker("pip install nope", code), setup_blocker("cd /tmp", 0))


def test_no_output_is_never_passed() -> None:
    """A pytest run with no readable result and a non-zero exit is not PASSED."""
    assert Outcome.BLOCKED == interpret_pytest(3, "INTERNALERROR> boom").kind


@pytest.mark.parametrize("code", [-9, 137])
def test_a_run_killed_by_sigkill_is_blocked_naming_the_signal(code: int) -> None:
    """A reproducer ended by SIGKILL (the OOM killer) is CANNOT_VERIFY naming SIGKILL, for a
    pytest run with a failure counted and for a plain command alike."""
    from flow.workflows.reproduce.run.interpret import interpret_command

    out = "1 failed in 2.0s\nKilled\n"
    got = [interpret_pytest(code, out), interpret_command(code, "Killed\n", None)]
    assert [Outcome.BLOCKED, Outcome.BLOCKED] == [g.kind for g in got]
    assert all("killed by SIGKILL" in g.detail for g in got)


def test_a_signal_death_showing_the_failure_pattern_still_reproduces() -> None:
    """A run ended by a signal whose output shows the failure pattern counts as FAILED."""
    from flow.workflows.reproduce.run.interpret import interpret_command

    assert Outcome.FAILED == interpret_command(-11, "Segmentation fault in op\n", "Segmentation").kind
