"""CPU, every PR: tests/fast/ needs no registration call."""

from miles.batching import groups


def test_last_group_is_short():
    assert groups(["a", "b", "c"], size=2) == [["a", "b"], ["c"]]
