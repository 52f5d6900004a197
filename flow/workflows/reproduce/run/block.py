"""What a shell block's setup steps leave for its reproduce step, as bash would carry it
(seed: Stage 1 "Reproducer forms", the shell-block form; Output, ``refined_command``).

Bash runs a block top to bottom in one shell: ``. venv/bin/activate`` (or ``source``),
``export X=...`` and ``cd`` change what the last command sees. The setup script
(``runner.run_setup``) ends by writing that state to a file: the folder it ended in,
what the step's interpreter resolves to on the block's PATH (``command -v``), and the
exported environment (``env -0``). ``read_state`` turns it into a ``BlockState``: the
folder, the interpreter, and only the variables the block set or changed (never
secrets, never the shell's own bookkeeping); the file is rewritten with just that, so a
step re-run on ``--resume`` reads the same state and no other variable stays on disk.

The reproduce step then runs with those effects and nothing else: ``cd <folder>``, the
variables as inline prefixes (PATH as what the block put before the PATH it was given,
``PATH=<venv>/bin:"$PATH"``), the resolved interpreter by absolute path.
"""
from __future__ import annotations

import os
import posixpath
import re
import shlex
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from flow.workflows.reproduce.reproducer.forms import Reproducer

# What a shell sets for itself (or an activate script keeps to undo itself): not effects
# the reproduce step needs.
SHELL_OWN = frozenset({
    "PWD", "OLDPWD", "SHLVL", "_", "PS1", "PS2", "_OLD_VIRTUAL_PATH", "_OLD_VIRTUAL_PS1",
    "_OLD_VIRTUAL_PYTHONHOME", "VIRTUAL_ENV_PROMPT", "_OLD_CONDA_PS1", "BASH_ENV", "ENV",
})
_BARE_PYTHON = ("python3", "python")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def interpreter_names(rep: Reproducer) -> list[str]:
    """The names whose resolution gives the step's interpreter: its own bare ``python``
    word, else the environment's ``python3`` / ``python`` (a ``pytest`` step runs
    ``<python> -m pytest``)."""
    first = rep.step.argv[0] if rep.step.argv else ""
    return [first] if re.fullmatch(r"python(\d+(\.\d+)?)?", first) else list(_BARE_PYTHON)


def capture_script(state_file: Path, names: list[str]) -> str:
    """Bash lines that write the block's state to ``state_file`` (NUL-separated: ``cwd``,
    the folder; ``program``, the first of ``names`` on PATH; ``env``, then every exported
    ``NAME=value``)."""
    which = " || ".join(f"command -v -- {shlex.quote(n)}" for n in names)
    return (f"{{ printf 'cwd\\0%s\\0program\\0' \"$PWD\"; "
            f"printf '%s' \"$({which} 2>/dev/null)\"; printf '\\0env\\0'; "
            "command env -0 2>/dev/null || /usr/bin/env -0; } > "
            f"{shlex.quote(str(state_file))}")


class BlockState(BaseModel):
    """A block's setup as its reproduce step sees it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    cwd: str
    program: str | None = None          # the interpreter the block's PATH resolves
    env: dict[str, str] = {}            # variables the block set or changed (not PATH)
    path: str | None = None             # PATH when the block changed it
    path_added: str | None = None       # what it put before the PATH it was given


def _parse(data: bytes) -> tuple[str, str, dict[str, str]]:
    parts = data.decode("utf-8", "surrogateescape").split("\0")
    if len(parts) < 5 or parts[0] != "cwd" or parts[2] != "program" or parts[4] != "env":
        raise ValueError("not a block state file")
    env = {}
    for item in parts[5:]:
        name, sep, value = item.partition("=")
        if sep and name:
            env[name] = value
    return parts[1], parts[3], env


def effects(before: Mapping[str, str], after: Mapping[str, str]) -> dict[str, str]:
    """The variables ``after`` adds or changes over ``before``: no secret, none of the
    shell's own (``SHELL_OWN``), none of the orchestrator's (``ORCHESTRATOR_*``, the run's
    mark)."""
    from flow.core.redact import is_secret

    return {k: v for k, v in after.items() if before.get(k) != v and k not in SHELL_OWN
            and _NAME.fullmatch(k) and not k.startswith("ORCHESTRATOR_") and not is_secret(k)}


def read_state(state_file: Path, before: Mapping[str, str]) -> BlockState | None:
    """The ``BlockState`` in ``state_file`` relative to the environment the setup began with
    (``before``, as the child saw it: secrets already dropped); None when the file is
    missing or unreadable. The file is rewritten with the effects only."""
    try:
        cwd, program, env = _parse(state_file.read_bytes())
    except (OSError, ValueError):
        return None
    changed = effects(before, env)
    state_file.write_bytes(b"\0".join(
        s.encode("utf-8", "surrogateescape")
        for s in ["cwd", cwd, "program", program, "env", *(f"{k}={v}" for k, v in changed.items())]
    ) + b"\0")
    if program and not posixpath.isabs(program):
        program = posixpath.normpath(posixpath.join(cwd, program)) if "/" in program else ""
    path = changed.pop("PATH", None)
    added = None
    start = before.get("PATH", "")
    if path is not None and start and path.endswith(start) and len(path) > len(start):
        added = path[: -len(start)].rstrip(os.pathsep) or None
    return BlockState(cwd=cwd, program=program or None, env=changed, path=path,
                      path_added=added)


def prefix_env(state: BlockState, rep: Reproducer) -> tuple[dict[str, str], str | None]:
    """(variables to prefix, the rendered PATH word or None) for the reproduce step: the
    block's variables the reproducer does not spell itself (an ``export`` line is kept as
    written), and PATH as ``PATH=<added>:"$PATH"`` (or its whole value when the block
    replaced it) unless the reproducer sets PATH itself."""
    env = {k: v for k, v in state.env.items() if k not in rep.env}
    if state.path is None or "PATH" in rep.env:
        return env, None
    if state.path_added:
        return env, f'PATH={shlex.quote(state.path_added)}:"$PATH"'
    return env, f"PATH={shlex.quote(state.path)}"


def uses_folder(state: BlockState, scratch: str) -> bool:
    """The step needs the folder it ended in: one with something in it (a tree it ``cd``'d
    to, or what the setup wrote). An empty one, the scratch folder the setup started in or
    one it made to run away from the tree (``cd "$(mktemp -d)"``), is as good as any fresh
    empty folder, and a command naming it would fail once it is cleaned away."""
    try:
        return any(Path(state.cwd).iterdir())
    except OSError:  # gone already: only the scratch folder may be taken for a fresh one
        return posixpath.normpath(state.cwd) != posixpath.normpath(scratch)
