"""The bundled example, driven through the pure core the way the engine wires it:
preflight -> needs_tree -> cwd -> collect-only -> Stage 1 (current env) -> Stage 2 (the
source dir installed into a fresh venv)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

from flow.workflows.reproduce.preflight import preflight
from flow.workflows.reproduce.prepare.rules import after_collect_only
from flow.workflows.reproduce.prepare.rules import choose_cwd
from flow.workflows.reproduce.profiles import load_profile
from flow.workflows.reproduce.reproducer.forms import parse_reproducer
from flow.workflows.reproduce.run.decision import Next, StageMode
from flow.workflows.reproduce.run.interpret import collect_only, interpret_pytest
from flow.workflows.reproduce.stage1.rules import stage1
from flow.workflows.reproduce.stage2.rules import BuildStep, stage2, stage2_build
from flow.workflows.reproduce.stage2.venv import install_built, tools_pth, venv_plan
from flow.workflows.reproduce.verdict.models import NotReproduced, Reproduced, Stage
from flow.workflows.reproduce.verdict.refined_command import render
from tests.reproduce.conftest import PYTHON, REPO, run

FAILING = "pytest tests/test_calc.py::test_mean_of_ints_keeps_the_fraction"
PASSING = "pytest tests/test_calc.py::test_add"
BIN = str(Path(PYTHON).parent)


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """A copy of examples/calc (the --source-dir) and a scratch dir beside it."""
    (tmp_path / "scratch").mkdir()
    return Path(shutil.copytree(REPO / "examples" / "calc", tmp_path / "calc"))


def _run_stage(text: str, source: Path, path_head: str) -> tuple[str, object]:
    """Stage-independent part: parse, choose cwd, collect, run refined command, interpret."""
    profile = load_profile("local")
    rep = parse_reproducer(text)
    assert (None, True) == (preflight(text), rep.needs_tree)
    choice = choose_cwd(rep, scratch=str(source.parent / "scratch"), tree=str(source),
                        package=profile.import_package)
    env = {**os.environ, "PATH": f"{path_head}:{os.environ['PATH']}"}
    code, output = run([PYTHON, "-m", "pytest", "--collect-only", "-q", *choice.pytest_args],
                       cwd=choice.cwd)
    assert None is after_collect_only(collect_only(code, output))
    refined = render(rep, cwd=choice.cwd, sv=True, pytest_args=choice.pytest_args,
                     python=str(Path(path_head) / "python"))
    code, output = run(["bash", "-c", refined], cwd="/", env=env)
    return refined, interpret_pytest(code, output)


def test_readme_command_is_the_tested_one() -> None:
    """The example's README shows the command this test reproduces."""
    assert FAILING in (REPO / "examples" / "calc" / "README.md").read_text()


def test_failing_test_reproduces_on_stage1(source: Path) -> None:
    """The example's failing test is REPRODUCED at Stage 1 with a runnable refined command."""
    refined, outcome = _run_stage(FAILING, source, BIN)
    assert Reproduced(stage=Stage.NIGHTLY, refined_command=refined) == stage1(outcome, StageMode.AUTO, refined)


def test_passing_test_nightly_is_not_reproduced(source: Path) -> None:
    """stage=nightly and a passing test: NOT_REPRODUCED([nightly]), no fall-through."""
    refined, outcome = _run_stage(PASSING, source, BIN)
    verdict = stage1(outcome, StageMode.NIGHTLY, refined)
    assert (NotReproduced, [Stage.NIGHTLY]) == (type(verdict), verdict.checked_stages)


@pytest.mark.slow
def test_stage2_fresh_venv_install(source: Path, tmp_path: Path) -> None:
    """auto + passing goes to Stage 2, which builds the source into a fresh venv; the test
    passes there too, so the flow goes on to ci_env; the failing one reproduces there."""
    refined, outcome = _run_stage(PASSING, source, BIN)
    assert Next(stage=Stage.SOURCE_BUILD) == stage1(outcome, StageMode.AUTO, refined)
    plan = venv_plan(PYTHON, source, tmp_path / "work")
    for argv in (plan.create, plan.build):
        code, output = run(argv)
        assert 0 == code, output
    wheels = sorted(str(p) for p in Path(plan.wheel_dir).glob("*.whl"))
    code, output = run(install_built(PYTHON, plan, wheels))
    assert 0 == code, output
    purelib = subprocess.run(plan.purelib_query, capture_output=True, text=True, check=True).stdout.strip()
    pth, content = tools_pth(purelib, [sysconfig.get_path("purelib")])
    pth.write_text(content)
    assert BuildStep.RUN == stage2_build(True, None).step
    venv_bin = str(Path(plan.venv_python).parent)
    code, where = run([plan.venv_python, "-c", "import calc; print(calc.__file__)"], cwd="/")
    refined2, outcome2 = _run_stage(PASSING, source, venv_bin)
    refined3, outcome3 = _run_stage(FAILING, source, venv_bin)
    assert (0, True, Next(stage=Stage.CI_ENV), Reproduced(stage=Stage.SOURCE_BUILD, refined_command=refined3)) == (
        code, where.strip().startswith(purelib), stage2(outcome2, "origin/main", refined2),
        stage2(outcome3, "origin/main", refined3))

