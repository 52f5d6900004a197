"""Reading a feed file: a regular file of bounded size, read without ever blocking.

A feed path comes from the harness (``--feed-file``). It may name anything: a FIFO that no
one writes (an unbounded wait while the flow's lock is held), ``/dev/zero`` (an endless read),
a directory, or a 200 MB file. ``read_feed`` opens it non-blocking, checks with ``fstat`` on
the open descriptor (no race between check and read) that it is a regular file no larger than
``ORCHESTRATOR_MAX_FEED_BYTES`` (default 8 MiB), and reads at most that many bytes plus one.
The result comes back with secrets masked (``flow.core.redact``: token shapes, the values of
the secret settings), so an agent's result that quotes a token never reaches the state, the
audit log or an output file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flow.core.boundedfile import UnreadableFile, read_regular
from flow.core.errors import FeedRejected
from flow.core.jsonio import loads
from flow.core.redact import redact_tree

ENV_MAX_FEED = "ORCHESTRATOR_MAX_FEED_BYTES"
DEFAULT_MAX_FEED = 8 * 1024 * 1024


def max_feed_bytes(settings: Mapping[str, str]) -> int:
    """The size limit of one feed file; ``SettingError`` (exit 2) for a value that is not one."""
    from flow.core.bounds import Range, setting

    return int(setting(settings, ENV_MAX_FEED, Range(2, 1 << 40, unit="of bytes"),
                       DEFAULT_MAX_FEED))


def read_feed(path: Path, limit: int) -> dict[str, Any]:
    """The JSON object in ``path``, its strings with secrets masked; ``FeedRejected`` for
    anything else (code says what)."""
    where = str(path)
    try:
        raw = read_regular(path, limit)
    except UnreadableFile as exc:
        if exc.kind == "too_large":
            raise _too_large(where, exc.size, limit) from None
        if exc.kind == "not_regular":
            raise FeedRejected(f"feed file {where!r} {exc.reason}",
                               "write the result JSON to a plain file (the task's feed_file)",
                               code="feed_not_regular") from None
        raise FeedRejected(f"feed file {where!r} {exc.reason}",
                           "write the result JSON to the task's feed_file first",
                           code="feed_missing") from None
    if not raw.strip():
        raise FeedRejected(f"feed file {where!r} is empty",
                           "an empty result never counts; write the result JSON object",
                           code="feed_empty")
    try:
        content = loads(raw)
    except ValueError as exc:
        raise FeedRejected(f"feed file {where!r} is not valid JSON: {exc}",
                           "write one JSON object", code="feed_malformed") from None
    duplicate = _duplicate_key(raw)
    if duplicate is not None:
        raise FeedRejected(f"feed file {where!r} names the key {duplicate!r} twice in one "
                           "object", "write each key once: which one counts would be a guess",
                           code="feed_duplicate_key", key=duplicate)
    if not isinstance(content, dict):
        raise FeedRejected(f"feed file {where!r} holds a {type(content).__name__}, "
                           f"not a JSON object", "write one JSON object", code="feed_malformed")
    return dict(redact_tree(content))


def _too_large(where: str, size: int, limit: int) -> FeedRejected:
    return FeedRejected(f"feed file {where!r} holds {size} bytes, more than the limit of "
                        f"{limit} ({ENV_MAX_FEED})",
                        "a result is a small JSON object: put long text (logs, diffs) in a "
                        f"file under the workspace and name its path, or raise {ENV_MAX_FEED}",
                        code="feed_too_large", size=size, limit=limit)


def _duplicate_key(raw: bytes) -> str | None:
    """The first key named twice in one object of ``raw`` (valid JSON), else None. orjson
    keeps the last silently; the standard parser's pairs hook sees every pair."""
    found: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: set[str] = set()
        for key, _ in items:
            if key in seen and not found:
                found.append(key)
            seen.add(key)
        return dict(items)

    json.loads(raw, object_pairs_hook=pairs)
    return found[0] if found else None
