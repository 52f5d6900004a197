"""The deciding run as it is launched (seed: Stage 1 "Run test", "Working directory"): the
interpreter it names, the environment it sees (a fresh shell's), the pytest flags the
workflow adds, the JUnit report it writes for the interpretation, its timeout and the label
of its log.

Standard library only: the steps use these (``context``, ``run.runner``,
``verdict.refined_command``) and so does ``headstart``, which starts the same run before
the workflow's models are imported; one definition keeps the two runs the same run.
"""
from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path

PYTHON_ENV = "ORCHESTRATOR_REPRODUCE_PYTHON"
CLEAN_PATH = "/usr/bin:/bin"
DEFAULT_TIMEOUT_S = 1800.0  # a profile's ``timeout_s`` when it sets none


def reproduce_python(settings: Mapping[str, str]) -> str:
    """The interpreter of Stage 1: ``ORCHESTRATOR_REPRODUCE_PYTHON`` made absolute
    (symlinks kept: a venv's ``bin/python`` is not resolved out of its venv), else
    ``sys.executable``."""
    value = settings.get(PYTHON_ENV)
    return os.path.abspath(os.path.expanduser(value)) if value else sys.executable


def clean_env(settings: Mapping[str, str]) -> dict[str, str]:
    """The environment the deciding run sees, as a fresh shell would give it: PATH
    ``/usr/bin:/bin`` and HOME, nothing else (no token, no venv on PATH). What the
    reproducer needs beyond that is in ``refined_command`` itself (the interpreter by
    absolute path, env prefixes, ``cd``), so the run that decides is the self-check."""
    return {"PATH": CLEAN_PATH, "HOME": settings.get("HOME") or os.path.expanduser("~") or "/"}


def decider_env(settings: Mapping[str, str], log: Path) -> dict[str, str]:
    """The environment the deciding run is launched with: ``clean_env`` and the import
    record (``run.imports``: a hook that steps aside before the run's code and notes at
    exit which files its modules came from; the run sees neither)."""
    from flow.workflows.reproduce.run.imports import recording_env

    return recording_env(clean_env(settings), log)


def pytest_flags(pytest_args: list[str], bypass: str | None) -> list[str]:
    """Flags the workflow adds to a pytest reproducer (its arguments as written):
    ``--runxfail`` (an xfail-marked test then fails, so the refined command exits non-zero
    by itself), or the skip ``bypass`` (``-p no:skipping``, which drops the xfail marks too
    and cannot be combined with ``--runxfail``, a flag of that plugin)."""
    if bypass:
        return bypass.split()
    if any("no:skipping" in a for a in pytest_args):
        return []
    return ["--runxfail"]


def added_pytest_flags(args: list[str], *, sv: bool = False, timeout: int | None = None,
                       exitfirst: bool = False, flags: list[str] | None = None) -> list[str]:
    """What ``refined_command`` puts between ``-m pytest`` and the arguments ``args``: the
    flags the contract allows (``-sv``, ``--timeout N``, ``-x``) and ``flags``, each only
    when the command does not already carry it."""
    added: list[str] = []
    if sv and not {"-sv", "-vs"} & set(args):
        added.append("-sv")
    if timeout is not None and not any(a.startswith("--timeout") for a in args):
        added += ["--timeout", str(timeout)]
    if exitfirst and "-x" not in args:
        added.append("-x")
    for flag in flags or []:
        if not (flag.startswith("--") and (flag in args or flag in added)):
            added.append(flag)
    return added


def with_report(refined: str, log: Path, is_pytest: bool) -> str:
    """The command the deciding run executes: ``refined`` and, for pytest, ``-rs`` and a
    JUnit report beside its log (for the interpretation only: they change no outcome)."""
    if not is_pytest:
        return refined
    return f"{refined} -rs --junitxml={shlex.quote(str(log.with_suffix('.xml')))}"


def attempt_label(label: str, repeat: int, index: int) -> str:
    """The log label of attempt ``index`` (from 0) of ``repeat`` runs of one stage."""
    return label if repeat == 1 else f"{label}-attempt{index + 1}"
