"""How the reproduce workflow runs things, through ``flow.core.proc`` (never ``subprocess``).

- ``run``: a short query in the foreground (git, a versions probe): ``proc.run`` with the
  call's foreground budget, returning (exit code, output). A query whose answer is kept
  (the tree's git state, the environment probe) goes through ``ctx.query`` instead: one the
  budget cut short is asked again (as a job the flow owns), never recorded as timed out.
- ``Launch``: the long runs (reproducer runs, setup steps, pip installs) go through a
  launcher the step gives, ``ctx.job`` in the workflow: a background job the flow owns,
  memoized per phase visit and key, so a step that is re-run on ``--resume`` gets the
  recorded result (see ``stepsflow.launcher``).
- ``exercise``: render the refined command and run it exactly as a caller will: ``bash
  -c`` in a clean environment; a timed-out or lost run is BLOCKED (CANNOT_VERIFY), in
  every form, never read as a failure.

Outputs go to log files in the flow folder (capped by proc), never into the state.
"""
from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from flow.core import proc
from flow.workflows.reproduce.reproducer.forms import Reproducer
from flow.workflows.reproduce.run.interpret import (
    Outcome, RunOutcome, collect_only, interpret_command, interpret_pytest, setup_blocker,
)
from flow.workflows.reproduce.run.deciding import (
    DEFAULT_TIMEOUT_S, decider_env, pytest_flags, with_report,
)
from flow.workflows.reproduce.verdict.refined_command import FRESH_DIR, render

if TYPE_CHECKING:
    from flow.workflows.reproduce.run.block import BlockState


# launch(key, argv, log, env, timeout, cwd) -> proc.Result: a long run (ctx.job in a step)
Launch = Callable[[str, list[str], Path, Mapping[str, str], float, "str | None"], proc.Result]


def environment(settings: Mapping[str, str], path_head: str | None) -> dict[str, str]:
    """The environment setup steps and installs see: the settings (proc scrubs secrets),
    with ``path_head`` leading PATH (the stage's interpreter bin, so a bare ``pip`` in a
    setup step installs into that environment)."""
    env = dict(settings)
    if path_head:
        env["PATH"] = os.pathsep.join(filter(None, [path_head, env.get("PATH", "")]))
    return env


def run(argv: list[str], *, cwd: str | Path | None, env: Mapping[str, str], log: Path,
        timeout: float | None = None, stdin: str | None = None) -> tuple[int, str]:
    """``proc.run`` for a short foreground query; (exit code, output). Never raises for the
    child's sake (127 not found, 124 timed out with the reason in the output)."""
    result = proc.run(argv, log=log, cwd=cwd, env=env, timeout=timeout, stdin=stdin)
    return result.code, result.output


def foreground(key: str, argv: list[str], log: Path, env: Mapping[str, str],
               timeout: float, cwd: str | None = None) -> proc.Result:
    """A ``Launch`` in the foreground (``proc.run``): for callers without a flow."""
    return proc.run(argv, log=log, cwd=cwd, env=env, timeout=timeout)


class Exercise(BaseModel):
    """One run of the reproducer: the refined command it ran and what the run means."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    refined: str
    outcome: RunOutcome
    exit_code: int
    tail: str = ""
    # {top-level module: [files]} the run's Python processes imported (``run.imports``);
    # None when none wrote a record
    imports: dict[str, list[str]] | None = None


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
    from flow.workflows.reproduce.errors import SkipMarkerNotFound
    from flow.workflows.reproduce.unskip.marker import decorator_names

    try:
        return decorator_names(found[0].read_bytes(), found[1])
    except (SkipMarkerNotFound, OSError):  # unreadable or no test named: no decorator evidence
        return []


def collect(rep: Reproducer, *, python: str, cwd: str, pytest_args: list[str],
            env: Mapping[str, str], log: Path, launch: Launch, timeout: float) -> RunOutcome:
    """``<python> -m pytest --collect-only`` of the reproducer's targets, from ``cwd``."""
    argv = proc.tool(python, "pytest", "--collect-only", "-q", *pytest_args)
    result = launch("collect", argv, log, {**env, **rep.env}, timeout, cwd)
    if result.timed_out or result.lost:
        return RunOutcome(kind=Outcome.BLOCKED, detail=f"collection {_ended(result, timeout)}")
    return collect_only(result.code, result.output)


def run_setup(rep: Reproducer, *, cwd: str, env: Mapping[str, str], log: Path,
              launch: Launch, timeout: float, state_file: Path | None = None) -> str | None:
    """Run a shell block's setup steps in order, in one ``bash -c`` (``proc.shell``) so
    cd/export/activate carry over, from ``cwd``; with ``state_file``, the script ends by
    writing what the block leaves for its reproduce step there (``block.capture_script``;
    read it with ``setup_state``). Returns the blocker of the first failing step (or of
    the timeout), or None."""
    from flow.workflows.reproduce.run.block import capture_script, interpreter_names

    script = [f"cd {shlex.quote(cwd)} || exit 1"]
    for i, step in enumerate(rep.setup):
        script.append(f"{step.text}\nrc=$?; if [ $rc -ne 0 ]; then echo __SETUP_FAILED__ {i} $rc; exit $rc; fi")
    if len(script) == 1:
        return None
    if state_file is not None:
        script.append(capture_script(state_file, interpreter_names(rep)))
    # the script is a file the shell sources (a block of thousands of steps is longer
    # than one argument may be)
    source = log.with_suffix(".sh")
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text("\n".join(script) + "\n", encoding="utf-8", errors="surrogateescape")
    result = launch("setup", proc.shell(f". {shlex.quote(str(source))}"), log, env, timeout, None)
    if result.timed_out or result.lost:
        return f"setup steps {_ended(result, timeout)}: {result.tail(5)}"
    if result.code == 0:
        return None
    marker = [line.split() for line in result.output.splitlines()
              if line.startswith("__SETUP_FAILED__")]
    index = int(marker[-1][1]) if marker else len(rep.setup) - 1
    return setup_blocker(rep.setup[index].text, result.code)


def setup_state(state_file: Path, env: Mapping[str, str]) -> "BlockState | None":
    """What the setup run with ``env`` left in ``state_file`` (``block.read_state``; the
    environment compared is the one the child saw: secrets dropped)."""
    from flow.workflows.reproduce.run.block import read_state

    return read_state(state_file, proc.child_env(env))


def _ended(result: proc.Result, timeout: float) -> str:
    return (f"timed out after {timeout:.0f} s" if result.timed_out
            else "lost (the background job vanished twice without a result)")


def exercise(rep: Reproducer, *, cwd: str, pytest_args: list[str] | None,
             settings: Mapping[str, str], log: Path, failure_pattern: str | None,
             markers: tuple[str, ...], launch: Launch, timeout: float = DEFAULT_TIMEOUT_S,
             key: str = "run", python: str | None = None, bin_dir: str | None = None,
             extra_env: dict[str, str] | None = None, pytest_timeout: int | None = None,
             exitfirst: bool = False, bypass: str | None = None,
             activate: str | None = None, fresh_cwd: bool = False,
             block: "BlockState | None" = None) -> Exercise:
    """Render the refined command and run it exactly as a caller will: ``bash -c`` in a
    clean environment (``clean_env``), through ``launch`` with ``timeout``; interpret it
    per form. A timed-out or lost run is BLOCKED with ``timed out after N s`` and the
    log's tail, whatever the form (never FAILED).

    Pytest runs get ``-rs --junitxml`` appended for the interpretation only (they change
    no outcome); the refined command returned is the contract's string. ``pytest_timeout``
    is the ``--timeout`` a CI job log asked for (a pytest-timeout flag in the command).
    ``fresh_cwd``: ``cwd`` is an empty scratch dir; the command cds to a fresh ``mktemp -d``
    instead (the seed's "cd $(mktemp -d)"), so it does not depend on the workspace.
    ``block``: what a shell block's setup left (its variables and PATH go before the
    step, ``python`` is then the interpreter the block's PATH resolved)."""
    block_env, path_word = None, None
    if block is not None:
        from flow.workflows.reproduce.run.block import prefix_env

        block_env, path_word = prefix_env(block, rep)
    from flow.workflows.reproduce.run.imports import HOOK_DIR, read_record

    def rendered(pythonpath_head: str | None = None) -> str:
        return render(rep, cwd=FRESH_DIR if fresh_cwd else cwd, env=extra_env,
                      sv=rep.step_is_pytest, timeout=pytest_timeout,
                      exitfirst=exitfirst, pytest_args=pytest_args, python=python,
                      pytest_flags=(pytest_flags(rep.pytest_args, bypass) if rep.step_is_pytest
                                    else None),
                      bin_dir=bin_dir, activate=activate, block_env=block_env,
                      path_word=path_word, pythonpath_head=pythonpath_head)

    refined = rendered()
    env = decider_env(settings, log)
    # the run itself: refined_command, with the import record's folder kept in front of a
    # PYTHONPATH the command sets (the hook takes it off again before the run's code)
    ran = rendered(str(HOOK_DIR))
    junit = log.with_suffix(".xml")
    result = launch(key, proc.shell(with_report(ran, log, rep.step_is_pytest)), log, env,
                    timeout, "/")
    imports = None
    try:
        imports = read_record(log, since=log.stat().st_mtime - result.duration_s - 2)
    except OSError:
        pass
    output, code = result.output, result.code
    tail = result.tail(20)
    if result.timed_out or result.lost:
        outcome = RunOutcome(kind=Outcome.BLOCKED, detail=f"{_ended(result, timeout)}: {result.tail(8)}")
    elif rep.step_is_pytest:
        xml = _junit_of(junit, log, result)
        decorators = lambda: decorators_of(pytest_args, cwd)  # noqa: E731 (read only when all skipped)
        try:
            outcome = interpret_pytest(code, output, xml, decorators, markers, failure_pattern)
        except ValueError:  # a half-written JUnit file: fall back to the text summary
            outcome = interpret_pytest(code, output, None, decorators, markers, failure_pattern)
    else:
        outcome = interpret_command(code, output, failure_pattern)
    return Exercise(refined=refined, outcome=outcome, exit_code=code, tail=tail,
                    imports=imports)


def _junit_of(junit: Path, log: Path, result: proc.Result) -> str | None:
    """The run's JUnit XML, when it was written by this run (not left by an earlier visit:
    the file is not deleted first, because a step re-run on --resume gets the recorded
    job result and must still find the file)."""
    try:
        if not junit.stat().st_size:
            return None
        if junit.stat().st_mtime < log.stat().st_mtime - result.duration_s - 2:
            return None
        return junit.read_text(errors="replace")
    except OSError:
        return None
