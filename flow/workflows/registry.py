"""Which workflows exist, imported only when a call needs one.

A workflow module exposes ``WORKFLOW`` (a ``flow.core.workflow.Workflow``) and two functions:
``locate(opts, root) -> flow_id`` (which flow these command-line options mean) and
``start(opts, root, settings) -> BaseModel`` (the initial data of a new flow). Both get the
same ``opts`` dict: ``locate`` may record there what it had to look up (a PR number found
from the branch) so that ``start`` does not look it up again. A module that sets
``LOCATES_IN_STORE = True`` gets the PostgreSQL store's URL too, ``locate(opts, root, url)``
(None on the file store), when which flow is meant depends on the flows saved there. Extra modules
can be named in ``ORCHESTRATOR_PLUGINS`` (comma-separated module paths).
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

from flow.core.errors import NotBuilt, SettingError, UsageError

BUILTIN: dict[str, str] = {
    "reproduce": "flow.workflows.reproduce.declaration",
    "refactor": "flow.workflows.refactor.declaration",
    "ci": "flow.workflows.ci.declaration",
    "ci-targeted": "flow.workflows.targeted.declaration",
    "ingest": "flow.workflows.ingest.declaration",
    "review-queue": "flow.workflows.review_queue.declaration",
}
ENV_PLUGINS = "ORCHESTRATOR_PLUGINS"
# Workflows whose first long run the command line can start ahead of the workflow's own
# imports (``flow.cli.ahead``): a standard-library module with ``plan(opts, root, settings)``.
HEAD_STARTS: dict[str, str] = {"reproduce": "flow.workflows.reproduce.headstart"}


def _plugins() -> dict[str, str]:
    """workflow name -> module of each ``ORCHESTRATOR_PLUGINS`` module; ``SettingError``
    (``bad_setting``, exit 2) for one that cannot be imported or has no ``WORKFLOW``."""
    found: dict[str, str] = {}
    raw = os.environ.get(ENV_PLUGINS, "")
    for mod in filter(None, (m.strip() for m in raw.split(","))):
        if not all(part.isidentifier() and part.isascii() for part in mod.split(".")):
            raise SettingError(ENV_PLUGINS, raw, f"a comma-separated list of dotted module "
                               f"names such as mypkg.flows ({mod[:80]!r} is a path or no "
                               "module name: put its folder on PYTHONPATH and name the "
                               "module)")
        try:
            name = importlib.import_module(mod).WORKFLOW.name
        except ModuleNotFoundError as exc:
            if not exc.name or not mod.startswith(exc.name):
                raise  # the plugin itself imports something missing: its bug, shown as one
            raise SettingError(ENV_PLUGINS, raw, f"a list of importable modules (no module "
                               f"{exc.name!r})") from None
        except AttributeError:
            raise SettingError(ENV_PLUGINS, raw, f"a list of workflow modules ({mod!r} has no "
                               "WORKFLOW)") from None
        found[name] = mod
    return found


def names() -> list[str]:
    return sorted({**BUILTIN, **_plugins()})


def load(name: str) -> ModuleType:
    """The module of workflow ``name``; ``NotBuilt`` if this installation lacks it."""
    table = {**BUILTIN, **_plugins()}
    if name not in table:
        import difflib

        close = difflib.get_close_matches(name, list(table), n=1)
        guess = f"did you mean {close[0]}? " if close else ""
        raise UsageError(f"unknown workflow {name!r}" + (f"; {guess.strip()}" if close else ""),
                         f"{guess}known workflows: {', '.join(names())}",
                         **({"did_you_mean": close[0]} if close else {}))
    try:
        return importlib.import_module(table[name])
    except ModuleNotFoundError as exc:
        if exc.name and table[name].startswith(exc.name):
            raise NotBuilt(
                f"workflow {name!r} is not built in this version of skill-orchestrator",
                "see the README's list of workflows and their state; nothing was started",
            ) from None
        raise
