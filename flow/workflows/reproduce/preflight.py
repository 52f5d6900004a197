"""Preflight (seed: "Preflight"): NO_REPRODUCER(no_command) is decided before any
stage is touched. ``preflight`` is the pure decision, ``step`` the workflow's state.
"""
from __future__ import annotations

from typing import Any

from flow.core.outcome import Go
from flow.workflows.reproduce.verdict.models import NoReproducer


def preflight(command: str | None) -> NoReproducer | None:
    """NO_REPRODUCER(no_command) when there is no command to run: none at all, or a block
    bash would run nothing of but comments and setup (no step exercises anything); None
    to go on."""
    if command is None or not command.strip():
        return NoReproducer(reason="no_command")
    from flow.workflows.reproduce.reproducer.forms import parse_reproducer

    if parse_reproducer(command) is None:
        return NoReproducer(reason="no_command")
    return None


def step(ctx: Any) -> Any:
    """No command -> NO_REPRODUCER(no_command), before touching any stage."""
    verdict = preflight(ctx.data.command)
    if verdict is not None:
        ctx.data.verdict = verdict.model_dump(mode="json")
        return Go("decided")
    return Go("ok")
