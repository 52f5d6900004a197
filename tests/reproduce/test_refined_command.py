"""The refined_command contract, checked on text and by running it with ``bash -c``."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from flow.workflows.reproduce.reproducer.forms import parse_reproducer
from flow.workflows.reproduce.verdict.refined_command import contract_problems, double_quote, render
from tests.reproduce.conftest import FIXTURES, PYTHON, REPO, run

# (reproducer, render kwargs, refined command)
RENDER_CASES = [
    ("pytest test_a.py::test_b", {"sv": True, "timeout": 300, "exitfirst": True},
     "pytest -sv --timeout 300 -x test_a.py::test_b"),
    ("pytest -sv test_a.py", {"sv": True}, "pytest -sv test_a.py"),
    ("python -m pytest test_a.py", {"cwd": "/w d"}, "cd '/w d' && python -m pytest test_a.py"),
    ("ZE_AFFINITY_MASK=0 pytest t.py", {"env": {"IS_XPU_CI": "1"}},
     "ZE_AFFINITY_MASK=0 IS_XPU_CI=1 pytest t.py"),
    ("python -c 'import sys; print(\"$HOME\")'", {},
     'python -c "import sys; print(\\"\\$HOME\\")"'),
    ("git clone x\ncd x\npip install .\nexport A='1 2'\npython repro.py; echo done", {"cwd": "/s/x"},
     "cd /s/x && A='1 2' python repro.py"),
    ("TestFoo::test_bar", {"pytest_args": ["/t/test/test_foo.py::TestFoo::test_bar"]},
     "pytest /t/test/test_foo.py::TestFoo::test_bar"),
]


@pytest.mark.parametrize("text,kwargs,expected", RENDER_CASES)
def test_render(text: str, kwargs: dict, expected: str) -> None:
    """Env goes inline, cwd as ``cd DIR &&``, setup is dropped, python code in double quotes."""
    rep = parse_reproducer(text)
    assert rep is not None
    assert expected == render(rep, **kwargs)


@pytest.mark.parametrize("text,kwargs,_", RENDER_CASES)
def test_rendered_commands_honour_the_contract(text: str, kwargs: dict, _: str) -> None:
    """Every rendered command passes the contract check and parses back to one step."""
    rep = parse_reproducer(text)
    assert rep is not None
    refined = render(rep, **kwargs)
    again = parse_reproducer(refined)
    assert ([], rep.step.argv[1:] == again.step.argv[1:] or again.step_is_pytest) == (
        contract_problems(refined), True)


PROBLEM_CASES = [
    ("docker run img pytest t.py", ["docker wrapper: 'docker run img pytest t.py'"]),
    ("pip install x && pytest t.py", ["setup step: 'pip install x'"]),
    ("python -c 'print(1)'", ["python -c payload in single quotes; use double quotes"]),
    ("cd /x && ZE=1 pytest t.py", []),
]


@pytest.mark.parametrize("refined,problems", PROBLEM_CASES)
def test_contract_problems(refined: str, problems: list[str]) -> None:
    """Docker wrappers, setup steps and single-quoted python payloads are named."""
    assert problems == contract_problems(refined)


def test_bad_env_name_refused() -> None:
    """An env name that is not a shell name is refused, not quoted into the command."""
    rep = parse_reproducer("pytest t.py")
    with pytest.raises(ValueError, match="not a shell name"):
        render(rep, env={"A;rm -rf /": "1"})


def test_double_quote_round_trip() -> None:
    """Double-quoted python code reaches python byte for byte through bash."""
    code = 'print("a $HOME `x` \\\\ b")'
    assert (0, 'a $HOME `x` \\ b\n') == run(["bash", "-c", f"{PYTHON} -c {double_quote(code)}"])


def test_bash_c_reproduces_pytest_failure(tmp_path: Path) -> None:
    """``bash -c "$refined_command"`` on the example's failing test fails again, from any cwd."""
    tree = tmp_path / "calc"
    shutil.copytree(REPO / "examples" / "calc", tree)
    rep = parse_reproducer(f"{PYTHON} -m pytest tests/test_calc.py::test_mean_of_ints_keeps_the_fraction")
    refined = render(rep, cwd=str(tree), sv=True)
    code, output = run(["bash", "-c", refined], cwd="/")
    assert (1, True) == (code, "1 failed" in output)


def test_bash_c_reproduces_python_failure() -> None:
    """A ``python -c`` refined command with quotes and env inline fails with the assertion."""
    rep = parse_reproducer(f"CALC_MODE=strict {PYTHON} -c 'import os; assert os.environ[\"CALC_MODE\"] != \"strict\", \"boom\"'")
    code, output = run(["bash", "-c", render(rep)])
    assert (1, True) == (code, "AssertionError: boom" in output)


@pytest.mark.slow
def test_bash_c_fixture_failure() -> None:
    """A refined pytest command on the fixture file reports the failing test again."""
    rep = parse_reproducer(f"{PYTHON} -m pytest {FIXTURES / 'outcomes_cases.py'}::TestOutcomes::test_fails")
    code, output = run(["bash", "-c", render(rep, sv=True, cwd="/tmp")])
    assert (1, True) == (code, "1 failed" in output)


# (reproducer, python, refined command): the environment's interpreter by absolute path,
# the original's words and shell semantics kept
PYTHON_CASES = [
    ("pytest t.py::a", "/e v/bin/python", "'/e v/bin/python' -m pytest t.py::a"),
    ('python -c "print(\'$HOME\')"', "/e/bin/python", '/e/bin/python -c "print(\'$HOME\')"'),
    ("python -c 'print(\"$HOME\")'", "/e/bin/python", '/e/bin/python -c "print(\\"\\$HOME\\")"'),
    ('export CCY=EUR\npython -c "print(\'$CCY\')"', "/e/bin/python",
     'export CCY=EUR && /e/bin/python -c "print(\'$CCY\')"'),
    ('A="$HOME/x" python3 script.py "$A"', "/e/bin/python",
     'export A="$HOME/x" && /e/bin/python script.py "$A"'),
    ("/usr/bin/python3 -c 'import x'", "/e/bin/python", '/usr/bin/python3 -c "import x"'),
]


@pytest.mark.parametrize("text,python,expected", PYTHON_CASES)
def test_render_names_the_interpreter_and_keeps_shell_semantics(text: str, python: str,
                                                                expected: str) -> None:
    """The environment's interpreter replaces bare python/pytest; quoting and $VAR are kept."""
    assert expected == render(parse_reproducer(text), python=python)


def test_var_expansion_computes_what_the_original_did() -> None:
    """An exported variable expanded in python -c gives the same output as the original block."""
    block = f'export GREETING=hello\n{PYTHON} -c "print(\'$GREETING world\')"'
    original = run(["bash", "-c", block])
    refined = run(["bash", "-c", render(parse_reproducer(block))])
    assert (0, "hello world\n") == original == refined


def test_activation_prefix_runs_first() -> None:
    """A profile's ``activate`` runs before everything else, ``cd`` included."""
    rep = parse_reproducer("pytest t.py::a")
    assert ("source /opt/env.sh && cd /w && /e/bin/python -m pytest t.py::a" ==
            render(rep, cwd="/w", python="/e/bin/python", activate="source /opt/env.sh"))
