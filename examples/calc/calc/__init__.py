"""A tiny calculator with one real bug, for the fix-reproduce example."""
from __future__ import annotations


def add(a: float, b: float) -> float:
    return a + b


def mean(values: list[float]) -> float:
    """Arithmetic mean of ``values``.

    The bug the example reproduces: integer division truncates the mean of ints.
    """
    return sum(values) // len(values)
