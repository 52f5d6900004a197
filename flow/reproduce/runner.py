"""The thin subprocess adapter of the reproduce workflow: run a command, keep its log,
and read a reproducer run into a ``RunOutcome`` through the pure ``interpret`` rules.

Every command is an argument list, or the ``refined_command`` string run as
``bash -c "$refined_command"`` exactly as the seed's callers will run it. Outputs go to
log files in the flow folder, never into the flow state (the state stays small and
deterministic).
"""
from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from flow.reproduce.forms import Reproducer
from flow.reproduce.interpret import (
    RunOutcome, collect_only, interpret_command, interpret_pytest, setup_blocker,
)
from flow.reproduce.refined_command import render

DEFAULT_TIMEOUT = 1800.0


def environment(settings: Mapping[str, str], path_head: str | None) -> dict[str, str]:
    """The environment a run sees: the settings, with ``path_head`` leading PATH (the
    stage's interpreter bin, so a bare ``pytest`` means that environment's pytest)."""
    env = dict(settings)
    if path_head:
        env["PATH"] = os.pathsep.join(filter(None, [path_head, env.get("PATH", "")]))
    return env


def run(argv: list[str], *, cwd: str | Path | None, env: Mapping[str, str], log: Path,
        timeout: float = DEFAULT_TIMEOUT, stdin: str | None = None) -> tuple[int, str]:
    """Run ``argv``; write ``$ argv`` plus stdout+stderr to ``log``; return (code, output).
    A missing program or a timeout is exit 127 / 124 with the reason as output (never raises)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    try:
        proc = subprocess.run(argv, cwd=cwd, env=env, input=None if stdin is None else stdin.encode(),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              stdin=None if stdin is not None else subprocess.DEVNULL,
                              timeout=timeout)
        code, output = proc.returncode, proc.stdout.decode("utf-8", errors="replace")
    except FileNotFoundError as exc:
        code, output = 127, f"{argv[0]}: command not found ({exc})"
    except subprocess.TimeoutExpired as exc:
        code, output = 124, f"timed out after {timeout:.0f}s: {exc}"
    log.write_text(f"$ {shlex.join(argv)}\n(cwd {cwd})\n{output}")
    return code, output


CLEAN_PATH = "/usr/bin:/bin"


def clean_env(settings: Mapping[str, str]) -> dict[str, str]:
    """The environment the deciding run sees, as a fresh shell would give it: PATH
    ``/usr/bin:/bin`` and HOME, nothing else (no token, no venv on PATH). What the
    reproducer needs beyond that is in ``refined_command`` itself (the interpreter by
    absolute path, env prefixes, ``cd``), so the run that decides is the self-check."""
    return {"PATH": CLEAN_PATH, "HOME": settings.get("HOME") or os.path.expanduser("~") or "/"}


class Exercise(BaseModel):
    """One run of the reproducer: the refined command it ran and what the run means."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    refined: str
    outcome: RunOutcome
    exit_code: int
    tail: str = ""


def node_target(pytest_args: list[str] | None, cwd: str) -> tuple[Path, str] | None:
    """(test file, node id) of the single ``file.py::...`` target, resolved from ``cwd``."""
    targets = [a for a in pytest_args or [] if "::" in a and a.split("::")[0].endswith(".py")]
    if len(targets) != 1:
        return None
    path = Path(cwd) / targets[0].split("::")[0]
    return (path, targets[0]) if path.is_file() else None


def decorators_of(pytest_args: list[str] | None, cwd: str) -> list[str]:
    """Decorator names on the target test ([] when there is no single readable target)."""
    found = node_target(pytest_args, cwd)
    if found is None:
        return []
    from flow.reproduce.errors import SkipMarkerNotFound
    from flow.reproduce.skipmarker import decorator_names

    try:
        return decorator_names(found[0].read_bytes(), found[1])
    except (SkipMarkerNotFound, OSError):  # unreadable or no test named: no decorator evidence
        return []


def collect(rep: Reproducer, *, python: str, cwd: str, pytest_args: list[str],
            env: Mapping[str, str], log: Path) -> RunOutcome:
    """``pytest --collect-only`` of the reproducer's targets, from ``cwd``."""
    code, output = run([python, "-m", "pytest", "--collect-only", "-q", *pytest_args],
                       cwd=cwd, env={**env, **rep.env}, log=log)
    return collect_only(code, output)


def run_setup(rep: Reproducer, *, cwd: str, env: Mapping[str, str], logs: Path) -> str | None:
    """Run a shell block's setup steps in order, in one bash so cd/export carry over.
    Returns the blocker of the first failing step, or None."""
    script = []
    for i, step in enumerate(rep.setup):
        script.append(f"{step.text}\nrc=$?; if [ $rc -ne 0 ]; then echo __SETUP_FAILED__ {i} $rc; exit $rc; fi")
    if not script:
        return None
    code, output = run(["bash", "-c", "\n".join(script)], cwd=cwd, env=env, log=logs / "setup.log")
    if code == 0:
        return None
    marker = [line.split() for line in output.splitlines() if line.startswith("__SETUP_FAILED__")]
    index = int(marker[-1][1]) if marker else len(rep.setup) - 1
    return setup_blocker(rep.setup[index].text, code)


def pytest_flags(rep: Reproducer, bypass: str | None) -> list[str]:
    """Flags the workflow adds to a pytest reproducer: ``--runxfail`` (an xfail-marked
    test then fails, so the refined command exits non-zero by itself), or the skip
    ``bypass`` (``-p no:skipping``, which drops the xfail marks too and cannot be combined
    with ``--runxfail``, a flag of that plugin)."""
    if bypass:
        return bypass.split()
    if any("no:skipping" in a for a in rep.pytest_args):
        return []
    return ["--runxfail"]


def exercise(rep: Reproducer, *, cwd: str, pytest_args: list[str] | None,
             settings: Mapping[str, str], log: Path, failure_pattern: str | None,
             markers: tuple[str, ...], python: str | None = None, bin_dir: str | None = None,
             extra_env: dict[str, str] | None = None, timeout: int | None = None,
             exitfirst: bool = False, bypass: str | None = None,
             activate: str | None = None) -> Exercise:
    """Render the refined command and run it exactly as a caller will: ``bash -c`` in a
    clean environment (``clean_env``); interpret it per form.

    Pytest runs get ``-rs --junitxml`` appended for the interpretation only (they change
    no outcome); the refined command returned is the contract's string."""
    refined = render(rep, cwd=cwd, env=extra_env, sv=rep.step_is_pytest, timeout=timeout,
                     exitfirst=exitfirst, pytest_args=pytest_args, python=python,
                     pytest_flags=pytest_flags(rep, bypass) if rep.step_is_pytest else None,
                     bin_dir=bin_dir, activate=activate)
    env = clean_env(settings)
    if rep.step_is_pytest:
        junit = log.with_suffix(".xml")
        junit.unlink(missing_ok=True)
        command = f"{refined} -rs --junitxml={shlex.quote(str(junit))}"
        code, output = run(["bash", "-c", command], cwd="/", env=env, log=log, stdin=rep.stdin)
        xml = junit.read_text(errors="replace") if junit.is_file() and junit.stat().st_size else None
        decorators = lambda: decorators_of(pytest_args, cwd)  # noqa: E731 (read only when all skipped)
        try:
            outcome = interpret_pytest(code, output, xml, decorators, markers, failure_pattern)
        except ValueError:  # a half-written JUnit file: fall back to the text summary
            outcome = interpret_pytest(code, output, None, decorators, markers, failure_pattern)
    else:
        code, output = run(["bash", "-c", refined], cwd="/", env=env, log=log, stdin=rep.stdin)
        outcome = interpret_command(code, output, failure_pattern)
    tail = "\n".join(output.strip().splitlines()[-20:])
    return Exercise(refined=refined, outcome=outcome, exit_code=code, tail=tail)
