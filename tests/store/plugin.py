"""pytest fixtures for the PostgreSQL store: one real cluster per test session (per xdist
worker), a fresh database per test (``pg_url``), and ``pg_cluster`` for the fault tests that
restart it. Without ``initdb``/``pg_ctl`` the tests that need them are skipped, saying why
(``.ci/test`` installs Debian's ``postgresql`` package; under CI, ``CI=true``, a missing
server fails the tests instead of skipping them)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator

import pytest

from tests.store.pgserver import Cluster, available

_names = itertools.count(1)


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    why = available()
    if why is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"no PostgreSQL in CI: {why}")
        pytest.skip(f"no PostgreSQL here: {why}")
    cluster = Cluster().start()
    try:
        yield cluster
    finally:
        cluster.destroy()


@pytest.fixture
def pg_url(pg_cluster: Cluster) -> str:
    """A fresh, empty database on the session's cluster (the orchestrator migrates it)."""
    return pg_cluster.create_db(f"t{os.getpid()}_{next(_names)}")
