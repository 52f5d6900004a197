"""A pytest plugin the refactor local test gate puts on PYTHONPATH to shard one big file.

``-p orchestrator_shard`` with ``ORCHESTRATOR_SHARD=I/N`` keeps every N-th collected test
starting at the I-th (0-based) and deselects the rest, so N background jobs together run
each test exactly once. Standard library only: it loads in whatever interpreter runs the
tests (``ORCHESTRATOR_PYTHON``), which need not have the orchestrator installed.
"""

from __future__ import annotations

import os


def _shard() -> tuple[int, int] | None:
    raw = os.environ.get("ORCHESTRATOR_SHARD", "")
    try:
        index, count = (int(x) for x in raw.split("/"))
    except ValueError:
        return None
    return (index, count) if 0 <= index < count else None


def pytest_collection_modifyitems(config, items):  # type: ignore[no-untyped-def]
    shard = _shard()
    if shard is None:
        return
    index, count = shard
    keep = [item for i, item in enumerate(items) if i % count == index]
    dropped = [item for i, item in enumerate(items) if i % count != index]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = keep
