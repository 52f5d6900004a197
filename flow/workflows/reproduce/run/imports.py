"""Which code the deciding run imported (seed: Stage 1 "Working directory": the verdict is
about the code the run loaded, so "this verdict ran other code than the tree" is said from
what the run imported, not from the install record).

The deciding run starts with a folder of ours on ``PYTHONPATH`` holding a
``sitecustomize.py`` (``importhook/sitecustomize.py``). Python imports it at startup (``site``), and it steps
aside before any of the run's own code: it takes its folder off ``sys.path`` and off
``PYTHONPATH`` (leaving the value the command gave, if any), drops the record variable so
no child inherits it, then imports the interpreter's own ``sitecustomize`` if there is one,
as ``site`` would have. At exit it appends one JSON line to the record file: the file of
every top-level module the process imported (outside the standard library). Nothing of the
run's behaviour changes: the same modules, the same ``sys.path``, the same environment.
A command that sets ``PYTHONPATH`` itself gets the folder put in front of its own value
in the run (``verdict.refined_command.render``'s ``pythonpath_head``), never in
``refined_command``. An interpreter started with ``-E``/``-I``/``-S`` writes no record:
then the install record decides, as before.

Standard library only (``run.deciding`` and ``headstart`` spell the run with it).
"""
from __future__ import annotations

import json
from pathlib import Path

RECORD_ENV = "FLOW_IMPORT_RECORD"

HOOK_DIR = Path(__file__).resolve().with_name("importhook")


def recording_env(env: dict[str, str], log: Path) -> dict[str, str]:
    """``env`` with the import record switched on for the run logging to ``log``: the
    hook's folder (``HOOK_DIR``, shipped with the package) on ``PYTHONPATH``."""
    return {**env, "PYTHONPATH": str(HOOK_DIR), RECORD_ENV: str(record_file(log))}


def record_file(log: Path) -> Path:
    return log.with_suffix(".imports")


def read_record(log: Path, since: float | None = None) -> dict[str, list[str]] | None:
    """{top-level module: [files it was imported from]} over every Python process of the
    run logging to ``log``; None when there is no record (no Python process wrote one, or
    the file is older than ``since``, a timestamp: left by an earlier run)."""
    path = record_file(log)
    try:
        if since is not None and path.stat().st_mtime < since:
            return None
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    found: dict[str, list[str]] = {}
    for line in lines:
        try:
            modules = json.loads(line).get("modules") or {}
        except (ValueError, AttributeError):
            continue
        for name, where in modules.items():
            if isinstance(where, str) and where not in found.setdefault(str(name), []):
                found[str(name)].append(where)
    return found or None
