"""One flow's page rendered once per saved version of the flow, not once per poll.

A page open on a flow asks for its live part every 2 s. ``PageCache.get`` first reads the
flow's saved version (``FolderSource.version`` / ``StoreSource.version`` in
``flow.web.source``: a few ``stat`` calls, or one small query), and while it has not moved
answers with the body rendered for it and that body's ``ETag`` (a digest of the body), so a
poll sending that ETag back costs the version read and a ``304``: nothing is parsed or
rendered. The version covers what the page reads beyond the flow itself too: the logs of
its jobs not yet taken and the file a refactor edits (``also``, known from the last render).

Nothing on the page moves with the clock alone but whether a flow is stuck (ages and elapsed
times tick in the browser from their timestamps), so a body is rendered again at most every
``MAX_AGE_S`` with an unchanged version as well; the same body gives the same ETag, and the
page's poll still gets its 304. At most ``KEEP`` flows are kept, the least recently asked
dropped first.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

MAX_AGE_S = 30.0
KEEP = 256

# (body, the paths beyond the flow's own files the page read) for a flow id
Render = Callable[[str], "tuple[str, tuple[str, ...]] | None"]


def etag_of(body: str) -> str:
    """The weak ETag of a body: the same bytes, the same tag (across restarts too)."""
    return f'W/"{hashlib.sha256(body.encode()).hexdigest()[:24]}"'


class _Entry:
    __slots__ = ("version", "also", "made", "got")

    def __init__(self, version: Any, also: tuple[str, ...], made: float,
                 got: tuple[str, str]) -> None:
        self.version = version
        self.also = also
        self.made = made
        self.got = got


class PageCache:
    """The rendered pages (their live part) of the flows of ``source``; ``render(flow_id)``
    makes one."""

    def __init__(self, source: Any, render: Render) -> None:
        self.source = source
        self.render = render
        self.renders = 0  # bodies rendered (a test counts them: a 304 renders nothing)
        self.held_answers = 0  # answers ``held`` gave on the event loop (counted by a test too)
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    async def held(self, flow_id: str) -> tuple[str, str] | None:
        """(body, ETag) held for the flow while its saved version has not moved, the version
        read on the server's event loop (``aversion``: a few stats, or one query on an
        asyncio session); None when the page must be rendered, by ``get`` in a worker thread
        (nothing held, held too long, the version moved, no such flow, or the read failed:
        ``get`` reads again and answers, or reports the store's error as it always did)."""
        entry = self._entries.get(flow_id)
        if entry is None or time.monotonic() - entry.made >= MAX_AGE_S:
            return None
        try:
            version = await self.source.aversion(flow_id, entry.also)
        except Exception:  # noqa: BLE001 - the worker-thread path reads again and says why
            return None
        if version is None or version != entry.version:
            return None
        with self._lock:
            if flow_id in self._entries:
                self._entries.move_to_end(flow_id)
        self.held_answers += 1
        return entry.got

    def get(self, flow_id: str) -> tuple[str, str] | None:
        """(body, ETag) of the flow's page, or None when there is no such flow."""
        entry = self._entries.get(flow_id)
        also = entry.also if entry is not None else ()
        version = self.source.version(flow_id, also)
        if version is None:
            with self._lock:
                self._entries.pop(flow_id, None)
            return None
        now = time.monotonic()
        if entry is not None and entry.version == version and now - entry.made < MAX_AGE_S:
            with self._lock:
                if flow_id in self._entries:
                    self._entries.move_to_end(flow_id)
            return entry.got
        made = self.render(flow_id)
        if made is None:
            return None
        self.renders += 1
        body, read_also = made
        got = (body, etag_of(body))
        # the version was read under the paths known before this render: when they changed
        # (a job started), the next poll reads the new ones, finds a new version and renders
        # once more
        with self._lock:
            self._entries[flow_id] = _Entry(version, read_also, now, got)
            self._entries.move_to_end(flow_id)
            while len(self._entries) > KEEP:
                self._entries.popitem(last=False)
        return got
