"""A bare node id (``TestAdd::test_add``, no file) is looked up where the project's pytest
configuration says tests are (``testpaths``), then in ``test/`` and ``tests/``: a project
with a ``tests/`` folder, or with its tests in a folder only ``testpaths`` names, reproduces
instead of ending CANNOT_VERIFY."""
from __future__ import annotations

from pathlib import Path

import pytest

from flow.workflows.reproduce.prepare.rules import bare_node_places, resolve_bare_node
from tests.contract.driver import Driver
from tests.reproduce import tinyproject

LAYOUTS = [
    ("tests", ""),
    ("checks", '\n[tool.pytest.ini_options]\ntestpaths = ["checks"]\n'),
]


@pytest.mark.parametrize(("folder", "config"), LAYOUTS, ids=["tests-layout", "testpaths"])
def test_a_bare_node_id_is_found_where_the_project_keeps_its_tests(
        tmp_path: Path, folder: str, config: str) -> None:
    src = tinyproject.make(tmp_path / "proj", tests_dir=folder, pytest_config=config)
    call = Driver(tmp_path / "ws").call([
        "reproduce", "--profile", "local", "--source-dir", str(src), "--stage", "nightly",
        "--command", "pytest TestAdd::test_add"])
    assert call.spec is not None, call.stderr
    verdict = call.spec["verdict"]
    assert ("REPRODUCED", f"{folder}/test_add.py::TestAdd::test_add") == (
        verdict["verdict"], verdict.get("refined_command", "").split()[-1]), verdict


def test_places_follow_the_configuration_then_both_layouts(tmp_path: Path) -> None:
    src = tinyproject.make(tmp_path / "proj", tests_dir="suite",
                           pytest_config='\n[tool.pytest.ini_options]\ntestpaths = ["suite"]\n')
    (src / "tests").mkdir()
    (src / "tests" / "test_other.py").write_text("class TestAdd:\n    def test_add(self):\n"
                                                 "        pass\n")
    assert (["suite", "test", "tests", "."], "suite/test_add.py") == (
        bare_node_places(src), resolve_bare_node("TestAdd::test_add", src))
