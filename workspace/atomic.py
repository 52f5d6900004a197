"""Atomic file writes for the stores and the layers above the engine: the engine's own
``flow.core.atomic`` (a temporary file in the same folder, fsync, ``os.replace``; no-follow
reads and appends), under the name the stores have always imported it by."""

from __future__ import annotations

from flow.core.atomic import (
    NOFOLLOW, append_line, read_nofollow, refuse_symlink, write_atomic, write_nofollow,
)

__all__ = ["NOFOLLOW", "append_line", "read_nofollow", "refuse_symlink", "write_atomic",
           "write_nofollow"]
