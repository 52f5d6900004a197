"""The bundled example examples/tally through the real CLI: each reproducer of its README
ends in its verdict, and every REPRODUCED refined_command is re-run in a fresh shell
(``env -i PATH=/usr/bin:/bin HOME=$HOME bash -c``): it fails, and passes once the fix is
applied to the tree. The project's environment is a venv with tally installed editable
(built by ``flow.workflows.reproduce.stage2.build --offline`` from ``sys.executable``)."""
from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.contract.driver import Driver
from tests.reproduce.conftest import PYTHON, REPO

# {file under src/tally: (buggy text, fixed text)}: the fixes the README describes.
FIXES = {
    "split": ("money.py", "    share = total // parts\n    return [share] * parts\n",
              "    share, extra = divmod(total, parts)\n"
              "    return [share + 1] * extra + [share] * (parts - extra)\n"),
    "fmt": ("money.py", '    text = f"{cents // 100}.{cents % 100:02d}"\n',
            '    sign, cents = ("-" if cents < 0 else ""), abs(cents)\n'
            '    text = f"{sign}{cents // 100}.{cents % 100:02d}"\n'),
    "parse": ("money.py", '    whole, _, frac = text.strip().partition(".")\n',
              '    whole, _, frac = text.strip().replace(",", "").partition(".")\n'),
    "round": ("money.py", "Decimal(str(amount * 100))", "(Decimal(str(amount)) * 100)"),
    "rates": ("rates.py", "            rates[code.strip()] = rate.strip()\n",
              "            rates[code.strip()] = float(rate)\n"),
}


@pytest.fixture(scope="module")
def tally(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of examples/tally and its environment: a venv with it installed editable."""
    root = tmp_path_factory.mktemp("tally")
    tree = Path(shutil.copytree(REPO / "examples" / "tally", root / "tally"))
    build = subprocess.run([PYTHON, "-m", "flow.workflows.reproduce.stage2.build", "--source", str(tree),
                            "--work", str(root / "env"), "--offline"], cwd=REPO,
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stdout + build.stderr
    return tree


@pytest.fixture
def tree(tally: Path) -> Iterator[Path]:
    """The module's tally copy, its sources and the rates cache put back after each test."""
    src = tally / "src" / "tally"
    saved = {p: p.read_bytes() for p in src.glob("*.py")}
    (tally / "tests" / "data" / ".rates-cache.json").unlink(missing_ok=True)
    yield tally
    for path, data in saved.items():
        path.write_bytes(data)
    (tally / "tests" / "data" / ".rates-cache.json").unlink(missing_ok=True)


def _python(tree: Path) -> str:
    return str(tree.parent / "env" / "venv" / "bin" / "python")


def _reproduce(tmp_path: Path, tree: Path, command: str, *extra: str) -> dict[str, Any]:
    drv = Driver(tmp_path / "ws", {"ORCHESTRATOR_REPRODUCE_PYTHON": _python(tree)})
    call = drv.call(["reproduce", "--profile", "local", "--source-dir", str(tree),
                     "--stage", "nightly", "--command", command, *extra])
    assert call.spec is not None, call.stderr
    assert call.spec["status"] == "done", call.spec
    return call.spec["verdict"]


def fresh_shell(refined: str) -> subprocess.CompletedProcess[str]:
    """``env -i PATH=/usr/bin:/bin HOME=$HOME bash -c "$refined"``."""
    return subprocess.run(["env", "-i", "PATH=/usr/bin:/bin", f"HOME={os.environ.get('HOME', '/')}",
                           "bash", "-c", refined], capture_output=True, text=True, timeout=120)


def apply_fix(tree: Path, name: str) -> None:
    file, buggy, fixed = FIXES[name]
    path = tree / "src" / "tally" / file
    text = path.read_text()
    assert buggy in text, f"fix {name!r} no longer applies to {path}"
    path.write_text(text.replace(buggy, fixed))


TRANSCRIPT = """$ python -c "from tally.money import split_evenly; parts = split_evenly(100, 3); assert sum(parts) == 100, parts"
Traceback (most recent call last):
  File "<string>", line 1, in <module>
AssertionError: [33, 33, 33]
"""
SHELL_BLOCK = """git --version
export TALLY_CCY=EUR
python -c "from tally.money import fmt; out = fmt(-5, '$TALLY_CCY'); assert out == '-0.05 EUR', out"
"""

# (id, reproducer (TESTS = the copy's tests dir), extra flags, fix, expected verdict fields)
CASES = [
    ("regression", "pytest TESTS/test_money.py::test_split_evenly_keeps_every_cent", [], "split", {}),
    ("xfail", "pytest TESTS/test_money.py::test_fmt_negative", [], "fmt", {}),
    ("pytest-skip", "pytest TESTS/test_money.py::test_parse_thousands_separator", [], "parse",
     {"unskipped": {"decorator": "pytest.mark.skip", "bypass": "-p no:skipping"}}),
    ("transcript", TRANSCRIPT, [], "split", {}),
    ("shell-block", SHELL_BLOCK, ["--failure-pattern", "AssertionError: -1.95 EUR"], "fmt", {}),
    ("flaky", "pytest TESTS/test_rates.py::test_convert_to_euro", ["--repeat", "3"], "rates",
     {"flaky": True, "attempts": 3, "failures": 1}),
]


@pytest.mark.parametrize("command, extra, fix, expected", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_refined_command_fails_in_a_fresh_shell_and_passes_after_the_fix(
        tree: Path, tmp_path: Path, command: str, extra: list[str], fix: str,
        expected: dict[str, Any]) -> None:
    """Each REPRODUCED refined_command fails in env -i bash -c and passes after the fix."""
    verdict = _reproduce(tmp_path, tree, command.replace("TESTS", str(tree / "tests")), *extra)
    refined = verdict["refined_command"]
    before = fresh_shell(refined)
    if "rates" in refined:  # the flaky one: make the next run see a cold cache again
        (tree / "tests" / "data" / ".rates-cache.json").unlink(missing_ok=True)
        before = fresh_shell(refined)
    apply_fix(tree, fix)
    (tree / "tests" / "data" / ".rates-cache.json").unlink(missing_ok=True)
    after = fresh_shell(refined)
    got = {k: verdict.get(k) if not isinstance(v, dict) else
           {kk: verdict[k][kk] for kk in v} for k, v in expected.items()}
    assert (verdict["verdict"], _python(tree) in refined, verdict["rerun_after_fix"],
            verdict["self_check"]["fails"], before.returncode != 0, after.returncode, got) == (
        "REPRODUCED", True, "", True, True, 0, expected), (refined, before.stdout, after.stdout)


def test_unittest_skip_is_taken_off_the_file_and_named(tree: Path, tmp_path: Path) -> None:
    """unittest.skip: REPRODUCED, file restored, unskipped named, self_check.fails false."""
    test_file = tree / "tests" / "test_money.py"
    original = test_file.read_bytes()
    verdict = _reproduce(tmp_path, tree,
                         f"pytest {tree}/tests/test_money.py::TestRounding::test_half_cent_rounds_up")
    assert (verdict["verdict"], verdict["unskipped"]["decorator"], verdict["unskipped"]["line"],
            verdict["unskipped"]["bypass"], verdict["self_check"]["fails"],
            test_file.read_bytes() == original) == (
        "REPRODUCED", "unittest.skip", 32, None, False, True)


def test_environment_names_interpreter_versions_and_tree(tree: Path, tmp_path: Path) -> None:
    """environment names the interpreter, tally's version and install kind, pytest, the tree."""
    verdict = _reproduce(tmp_path, tree,
                         f"pytest {tree}/tests/test_money.py::test_split_evenly_keeps_every_cent")
    env = verdict["environment"]
    import pytest as pt

    assert (env["interpreter"], env["project"], env["project_version"], env["project_install"],
            env["packages"].get("pytest"), env["tree"]["git"], verdict["base"]) == (
        _python(tree), "tally", "0.3.0", "editable", pt.__version__, False, "working-tree")
