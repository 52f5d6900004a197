"""Names the engine gives what it writes: file-safe names for task ids and feed files, the
record of a job started ahead of its step, the check that a path stays inside a folder, and
the UTC stamps of the state and its audit trail. Standard library only (the stores and ``--resume``'s fast path use them too)."""

from __future__ import annotations

import re
import time
from pathlib import Path

AHEAD_FILE = "ahead.json"  # a job started ahead, no step recorded yet (flow.core.jobs)


def is_inside(root: Path, path: Path) -> bool:
    """True if ``path`` (resolved, symlinks followed) lies inside ``root``."""
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def safe_name(text: str) -> str:
    """A file-name-safe rendering of ``text`` (for task ids and feed files)."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._")
    return cleaned[:120] or "x"


def now_iso() -> str:
    """Now, in UTC, to the second: ``2026-12-03T23:49:28Z``."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
