"""Every workflow's declaration: reachable states, no dead ends, a step per state."""

from __future__ import annotations

import pytest

from flow.core.errors import NotBuilt
from flow.workflows import registry


def _workflows() -> list[object]:
    found = []
    for name in registry.names():
        try:
            found.append(registry.load(name).WORKFLOW)
        except NotBuilt:
            continue
    from tests.contract import toyflow

    return [*found, toyflow.WORKFLOW]


@pytest.mark.parametrize("wf", _workflows(), ids=lambda wf: wf.name)
def test_declaration_has_no_unreachable_states_or_dead_ends(wf: object) -> None:
    """The state machine as declared is well formed."""
    assert [] == wf.problems()


def test_problems_finds_unreachable_states_and_dead_ends() -> None:
    """The checker itself catches what it promises to catch."""
    from dataclasses import replace

    from tests.contract.toyflow import WORKFLOW

    broken = replace(WORKFLOW, states=(*WORKFLOW.states, "island"),
                     steps={**WORKFLOW.steps, "island": WORKFLOW.steps["prepare"]})
    assert ["state 'island' is unreachable from 'prepare'",
            "state 'island' is a dead end (not terminal, no way out)"] == broken.problems()
