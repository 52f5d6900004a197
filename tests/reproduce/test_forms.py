"""Reproducer forms, shell-block splitting and the needs_tree table."""
from __future__ import annotations

import pytest

from flow.workflows.reproduce.errors import ReproducerParseError
from flow.workflows.reproduce.reproducer.forms import Form, PythonKind, TreeRow, parse_reproducer

# (text, form, reproduce-step argv)
FORM_CASES = [
    ("pytest -v test/xpu/test_ops.py::TestFooXPU::test_bar_xpu_float32", Form.PYTEST,
     ["pytest", "-v", "test/xpu/test_ops.py::TestFooXPU::test_bar_xpu_float32"]),
    ("python -m pytest test/test_nn.py -k conv", Form.PYTEST,
     ["python", "-m", "pytest", "test/test_nn.py", "-k", "conv"]),
    ("python3 -u -m pytest test_a.py", Form.PYTEST, ["python3", "-u", "-m", "pytest", "test_a.py"]),
    ("test/test_ops.py::TestCommonXPU::test_out_xpu", Form.PYTEST,
     ["test/test_ops.py::TestCommonXPU::test_out_xpu"]),
    ("TestFoo::test_bar", Form.PYTEST, ["TestFoo::test_bar"]),
    ('python -c "import torch; print(torch.ones(1))"', Form.PYTHON,
     ["python", "-c", "import torch; print(torch.ones(1))"]),
    ("python /abs/repro.py", Form.PYTHON, ["python", "/abs/repro.py"]),
    ("ZE_AFFINITY_MASK=0 pytest -x test_a.py", Form.PYTEST, ["pytest", "-x", "test_a.py"]),
    ("cd /work && python repro.py", Form.PYTHON, ["python", "repro.py"]),
    ("git clone https://x/y.git\ncd y\npip install -e .\npython repro.py", Form.SHELL,
     ["python", "repro.py"]),
    ("./run_bug.sh --fast", Form.SHELL, ["./run_bug.sh", "--fast"]),
]


@pytest.mark.parametrize("text,form,argv", FORM_CASES)
def test_form_and_step(text: str, form: Form, argv: list[str]) -> None:
    """Each written form is recognised and its reproduce step is the command under test."""
    rep = parse_reproducer(text)
    assert rep is not None
    assert (form, argv) == (rep.form, rep.step.argv)


@pytest.mark.parametrize("text", [None, "", "   \n\t", "# only a comment\n", "pip install torch\ngit clone x"])
def test_no_command(text: str | None) -> None:
    """Nothing to run (absent, blank, comments, setup only) is None: NO_REPRODUCER(no_command)."""
    assert None is parse_reproducer(text)


# (shell block, setup step texts, step argv, env, cd)
BLOCK_CASES = [
    (  # continuations, comments, chained cd, exports, trailing noise
        "export ZE_AFFINITY_MASK=0  # one tile\n"
        "git clone https://github.com/x/y.git && cd y \\\n  && pip install -e .\n"
        "# run it\n"
        "PYTORCH_DEBUG=1 python repro.py --size 4 2>&1 | tee log.txt\n"
        "echo done\n",
        ["export ZE_AFFINITY_MASK=0", "git clone https://github.com/x/y.git", "cd y",
         "pip install -e ."],
        ["python", "repro.py", "--size", "4"],
        {"ZE_AFFINITY_MASK": "0", "PYTORCH_DEBUG": "1"}, ["y"],
    ),
    (  # markdown fence and $ prompts copied from an issue
        "```bash\n$ pip install --pre torch\n$ cd /tmp\n$ pytest -sv /abs/test_x.py::test_y\n```",
        ["pip install --pre torch", "cd /tmp"],
        ["pytest", "-sv", "/abs/test_x.py::test_y"], {}, ["/tmp"],
    ),
    (  # assignment-only lines are env, not the step
        "A=1\nB='x y'\nconda activate env\nbash ./repro.sh",
        ["A=1", "B='x y'", "conda activate env"],
        ["bash", "./repro.sh"], {"A": "1", "B": "x y"}, [],
    ),
]


@pytest.mark.parametrize("text,setup,argv,env,cd", BLOCK_CASES)
def test_shell_block_split(text: str, setup: list[str], argv: list[str],
                           env: dict[str, str], cd: list[str]) -> None:
    """A shell block splits into setup steps, the reproduce step, its env and its cds."""
    rep = parse_reproducer(text)
    assert rep is not None
    assert (setup, argv, env, cd) == ([s.text for s in rep.setup], rep.step.argv, rep.env, rep.cd)


def test_heredoc_python_becomes_code() -> None:
    """``python - <<EOF`` in a block is a python code step whose code is the here-doc body."""
    rep = parse_reproducer("pip install torch\npython - <<'EOF'\nimport torch\nprint(torch.ones(2))\nEOF\n")
    assert rep is not None
    assert (Form.SHELL, PythonKind.CODE, "import torch\nprint(torch.ones(2))\n") == (
        rep.form, rep.python_kind, rep.python_code)


def test_multiline_python_c_in_block() -> None:
    """A ``python -c`` whose quoted code spans lines stays one command."""
    rep = parse_reproducer('pip install x\npython -c "\nimport sys\nsys.exit(3)\n"')
    assert rep is not None
    assert "\nimport sys\nsys.exit(3)\n" == rep.python_code


def test_unclosed_quote_raises() -> None:
    """An unclosed quote is a parse error that quotes the text, not a silent guess."""
    with pytest.raises(ReproducerParseError, match="unclosed"):
        parse_reproducer('python -c "print(1)')


# One row per needs_tree table row: (text, exists(path), row, needs_tree)
TREE_CASES = [
    ("pytest test/xpu/test_ops.py::T::t", False, TreeRow.PYTEST_RELATIVE, True),
    ("pytest test/test_nn.py", False, TreeRow.PYTEST_RELATIVE, True),
    ("TestFoo::test_bar", False, TreeRow.PYTEST_BARE, True),
    ("pytest -k test_bar", False, TreeRow.PYTEST_BARE, True),
    ("pytest /abs/test_a.py::test_b", True, TreeRow.PYTEST_ABSOLUTE, False),
    ("pytest /abs/test_a.py::test_b", False, TreeRow.PYTEST_ABSOLUTE_MISSING, False),
    ('python -c "print(1)"', False, TreeRow.PYTHON_CODE_OR_ABS, False),
    ("python /abs/path/script.py", False, TreeRow.PYTHON_CODE_OR_ABS, False),
    ("python path/script.py", False, TreeRow.PYTHON_RELATIVE_SCRIPT, True),
    ("git clone x\ncd x\npip install .\npytest test/test_a.py", False, TreeRow.SHELL_BLOCK, False),
]


@pytest.mark.parametrize("text,exists,row,needs", TREE_CASES)
def test_needs_tree_table(text: str, exists: bool, row: TreeRow, needs: bool) -> None:
    """needs_tree follows the seed's table row by row."""
    rep = parse_reproducer(text, exists=lambda _p: exists)
    assert rep is not None
    assert (row, needs) == (rep.tree_row, rep.needs_tree)


TRANSCRIPT = """$ pip install -e .
Successfully installed calc-0.1
$ python -c "import calc; calc.mean([1, 2])" \\
>   && echo done
Traceback (most recent call last):
  File "<string>", line 1, in <module>
ZeroDivisionError: division by zero
"""


def test_console_transcript_is_read_as_its_prompted_commands() -> None:
    """A pasted transcript's $ lines are the commands; its traceback is output, not a step."""
    from flow.workflows.reproduce.reproducer.forms import parse_reproducer

    rep = parse_reproducer(TRANSCRIPT)
    assert (["pip install -e ."], ["python", "-c", "import calc; calc.mean([1, 2])"]) == (
        [s.text for s in rep.setup], rep.step.argv)
