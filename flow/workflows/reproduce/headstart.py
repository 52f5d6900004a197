"""The first Stage 1 run, worked out from the command line alone, so that it can start before
the workflow is imported (seed: Stage 1 "Run test", "Working directory"; the ``local``
profile).

A reproduce of a sub-second test spent more time importing the engine and the workflow's
pydantic models than running the test. For the case most fix-verifiers bring, the run the
flow will ask for is known at once: the ``local`` profile (nothing to install), one plain
``pytest ...``, ``python -m pytest ...`` or ``python -m unittest ...`` command run in the
project tree. ``plan`` spells exactly that run, with the same functions the steps use
(``identity`` for the flow id, ``run.deciding`` for the interpreter, the flags, the clean
environment and the report), and the command line starts it under the flow's lock
(``flow.core.jobs.start_ahead``) while the rest is imported and the steps run. The step
adopts it only when it asks for exactly that run (``flow.core.jobs``): a plan that is wrong
costs the run it started, never the verdict.

``plan`` answers None, and nothing is started ahead, whenever the steps might decide
otherwise: another profile or stage, a batch, a ``--ci-commit``, a shell block, env
assignments, quoting or any character a shell treats specially, a bare node id (resolved
in the tree first), an interpreter that is not an executable file, or a tree whose
top-level package is also installed in the interpreter's site-packages (where the steps may
leave the tree, when that copy is compiled and the tree's package is not built in place).
Standard library only.
"""
from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from flow.workflows.reproduce import identity
from flow.workflows.reproduce.run.deciding import (
    DEFAULT_TIMEOUT_S, PYTHON_ENV, added_pytest_flags, attempt_label, decider_env,
    pytest_flags, reproduce_python, with_report,
)

# Words a shell reads as themselves: no quoting, expansion, globbing (``[`` ``]`` aside:
# a parametrized node id keeps them, and pytest gets them as written), operators or comments.
_PLAIN = re.compile(r"[A-Za-z0-9_./:=@%+,\-\[\]]+")
_PYTHON = re.compile(r"python(\d+(\.\d+)?)?")
_STAGE1 = "stage1"  # the phase, and the label of its first run's log


class Plan(NamedTuple):
    """The run to start ahead: the flow it belongs to and the job exactly as the step will
    ask for it (``flow.core.jobs.run_job``'s arguments)."""

    flow_id: str
    job_id: str
    argv: list[str]
    cwd: str
    env: dict[str, str]
    log_file: Path
    timeout: float
    outputs: tuple[Path, ...]
    phase: str = _STAGE1  # the phase visit whose step asks for the job
    visit: int = 1


def may_plan(opts: dict[str, Any]) -> bool:
    """The options alone leave room for a plan (no file or process is looked at)."""
    return not (opts.get("batch") or opts.get("ci_commit")
                or (opts.get("profile") or "local") != "local"
                or (opts.get("stage") or "auto") not in ("auto", "nightly")
                or not (opts.get("repro_command") or opts.get("command_file")))


def plan(opts: dict[str, Any], root: Path, settings: Mapping[str, str]) -> Plan | None:
    """The first Stage 1 run of the flow these options start, or None (see the module
    docstring). Raises ``WorkflowInputError`` for inputs the flow would refuse too."""
    if not may_plan(opts):
        return None
    given = identity.inputs(opts)
    tree, command = given["source_dir"], given["command"] or ""
    python = reproduce_python(settings)
    if not tree or not _runnable(python, settings):
        return None
    words = command.strip().split(" ")
    if not all(_PLAIN.fullmatch(w) for w in words):
        return None  # a newline, a tab, two spaces: not one plain command either
    body = _body(words, python)
    if body is None or _shadows(tree, python):
        return None
    flow_id = identity.locate(opts, root, given)
    from flow.core.jobs import job_id
    from workspace.paths import flow_dir

    label = attempt_label(_STAGE1, int(given["repeat"]), 0)
    folder = flow_dir(root, flow_id)
    log = (folder / f"logs/{label}.log").resolve()
    is_pytest = body[1]
    refined = f"cd {shlex.quote(tree)} && {body[0]}"
    return Plan(flow_id=flow_id, job_id=job_id(_STAGE1, 1, label),
                argv=["bash", "-c", with_report(refined, log, is_pytest)], cwd="/",
                env=decider_env(settings, log), log_file=log,
                timeout=float(given["timeout"] or DEFAULT_TIMEOUT_S),
                outputs=(log.with_suffix(".xml"),) if is_pytest else ())


def _runnable(python: str, settings: Mapping[str, str]) -> bool:
    """The interpreter the flow will record, as ``context.check_python`` accepts it."""
    if PYTHON_ENV in settings and not settings[PYTHON_ENV].strip():
        return False
    return os.path.isfile(python) and os.access(python, os.X_OK)


def _body(words: list[str], python: str) -> tuple[str, bool] | None:
    """The refined command after its ``cd``, and whether it runs pytest: as
    ``verdict.refined_command.render`` writes it for these forms (the interpreter by
    absolute path, the workflow's pytest flags); None for any other form."""
    if words[0] in ("pytest", "py.test"):
        args = words[1:]
    elif _PYTHON.fullmatch(words[0]) and words[1:3] == ["-m", "pytest"]:
        args = words[3:]
    elif _PYTHON.fullmatch(words[0]) and words[1:3] == ["-m", "unittest"] and words[3:]:
        return " ".join([shlex.quote(python), *words[1:]]), False
    else:
        return None
    if not args or any("::" in a and not a.split("::")[0].endswith(".py") for a in args):
        return None  # no target, or a bare node id the steps look up in the tree first
    added = added_pytest_flags(args, sv=True, flags=pytest_flags(args, None))
    return " ".join(shlex.quote(w) for w in [python, "-m", "pytest", *added, *args]), True


def _shadows(tree: str, python: str) -> bool:
    """A package or module at the tree's top level is also installed in the interpreter's
    site-packages (or no site-packages can be found to tell): the steps' probe decides
    whether the run leaves the tree (``prepare.steps.unbuilt_install``), so nothing is
    started ahead."""
    prefix = Path(python).parent.parent
    sites = [p for p in prefix.glob("lib/python*/site-packages") if p.is_dir()]
    if not sites:
        return True
    try:
        names = [e.name[:-3] if e.name.endswith(".py") else e.name for e in os.scandir(tree)
                 if e.name.endswith(".py") and e.is_file()
                 or e.is_dir() and os.path.isfile(os.path.join(e.path, "__init__.py"))]
    except OSError:
        return True
    return any((site / name).exists() or (site / f"{name}.py").exists()
               for site in sites for name in names)
