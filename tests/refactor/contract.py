"""The refactor workflow's contract scenario: a graph-field file (safe baseline, no local gate).

The file is never edited by the scripted answers, so every replay of the kill test starts
from the same checkout; the analyst answer writes its report into the flow folder.
"""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from tests.contract.driver import Scenario

SOURCE = '''"""A graph-field test file for the contract suite."""
import unittest
import os


class TestMisc(unittest.TestCase):
    def test_one(self):
        self.assertEqual(1 + 1, 2)

    def test_two(self):
        self.assertTrue(bool("x"))
'''

REPORT = {"file": "test/dynamo/test_misc.py",
          "classifications": [
              {"test": f"TestMisc.{t}", "strategy": "cpu_only", "target_class": "TestMisc", "reason": "pure logic"}
              for t in ("test_one", "test_two")],
          "stale_imports": [{"name": "os", "line": 3, "reason": "unused"}],
          "summary": "two CPU-only tests, one stale import"}


def answer(task: dict[str, Any]) -> dict[str, Any]:
    name = task["agent_name"]
    ident = {"agent_id": f"/root/{name}", "agent_name": name}
    if name == "analyst":
        Path(task["report_path"]).write_text(json.dumps(REPORT))
        return ident
    if name == "checker":
        if task["task_id"].startswith("review-"):
            return {**ident, "all_clear": True, "findings": [], "summary": "clean"}
        return {**ident, "passed": True}
    return {**ident, "success": True, "tests_moved": [], "errors": [], "warnings": []}


def contract_scenario() -> Scenario:
    # Made when the scenarios are listed (at import, once a process) and used by every test
    # that drives the scenario there: removed when that process ends.
    repo = Path(tempfile.mkdtemp(prefix="refactor-contract-"))
    atexit.register(shutil.rmtree, repo, True)
    (repo / "test" / "dynamo").mkdir(parents=True)
    target = repo / "test" / "dynamo" / "test_misc.py"
    target.write_text(SOURCE)
    # The flow edits the checkout's file (hw_classification labels where torch knows them):
    # every run from nothing starts from the same original.
    return Scenario(name="refactor", answer=answer, fresh=lambda: target.write_text(SOURCE),
                    start=["test/dynamo/test_misc.py", "--pytorch-dir", str(repo)],
                    # each replay collects the labelled file, which imports torch (seconds): 4
                    # kills each for `before` and `after`, 8 distinct writes between them
                    kill_points=4)
