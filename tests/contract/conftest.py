"""The contract suite runs against both stores: ``store`` is the file store or a real
PostgreSQL store (the cluster of ``tests.store.plugin``, a database per workspace)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.contract.stores import FileStoreView, PgStoreView


@pytest.fixture(params=["file", "postgres"])
def store(request: pytest.FixtureRequest) -> Any:
    if request.param == "file":
        return FileStoreView()
    return PgStoreView(request.getfixturevalue("pg_cluster"))
