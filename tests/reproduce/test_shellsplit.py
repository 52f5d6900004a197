"""The shell-block splitter reads a block as bash does: lists, ``&``, pipelines, subshells,
here-documents and if/for blocks (bash's grammar through tree-sitter-bash)."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from flow.workflows.reproduce.errors import ReproducerParseError
from flow.workflows.reproduce.reproducer.forms import Form, parse_reproducer
from flow.workflows.reproduce.reproducer.shellsplit import split_commands
from flow.workflows.reproduce.run import runner

ROOT = Path(__file__).resolve().parents[2]


def test_background_job_is_not_a_foreground_setup_step(tmp_path: Path) -> None:
    """``sleep 20 & cmd``: sleep is started in the background (its text keeps the ``&``),
    so the setup script goes on at once; cmd is the reproduce step."""
    rep = parse_reproducer('sleep 20 & python -c "import sys; sys.exit(3)"')
    assert rep is not None
    assert (["sleep 20 &"], ["python", "-c", "import sys; sys.exit(3)"]) == (
        [s.text for s in rep.setup], rep.step.argv)
    started = time.monotonic()
    problem = runner.run_setup(rep, cwd=str(tmp_path), env={"PATH": "/usr/bin:/bin"},
                               log=tmp_path / "setup.log", launch=runner.foreground, timeout=15)
    took = time.monotonic() - started
    assert (None, True) == (problem, took < 10), (problem, took)


def test_a_backgrounded_list_stays_one_background_unit() -> None:
    """``make server && ./serve &`` backgrounds the whole list; the step is the client."""
    units = split_commands("make server && ./serve &\n./client --port 1")
    assert [("make server && ./serve &", True), ("./client --port 1", False)] == [
        (u.text, u.background) for u in units]
    rep = parse_reproducer("make server && ./serve &\n./client --port 1")
    assert ["./client", "--port", "1"] == rep.step.argv


def test_or_list_is_one_unit_and_and_list_is_split() -> None:
    """``a || b`` is one unit (a setup script must not stop at a's failure); ``a && b`` splits."""
    units = split_commands("pip install x || pip install y && cd d\npython r.py || echo failed")
    assert [("pip install x || pip install y", ["pip", "install", "x"]), ("cd d", ["cd", "d"]),
            ("python r.py || echo failed", ["python", "r.py"])] == [(u.text, u.argv) for u in units]
    units = split_commands("git clone u && cd y && pip install .")
    assert [["git", "clone", "u"], ["cd", "y"], ["pip", "install", "."]] == [u.argv for u in units]


def test_subshell_and_blocks_are_whole_units() -> None:
    """A subshell's cd does not leak; if/for blocks run as written (words: bash -c TEXT)."""
    block = ("(cd build && make)\n"
             "if [ ! -d y ]; then\n  git clone y\nfi\n"
             "for i in 1 2 3; do python repro.py; done\n")
    units = split_commands(block)
    assert ["(cd build && make)", "if [ ! -d y ]; then\n  git clone y\nfi",
            "for i in 1 2 3; do python repro.py; done"] == [u.text for u in units]
    assert all(u.compound for u in units)
    rep = parse_reproducer(block)
    assert rep is not None
    assert (Form.SHELL, [], ["bash", "-c", "for i in 1 2 3; do python repro.py; done"]) == (
        rep.form, rep.cd, rep.step.argv)
    assert 2 == len(rep.setup)  # the subshell and the if block (git clone only) are setup


def test_pipeline_keeps_first_stage_and_whole_text() -> None:
    units = split_commands("FOO=1 python t.py 2>&1 | tee log | grep -v x")
    assert [(["python", "t.py"], {"FOO": "1"}, True)] == [(u.argv, u.env, u.piped) for u in units]
    assert "FOO=1 python t.py 2>&1 | tee log | grep -v x" == units[0].text


def test_heredoc_followed_by_list_keeps_body_with_its_command() -> None:
    """``cat <<EOF > f.py && python f.py``: the body is cat's stdin and stays in its text
    (a setup script writes the file), and python is the step."""
    block = "cat <<'EOF' > f.py && python f.py\nimport sys\nsys.exit(4)\nEOF\n"
    units = split_commands(block)
    assert [["cat"], ["python", "f.py"]] == [u.argv for u in units]
    assert "import sys\nsys.exit(4)\n" == units[0].stdin
    assert "cat <<'EOF' > f.py\nimport sys\nsys.exit(4)\nEOF" == units[0].text


def test_setup_heredoc_runs_as_written(tmp_path: Path) -> None:
    """A setup step with a here-document writes its file when the setup script runs."""
    rep = parse_reproducer("cat > data.txt <<EOF\nabc\nEOF\npython -c \"print(open('data.txt').read())\"")
    assert rep is not None
    problem = runner.run_setup(rep, cwd=str(tmp_path), env={"PATH": "/usr/bin:/bin"},
                               log=tmp_path / "setup.log", launch=runner.foreground, timeout=30)
    assert (None, "abc\n") == (problem, (tmp_path / "data.txt").read_text())


def test_the_dash_before_a_heredoc_is_an_argument() -> None:
    """``python - <<EOF``: the ``-`` (python reads the program from stdin) is kept."""
    for block in ("python - <<EOF\nprint(1)\nEOF\n", "python - <<EOF && echo ok\nprint(1)\nEOF\n"):
        first = split_commands(block)[0]
        assert (["python", "-"], "print(1)\n") == (first.argv, first.stdin), block


def test_tab_stripped_heredoc_and_herestring() -> None:
    units = split_commands("python - <<-EOF\n\timport os\n\tprint(os.sep)\n\tEOF\npython - <<< 'print(2)'")
    assert ["import os\nprint(os.sep)\n", "print(2)\n"] == [u.stdin for u in units]


def test_quote_removal_as_bash_does() -> None:
    units = split_commands("""printf '%s' "a\\"b" a\\ b $'x\\ty' "$HOME"/z 'q'"r"s""")
    assert [["printf", "%s", 'a"b', "a b", "x\ty", "$HOME/z", "qrs"]] == [u.argv for u in units]
    bash = subprocess.run(["bash", "-c", "for w in %s; do printf '[%%s]' \"$w\"; done" % (
        """'%s' "a\\"b" a\\ b $'x\\ty' 'q'"r"s""")], capture_output=True, text=True, check=True)
    assert "[%s][a\"b][a b][x\ty][qrs]" == bash.stdout


@pytest.mark.parametrize("text,match", [
    ("echo 'abc", "unclosed ' quote"),
    ('python -c "print(1)', 'unclosed " quote'),
    ("echo $(date", r"unclosed \$\("),
    ("python - <<EOF\nprint(1)\n", "here-document <<EOF opened on line 1 is never closed"),
    ("Traceback (most recent call last):\n  x", "bash cannot parse the block at line 1"),
])
def test_unparsable_blocks_say_where(text: str, match: str) -> None:
    with pytest.raises(ReproducerParseError, match=match):
        split_commands(text)


def test_grammar_is_imported_only_when_a_block_is_split() -> None:
    """Loading the reproduce workflow's reproducer modules does not import tree_sitter."""
    code = ("import sys; import flow.workflows.reproduce.reproducer.forms, "
            "flow.workflows.reproduce.verdict.refined_command; "
            "assert 'tree_sitter' not in sys.modules, 'imported early'; "
            "from flow.workflows.reproduce.reproducer.shellsplit import split_commands; "
            "split_commands('true'); assert 'tree_sitter' in sys.modules")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert 0 == done.returncode, done.stderr
