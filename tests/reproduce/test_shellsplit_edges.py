"""The splitter at its edges: what bash would do, or a clear bad_input naming the line,
never a crash (exit 1). A block of only comments, 3,000 ``&&``-joined commands, a NUL
in ``$'...'``, here-document lines that go on after ``;``."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from flow.workflows.reproduce.reproducer.shellsplit import split_commands
from tests.contract.driver import Driver
from tests.reproduce.conftest import PYTHON

PY = Path(PYTHON).name  # found on PATH: the Driver's environment has this venv's bin first


def _reproduce(tmp_path: Path, command: str) -> tuple[int, dict]:
    drv = Driver(tmp_path / "ws")
    call = drv.call(["reproduce", "--profile", "local", "--stage", "nightly",
                     "--command", command])
    assert call.spec is not None, call.stderr
    return call.code, call.spec


def test_a_block_of_only_comments_has_no_command(tmp_path: Path) -> None:
    code, spec = _reproduce(tmp_path, "# set up first\n# then run the test\n")
    assert (0, "NO_REPRODUCER", "no_command") == (
        code, spec["verdict"]["verdict"], spec["verdict"]["reason"]), spec


def test_three_thousand_joined_commands_split_without_recursion(tmp_path: Path) -> None:
    text = " && ".join(["true"] * 3000) + ' && python -c "assert 1 == 2"'
    commands = split_commands(text)
    code, spec = _reproduce(tmp_path, text)
    assert (3001, "python", 0, "REPRODUCED") == (
        len(commands), commands[-1].argv[0], code, spec["verdict"]["verdict"]), spec


def test_a_nul_in_an_ansi_c_string_ends_it_as_in_bash(tmp_path: Path) -> None:
    """bash cuts ``$'...'`` at its NUL: the program never sees it, and ``python -c`` runs
    the code before it (exit 0), so the verdict is NOT_REPRODUCED, as bash says."""
    text = "python -c $'import sys\\0; sys.exit(1)'"
    argv = split_commands(text)[0].argv
    bash = subprocess.run(["bash", "-c", text.replace("python", PYTHON, 1)]).returncode
    code, spec = _reproduce(tmp_path, text)
    assert (["python", "-c", "import sys"], 0, 0, "NOT_REPRODUCED") == (
        argv, bash, code, spec["verdict"]["verdict"]), spec


HEREDOC_LINES = [
    'cat <<EOF; python -c "raise SystemExit(3)"\nhello\nEOF\n',
    "cat <<A; cat <<B\nfirst\nA\nsecond\nB\n",
    "cat > f.py <<EOF; python f.py\nimport sys; print('in f'); sys.exit(4)\nEOF\n",
    "cat <<-EOF; echo after\n\tindented\n\tEOF\n",
    "if true; then cat <<EOF; fi\nin the if\nEOF\n",
]


@pytest.mark.parametrize("text", HEREDOC_LINES)
def test_here_document_lines_bash_accepts_split_as_bash_runs_them(tmp_path: Path,
                                                                  text: str) -> None:
    """Each block ``bash -n`` accepts is split; the commands, run in order, print and exit
    as the block does under bash."""
    text = text.replace("python", PY)
    env = {"PATH": f"{Path(PYTHON).parent}:/usr/bin:/bin"}

    def bash(script: str) -> tuple[int, str]:
        done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env,
                              capture_output=True, text=True)
        return done.returncode, done.stdout

    accepted = subprocess.run(["bash", "-n", "-c", text]).returncode
    commands = split_commands(text)
    assert (0, bash(text)) == (accepted, bash("\n".join(c.text for c in commands))), commands


def test_a_here_document_never_closed_names_its_line(tmp_path: Path) -> None:
    code, spec = _reproduce(tmp_path, "echo one\ncat <<EOF; python f.py\nbody\n")
    assert (2, "reproducer_unparsable" in str(spec) or "bad_input" in str(spec),
            "line 2" in spec["error"]["message"]) == (code, True, True), spec
