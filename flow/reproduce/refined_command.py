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

from flow.reproduce.forms import Reproducer, PythonKind, is_setup
from flow.reproduce.shellsplit import split_commands

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def double_quote(text: str) -> str:
    """Quote ``text`` for bash inside double quotes (escape \\ " $ and backticks)."""
    return '"' + re.sub(r'([\\"$`])', r"\\\1", text) + '"'


def _words(argv: list[str]) -> str:
    return " ".join(shlex.quote(w) for w in argv)


def _pytest_program(rep: Reproducer) -> list[str]:
    """How the step starts pytest: ``pytest`` or ``<python> -m pytest`` as written."""
    first = rep.step.argv[0]
    if first.endswith(("pytest", "py.test")) or len(rep.step.argv) == 1:
        return ["pytest"]
    return [first, "-m", "pytest"]


def render(rep: Reproducer, *, cwd: str | None = None, env: dict[str, str] | None = None,
           sv: bool = False, timeout: int | None = None, exitfirst: bool = False,
           pytest_args: list[str] | None = None) -> str:
    """The refined command for ``rep``.

    ``cwd`` (decided by the caller's cwd rules) becomes ``cd DIR &&``; ``env`` is merged
    over the reproducer's own env (exports and inline prefix); ``sv``/``timeout``/
    ``exitfirst`` add the pytest flags the contract allows when not already written;
    ``pytest_args`` replaces the written pytest arguments (e.g. a target rewritten
    relative to the chosen cwd). Setup steps are never included. Raises ValueError on
    an env name that is not a shell name.
    """
    merged = {**rep.env, **(env or {})}
    for name in merged:
        if not _ENV_NAME.fullmatch(name):
            raise ValueError(f"env var name {name!r} is not a shell name; drop or rename it")
    if rep.step_is_pytest:
        args = list(pytest_args if pytest_args is not None else rep.pytest_args)
        added: list[str] = []
        if sv and not {"-sv", "-vs"} & set(args):
            added.append("-sv")
        if timeout is not None and not any(a.startswith("--timeout") for a in args):
            added += ["--timeout", str(timeout)]
        if exitfirst and "-x" not in args:
            added.append("-x")
        body = _words([*_pytest_program(rep), *added, *args])
    elif rep.python_kind is PythonKind.CODE:
        body = f"{shlex.quote(rep.step.argv[0])} -c {double_quote(rep.python_code or '')}"
    else:
        body = _words(rep.step.argv)
    prefix = " ".join(f"{name}={shlex.quote(value)}" for name, value in merged.items())
    command = f"{prefix} {body}" if prefix else body
    return f"cd {shlex.quote(cwd)} && {command}" if cwd else command


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
