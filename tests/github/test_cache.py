"""The on-disk ETag cache: survives a new process, evicts the oldest writes, shrugs off junk."""

from __future__ import annotations

from pathlib import Path

import pytest

from flow.github import cache as cache_mod
from flow.github.cache import ETagCache


def test_entries_survive_a_reload_and_the_oldest_write_is_evicted(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Write order is kept across save/load, so the bound drops the least recently written key."""
    monkeypatch.setattr(cache_mod, "MAX_ENTRIES", 2)
    path = tmp_path / "etags.json"
    first = ETagCache(path)
    for key in ("z", "a", "m"):  # not alphabetical: a key-sorted file would lose the order
        first.put(key, f'"{key}"', {"k": key}, None)
    first.save()
    second = ETagCache(path)
    second.put("z", '"z2"', {"k": "z2"}, None)  # rewritten: now the newest
    second.save()
    assert (["m", "z"], None) == ([k for k in ("a", "m", "z") if ETagCache(path).get(k)],
                                  ETagCache(path).get("a"))


@pytest.mark.parametrize("junk", ["{not json", '{"old": "dict format"}', "[1, 2]", ""])
def test_an_unusable_file_is_an_empty_cache(tmp_path: Path, junk: str) -> None:
    """Garbage or an older format costs one full read, never an error or a wrong answer."""
    path = tmp_path / "etags.json"
    path.write_text(junk)
    assert None is ETagCache(path).get("old")

