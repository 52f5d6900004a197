"""A shell block is accepted exactly when real ``bash -n`` accepts it without a warning, and an
accepted block's commands, run in order, do what the block does under bash: here-documents
several to a line (``cat <<A <<B``, ``3<<B``, across ``&&`` and ``|``), quoted and ``<<-``
delimiters, bare closing keywords, unclosed quotes and bodies."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from flow.workflows.reproduce.errors import ReproducerParseError
from flow.workflows.reproduce.reproducer.shellsplit import split_commands
from tests.contract.inproc import call

BLOCKS = [
    "cat <<A <<B\na\nA\nb\nB\n",
    "cat <<A 3<<B\na\nA\nb\nB\n",
    "cat <<A | cat <<B\na\nA\nb\nB\n",
    "cat <<A && cat <<B\na\nA\nb\nB\n",
    "cat <<A || cat <<B\na\nA\nb\nB\necho after\n",
    "cat <<A >bg.txt & cat <<B\na\nA\nb\nB\nwait\ncat bg.txt\n",
    "cat <<A 2>&1 <<B\na\nA\nb\nB\n",
    "cat <<A &>/dev/null <<B\na\nA\nb\nB\necho x\n",
    "echo start &&\ncat <<A | tr a-z A-Z && cat <<B\nabc\nA\nb\nB\necho end\n",
    "f() { cat <<A <<B\na\nA\nb\nB\n}\nf\n",
    "cat <<A; cat <<B <<C\na\nA\nb\nB\nc\nC\n",
    "cat <<A; cat <<B\na\nA\nb\nB\n",
    "cat <<-A <<'B'\n\ta\n\tA\nb $x\nB\necho end\n",
    "cat <<A <<B <<C\na\nA\nb\nB\nc\nC\n",
    "if true; then cat <<A <<B\na\nA\nb\nB\nfi\n",
    "cat <<<x <<A\na\nA\n",
    "cat <<A >/dev/null <<B\na\nA\nb\nB\necho done-ok\n",
    "cat <<A <<B; echo after\na\nA\nb\nB\n",
    "cat <<'A B' <<C\nx\nA B\nc\nC\n",
    "echo \u00fc <<A <<B\n\u00e4\nA\n\u00f6\nB\necho end\n",
    "cat <<A <<A\na\nA\nb\nA\n",
    "x=1 cat - <<A 4<<B\nfirst\nA\nzz\nB\n",
    "echo fi\n",
    "echo one && echo two\ncat <<EOF\nbody\nEOF\n",
    # refused by bash, so refused here
    "cat <<A\nx\n",                 # bash warns: delimited by end-of-file
    "cat <<A <<B\na\nA\nb\n",       # the second body is never closed
    "echo 'x\n",
    "echo )\n",
    "fi\n",
    "done\n",
    "in\n",
    "then echo x\n",
    "esac\n",
    "echo $(\n",
]


def _bash_accepts(text: str) -> bool:
    """Real ``bash -n``: exit 0 and nothing said (a warning is a refusal here too)."""
    done = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True,
                          timeout=30)
    return done.returncode == 0 and not done.stderr.strip()


def _splits(text: str) -> bool:
    try:
        split_commands(text)
    except ReproducerParseError:
        return False
    return True


@pytest.mark.parametrize("text", BLOCKS)
def test_a_block_is_split_exactly_when_bash_n_accepts_it(text: str) -> None:
    """The splitter and bash agree on every block of the set, both ways."""
    assert _bash_accepts(text) == _splits(text)


@pytest.mark.parametrize("text", [b for b in BLOCKS if _bash_accepts(b)])
def test_the_commands_run_in_order_print_what_the_block_prints(tmp_path: Path,
                                                               text: str) -> None:
    """Run under bash, the split commands' texts one after another print what the block
    itself prints and end with its exit status."""
    def bash(script: str) -> tuple[int, str]:
        done = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True,
                              text=True, timeout=30)
        return done.returncode, done.stdout

    commands = split_commands(text)
    assert bash(text) == bash("\n".join(c.text for c in commands)), commands


def test_the_command_reads_the_last_here_document_of_its_standard_input() -> None:
    """``python - <<A <<B``: bash gives python the body of B; so does the split, and
    ``- `` stays an argument."""
    (cmd,) = split_commands("python - <<A <<B\nprint(0)\nA\nprint(1)\nB\n")
    assert (["python", "-"], "print(1)\n") == (cmd.argv, cmd.stdin)


def test_a_reproduce_start_takes_a_block_with_two_here_documents_on_a_line(
        tmp_path: Path) -> None:
    """The CLI refused ``cat <<A <<B`` as unparsable; now the start goes on (and a block
    bash refuses is still refused, before any flow exists)."""
    calc = Path(__file__).resolve().parents[2] / "examples" / "calc"
    base = ["--workspace", str(tmp_path / "ws"), "reproduce", "--profile", "local",
            "--source-dir", str(calc), "--stage", "nightly", "--timeout", "60"]
    code, spec = call([*base, "--command", "fi\npytest tests/test_calc.py::test_add"])
    assert (2, True) == (code, "bash cannot parse the block at line 1: 'fi'"
                         in spec["error"]["message"]), spec
    assert [] == list((tmp_path / "ws").rglob("flow_state.json"))
    block = "cat <<A <<B\nunused\nA\nused\nB\npytest tests/test_calc.py::test_add\n"
    code, spec = call([*base, "--command", block])
    assert "reproducer" not in str(spec.get("error", {}).get("message", "")), spec
    assert spec["flow_id"] and [] != list((tmp_path / "ws").rglob("flow_state.json")), spec
