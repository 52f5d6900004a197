"""Every workflow registers here the scenario the contract suite drives it through."""

from __future__ import annotations

from typing import Any

from tests.contract import toyflow
from tests.contract.driver import Scenario

TOY = Scenario(name="toy", start=["start", "toy", "alpha"], answer=toyflow.answer,
               env={"ORCHESTRATOR_PLUGINS": "tests.contract.toyflow"}, kill_points=None)

from tests.targeted.rerunbot import contract_scenario  # noqa: E402

TARGETED = contract_scenario()

def _reproduce_answer(task: dict[str, Any]) -> dict[str, Any]:
    # The scripted harness reports each source build as failed: origin/main, then ci_commit.
    # The log path is given relative to the flow folder so the feed's digest is the same in
    # every workspace (the kill test compares states across workspaces).
    return {"exit_code": 1, "log_path": f"logs/{task['task_id']}.log"}


REPRODUCE = Scenario(name="reproduce", answer=_reproduce_answer, start=[
    "reproduce", "--profile", "local", "--source-dir", "examples/calc", "--ci-commit", "a" * 40,
    "--command", "pytest tests/test_calc.py::test_add"])


SCENARIOS: list[Scenario] = [TOY, REPRODUCE, TARGETED]


def _ci() -> Scenario:
    from tests.ci import contract_fake

    return Scenario(name="ci", start=["--ci-check", "--repo", contract_fake.REPO, "--pr-number", "1"],
                    answer=contract_fake.answer, env=contract_fake.env())


SCENARIOS.append(_ci())

from tests.refactor.contract import contract_scenario as _refactor  # noqa: E402

SCENARIOS.append(_refactor())
