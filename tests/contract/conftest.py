"""The contract suite runs against both stores: ``store`` is the file store or a real
PostgreSQL store (``tests.store.plugin``'s cluster, a database per workspace)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.contract.stores import FileStoreView, PgStoreView
from tests.store.plugin import pg_cluster, pg_url  # noqa: F401


@pytest.fixture(params=["file", "postgres"])
def store(request: pytest.FixtureRequest) -> Any:
    if request.param == "file":
        return FileStoreView()
    return PgStoreView(request.getfixturevalue("pg_cluster"))
