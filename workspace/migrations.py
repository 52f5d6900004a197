"""Schema migrations of ``flow_state.json``: a chain of functions, one per version step.

``MIGRATIONS[n]`` takes a raw state dict at version ``n`` and returns it at ``n + 1``. Loading
runs the chain up to the current version; a newer version than this code knows is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flow.core.errors import StateLoadError

Migration = Callable[[dict[str, Any]], dict[str, Any]]

# Version 1 is the first released shape; no steps yet. Add ``MIGRATIONS[1] = _v1_to_v2``
# (and bump flow.core.state.SCHEMA_VERSION) when the shape changes.
MIGRATIONS: dict[int, Migration] = {}


def migrate(raw: dict[str, Any], current: int, source: str,
            chain: dict[int, Migration] | None = None) -> dict[str, Any]:
    """Bring ``raw`` forward to ``current``; raise ``StateLoadError`` if it cannot be done."""
    steps = MIGRATIONS if chain is None else chain
    version = raw.get("schema_version")
    if not isinstance(version, int) or version < 1:
        raise StateLoadError(
            f"{source}: schema_version {version!r} is not a positive integer",
            "the file is kept as it is; inspect it, or move the flow folder aside and start anew",
        )
    if version > current:
        raise StateLoadError(
            f"{source}: schema_version {version} is newer than this orchestrator knows ({current})",
            "upgrade skill-orchestrator to a release that knows this version",
        )
    while version < current:
        step = steps.get(version)
        if step is None:
            raise StateLoadError(
                f"{source}: no migration from schema_version {version}",
                "this state predates the oldest supported version; start the flow anew",
            )
        raw = step(dict(raw))
        version += 1
        raw["schema_version"] = version
    return raw
