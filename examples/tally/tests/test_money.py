import unittest

import pytest

from tally.money import fmt, parse, round_cents, split_evenly


def test_split_evenly_even_total():
    assert split_evenly(90, 3) == [30, 30, 30]


def test_split_evenly_keeps_every_cent():
    # the regression: 100 cents over 3 shares lost a cent
    assert sum(split_evenly(100, 3)) == 100


def test_fmt_positive():
    assert fmt(1234, "EUR") == "12.34 EUR"


@pytest.mark.xfail(reason="negative amounts: known bug, see README")
def test_fmt_negative():
    assert fmt(-5) == "-0.05"


@pytest.mark.skip(reason="slow on CI")
def test_parse_thousands_separator():
    assert parse("1,234.50") == 123450


class TestRounding(unittest.TestCase):
    @unittest.skip("disabled while the rounding rules are discussed")
    def test_half_cent_rounds_up(self):
        self.assertEqual(round_cents(1.005), 101)

    def test_whole_cents(self):
        self.assertEqual(round_cents(2.5), 250)
