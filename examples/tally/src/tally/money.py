"""Amounts in integer cents: split a bill, format and parse amounts, round to cents."""
from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal


def split_evenly(total: int, parts: int) -> list[int]:
    """Split ``total`` cents into ``parts`` shares that differ by at most one cent and
    add up to ``total``."""
    if parts <= 0:
        raise ValueError(f"parts must be positive, got {parts}")
    share = total // parts
    return [share] * parts


def fmt(cents: int, currency: str = "") -> str:
    """``1234`` -> ``"12.34"``; with a currency, ``"12.34 EUR"``."""
    text = f"{cents // 100}.{cents % 100:02d}"
    return f"{text} {currency}" if currency else text


def parse(text: str) -> int:
    """``"1,234.50"`` -> ``123450`` cents (a thousands separator is allowed)."""
    whole, _, frac = text.strip().partition(".")
    return int(whole) * 100 + int((frac + "00")[:2])


def round_cents(amount: float) -> int:
    """Round an amount in units to whole cents, halves away from zero."""
    return int(Decimal(str(amount * 100)).quantize(Decimal(1), rounding=ROUND_HALF_UP))
