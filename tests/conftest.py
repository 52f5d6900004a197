"""Shared pytest set-up: the fake GitHub server and the PostgreSQL cluster fixtures are
available to every test, a failing test is named as it fails (``tests.failnow``), and no test
may leave a foreground budget running in its worker.

Every workspace a test makes is thrown away, so the suite runs with ``ORCHESTRATOR_FSYNC=off``
(set before any worker or child starts, so all inherit it): writes stay atomic and a killed
process leaves whole files, which is all a test can observe; flushing each write to disk
costs about 10 ms here, thousands of times. ``tests/test_workspace.py`` pins the default.
"""

import os
from collections.abc import Iterator

import pytest

pytest_plugins = ["tests.fakegithub.plugin", "tests.store.plugin", "tests.failnow"]
# Files the tests copy and run, not tests of ours: a fixture checkout's test/test_pool_ops.py
# would otherwise be collected, importing torch in every worker and running its tests here.
collect_ignore = ["fixtures"]
os.environ["ORCHESTRATOR_FSYNC"] = "off"


@pytest.fixture(autouse=True)
def _no_call_left_begun() -> Iterator[None]:
    """A test that begins a call's foreground budget (``proc.begin_call``) in this process
    must end it: a budget left running times out every later run in the same worker once it
    is spent, so tests would fail or pass by the order xdist happens to give them."""
    from flow.core import proc

    yield
    left = proc._call_started is not None
    proc.end_call()
    assert not left, "the test left a foreground budget begun (proc.begin_call without end_call)"
