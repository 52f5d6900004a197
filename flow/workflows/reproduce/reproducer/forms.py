"""Recognise a reproducer's form and decide ``needs_tree`` (seed: Stage 1 "Reproducer forms"
and Prepare's "When to prepare" table).

``parse_reproducer(text)`` returns ``None`` when there is no command at all (the caller
answers NO_REPRODUCER(no_command)); otherwise a ``Reproducer`` naming the form, the setup
steps, the reproduce step, the env and cwd that lead up to it, and ``needs_tree`` with the
table row that decided it.
"""
from __future__ import annotations

import os
import posixpath
import re
from enum import StrEnum
from typing import Callable

from pydantic import BaseModel, ConfigDict

from flow.workflows.reproduce.reproducer.shellsplit import Command, split_commands


class Form(StrEnum):
    PYTEST = "pytest"
    PYTHON = "python"
    SHELL = "shell"


class PythonKind(StrEnum):
    CODE = "code"      # python -c "..." (or python - <<EOF ...)
    SCRIPT = "script"  # python path/to/script.py
    MODULE = "module"  # python -m some.module (not pytest)


class TreeRow(StrEnum):
    """Rows of the seed's needs_tree table (plus two rows the table leaves open)."""

    PYTEST_RELATIVE = "pytest, path is repo-relative"
    PYTEST_BARE = "pytest, bare node id without a file path"
    PYTEST_ABSOLUTE = "pytest, path is absolute and exists on disk"
    PYTEST_ABSOLUTE_MISSING = "pytest, path is absolute but missing (no tree can supply it)"
    PYTHON_CODE_OR_ABS = "python -c / python /abs/path/script.py"
    PYTHON_RELATIVE_SCRIPT = "python relative/script.py (resolves only inside a tree)"
    SHELL_BLOCK = "shell block"


NEEDS_TREE: dict[TreeRow, bool] = {
    TreeRow.PYTEST_RELATIVE: True,
    TreeRow.PYTEST_BARE: True,
    TreeRow.PYTEST_ABSOLUTE: False,
    TreeRow.PYTEST_ABSOLUTE_MISSING: False,
    TreeRow.PYTHON_CODE_OR_ABS: False,
    TreeRow.PYTHON_RELATIVE_SCRIPT: True,
    TreeRow.SHELL_BLOCK: False,
}

# Programs whose commands prepare an environment rather than exercise the failing path.
SETUP_PROGRAMS = frozenset({
    "git", "pip", "pip3", "uv", "conda", "mamba", "micromamba", "apt", "apt-get", "yum",
    "dnf", "brew", "wget", "curl", "cd", "pushd", "popd", "export", "source", ".", "set",
    "unset", "alias", "ulimit", "module", "mkdir", "rm", "cp", "mv", "ln", "tar", "unzip",
    "chmod", "make", "cmake", "ninja", "echo", "cat", "ls", "pwd", "which", "sudo", "gh",
    "docker", "nproc", "printf", "true",
})
# Commands that only change the shell's own state (its folder, variables, options, an
# activated environment): a block made of these before its program is the program typed
# in a shell, and runs where that shell is (``prefix_only``).
SHELL_STATE = frozenset({
    "cd", "pushd", "popd", "export", "source", ".", "set", "unset", "shopt", "alias",
    "umask", "declare", "typeset", "true", ":",
})
_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")
_PYTEST = frozenset({"pytest", "py.test"})
_TEST_FILE = re.compile(r"(^|/)(test_[^/]*|[^/]*_test)\.py$")
_PY_OPTS_WITH_VALUE = frozenset({"-X", "-W", "-Q"})
_PYTEST_OPTS_WITH_VALUE = frozenset({
    "-k", "-m", "-p", "-c", "-o", "--timeout", "--rootdir", "--deselect", "--junitxml",
    "--junit-xml", "--maxfail", "-n", "--tb", "--basetemp", "--confcutdir", "--ignore",
    "-r", "--durations", "--log-level", "--import-mode", "--count",
})


class Step(BaseModel):
    """One command of a shell block, as written and as words."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    text: str
    argv: list[str]
    env: dict[str, str] = {}
    raw: list[str] = []               # the words as written (quotes, ``$VAR`` kept)
    raw_env: dict[str, str] = {}      # inline assignments' values as written


class Reproducer(BaseModel):
    """A recognised reproducer. ``step`` is the command whose outcome decides the verdict."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    form: Form
    text: str
    setup: list[Step]
    step: Step
    stdin: str | None = None
    env: dict[str, str]          # exports before the step, then the step's inline prefix
    raw_env: dict[str, str] = {}  # the same values as written (``$VAR`` kept unexpanded)
    cd: list[str]                # cd arguments before the step, in order
    step_is_pytest: bool         # the step runs pytest (pytest rules apply to its output)
    pytest_targets: list[str] = []
    pytest_args: list[str] = []  # the pytest arguments as written (options and targets)
    python_kind: PythonKind | None = None
    python_code: str | None = None
    script: str | None = None
    needs_tree: bool
    tree_row: TreeRow


_PROMPT = re.compile(r"^\s*\$ ")
_HEREDOC_OPEN = re.compile(r"<<-?\s*['\"]?([A-Za-z0-9_\-]+)['\"]?")


def _strip_markup(text: str) -> str:
    """Drop Markdown fences; read a console transcript as its commands only.

    A block in which some line starts with a ``$ `` prompt is a transcript pasted from an
    issue: only the prompted lines are commands (with their ``\\`` continuation lines and
    here-document bodies, a ``> `` secondary prompt stripped); every other line is output
    the command printed, not a command to run."""
    lines = [line for line in text.splitlines() if not line.strip().startswith("```")]
    if not any(_PROMPT.match(line) for line in lines):
        return "\n".join(lines)
    kept: list[str] = []
    continued, heredoc = False, None
    for line in lines:
        if heredoc is not None:
            body = re.sub(r"^> ?", "", line)
            kept.append(body)
            if body.strip() == heredoc:
                heredoc = None
            continue
        if _PROMPT.match(line) or continued:
            command = _PROMPT.sub("", line, count=1) if _PROMPT.match(line) else re.sub(r"^> ?", "", line)
            kept.append(command)
            continued = command.rstrip().endswith("\\")
            opened = _HEREDOC_OPEN.search(command)
            heredoc = opened.group(1) if opened else None
    return "\n".join(kept)


def pytest_invocation(argv: list[str]) -> list[str] | None:
    """The arguments after ``pytest`` when ``argv`` runs pytest, else None."""
    if not argv:
        return None
    prog = posixpath.basename(argv[0])
    if prog in _PYTEST:
        return argv[1:]
    if _PYTHON.match(prog):
        i = 1
        while i < len(argv) and argv[i].startswith("-") and argv[i] != "-m":
            i += 2 if argv[i] in _PY_OPTS_WITH_VALUE else 1
        if i + 1 < len(argv) and argv[i] == "-m" and argv[i + 1] == "pytest":
            return argv[i + 2:]
    if len(argv) == 1 and ("::" in argv[0] or _TEST_FILE.search(argv[0])):
        return argv  # a bare node id or test file: pytest is implied
    return None


def pytest_targets(args: list[str]) -> list[str]:
    """Positional arguments of a pytest command line (paths and node ids)."""
    targets, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg.startswith("-"):
            skip = arg in _PYTEST_OPTS_WITH_VALUE
        else:
            targets.append(arg)
    return targets


def python_invocation(argv: list[str]) -> tuple[PythonKind, str] | None:
    """(kind, code | script | module) when ``argv`` runs python directly (not pytest, not pip)."""
    if not argv or not _PYTHON.match(posixpath.basename(argv[0])):
        return None
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg == "-c" and i + 1 < len(argv):
            return PythonKind.CODE, argv[i + 1]
        if arg == "-m" and i + 1 < len(argv):
            if argv[i + 1] in {"pip", "venv", "pytest", "ensurepip"}:
                return None
            return PythonKind.MODULE, argv[i + 1]
        if arg == "-":
            return PythonKind.CODE, ""
        if not arg.startswith("-"):
            if arg == "setup.py":
                return None
            return PythonKind.SCRIPT, arg
        i += 2 if arg in _PY_OPTS_WITH_VALUE else 1
    return PythonKind.CODE, ""  # bare `python` reading stdin


def is_setup(cmd: Command) -> bool:
    """True when a command provisions the environment instead of exercising the bug (a
    background job, an env setting, a compound block made only of such commands)."""
    if not cmd.argv or cmd.background:
        return True  # an env setting, or a job the shell starts and does not wait for
    if cmd.compound:
        return all(is_setup(inner) for inner in cmd.inner)
    prog = posixpath.basename(cmd.argv[0])
    if prog in SETUP_PROGRAMS:
        return True
    if _PYTHON.match(prog) and pytest_invocation(cmd.argv) is None:
        return python_invocation(cmd.argv) is None
    return False


def prefix_only(rep: Reproducer) -> bool:
    """The reproducer is a program after a prefix that only changes the shell's state
    (``export X=.. &&``, ``cd sub &&``, ``source venv/bin/activate &&``, assignments):
    typed in the project tree, bash runs the program from there with those effects, so
    the prefix runs there too (never in an empty scratch folder)."""
    return bool(rep.setup) and all(
        not step.argv or (step.argv[0] in SHELL_STATE and step.argv[0] == step.raw[0]
                          if step.raw else step.argv[0] in SHELL_STATE)
        for step in rep.setup)


def _tree_row(form: Form, targets: list[str], kind: PythonKind | None, script: str | None,
              exists: Callable[[str], bool]) -> TreeRow:
    if form is Form.SHELL:
        return TreeRow.SHELL_BLOCK
    if form is Form.PYTEST:
        paths = [t.split("::", 1)[0] for t in targets]
        paths = [p for p in paths if p.endswith(".py") or "/" in p]
        if not paths:
            return TreeRow.PYTEST_BARE
        if all(posixpath.isabs(p) for p in paths):
            return (TreeRow.PYTEST_ABSOLUTE if all(exists(p) for p in paths)
                    else TreeRow.PYTEST_ABSOLUTE_MISSING)
        return TreeRow.PYTEST_RELATIVE
    if kind is PythonKind.SCRIPT and script is not None and not posixpath.isabs(script):
        return TreeRow.PYTHON_RELATIVE_SCRIPT
    return TreeRow.PYTHON_CODE_OR_ABS


def _env_of(cmd: Command, raw: bool = False) -> dict[str, str]:
    """Variables an ``export``/assignment-only line sets (``raw``: their values as written)."""
    is_export = cmd.argv[:1] == ["export"]
    words = (cmd.raw if raw else cmd.argv)[1:] if is_export else []
    env = dict(cmd.raw_env if raw else cmd.env) if not cmd.argv else {}
    for word in words:
        if "=" in word:
            name, _, value = word.partition("=")
            env[name] = value
    return env


def parse_reproducer(text: str | None,
                     exists: Callable[[str], bool] = os.path.exists) -> Reproducer | None:
    """Recognise ``text``; None when it holds no command to run (NO_REPRODUCER(no_command)).

    Raises ReproducerParseError when the text cannot be split (an unclosed quote).
    ``exists`` answers whether an absolute path is on disk (the needs_tree table asks).
    """
    if text is None or not text.strip():
        return None
    commands = split_commands(_strip_markup(text))
    steps = [i for i, c in enumerate(commands) if not is_setup(c)]
    if not steps:
        return None
    last = steps[-1]
    step, before = commands[last], commands[:last]
    env: dict[str, str] = {}
    raw_env: dict[str, str] = {}
    cd: list[str] = []
    for cmd in before:
        env.update(_env_of(cmd))
        raw_env.update(_env_of(cmd, raw=True))
        if cmd.argv[:1] == ["cd"] and len(cmd.argv) > 1:
            cd.append(cmd.argv[1])
    env.update(step.env)
    raw_env.update(step.raw_env)
    only_env_and_cd = all(not c.argv or c.argv[0] in {"cd", "export"} for c in before)
    pytest_args = pytest_invocation(step.argv)
    python = python_invocation(step.argv) if pytest_args is None else None
    if only_env_and_cd and pytest_args is not None:
        form = Form.PYTEST
    elif only_env_and_cd and python is not None and (python[0] is not PythonKind.CODE
                                                      or python[1] or step.stdin):
        form = Form.PYTHON
    else:
        form = Form.SHELL
    targets = pytest_targets(pytest_args) if pytest_args is not None else []
    kind, value = python if python else (None, None)
    code = (step.stdin or "") if kind is PythonKind.CODE and not value else value
    row = _tree_row(form, targets, kind, value if kind is PythonKind.SCRIPT else None, exists)
    return Reproducer(
        form=form,
        text=text,
        setup=[Step(text=c.text, argv=c.argv, env=c.env, raw=c.raw, raw_env=c.raw_env)
               for c in before],
        step=Step(text=step.text, argv=step.argv, env=step.env, raw=step.raw,
                  raw_env=step.raw_env),
        stdin=step.stdin,
        env=env,
        raw_env=raw_env,
        cd=cd,
        step_is_pytest=pytest_args is not None,
        pytest_targets=targets,
        pytest_args=pytest_args or [],
        python_kind=kind,
        python_code=code if kind is PythonKind.CODE else None,
        script=value if kind is PythonKind.SCRIPT else None,
        needs_tree=NEEDS_TREE[row],
        tree_row=row,
    )
