"""Render ``refined_command``: one shell string that, run by itself, re-triggers the failure.

Contract (seed, Output): env vars as an inline prefix, a required cwd as ``cd DIR &&``,
no setup steps, no docker wrapper, python code as ``python -c "..."`` in double quotes,
and for pytest optionally ``-sv``, ``--timeout N``, ``-x``. Every word from outside is
quoted (``shlex.quote``, or the double-quote escaping for python code), so issue text
never reaches a shell unquoted.
"""
from __future__ import annotations

import re
import shlex

from flow.workflows.reproduce.reproducer.forms import Reproducer, PythonKind, is_setup
from flow.workflows.reproduce.reproducer.shellsplit import split_commands
from flow.workflows.reproduce.run.deciding import added_pytest_flags

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def double_quote(text: str) -> str:
    """Quote ``text`` for bash inside double quotes (escape \\ " $ and backticks)."""
    return '"' + re.sub(r'([\\"$`])', r"\\\1", text) + '"'


def _words(argv: list[str]) -> str:
    return " ".join(shlex.quote(w) for w in argv)


def _pytest_program(rep: Reproducer, python: str | None) -> list[str]:
    """How the command starts pytest: ``<python> -m pytest`` with the environment's
    interpreter when it is known (a bare ``pytest`` is not on a fresh shell's PATH, and
    would be another environment's pytest if it were), else as written."""
    if python:
        return [python, "-m", "pytest"]
    first = rep.step.argv[0]
    if first.endswith(("pytest", "py.test")) or len(rep.step.argv) == 1:
        return ["pytest"]
    return [first, "-m", "pytest"]


def _value(rep: Reproducer, name: str, value: str) -> str:
    """An env value for the prefix: as written when it expands something (``$VAR``,
    backticks), so the refined command computes what the original did; else quoted."""
    raw = rep.raw_env.get(name)
    if raw is not None and ("$" in raw or "`" in raw) and rep.env.get(name) == value:
        return raw
    return shlex.quote(value)


def _code_word(raw: str, code: str) -> str:
    """The ``-c`` payload: kept as written when it was one double-quoted word (``$VAR``
    inside still expands, as in the original); otherwise put in double quotes with
    ``$``/backticks escaped, which is what single quotes meant."""
    if len(raw) >= 2 and raw[0] == raw[-1] == '"' and _one_double_quoted(raw):
        return raw
    return double_quote(code)


def _one_double_quoted(raw: str) -> bool:
    """``raw`` is a single ``"..."`` word (no quote closes before its end)."""
    i = 1
    while i < len(raw) - 1:
        if raw[i] == "\\":
            i += 2
            continue
        if raw[i] == '"':
            return False
        i += 1
    return i == len(raw) - 1


def _program_words(rep: Reproducer, python: str | None) -> list[str]:
    """The step's words as written, the bare python program replaced by ``python``."""
    argv, raw = rep.step.argv, rep.step.raw or [shlex.quote(w) for w in rep.step.argv]
    words = list(raw)
    if python and is_bare_python(argv[0]):
        words[0] = shlex.quote(python)
    if rep.python_kind is PythonKind.CODE and "-c" in argv:
        i = argv.index("-c") + 1
        if i < len(argv):
            words[i] = _code_word(raw[i], argv[i])
    return words


def is_bare_python(word: str) -> bool:
    """``python``, ``python3``, ``python3.11`` (no directory)."""
    return "/" not in word and re.match(r"^python(\d+(\.\d+)?)?$", word) is not None


# ``cwd`` meaning "a fresh empty directory": rendered as ``cd "$(mktemp -d)"`` (seed,
# Working directory), so the command does not depend on a workspace that may be gone
FRESH_DIR = "$(mktemp -d)"


def render(rep: Reproducer, *, cwd: str | None = None, env: dict[str, str] | None = None,
           sv: bool = False, timeout: int | None = None, exitfirst: bool = False,
           pytest_args: list[str] | None = None, python: str | None = None,
           pytest_flags: list[str] | None = None, bin_dir: str | None = None,
           activate: str | None = None, block_env: dict[str, str] | None = None,
           path_word: str | None = None, pythonpath_head: str | None = None) -> str:
    """The refined command for ``rep``.

    ``cwd`` (decided by the caller's cwd rules) becomes ``cd DIR &&``; ``env`` is merged
    over the reproducer's own env (exports and inline prefix, kept as written when they
    expand a variable); ``sv``/``timeout``/``exitfirst`` add the pytest flags the contract
    allows when not already written, ``pytest_flags`` more (``--runxfail``, ``-p
    no:skipping``); ``pytest_args`` replaces the written pytest arguments (e.g. a target
    rewritten relative to the chosen cwd). ``python`` is the absolute interpreter of the
    environment that reproduced: it replaces a bare ``python``/``pytest`` so the command
    runs the same way from a fresh shell; ``bin_dir`` (that environment's bin) is put
    first on PATH for any other program the step runs (a console script). ``activate``
    is a profile's activation command, run first (``activate && ...``). ``block_env``
    and ``path_word`` are what a shell block's setup left for its step (``run.block``:
    the variables it set, ``PATH=<venv>/bin:"$PATH"``), put before the step's own
    prefixes. Setup steps are never included. ``pythonpath_head`` (the deciding run
    only, never ``refined_command``): a folder put in front of a ``PYTHONPATH`` the
    command sets itself (``run.imports``). Raises ValueError on an env name that is not
    a shell name.
    """
    merged = {**(block_env or {}), **rep.env, **(env or {})}
    for name in merged:
        if not _ENV_NAME.fullmatch(name):
            raise ValueError(f"env var name {name!r} is not a shell name; drop or rename it")
    program_uses_path = False
    if rep.step_is_pytest:
        args = list(pytest_args if pytest_args is not None else rep.pytest_args)
        added = added_pytest_flags(args, sv=sv, timeout=timeout, exitfirst=exitfirst,
                                   flags=pytest_flags)
        body = _words([*_pytest_program(rep, python), *added, *args])
    elif rep.python_kind is not None:
        if rep.python_kind is PythonKind.CODE and not rep.step.argv[1:] or (
                rep.python_kind is PythonKind.CODE and "-c" not in rep.step.argv):
            program = python if python and is_bare_python(rep.step.argv[0]) else rep.step.argv[0]
            body = f"{shlex.quote(program)} -c {double_quote(rep.python_code or '')}"
        else:
            body = " ".join(_program_words(rep, python))
    else:
        body = " ".join(_program_words(rep, python))
        program_uses_path = bool(bin_dir) and "/" not in rep.step.argv[0]
    # A variable the command's own words expand (``"$CCY"``) must be set before bash
    # expands them: an inline prefix applies only to the program's environment, so
    # those are exported first; the others stay inline (the contract's form).
    expanded = {n for n in merged if re.search(r"\$\{?%s\b" % re.escape(n), body)}

    def value_of(name: str) -> str:
        value = _value(rep, name, merged[name])
        if name == "PYTHONPATH" and pythonpath_head:
            return f"{shlex.quote(pythonpath_head)}:{value}"
        return value

    exports = " && ".join(f"export {n}={value_of(n)}" for n in merged if n in expanded)
    prefix = " ".join(f"{name}={value_of(name)}" for name in merged if name not in expanded)
    if path_word and "PATH" not in merged:
        prefix = " ".join(filter(None, [path_word, prefix]))
    elif program_uses_path and "PATH" not in merged:
        prefix = " ".join(filter(None, [f'PATH={shlex.quote(bin_dir or "")}:"$PATH"', prefix]))
    command = f"{prefix} {body}" if prefix else body
    command = f"{exports} && {command}" if exports else command
    where = '"$(mktemp -d)"' if cwd == FRESH_DIR else shlex.quote(cwd or "")
    command = f"cd {where} && {command}" if cwd else command
    return f"{activate} && {command}" if activate else command


def contract_problems(refined: str) -> list[str]:
    """What in ``refined`` breaks the contract (empty list when it honours it). Never raises
    on shell text it can split; an unsplittable string is itself a problem."""
    problems: list[str] = []
    try:
        commands = split_commands(refined)
    except Exception as exc:  # the text is data; report instead of raising
        return [f"cannot be split as shell: {exc}"]
    if not commands:
        return ["empty command"]
    for cmd in commands:
        if cmd.argv[:1] == ["docker"]:
            problems.append(f"docker wrapper: {cmd.text!r}")
        elif cmd.argv[:1] == ["cd"]:
            continue
        elif is_setup(cmd):
            problems.append(f"setup step: {cmd.text!r}")
    if re.search(r"python\d*(\.\d+)?\s+-c\s+'", refined):
        problems.append("python -c payload in single quotes; use double quotes")
    return problems
