"""A launch path built by ``os.path.join`` of module constants, in a constant or inline.

Fixtures in our words, shaped like a miles tree (the miles profile): the one CUDA test that
starts a tool through such a path must be planned when the tool changes.
"""

from __future__ import annotations

import pytest

from .test_miles_idioms import cuda, run

TOOL = {"tools/convert_weights.py": "print('converting')\n"}
CONSTANTS = ('import os\nimport subprocess\nimport sys\n'
             'TOOLS_DIR = "tools"\nTOOL_NAME = "convert_weights.py"\n')


@pytest.mark.parametrize("body", [
    CONSTANTS + "TOOL = os.path.join(TOOLS_DIR, TOOL_NAME)\n"
                "def convert():\n    subprocess.run([sys.executable, TOOL], check=True)\n",
    CONSTANTS + "def convert():\n"
                "    subprocess.run([sys.executable, os.path.join(TOOLS_DIR, TOOL_NAME)])\n",
    CONSTANTS + "REPO = os.path.dirname(os.path.dirname(__file__))\n"
                "def convert():\n"
                "    subprocess.run([sys.executable, os.path.join(REPO, TOOLS_DIR, TOOL_NAME)])\n",
    CONSTANTS + "from pathlib import Path\nTOOL = Path(TOOLS_DIR, TOOL_NAME)\n"
                "def convert():\n    subprocess.run([sys.executable, str(TOOL)])\n",
], ids=["constant", "inline", "inline-under-a-computed-root", "Path-of-constants"])
def test_a_tool_started_through_a_join_of_constants_runs_its_consumer(repo, body):
    """The consumer test is the one file run; a test not starting the tool is not."""
    base = {**TOOL, "tests/e2e/test_convert.py": cuda(body=body),
            "tests/e2e/test_other.py": cuda(body="import miles.lib\n")}
    report, plan = run(repo, base, {"tools/convert_weights.py": "print('converting v2')\n"})
    assert (["/rerun-test tests/e2e/test_convert.py"], []) == (plan.comments,
                                                              report.unimported)


def test_a_join_naming_another_file_is_no_edge(repo):
    """Constants joined into a different file's path do not reach the changed tool."""
    body = CONSTANTS.replace('"convert_weights.py"', '"other_tool.py"') + \
        "def convert():\n    subprocess.run([sys.executable, os.path.join(TOOLS_DIR, TOOL_NAME)])\n"
    base = {**TOOL, "tools/other_tool.py": "print(1)\n", "tests/e2e/test_convert.py": cuda(body=body)}
    report, plan = run(repo, base, {"tools/convert_weights.py": "print('converting v2')\n"})
    assert ([], ["tools/convert_weights.py"]) == (plan.comments, report.unimported)
