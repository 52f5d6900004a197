"""The store tests use the real PostgreSQL fixtures of ``tests.store.plugin``."""

from tests.store.plugin import pg_cluster, pg_url  # noqa: F401
