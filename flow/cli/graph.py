"""``orchestrator.py graph WORKFLOW``: a workflow's state machine as a diagram."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flow.core.errors import UsageError
from flow.workflows import registry


def graph_command(words: list[str], root: Path, harness: str) -> dict[str, Any]:
    """``graph WORKFLOW``: the state machine as Mermaid text, drawn from the same declaration
    the engine runs, with its states and terminal states."""
    from flow.core.render import envelope

    if len(words) < 2:
        raise UsageError("graph needs a workflow name", f"one of: {', '.join(registry.names())}")
    wf = registry.load(words[1]).WORKFLOW
    return {**envelope(None, root, "done", harness), "workflow": wf.name,
            "mermaid": wf.mermaid(), "states": list(wf.states),
            "terminal": sorted(wf.terminal)}
