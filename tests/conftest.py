"""Shared pytest set-up: the fake GitHub server and the PostgreSQL cluster fixtures are
available to every test, a failing test is named as it fails (``tests.failnow``), and no test
may leave a foreground budget running in its worker. The PyTorch runs a refactor flow starts
with its test interpreter are forks of one interpreter per worker that has imported torch
already, as every start would otherwise spend 4 to 5 CPU-seconds there; the tests' own
``orchestrator.py`` calls and the printed commands their harnesses run are forks of one that
has imported the orchestrator's modules (``tests.forkserver``).

Every workspace a test makes is thrown away, so the suite runs with ``ORCHESTRATOR_FSYNC=off``
(set before any worker or child starts, so all inherit it): writes stay atomic and a killed
process leaves whole files, which is all a test can observe; flushing each write to disk
costs about 10 ms here, thousands of times. ``tests/test_workspace.py`` pins the default.

For the same reason the suite's temporary files go to memory where the machine has a large
``tmpfs`` and the caller set no ``TMPDIR`` of their own (``tests.memoryfolder``).
"""

import os
from collections.abc import Iterator

import pytest

from tests import memoryfolder

pytest_plugins = ["tests.fakegithub.plugin", "tests.store.plugin", "tests.failnow"]
# Files the tests copy and run, not tests of ours: a fixture checkout's test/test_pool_ops.py
# would otherwise be collected, importing torch in every worker and running its tests here.
collect_ignore = ["fixtures"]
os.environ["ORCHESTRATOR_FSYNC"] = "off"

memoryfolder.use()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked ``slow`` first, the rest in their order: with ``.ci/test``'s small xdist
    chunks each worker takes the next test when it is free, so the longest start while there
    is still other work to share the cores with, and none ends the run alone."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(scope="session", autouse=True)
def _torch_runs_fork_from_one_import(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """``ORCHESTRATOR_PYTHON`` for every flow in this worker: the torch fork server's
    executable (this interpreter, each pytest run or script a fork of a server that imported
    torch once). A test of the interpreter rule itself passes its own settings or unsets it.
    A value the caller set stands, with no server (a run against another torch; the PyGithub
    floor's, which runs no torch)."""
    from tests import forkserver

    if os.environ.get("ORCHESTRATOR_PYTHON"):
        yield
        return
    with forkserver.running(str(tmp_path_factory.mktemp("torchfork")), "torch") as python:
        if python is None:
            yield
            return
        os.environ["ORCHESTRATOR_PYTHON"] = python
        try:
            yield
        finally:
            os.environ.pop("ORCHESTRATOR_PYTHON", None)


@pytest.fixture(scope="session", autouse=True)
def _orchestrator_calls_fork_from_one_import(
        tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The orchestrator fork server of this worker, for the tests' calls
    (``forkserver.python("orchestrator")``)."""
    from tests import forkserver

    with forkserver.running(str(tmp_path_factory.mktemp("orchfork")), "orchestrator"):
        yield


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
